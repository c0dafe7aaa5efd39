"""The researcher imports a file of comparative judgments in the browser, at desktop and phone
width: the page offers the judgments format, the preview counts the comparisons it creates, a
bad file lists its problems with line and column, and the confirmed import stores the choices.
Screenshots go to $CONCORD_SHOTS (default /work/wt/shots/files), outside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Answer
from tests.comparative import comparative_study

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("CONCORD_SHOTS", "/work/wt/shots/files"))
JUDGMENTS = (b"annotator,items,choice,comment\n"
             b"ann1,d1-a|d1-b,d1-b,clearer\n"
             b"ann1,d1-c|d1-a,tie,\n"
             b"ann2,d1-b|d1-a,d1-a,\n")
BAD = (b"annotator,items,choice\n"
       b"ann1,d1-a|d1-z,d1-a\n"
       b"ann1,d1-a|d1-b,d1-c\n")


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_a_researcher_imports_judgments(live_server, sized, alice, width, height):
    study = comparative_study(alice, slug=f"judged-{width}")
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/responses/import/")
    expect(page.locator("#import-comparative")).to_contain_text("judgments")
    # a study of comparative questions only: the judgments format is offered first
    expect(page.get_by_label("Comparative judgments")).to_be_checked()
    shot(page, f"import-judgments-form-{width}.png")

    page.set_input_files("#id_file", {"name": "bad.csv", "mimeType": "text/csv",
                                      "buffer": BAD})
    page.get_by_role("button", name="Check the file").click()
    problems = page.locator("#problems tbody tr")
    expect(problems).to_have_count(2)
    expect(problems.nth(0)).to_contain_text("items")
    expect(problems.nth(0)).to_contain_text("'d1-z' is not an item id")
    expect(problems.nth(1)).to_contain_text("choice")
    shot(page, f"import-judgments-problems-{width}.png")

    page.get_by_label("Comparative judgments").check()
    page.set_input_files("#id_file", {"name": "judgments.csv", "mimeType": "text/csv",
                                      "buffer": JUDGMENTS})
    page.get_by_role("button", name="Check the file").click()
    expect(page.get_by_role("heading", name="Preview: judgments.csv")).to_be_visible()
    summary = page.locator("#import-summary")
    expect(summary.locator("[data-summary=items]")).to_have_text("2")
    expect(summary.locator("[data-summary=answers]")).to_have_text("3")
    expect(page.locator("[data-warning]")).to_contain_text("2 comparisons of outputs")
    shot(page, f"import-judgments-preview-{width}.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1
    assert not Answer.objects.filter(response__participant__study=study).exists()

    page.get_by_role("button", name="Confirm import").click()
    page.wait_for_url(f"**/studies/{study.slug}/")
    expect(page.get_by_text("Imported 3 judged comparisons of 2 annotators")).to_be_visible()
    shot(page, f"import-judgments-done-{width}.png")
    choices = sorted(a.choice["pick"] for a in Answer.objects.filter(
        response__participant__study=study, choice__isnull=False))
    assert choices == ["d1-a", "d1-b", "tie"]
    assert page.csp_violations == []
    # nothing wider than the screen at phone width
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1
