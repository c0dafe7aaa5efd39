"""The item page's layout in a real browser: what is rated starts on the first screen beside a
visible Confirm, on a desktop and on a phone; the keyboard hint only where there is a keyboard;
a choice not confirmed yet survives a reload."""

import pytest
from playwright.sync_api import expect

from annotation.models import Answer
from studies.services import items_import, participants_invite, study_create, study_open

from .test_item_page import SIZES, begin, in_view, long_coref_study, summeval_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


LONG_A = ("The committee, after a long and frequently heated debate that lasted well into the "
          "night, finally agreed to postpone the vote on the new budget until the auditors had "
          "delivered their report on the previous year's spending. ") * 3
LONG_B = ("After hours of argument the committee put off the budget vote until the auditors "
          "report on last year's spending, which some members called irregular. ") * 3


def long_pair_study(alice):
    study = study_create(owner=alice, slug="long-pairs", title="Long pairs",
                         preset="similarity-1-5")
    rows = "id,text_a,text_b\n" + "".join(f'p{i},"{LONG_A}","{LONG_B} ({i})"\n' for i in range(3))
    items_import(study=study, data=rows.encode(), filename="pairs.csv")
    study_open(study=study)
    return study


# A rating guide longer than a screen, as a researcher may well write one.
LONG_GUIDE = "Rate how well the text reads.\n\n" + "".join(
    f"- **{n}**: a point of the guide that takes a whole line to explain, number {n}\n"
    for n in range(1, 31))


def long_guide_study(alice):
    questions = [{"key": "reads", "prompt": "How well does it read?", "scale": "likert-1-5",
                  "required": True, "rubric": LONG_GUIDE}]
    study = study_create(owner=alice, slug="long-guide", title="Long guide", questions=questions,
                         display="text")
    rows = "id,text\n" + "".join(f'i{i},"{LONG_A}"\n' for i in range(3))
    items_import(study=study, data=rows.encode(), filename="items.csv")
    study_open(study=study)
    return study


RATED = {"text": ".item-body .passage", "summeval": ".item-body .passage",
         "pair": ".item-body .pair", "coref": "section.coref-view:has(#coref-system)"}


def rated_text_on_first_screen(page, selector: str) -> None:
    """The rated text's top lies on the screen at the top of the page, Confirm in view."""
    page.evaluate("window.scrollTo(0, 0)")
    box = page.locator(selector).first.bounding_box()
    height = page.viewport_size["height"]
    assert box is not None and 0 <= box["y"] < height - 40, (selector, box, height)
    in_view(page, "#submit")


@pytest.mark.parametrize("kind", ["text", "summeval", "pair", "coref"])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_it_shows_what_is_rated_on_the_first_screen(
        live_server, sized, alice, make_study, kind, width, height):
    study = {"text": lambda: long_guide_study(alice),
             "summeval": lambda: summeval_study(make_study, alice),
             "pair": lambda: long_pair_study(alice),
             "coref": lambda: long_coref_study(make_study, alice)}[kind]()
    participant = participants_invite(study=study, count=1)[0]
    page = sized(width, height)
    begin(page, live_server.url, participant)
    rated_text_on_first_screen(page, RATED[kind])
    if participant.n_assigned > 1:
        # Every later item starts with the guide folded.
        for fieldset in page.locator("fieldset.question").all():
            fieldset.locator("input[type=radio]").first.check()
        page.locator("#submit").click()
        expect(page.get_by_text(f"Item 2 of {participant.n_assigned}")).to_be_visible()
        expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
        expect(page.locator("#rubric")).not_to_have_attribute("open", "")
        rated_text_on_first_screen(page, RATED[kind])
    # The guide stays a disclosure the keyboard opens (and a tap); open, it scrolls within
    # itself and the text still starts on the first screen.
    rubric = page.locator("#rubric")
    page.locator("#rubric > summary").focus()
    if rubric.get_attribute("open") is not None:  # a single item: still the first, still open
        page.keyboard.press("Enter")
        expect(rubric).not_to_have_attribute("open", "")
    page.keyboard.press("Enter")
    expect(rubric).to_have_attribute("open", "")
    expect(page.locator("#rubric .rubric-body")).to_be_visible()
    rated_text_on_first_screen(page, RATED[kind])
    assert page.csp_violations == []


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_it_gives_the_keyboard_hint_only_where_there_is_a_keyboard(
        live_server, sized, alice, make_study, width, height):
    participant = participants_invite(study=summeval_study(make_study, alice), count=1)[0]
    page = sized(width, height)
    page.goto(f"{live_server.url}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    on_instructions = page.locator(".shortcuts-hint")
    expect(page.get_by_text("You can go back to an earlier item")).to_be_visible()
    page.get_by_role("link", name="Start").click()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    hint = page.locator("#shortcuts")
    if width < 600:
        expect(hint).to_be_hidden()
        expect(page.locator("#submit kbd")).to_be_hidden()
    else:
        expect(hint).to_be_visible()
        expect(page.locator("#submit kbd")).to_be_visible()
    page.go_back()
    if width < 600:
        expect(on_instructions).to_be_hidden()
    else:
        expect(on_instructions).to_be_visible()


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_choice_not_confirmed_yet_survives_a_reload(
        live_server, sized, alice, make_study, width, height):
    participant = participants_invite(study=summeval_study(make_study, alice), count=1)[0]
    page = sized(width, height)
    begin(page, live_server.url, participant)
    coherence = page.get_by_role("group", name="Coherence")
    coherence.get_by_text("very good").click()
    fluency = page.get_by_role("group", name="Fluency")
    fluency.get_by_text("I can't judge this").click()
    relevance = page.get_by_role("group", name="Relevance")
    relevance.get_by_text("Add a comment").click()
    relevance.get_by_role("textbox").fill("Too long.")
    page.reload()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    expect(page.locator("input[name='value:coherence'][value='5']")).to_be_checked()
    expect(page.locator("input[name='cant_judge:fluency']")).to_be_checked()
    expect(page.locator("input[name='value:fluency']").first).to_be_disabled()
    expect(page.locator("textarea[name='comment:relevance']")).to_have_value("Too long.")
    drafts = "Object.keys(localStorage).filter((k) => k.startsWith('concord-draft:')).length"
    assert page.evaluate(drafts) == 1
    page.get_by_role("group", name="Consistency").get_by_text("poor", exact=True).click()
    page.get_by_role("group", name="Relevance").get_by_text("fair").click()
    page.locator("#submit").click()
    expect(page.get_by_text("Item 2 of 3")).to_be_visible()
    # Stored: the kept choice is dropped, and the next item starts empty.
    assert page.evaluate(drafts) == 0
    expect(page.locator("input[name='value:coherence']:checked")).to_have_count(0)
    stored = {a.question.key: (a.value, a.missing, a.comment)
              for a in Answer.objects.select_related("question")}
    assert stored == {"coherence": (5, "", ""), "consistency": (2, "", ""),
                      "fluency": (None, "cant_judge", ""), "relevance": (3, "", "Too long.")}
