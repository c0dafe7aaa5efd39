"""The researcher imports a Google Forms export in the browser: preview, confirm, progress."""

import csv
import io

import pytest
from playwright.sync_api import expect

from annotation.models import Response
from studies.models import Participant

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEMS = "id,text\n" + "".join(f"q{n},Passage {n}: [Marie] met [her] brother.\n" for n in range(1, 5))


def question(n: int) -> str:
    return f"Rate the annotation of passage {n} [0 = significant errors, … 7 = no errors]"


def as_csv(rows) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    return out.getvalue().encode()


EXPORT = as_csv([
    ["Timestamp", "Email address", *[question(n) for n in range(1, 5)], question(2)],
    ["2024/03/05 09:00:00", "zoe@example.org", "1", "2", "3", "4", "2"],
    ["2024/03/05 09:01:00", "adam@example.org", "5", "", "", "", ""],  # partial
    ["2024/03/05 09:02:00", "mia@example.org", "7", "6", "", "4", "5"],  # one blank
    ["2024/03/05 09:03:00", "adam@example.org", "", "5", "5", "5", "6"],  # the rest
])
ITEM_MAP = as_csv([["column", "item"], *[[question(n), f"q{n}"] for n in range(1, 5)]])


def test_a_researcher_previews_confirms_and_sees_the_imported_progress(
        live_server, page, alice, make_study):
    study = make_study(alice, slug="forms", items=ITEMS)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/")
    page.get_by_role("link", name="Import responses").click()

    page.set_input_files("#id_file", {"name": "Form responses 1.csv", "mimeType": "text/csv",
                                      "buffer": EXPORT})
    page.get_by_label("Wide: one row per annotator").check()
    page.fill("#id_annotator_column", "Email address")
    page.set_input_files("#id_item_map", {"name": "items.csv", "mimeType": "text/csv",
                                          "buffer": ITEM_MAP})
    page.fill("#id_meta_columns", "Timestamp")
    page.get_by_role("button", name="Check the file").click()

    expect(page.get_by_role("heading", name="Preview: Form responses 1.csv")).to_be_visible()
    summary = page.locator("#import-summary")
    for name, value in (("rows", "4"), ("annotators", "3"), ("merged", "1"), ("items", "4"),
                        ("answers", "14"), ("duplicates", "3"), ("blanks", "1")):
        expect(summary.locator(f"[data-summary={name}]")).to_have_text(value)
    expect(page.locator("#preview-annotators tbody tr")).to_have_count(3)
    assert not Response.objects.exists()  # nothing stored before the confirmation

    page.get_by_role("button", name="Confirm import").click()
    page.wait_for_url(f"**/studies/{study.slug}/")
    expect(page.get_by_text("Imported 14 answers of 3 annotators")).to_be_visible()
    rows = page.locator("#progress tbody tr")
    expect(rows).to_have_count(3)
    for n, (email, progress) in enumerate((("zoe@example.org", "5/5"),
                                           ("adam@example.org", "5/5"),
                                           ("mia@example.org", "4/5"))):
        expect(rows.nth(n)).to_contain_text(email)
        expect(rows.nth(n)).to_contain_text(progress)
        expect(rows.nth(n)).to_contain_text("Imported responses")
    assert Participant.objects.get(external_id="adam@example.org").meta == {
        "Timestamp": "2024/03/05 09:03:00"}
    assert page.csp_violations == []


def test_a_bad_file_shows_every_problem_and_imports_nothing(live_server, page, alice,
                                                           make_study):
    study = make_study(alice, slug="forms", items=ITEMS)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/responses/import/")
    page.set_input_files("#id_file", {"name": "long.csv", "mimeType": "text/csv",
                                      "buffer": b"annotator,item,value\nw,q1,9\nw,q404,1\n"})
    page.get_by_label("Long: annotator, item, value").check()
    page.get_by_role("button", name="Check the file").click()
    expect(page.get_by_role("heading", name="2 problems; nothing was imported")).to_be_visible()
    expect(page.locator("#problems tbody tr")).to_have_count(2)
    assert not Participant.objects.filter(study=study).exists()
