"""The dashboard's Judges section in Chromium at 1280 and 390 px (issue 27, point 3): one row
per judge and question with its decision in words, the first record's details open with its
chart drawn, another record's details opened by keyboard with its chart drawn full width, the
page never scrolling sideways, axe-core clean; and the view with judges announced above every
section. The section reads a run whose judges sections follow the contract
(tests/analysis/judges_document.py); set CONCORD_SHOTS to a folder to keep its screenshots."""

import json
import os
from pathlib import Path

import pytest

from tests.analysis.judges_document import with_judges
from tests.analysis.test_dashboard_readable import analysed, four_annotators

from .conftest import login
from .test_accessibility import AXE, SETTLED, TAGS
from .test_comparisons_section import RUN_AXE_ON
from .test_dashboard_readable import NO_SIDEWAYS_SCROLL, charts_drawn

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def judged_study(alice, make_study):
    study = four_annotators(alice, make_study)
    with_judges(analysed(study))
    return study


def _shots(page, section, folder: Path, name: str, width: int, height: int) -> None:
    section.screenshot(path=str(folder / f"{name}-{width}.png"))
    top = section.bounding_box()
    y = page.evaluate("scrollY") + top["y"]
    for n in range(int(top["height"] // height) + 1):
        page.screenshot(path=str(folder / f"{name}-{width}-part{n + 1}.png"), full_page=True,
                        clip={"x": 0, "y": y + n * height, "width": width,
                              "height": min(height, top["height"] - n * height)})


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_judges_section_reads_at_both_widths(live_server, sized, judged_study, tmp_path,
                                                 width, height):
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{judged_study.slug}/results/")
    charts_drawn(page)
    section = page.locator("#judges")
    assert section.get_by_role("heading", level=2).inner_text() == (
        "Judges: may an LLM judge replace an annotator?")
    rows = page.locator("#judges-decisions tbody tr")
    assert [(r.get_attribute("data-judge"), r.get_attribute("data-question"))
            for r in rows.all()] == [("good", "adequacy"), ("good", "preference"),
                                     ("first-picker", "adequacy"),
                                     ("first-picker", "preference")]
    assert "may replace an annotator of this study at ε = 0.2" in rows.nth(0).inner_text()
    assert "may not replace an annotator" in rows.nth(2).inner_text()
    assert "not tested:" in rows.nth(1).inner_text()
    # the first record's details are open, its chart drawn; another opens by keyboard
    assert page.locator("#chart-judge-good-adequacy-raw[data-chart-state=rendered]").count() == 1
    details = page.locator("#judge-first-picker-preference-choice")
    details.locator("summary").focus()
    page.keyboard.press("Enter")
    assert details.evaluate("d => d.open")
    chart = page.locator("#chart-judge-first-picker-preference-choice")
    assert chart.get_attribute("data-chart-state") == "rendered"
    assert chart.locator("svg").bounding_box()["width"] > 200  # drawn at its size, not 0 wide
    assert "the people 0.58" in details.inner_text()
    assert page.evaluate("innerWidth") == width
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate(
        "document.documentElement.scrollWidth")
    for box in page.locator("#judges figure.chart").all():
        if box.is_visible():
            assert box.bounding_box()["x"] + box.bounding_box()["width"] <= width + 1
    assert page.csp_violations == []
    page.wait_for_function(SETTLED, timeout=30_000)
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    findings = page.evaluate(RUN_AXE_ON, [["#judges", "nav.toc"], TAGS])
    assert findings == [], json.dumps(findings, indent=1)[:3000]
    folder = Path(os.environ.get("CONCORD_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    _shots(page, section, folder, "judges", width, height)
    assert (folder / f"judges-{width}.png").stat().st_size > 10_000


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_view_with_judges_is_announced_above_every_section(live_server, sized, alice,
                                                               make_study, tmp_path, width,
                                                               height):
    study = four_annotators(alice, make_study)
    with_judges(analysed(study), view=True)
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/results/")
    banner = page.get_by_role("note").filter(has_text="With judges:").first
    assert banner.is_visible()
    assert banner.bounding_box()["y"] < page.locator("#run").bounding_box()["y"]
    assert "judge: good, judge: first-picker" in banner.inner_text()
    assert page.locator("#with-judges-badge").inner_text() == "with judges"
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    folder = Path(os.environ.get("CONCORD_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"with-judges-banner-{width}.png"))
