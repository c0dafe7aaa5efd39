"""An annotator's whole session in a real browser, through a flaky network."""

import pytest
from playwright.sync_api import expect

from annotation.models import Response
from studies.services import participants_invite

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEMS = "id,text\n" + "".join(f"d{n},Passage number {n}: [Marie] met [her] brother.\n" for n in range(8))


def test_an_annotator_finishes_a_likert_study_by_keyboard_through_network_loss(
        live_server, page, alice, make_study):
    study = make_study(alice, slug="e2e", items=ITEMS, duplicates=2, duplicate_min_gap=3)
    participant = participants_invite(study=study, count=1)[0]
    total = participant.n_assigned
    assert total == 10
    base = live_server.url

    page.goto(f"{base}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    expect(page.get_by_role("heading", name="Instructions")).to_be_visible()
    expect(page.get_by_text("significant errors on key elements").first).to_be_visible()
    page.get_by_role("link", name="Start").click()

    dropped_ack = {"done": False}

    def drop_first_acknowledgement(route):
        # The server stores the answer, but its acknowledgement never reaches the page.
        if not dropped_ack["done"]:
            dropped_ack["done"] = True
            route.fetch()
            route.abort()
        else:
            route.continue_()

    for n in range(total):
        expect(page.locator("#progress")).to_have_attribute("value", str(n))
        expect(page.get_by_text(f"Item {n + 1} of {total}")).to_be_visible()
        expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
        page.keyboard.press(str(n % 8))
        expect(page.locator(f"input[name=value][value='{n % 8}']")).to_be_checked()
        if n in (3, 4, 5):
            page.context.set_offline(True)
            page.keyboard.press("Enter")
            expect(page.locator("#save-status")).to_have_text("Not saved yet — retrying…")
            # Back online: the page re-sends at once (its `online` handler), no timer needed.
            page.context.set_offline(False)
        elif n == 7:
            page.route("**/answer/", drop_first_acknowledgement)
            page.keyboard.press("Enter")
            expect(page.locator("#save-status")).to_have_text("Not saved yet — retrying…")
        else:
            page.keyboard.press("Enter")
        if n == 7:
            expect(page.locator("#progress")).to_have_attribute("value", "8")
            page.unroute("**/answer/")

    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)
    assert dropped_ack["done"]
    assert page.csp_violations == []

    rows = list(Response.objects.filter(participant=participant))
    assert len(rows) == total
    assert len({(r.item_id, r.presentation) for r in rows}) == total
    assert sum(r.presentation == 2 for r in rows) == 2
    assert all(r.active_ms and r.active_ms > 0 for r in rows)
    assert [r.answers.get().value for r in sorted(rows, key=lambda r: r.position)] == [
        n % 8 for n in range(total)]

    login(page, base, "alice", "alice-password-1")
    page.goto(f"{base}/studies/e2e/")
    row = page.locator(f"tr[data-participant='{participant.pk}']")
    expect(row.locator(".status")).to_have_text("complete")
    expect(row).to_contain_text(f"{total}/{total}")


def test_the_questionnaire_fits_a_phone_screen(live_server, phone, alice, make_study):
    study = make_study(alice, slug="phone", preset="similarity-1-5",
                       items="id,text_a,text_b\np1,A cat sleeps.,A cat is sleeping.\n")
    participant = participants_invite(study=study, count=1)[0]
    phone.goto(f"{live_server.url}/a/{participant.token}/")
    phone.get_by_role("button", name="I agree, continue").click()
    phone.get_by_role("link", name="Start").click()
    expect(phone.get_by_text("A cat is sleeping.")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 375
    # The rating guide says "5 = identical" too: the option is the exact text.
    phone.get_by_text("identical", exact=True).click()
    phone.get_by_role("button", name="Confirm").click()
    expect(phone.get_by_role("heading", name="Thank you!")).to_be_visible()
