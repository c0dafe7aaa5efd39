"""The researcher maps the columns of a Google Forms export on screen, by keyboard at 1280 px
and by touch at 390 px, then previews and imports it (issue 23, point 5)."""

import csv
import io
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Answer
from studies.models import Participant

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEMS = "id,text\n" + "".join(f"q{n},Passage {n}: Marie met her brother.\n" for n in range(1, 4))


def as_csv(rows) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    return out.getvalue().encode()


# Column 6's header names no item id: the researcher says which item it is.
EXPORT = as_csv([
    ["Timestamp", "Email address", "Your name", "Rate passage q1 [0 = bad … 7 = good]",
     "Rate passage q2 [0 = bad … 7 = good]", "Rate the third passage [0 = bad … 7 = good]"],
    ["2024/03/05 09:00:00", "zoe@example.org", "Zoe", "1", "2", "3"],
    ["2024/03/05 09:01:00", "mia@example.org", "Mia", "7", "", "4"],
])
SHOTS = os.environ.get("CONCORD_SHOTS_DIR")  # set: the pages are saved there to be looked at


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name))  # the window, then the whole page
        page.screenshot(path=str(Path(SHOTS) / name.replace(".png", "-full.png")),
                        full_page=True)


def upload(page, base: str, slug: str) -> None:
    page.goto(f"{base}/studies/{slug}/responses/import/")
    page.set_input_files("#id_file", {"name": "Form responses 1.csv", "mimeType": "text/csv",
                                      "buffer": EXPORT})
    shot(page, f"upload-{page.viewport_size['width']}.png")
    page.get_by_role("button", name="Map the columns on screen").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Map the columns of Form responses 1.csv")
           ).to_be_visible()


def test_a_researcher_maps_the_columns_by_keyboard_and_imports(live_server, sized, alice,
                                                               make_study):
    study = make_study(alice, slug="forms", items=ITEMS)
    page = sized(1280, 800)
    login(page, live_server.url, "alice", "alice-password-1")
    upload(page, live_server.url, study.slug)
    expect(page.get_by_label("Column 2 holds")).to_have_value("annotator")
    expect(page.get_by_label("Column 3 holds")).to_have_value("ignore")
    expect(page.get_by_label("Column 4: item id")).to_have_value("q1")
    expect(page.get_by_label("Column 6 holds")).to_have_value("meta")  # not guessed
    box = page.get_by_role("region", name="Columns of Form responses 1.csv")
    box.focus()
    expect(box).to_be_focused()  # the wide table's box is reachable by keyboard
    shot(page, "mapper-1280.png")

    # Column 6 by keyboard: choose "an item's answers" by typing, Tab to its item, type it.
    page.get_by_label("Column 6 holds").focus()
    page.keyboard.type("an item's")
    expect(page.get_by_label("Column 6 holds")).to_have_value("item")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Column 6: item id")).to_be_focused()
    page.keyboard.type("q3")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Column 6: question")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Check the mapping")).to_be_focused()
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", name="Preview: Form responses 1.csv")).to_be_visible()
    summary = page.locator("#import-summary")
    expect(summary.locator("[data-summary=annotators]")).to_have_text("2")
    expect(summary.locator("[data-summary=answers]")).to_have_text("5")
    page.get_by_role("button", name="Confirm import").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/studies/{study.slug}/")
    expect(page.get_by_text("Imported 5 answers of 2 annotators")).to_be_visible()
    assert Participant.objects.get(external_id="mia@example.org").meta == {
        "Timestamp": "2024/03/05 09:01:00"}
    assert sorted(Answer.objects.filter(response__participant__external_id="mia@example.org")
                  .values_list("response__item__external_id", "value")) == [("q1", 7.0),
                                                                           ("q3", 4.0)]
    assert page.csp_violations == []


def test_on_a_phone_each_column_is_a_block_and_a_problem_names_its_column(
        live_server, sized, alice, make_study):
    study = make_study(alice, slug="forms", items=ITEMS)
    page = sized(390, 844)
    login(page, live_server.url, "alice", "alice-password-1")
    upload(page, live_server.url, study.slug)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
    holds = page.get_by_label("Column 6 holds")
    holds.tap()
    holds.select_option("item")
    page.get_by_label("Column 6: item id").tap()
    page.get_by_label("Column 6: item id").fill("q1")  # q1 twice: a problem
    shot(page, "mapper-390.png")
    page.get_by_role("button", name="Check the mapping").tap()
    problems = page.locator("#problems tbody tr")
    expect(problems).to_have_count(1)
    expect(problems.first).to_contain_text("column 6 'Rate the third passage")
    expect(problems.first).to_contain_text("and column 4 both map to item q1")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "mapper-problems-390.png")
    problems.first.get_by_role("link", name="column 6").tap()  # leads to the column's choice
    expect(page.get_by_label("Column 6 holds")).to_be_in_viewport()
    assert not Participant.objects.filter(study=study).exists()
