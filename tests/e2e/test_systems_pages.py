"""The items page's system and source filters and the system-level scores page, in Chromium at a
desktop and a phone width, by keyboard, under the strict CSP (docs/systems.md).

With CONCORD_SHOTS=<folder>, each page is also saved there as a screenshot."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GRID = "id,text,system,source\n" + "".join(
    f"doc{d:02d}-{s},Output of {s} for source document {d}: a short summary of the article.,"
    f"{s},doc{d:02d}\n" for d in range(20) for s in ("baseline", "bart-large", "pegasus"))
SIZES = [(1280, 800), (390, 844)]


def shot(page, name: str) -> None:
    folder = os.environ.get("CONCORD_SHOTS")
    if folder:
        width = page.viewport_size["width"]
        page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
        page.screenshot(path=str(Path(folder) / f"{name}-{width}-screen.png"))


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_items_page_filters_by_system_and_source(live_server, sized, alice, make_study,
                                                     width, height):
    make_study(alice, slug="systems", items=GRID, open=False)
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/systems/items/")
    expect(page.locator("#items thead")).to_contain_text("System")
    expect(page.locator("#item-labels")).to_contain_text("3 systems over 20 sources")
    shot(page, "items")
    # by keyboard: the system list changes the table in place
    page.focus("#system")
    page.keyboard.press("ArrowDown")  # the first system after "all systems"
    page.wait_for_url("**system=bart-large**")
    expect(page.locator("#items tbody tr")).to_have_count(20)
    page.fill("#source", "doc07")
    page.press("#source", "Enter")
    page.wait_for_url("**source=doc07**")
    expect(page.locator("#items tbody tr")).to_have_count(1)
    expect(page.locator("#items")).to_contain_text("doc07-bart-large")
    expect(page.locator(".count")).to_contain_text("1 item matches · system bart-large")
    shot(page, "items-filtered")
    assert page.csp_violations == []


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_scores_page_uploads_a_file_and_shows_its_problems(live_server, sized, alice,
                                                               make_study, tmp_path, width,
                                                               height):
    make_study(alice, slug="systems", items=GRID, open=False)
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/systems/items/")
    page.click("#system-scores-link")
    page.wait_for_url("**/system-scores/")
    bad = tmp_path / "bad.csv"
    bad.write_text("system,metric,value\nbaseline,ROUGE-L,high\nbart-large,ROUGE-L,0.41\n"
                   "bart-large,ROUGE-L,0.40\n")
    page.set_input_files("#id_file", str(bad))
    page.click("#scores-form button[type=submit]")
    expect(page.locator("#scores-errors")).to_contain_text("bad.csv: nothing was imported")
    expect(page.locator("#scores-errors")).to_contain_text("already have a value on line 3")
    shot(page, "scores-errors")
    good = tmp_path / "scores.csv"
    good.write_text("System,Metric,Value\nbaseline,ROUGE-L,0.352\nbart-large,ROUGE-L,0.411\n"
                    "pegasus,ROUGE-L,0.418\nbaseline,BERTScore,0.861\nbart-large,BERTScore,"
                    "0.884\npegasus,BERTScore,0.889\nt5-small,BERTScore,0.85\n")
    page.set_input_files("#id_file", str(good))
    page.click("#scores-form button[type=submit]")
    expect(page.locator("ul.messages")).to_contain_text(
        "Imported 6 system-level scores")
    expect(page.locator("body")).to_contain_text("t5-small")  # the skipped row's warning
    expect(page.locator("#scores tbody tr")).to_have_count(3)
    expect(page.locator("#scores")).to_contain_text("0.418")
    shot(page, "scores")
    assert page.csp_violations == []
