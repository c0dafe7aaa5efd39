"""The judges page in Chromium at a desktop and a phone width: a judge's file uploaded by
keyboard, its run listed, a bad file's problems shown, under the strict CSP (docs/judges.md).

With CONCORD_SHOTS=<folder>, each page is also saved there as a screenshot."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from judges.models import JudgeAnswer
from judges.services import judge_answers_upload

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SIZES = [(1280, 800), (390, 844)]


def shot(page, name: str) -> None:
    folder = os.environ.get("CONCORD_SHOTS")
    if folder:
        width = page.viewport_size["width"]
        page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
        page.screenshot(path=str(Path(folder) / f"{name}-{width}-screen.png"))


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_judges_file_is_uploaded_by_keyboard(live_server, sized, alice, make_study, tmp_path,
                                               width, height):
    study = make_study(alice, slug="judged")
    key = study.primary_question.key
    judge_answers_upload(study=study, name="claude-3.5 judge", model="claude-3-5-sonnet",
                         temperature=0.0, date="2025-05-02", filename="claude.csv",
                         data=f"item,value,question,run\ni1,3,{key},1\ni2,4,{key},1\n"
                              f"i1,3,{key},2\ni2,5,{key},2\n".encode())
    good = tmp_path / "gpt.csv"
    good.write_text(f"item,value,question,rationale\ni1,4,{key},fine\ni2,6,{key},\n"
                    f"i3,2,{key},odd\n")
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/judged/")
    page.click("#judges-link")
    expect(page.locator("h1")).to_have_text("LLM judges")
    expect(page.locator("#judges")).to_contain_text("claude-3.5 judge")
    # by keyboard: the name, the model, then the file chosen and the form sent with Enter
    page.focus("#id_name")
    page.keyboard.type("gpt-4o-mini judge")
    page.keyboard.press("Tab")
    page.keyboard.type("gpt-4o-mini-2024-07-18")
    page.set_input_files("#id_file", str(good))
    page.focus("#judge-submit")
    page.keyboard.press("Enter")
    expect(page.locator("#judges")).to_contain_text("gpt-4o-mini judge")
    expect(page.locator("body")).to_contain_text("Imported 3 answers of gpt-4o-mini judge")
    assert JudgeAnswer.objects.filter(run__judge__name="gpt-4o-mini judge").count() == 3
    shot(page, "judges")
    bad = tmp_path / "bad.csv"
    bad.write_text(f"item,value,question\ni1,9,{key}\nnope,1,{key}\n")
    page.fill("#id_name", "broken")
    page.set_input_files("#id_file", str(bad))
    page.focus("#judge-submit")
    page.keyboard.press("Enter")
    expect(page.locator("#judge-errors")).to_contain_text("nothing was imported")
    expect(page.locator("#judge-errors tbody tr")).to_have_count(2)
    expect(page.locator("#judges")).to_contain_text("claude.csv")
    shot(page, "judges-errors")
    assert page.csp_violations == []
