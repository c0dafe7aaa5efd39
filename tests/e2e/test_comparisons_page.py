"""The item page of a comparison in Chromium (issue 25): a pairwise question, and a ranking and a
best–worst question sharing one comparison, answered by keyboard only at 1280×800 and by touch on
a 390×844 phone (taps, a ranking's drag and its Move buttons); the judgment stored
(Answer.choice) names the outputs in the participant's shown order; going back shows it; axe-core
finds nothing on either page at either width. Screenshots go to CONCORD_SHOTS when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Answer
from core.comparative import shown_order
from studies.services import participant_consent, participants_invite
from tests.annotation.comparisons import comparison_study

from .test_accessibility import Audit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("CONCORD_SHOTS", "")
PAIRWISE = {"key": "pref", "kind": "pairwise", "prompt": "Which answer is better?",
            "comparison": {"ties": True, "strength": True}, "allow_cant_judge": True,
            "allow_comment": True}
RANKING = {"key": "rank", "kind": "ranking", "prompt": "Rank the answers, best first",
           "comparison": {"ties": True}, "allow_comment": True}
BWS = {"key": "bw", "kind": "bws", "prompt": "Which answer is the best, which the worst?",
       "comparison": {"size": 4}, "allow_cant_judge": True}


def open_item(page, live_server, participant):
    participant_consent(participant=participant)
    page.goto(f"{live_server.url}/a/{participant.token}/next/")
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")


def order_of(participant, position=0):
    item = participant.assignments.select_related("item").get(position=position).item
    return shown_order(item.outputs, f"{participant.pk}:{item.pk}")


def tab_to(page, selector, limit=40):
    """Press Tab until the focus is on an element matching ``selector`` (keyboard only)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)",
                         selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def audit(page, name, width):
    checker = Audit(width)
    checker.check(page, name)
    assert not checker.findings, checker.findings
    # The folded comment was unfolded for axe; fold it again (what the annotator sees).
    page.evaluate("() => document.querySelectorAll('details.comment').forEach(d => { "
                  "if (!d.querySelector('textarea').value) d.open = false; })")


def shot(page, name):
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def stored(participant):
    return {a.question.key: a for a in Answer.objects.select_related("question").filter(
        response__participant=participant, response__is_current=True)}


def wait_saved(page, participant, count):
    expect(page.locator("#save-status")).to_have_attribute("data-state", "msg-saved")
    assert Answer.objects.filter(response__participant=participant).count() == count


def test_a_pairwise_question_by_keyboard_and_by_touch(live_server, sized, alice):
    study = comparison_study(alice, slug="pw", sources=1, questions=[PAIRWISE])
    desk, hand = participants_invite(study=study, count=2)

    page = sized(1280, 800)
    open_item(page, live_server, desk)
    order = order_of(desk)
    # Side by side: the two outputs share one row.
    boxes = [page.locator(f'.output[data-output="{o}"]').bounding_box() for o in order]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"]
    audit(page, "pairwise", 1280)
    tab_to(page, 'input[name="pick:pref"]')
    page.keyboard.press("ArrowRight")  # A → Tie
    expect(page.locator('input[name="pick:pref"][value="tie"]')).to_be_checked()
    expect(page.locator('input[name="strength:pref"]').first).to_be_disabled()
    page.keyboard.press("ArrowRight")  # Tie → B
    expect(page.locator(f'input[name="pick:pref"][value="{order[1]}"]')).to_be_checked()
    tab_to(page, 'input[name="strength:pref"]')
    page.keyboard.press("Space")
    expect(page.locator('input[name="strength:pref"][value="slightly"]')).to_be_checked()
    shot(page, "pairwise-1280")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/a/{desk.token}/done/")
    answer = stored(desk)["pref"]
    assert answer.choice == {"shown": order, "pick": order[1], "strength": "slightly"}
    assert answer.response.active_ms > 0
    assert any(e[0] == "choose:1" for e in answer.response.events)

    phone = sized(390, 844)
    open_item(phone, live_server, hand)
    order = order_of(hand)
    boxes = [phone.locator(f'.output[data-output="{o}"]').bounding_box() for o in order]
    assert boxes[1]["y"] > boxes[0]["y"] + boxes[0]["height"] - 1  # stacked
    audit(phone, "pairwise", 390)
    # "I can't judge this" clears and disables the picks; untaking it gives them back.
    phone.get_by_text("B is better").tap()
    phone.get_by_text("I can't judge this").tap()
    expect(phone.locator(f'input[name="pick:pref"][value="{order[1]}"]')).not_to_be_checked()
    expect(phone.locator('input[name="pick:pref"]').first).to_be_disabled()
    phone.get_by_text("I can't judge this").tap()
    expect(phone.locator('input[name="pick:pref"]').first).to_be_enabled()
    phone.get_by_text("A is better").tap()
    phone.get_by_text("Much", exact=True).tap()
    phone.locator("details.comment summary").tap()
    phone.locator("#comment-pref").fill("A is more precise.")
    shot(phone, "pairwise-390")
    phone.locator("#submit").tap()
    expect(phone).to_have_url(f"{live_server.url}/a/{hand.token}/done/")
    answer = stored(hand)["pref"]
    assert answer.choice == {"shown": order, "pick": order[0], "strength": "much"}
    assert answer.comment == "A is more precise."

    # Going back shows the judgment given; changing it to a tie stores a revision.
    phone.goto(f"{live_server.url}/a/{hand.token}/item/0/")
    expect(phone.locator(f'input[name="pick:pref"][value="{order[0]}"]')).to_be_checked()
    expect(phone.locator('input[name="strength:pref"][value="much"]')).to_be_checked()
    phone.get_by_text("Tie", exact=True).tap()
    expect(phone.locator('input[name="strength:pref"][value="much"]')).not_to_be_checked()
    phone.locator("#submit").tap()
    expect(phone).to_have_url(f"{live_server.url}/a/{hand.token}/done/")
    answer = stored(hand)["pref"]
    assert answer.response.revision == 2 and answer.value == 0.5
    assert answer.choice == {"shown": order, "pick": "tie", "strength": ""}


def test_a_ranking_and_a_best_worst_question_by_keyboard_and_by_touch(live_server, sized,
                                                                        alice):
    study = comparison_study(alice, slug="rb", sources=1, size=4, questions=[RANKING, BWS])
    desk, hand = participants_invite(study=study, count=2)

    page = sized(1280, 800)
    open_item(page, live_server, desk)
    o = order_of(desk)
    audit(page, "ranking-bws", 1280)
    # Confirm before ranking: the ranking is not answered yet (the order shown is no answer).
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_contain_text("Answer this question first:")
    expect(page.locator("#question-rank")).to_have_class("question comparative ranking missing")
    # The focus is on the ranking's first output, to rank it at once.
    assert page.evaluate("() => document.activeElement.dataset.output") == o[0]
    page.keyboard.press("ArrowDown")  # the first output goes one place down
    expect(page.locator(".rank-row").first).to_have_attribute("data-output", o[1])
    assert page.evaluate("() => document.activeElement.dataset.output") == o[0]
    expect(page.locator(".rank-status")).to_have_text("Output A: place 2 of 4")
    tab_to(page, f'.rank-row[data-output="{o[3]}"] .tie-above')
    page.keyboard.press("Space")  # the last one tied with the one above
    tab_to(page, 'input[name="best:bw"]')
    page.keyboard.press("ArrowDown")  # best: the second output
    expect(page.locator(f'input[name="best:bw"][value="{o[1]}"]')).to_be_checked()
    tab_to(page, 'input[name="worst:bw"]')  # the next one in the page: the second's Worst
    assert page.evaluate("() => document.activeElement.value") == o[1]
    page.keyboard.press("ArrowUp")  # worst: the first
    expect(page.locator(f'input[name="worst:bw"][value="{o[0]}"]')).to_be_checked()
    shot(page, "ranking-bws-1280")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/a/{desk.token}/done/")
    answers = stored(desk)
    assert answers["rank"].choice == {"shown": o, "order": [[o[1]], [o[0]], [o[2], o[3]]]}
    assert answers["bw"].choice == {"shown": o, "best": o[1], "worst": o[0]}
    page.goto(f"{live_server.url}/a/{desk.token}/item/0/")
    expect(page.locator(".rank-row")).to_have_count(4)
    assert page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.output)") \
        == [o[1], o[0], o[2], o[3]]
    expect(page.locator(f'.rank-row[data-output="{o[3]}"] .tie-above')).to_be_checked()

    phone = sized(390, 844)
    open_item(phone, live_server, hand)
    o = order_of(hand)
    audit(phone, "ranking-bws", 390)
    rows = phone.locator(".rank-row")
    # A tap on the second output's "Move down".
    rows.nth(1).get_by_role("button", name="Move down").tap()
    expect(rows.nth(2)).to_have_attribute("data-output", o[1])
    # Then drag the last output to the top with a finger (touch events, as a phone sends them).
    phone.locator(".ranking-list").evaluate("list => list.scrollIntoView({block: 'center'})")
    last = rows.nth(3).locator(".grip").bounding_box()
    top = rows.nth(0).bounding_box()
    cdp = phone.context.new_cdp_session(phone)
    x, y = last["x"] + last["width"] / 2, last["y"] + last["height"] / 2

    def touch(kind, at_y):
        points = [] if kind == "touchEnd" else [{"x": x, "y": at_y}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", y)
    steps = 12
    for n in range(1, steps + 1):
        touch("touchMove", y + (top["y"] + 5 - y) * n / steps)
    touch("touchEnd", top["y"] + 5)
    expect(rows.first).to_have_attribute("data-output", o[3])
    assert phone.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.output)") \
        == [o[3], o[0], o[2], o[1]]
    # A reload shows the ranking not confirmed yet again (the draft kept in the browser).
    phone.reload()
    expect(phone.locator("#answer-form")).to_have_attribute("data-ready", "true")
    assert phone.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.output)") \
        == [o[3], o[0], o[2], o[1]]
    expect(phone.locator(".ranking-list")).to_have_attribute("data-ranked", "1")
    # Best–worst: marking the worst output best clears it as the worst.
    phone.get_by_label(f"Worst: output {'ABCD'[2]}").tap()
    phone.get_by_label(f"Best: output {'ABCD'[2]}").tap()
    expect(phone.get_by_label("Worst: output C")).not_to_be_checked()
    phone.locator("#submit").tap()
    expect(phone.locator("#save-status")).to_contain_text("Answer this question first:")
    phone.get_by_label("Worst: output A").tap()
    shot(phone, "ranking-bws-390")
    phone.locator("#submit").tap()
    expect(phone).to_have_url(f"{live_server.url}/a/{hand.token}/done/")
    answers = stored(hand)
    assert answers["rank"].choice == {"shown": o, "order": [[o[3]], [o[0]], [o[2]], [o[1]]]}
    assert answers["bw"].choice == {"shown": o, "best": o[2], "worst": o[0]}
