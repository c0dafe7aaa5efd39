"""Issue 13's "Done when": in the browser only, what a researcher does in a real study.

A researcher creates a study on a custom scale with a completion URL (definition upload),
uploads items, edits one, invites a colleague as viewer, opens the study and makes links; two
annotators answer (separate browsers: one through the open link, one through an invitation);
one link is revoked part-way; one participant withdraws and is deleted; the study is closed
while a third annotator has an item on screen, whose answer is then stored and who sees the
"your answers are saved" page. Every wait is on a condition, never a sleep.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation.models import Response
from studies.models import Item, Membership, Participant, Study, StudyEvent

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DEFINITION = {
    "slug": "real-study", "title": "Summary quality",
    "scale": {"values": [1, 2, 3], "labels": {"1": "poor", "2": "fair", "3": "good"},
              "rubric": "Rate how well the summary keeps the **key facts**."},
    "completion_url": "https://example.org/complete?src=concord",
    "design": {"annotators_per_item": 2},
}
ITEMS = "id,text\nn1,The council approved the budget.\nn2,A storm closed the port.\nn3,The team won the cup.\n"


def annotator(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.csp_violations = []
    page.on("console", lambda msg: "Content Security Policy" in msg.text
            and page.csp_violations.append(msg.text))
    return page


def consent_and_start(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")


def rate(page, value: int, number: int, total: int) -> None:
    """Answer the item on screen (item `number` of `total`) and wait for what follows."""
    expect(page.locator(".progress-text")).to_contain_text(f"Item {number} of {total}")
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    page.keyboard.press(str(value))
    page.get_by_role("button", name="Confirm").click()
    if number < total:
        expect(page.locator(".progress-text")).to_contain_text(f"Item {number + 1} of {total}")


def confirm_participant_action(researcher, base, slug, participant, action: str) -> None:
    researcher.goto(f"{base}/studies/{slug}/participants/")
    row = researcher.locator(f'tr[data-participant="{participant.pk}"]')
    row.get_by_role("link", name=action).click()
    expect(researcher.locator("#confirm")).to_be_visible()
    researcher.locator("#confirm-button").click()
    researcher.wait_for_url(f"**/studies/{slug}/participants/**")


def test_a_real_study_from_creation_to_close(live_server, browser, page, alice, bob):
    base = live_server.url
    researcher = page
    login(researcher, base, "alice", "alice-password-1")

    # Create it from a definition file: a custom 1-3 scale and a completion URL.
    researcher.goto(f"{base}/studies/new/")
    researcher.locator("#new-from-definition").click()
    researcher.set_input_files("#id_file", files=[{
        "name": "study.json", "mimeType": "application/json",
        "buffer": json.dumps(DEFINITION).encode()}])
    researcher.locator("#create-from-definition").click()
    expect(researcher.locator("#study-status")).to_have_text("Draft")
    slug = DEFINITION["slug"]

    # Upload items, then edit one on the items page.
    researcher.set_input_files("#id_file", files=[{
        "name": "items.csv", "mimeType": "text/csv", "buffer": ITEMS.encode()}])
    researcher.get_by_role("button", name="Upload items").click()
    expect(researcher.locator("dl.facts dt", has_text="Items").locator("xpath=following-sibling::dd")).to_have_text("3")
    researcher.locator("#items-link").click()
    researcher.locator("#items").get_by_role("link", name="n2").click()
    researcher.get_by_role("link", name="Edit").first.click()
    researcher.locator("#id_text").fill("A storm closed the harbour for two days.")
    researcher.get_by_role("button", name="Save").click()
    expect(researcher.get_by_text("A storm closed the harbour for two days.").first).to_be_visible()

    # Invite a colleague as a viewer; they see the study and cannot change it.
    researcher.goto(f"{base}/studies/{slug}/")
    researcher.locator("#sharing-link").click()
    researcher.locator("#id_username").fill("bob")
    researcher.locator("#id_role").select_option("viewer")
    researcher.locator("#add-member-button").click()
    expect(researcher.locator("#members")).to_contain_text("bob")
    colleague = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    login(colleague, base, "bob", "bob-password-1")
    colleague.goto(f"{base}/studies/{slug}/")
    expect(colleague.get_by_role("heading", name="Summary quality")).to_be_visible()
    expect(colleague.locator("#action-open")).to_have_count(0)  # a viewer changes nothing

    # Open it (confirmed), then make two invitation links.
    researcher.goto(f"{base}/studies/{slug}/")
    researcher.locator("#action-open").click()
    researcher.locator("#confirm-button").click()
    expect(researcher.locator("#study-status")).to_have_text("Open")
    researcher.locator("#id_count").fill("2")
    researcher.get_by_role("button", name="Create", exact=True).click()
    expect(researcher.locator("#progress code.copy")).to_have_count(2)
    links = [text if text.startswith("http") else base + text
             for text in researcher.locator("#progress code.copy").all_text_contents()]
    open_link = researcher.locator("#open-link").text_content()
    open_link = open_link if open_link.startswith("http") else base + open_link

    # Annotator 1 comes through the open link and answers all three items.
    first = annotator(browser)
    consent_and_start(first, open_link)
    for number, value in enumerate((3, 2, 1), start=1):
        rate(first, value, number, 3)
    expect(first.get_by_role("heading", name="Thank you!")).to_be_visible()
    expect(first.get_by_role("link", name="Return to the platform")).to_have_attribute(
        "href", f"{DEFINITION['completion_url']}&cc={Study.objects.get(slug=slug).completion_code}")
    one = Participant.objects.get(study__slug=slug, source=Participant.Source.OPEN)
    assert one.consented_at is not None and one.completed_at is not None

    # Annotator 2 answers one item; the researcher revokes their link part-way.
    second = annotator(browser)
    consent_and_start(second, links[0])
    rate(second, 2, 1, 3)
    two = Participant.objects.get(token=links[0].rstrip("/").rsplit("/", 1)[1])
    expect(second.locator(".progress-text")).to_contain_text("Item 2 of 3")
    confirm_participant_action(researcher, base, slug, two, "Revoke")
    expect(researcher.locator(f'tr[data-participant="{two.pk}"]')).to_contain_text("revoked")
    second.reload()
    expect(second.get_by_text("withdrawn by the researcher")).to_be_visible()
    assert Response.objects.filter(participant=two).count() == 1  # what they gave stays

    # Annotator 1 withdraws consent: the researcher deletes them with every answer.
    confirm_participant_action(researcher, base, slug, one, "Delete")
    expect(researcher.locator(f'tr[data-participant="{one.pk}"]')).to_have_count(0)
    assert not Participant.objects.filter(pk=one.pk).exists()
    assert not Response.objects.filter(participant_id=one.pk).exists()

    # Annotator 3 answers one item and has the next on screen when the study is closed.
    third = annotator(browser)
    consent_and_start(third, links[1])
    rate(third, 1, 1, 3)
    expect(third.locator("#answer-form")).to_have_attribute("data-ready", "true")
    researcher.goto(f"{base}/studies/{slug}/")
    researcher.locator("#action-close").click()
    expect(researcher.get_by_role("heading", name="Close the study?")).to_be_visible()
    researcher.locator("#confirm-button").click()
    expect(researcher.locator("#study-status")).to_have_text("Closed")
    third.keyboard.press("3")
    third.get_by_role("button", name="Confirm").click()
    expect(third.locator("#saved")).to_contain_text("The study is closed.")
    expect(third.locator("#saved")).to_contain_text("All your 2 answers are saved.")
    three = Participant.objects.get(token=links[1].rstrip("/").rsplit("/", 1)[1])
    assert sorted(Response.objects.filter(participant=three)
                  .values_list("answers__value", flat=True)) == [1.0, 3.0]

    # The record: who did what, and the state of the study.
    study = Study.objects.get(slug=slug)
    assert study.status == "closed" and study.questions.get().values == [1, 2, 3]
    assert Item.objects.get(study=study, external_id="n2").text.endswith("for two days.")
    assert Membership.objects.get(study=study, user=bob).role == "viewer"
    actions = set(StudyEvent.objects.filter(study=study).values_list("action", flat=True))
    assert {"item_edit", "member_add", "open", "revoke", "participant_delete",
            "close"} <= actions
    for someone in (researcher, first, second, third):
        assert someone.csp_violations == [], someone.csp_violations
    for context in {p.context for p in (colleague, first, second, third)}:
        context.close()
