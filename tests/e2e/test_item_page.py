"""The item page in a real browser: Confirm and the save status stay in view, a SummEval-style
study answered end to end by keyboard and mouse, and going back to change an answer."""

import pytest
from playwright.sync_api import expect

from annotation.models import Answer, Response
from studies.models import Assignment
from studies.services import coref_items_import, participants_invite, study_open

from .passages import long_coref_conll, summaries_csv

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SIZES = [pytest.param(1280, 800, id="desktop-1280x800"), pytest.param(390, 844, id="phone-390x844")]
RETRYING = "Not saved yet — retrying…"


def long_coref_study(make_study, owner):
    study = make_study(owner, slug="long-coref", items=None, open=False)
    gold, system = long_coref_conll()
    coref_items_import(study=study, gold=gold.encode(), system=system.encode(),
                       gold_name="gold.conll", system_name="sys.conll", fmt="conll2012")
    study_open(study=study)
    return study


def summeval_study(make_study, owner, **design):
    return make_study(owner, slug="summeval", preset="summeval-4x5", items=summaries_csv(),
                      **design)


def begin(page, base, participant):
    page.goto(f"{base}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")


def in_view(page, selector: str) -> dict:
    """Return the element's box, checking it lies inside the viewport."""
    box = page.locator(selector).bounding_box()
    height = page.viewport_size["height"]
    assert box is not None, selector
    assert 0 <= box["y"] and box["y"] + box["height"] <= height, (selector, box, height)
    return box


def check_in_view_while_offline(page) -> None:
    """Go offline, confirm, and check Confirm and "retrying" are in view however scrolled."""
    page.context.set_offline(True)
    page.locator("#submit").click()
    expect(page.locator("#save-status")).to_have_text(RETRYING)
    for scroll in ("0", "document.documentElement.scrollHeight"):
        page.evaluate(f"window.scrollTo(0, {scroll})")
        page.wait_for_function(f"Math.abs(window.scrollY - Math.min({scroll}, "
                               "document.documentElement.scrollHeight - innerHeight)) < 2")
        in_view(page, "#submit")
        in_view(page, "#save-status")
    page.context.set_offline(False)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_confirm_and_retrying_stay_in_view_on_the_longest_coreference_item(
        live_server, sized, alice, make_study, width, height):
    participant = participants_invite(study=long_coref_study(make_study, alice), count=1)[0]
    page = sized(width, height)
    begin(page, live_server.url, participant)
    rubric = page.locator("#rubric")
    if rubric.get_attribute("open") is None:  # a phone starts with the guide closed
        page.get_by_text("Rating guide").click()
    expect(rubric).to_have_attribute("open", "")
    expect(page.get_by_text("Key elements").first).to_be_visible()
    # The passage is longer than the screen, the confirm button is not below it.
    assert page.evaluate("document.documentElement.scrollHeight") > height
    in_view(page, "#submit")
    page.get_by_role("radio", name="5 insignificant errors on peripheral elements").click()
    expect(page.locator("input[name=value][value='5']")).to_be_checked()
    check_in_view_while_offline(page)
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    assert Answer.objects.get().value == 5
    assert page.csp_violations == []


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_confirm_and_retrying_stay_in_view_on_a_four_question_item(
        live_server, sized, alice, make_study, width, height):
    participant = participants_invite(study=summeval_study(make_study, alice), count=1)[0]
    page = sized(width, height)
    begin(page, live_server.url, participant)
    in_view(page, "#submit")
    for key in "4321":
        page.keyboard.press(key)
    for key, value in zip(("coherence", "consistency", "fluency", "relevance"), "4321", strict=True):
        expect(page.locator(f"input[name='value:{key}'][value='{value}']")).to_be_checked()
    check_in_view_while_offline(page)
    expect(page.get_by_text(f"Item 2 of {participant.n_assigned}")).to_be_visible()


def test_a_summeval_study_is_answered_end_to_end_by_keyboard_and_mouse(
        live_server, page, alice, make_study):
    study = summeval_study(make_study, alice)
    participant = participants_invite(study=study, count=1)[0]
    assert participant.n_assigned == 3
    begin(page, live_server.url, participant)
    expect(page.get_by_role("group", name="Coherence")).to_be_visible()
    # The rating guide, open on a wide screen at first, is closed once and stays closed.
    expect(page.locator("#rubric")).to_have_attribute("open", "")
    page.get_by_text("Rating guide").click()
    expect(page.locator("#rubric")).not_to_have_attribute("open", "")

    # Item 1, by keyboard: the number keys answer the questions in order; Tab leaves a radio
    # group for the question's "can't judge", Space ticks it, the next number answers the next
    # question; a comment is typed; Enter from a radio confirms.
    page.keyboard.press("4")
    page.keyboard.press("5")
    expect(page.locator("input[name='value:fluency']").first).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("input[name='cant_judge:fluency']")).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator("input[name='value:fluency']").first).to_be_disabled()
    page.keyboard.press("2")
    expect(page.locator("input[name='value:relevance'][value='2']")).to_be_checked()
    relevance = page.get_by_role("group", name="Relevance")
    relevance.get_by_text("Add a comment").click()
    relevance.get_by_role("textbox").fill("The last sentence\nrepeats the first.")
    relevance.get_by_role("radio", name="2").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Item 2 of 3")).to_be_visible()

    # Item 2, by mouse: a required question left out is named, not sent.
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    expect(page.locator("#rubric")).not_to_have_attribute("open", "")
    page.get_by_role("group", name="Fluency").get_by_role("link", name="Guide").click()
    expect(page.locator("#guide-fluency")).to_be_visible()
    expect(page.locator("#guide-fluency")).to_be_focused()
    page.get_by_role("group", name="Coherence").get_by_text("very good").click()
    page.get_by_role("group", name="Consistency").get_by_text("poor", exact=True).click()
    page.get_by_role("group", name="Fluency").get_by_text("fair").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#save-status")).to_have_text("Answer this question first: Relevance")
    expect(page.locator("input[name='value:relevance']").first).to_be_focused()
    page.get_by_role("group", name="Relevance").get_by_text("I can't judge this").click()
    coherence = page.get_by_role("group", name="Coherence")
    coherence.get_by_text("Add a comment").click()
    coherence.get_by_role("textbox").fill("Clear.")
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_text("Item 3 of 3")).to_be_visible()

    # Item 3, by keyboard only.
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    for key in "1234":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    assert page.csp_violations == []

    stored = {}
    for response in Response.objects.filter(participant=participant):
        stored[response.position] = {
            a.question.key: (a.value, a.missing, a.comment)
            for a in response.answers.select_related("question")}
    assert stored == {
        0: {"coherence": (4, "", ""), "consistency": (5, "", ""),
            "fluency": (None, "cant_judge", ""),
            "relevance": (2, "", "The last sentence\nrepeats the first.")},
        1: {"coherence": (5, "", "Clear."), "consistency": (2, "", ""), "fluency": (3, "", ""),
            "relevance": (None, "cant_judge", "")},
        2: {"coherence": (1, "", ""), "consistency": (2, "", ""), "fluency": (3, "", ""),
            "relevance": (4, "", "")},
    }
    events = Response.objects.get(participant=participant, position=0).events
    assert ["select:1:4", "select:2:5", "cant_judge:3"] == [
        e[0] for e in events if e[0].startswith(("select", "cant"))][:3]


def test_an_annotator_goes_back_changes_an_answer_and_cannot_change_a_repeated_one(
        live_server, page, alice, make_study):
    # With a gap of 3, neither of the first two items can be a repeat, nor the first showing
    # of a repeat already shown when the annotator is at the third.
    study = make_study(alice, slug="back", duplicates=1, duplicate_min_gap=3)
    participant = participants_invite(study=study, count=1)[0]
    repeat = Assignment.objects.get(participant=participant, presentation=2)
    first = Assignment.objects.get(participant=participant, item_id=repeat.item_id,
                                   presentation=1)
    assert repeat.position >= first.position + 3
    base = live_server.url
    begin(page, base, participant)
    for n in range(2):
        expect(page.locator("#progress")).to_have_attribute("value", str(n))
        expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
        page.keyboard.press(str(n + 3))
        page.keyboard.press("Enter")

    # Back to the second item: its answer is preselected; a new one is stored as a revision
    # and the page continues where the annotator left off, saying so.
    expect(page.get_by_text("Item 3 of")).to_be_visible()
    page.get_by_role("link", name="Previous item").click()
    expect(page.get_by_text("Item 2 of")).to_be_visible()
    expect(page.locator("input[name=value][value='4']")).to_be_checked()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    page.keyboard.press("6")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Item 3 of")).to_be_visible()
    expect(page.locator("#save-status")).to_have_text("Changed.")
    revisions = list(Response.objects.filter(participant=participant, position=1)
                     .order_by("revision").values_list("revision", "is_current", "answers__value"))
    assert revisions == [(1, False, 4), (2, True, 6)]

    def answer_next(value: str) -> None:
        expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
        answered = int(page.locator("#progress").get_attribute("value"))
        page.keyboard.press(value)
        page.keyboard.press("Enter")
        expect(page.locator("#progress")).to_have_attribute("value", str(answered + 1))

    while Response.objects.filter(participant=participant, position=first.position).count() == 0:
        answer_next("2")

    # A second tab opens the first showing of the repeated item while it can still change…
    other = page.context.new_page()
    other.goto(f"{base}/a/{participant.token}/item/{first.position}/")
    expect(other.locator("#answer-form")).to_have_attribute("data-ready", "true")
    expect(other.locator("#submit")).to_be_visible()

    # …then the first tab goes on until the repeat has been shown.
    while True:
        expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
        if Assignment.objects.get(pk=repeat.pk).shown_at is not None:
            break
        answer_next("2")

    # The change sent from the older tab is refused with a plain message, nothing stored.
    kept = list(Response.objects.filter(participant=participant, item_id=first.item_id,
                                        presentation=1).values_list("pk", flat=True))
    other.keyboard.press("0")
    other.keyboard.press("Enter")
    expect(other.locator("#save-status")).to_have_text("This answer can no longer be changed.")
    expect(other.get_by_role("link", name="Continue", exact=True)).to_be_visible()
    assert list(Response.objects.filter(participant=participant, item_id=first.item_id,
                                        presentation=1).values_list("pk", flat=True)) == kept

    # Gone back to now, it shows its answer read-only, without saying why.
    page.goto(f"{base}/a/{participant.token}/item/{first.position}/")
    expect(page.locator("#locked-note")).to_have_text("This answer can no longer be changed.")
    expect(page.get_by_role("button", name="Confirm")).to_have_count(0)
    checked = page.locator("input[name=value]:checked")
    expect(checked).to_be_disabled()
    assert "repeat" not in page.content().lower()
    page.get_by_role("link", name="Continue", exact=True).click()
    expect(page.locator("#progress")).to_have_attribute(
        "value", str(Assignment.objects.get(pk=repeat.pk).position))
