"""The dashboard's Comparisons section in Chromium at 1280 and 390 px (issue 25, point 4): its
two charts draw, the page never scrolls sideways (the wide tables scroll inside their own box,
reached by keyboard), it passes axe-core, and the folded output table opens. The section reads
a run whose comparisons sections follow the contract (tests/analysis/test_dashboard_comparisons
.py); set CONCORD_SHOTS to a folder to keep its screenshots."""

import json
import os
from pathlib import Path

import pytest

from tests.analysis.test_dashboard_comparisons import RANKED, with_comparisons
from tests.analysis.test_dashboard_readable import analysed, four_annotators

from .conftest import login
from .test_accessibility import AXE, SETTLED, TAGS
from .test_dashboard_readable import NO_SIDEWAYS_SCROLL, charts_drawn

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

RUN_AXE_ON = """async ([selectors, tags]) => {
  const result = await axe.run({include: selectors.map(s => [s])},
                               {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + '  ' + n.html.slice(0, 120))}));
}"""
CHARTS = ("comparison-strengths-preference", "comparison-wins-preference")


@pytest.fixture
def compared_study(alice, make_study):
    study = four_annotators(alice, make_study)
    with_comparisons(analysed(study))
    return study


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_comparisons_section_reads_at_both_widths(live_server, sized, compared_study,
                                                      tmp_path, width, height):
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{compared_study.slug}/results/")
    charts_drawn(page)
    section = page.locator("#comparisons")
    assert section.get_by_role("heading", level=2).inner_text() == (
        "Comparisons: which is preferred")
    for name in CHARTS:
        assert page.locator(f"#chart-{name}[data-chart-state=rendered]").count() == 1, name
    rows = page.locator("#comparison-scores-preference tbody tr")
    assert [r.get_attribute("data-name") for r in rows.all()] == RANKED
    # the outputs are folded until asked for
    outputs = page.locator("#comparison-output-scores-preference")
    assert not outputs.is_visible()
    page.locator("#comparison-outputs-preference summary").click()
    assert outputs.is_visible() and outputs.locator("tbody tr").count() == 8
    assert page.locator("#comparison-consistency-preference tr.flagged").count() == 1
    assert page.evaluate("innerWidth") == width
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate(
        "document.documentElement.scrollWidth")
    for box in page.locator("#comparisons figure.chart").all():
        assert box.bounding_box()["x"] + box.bounding_box()["width"] <= width + 1
    assert page.csp_violations == []
    # axe-core's WCAG 2.1 A and AA rules (tests/e2e/test_accessibility.py) on the section and
    # on the table of contents that links it (the rest of this page is other sections' tests')
    page.wait_for_function(SETTLED, timeout=30_000)
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    findings = page.evaluate(RUN_AXE_ON, [["#comparisons", "nav.toc"], TAGS])
    assert findings == [], json.dumps(findings, indent=1)[:3000]
    if width < 1280:  # a table wider than the phone scrolls in a box named by its caption
        box = page.get_by_role("region", name="preference: systems by strength, best first",
                               exact=True)
        assert box.evaluate("b => b.scrollWidth > b.clientWidth && b.tabIndex === 0")
    else:  # it fits: no useless tab stop
        assert page.locator("#comparison-scores-preference").evaluate(
            "t => t.parentElement.tabIndex") == -1
    folder = Path(os.environ.get("CONCORD_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"comparisons-{width}.png"
    section.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("CONCORD_SHOTS"):  # and in screens' heights, to look at them
        top = section.bounding_box()
        y = page.evaluate("scrollY") + top["y"]
        for n in range(int(top["height"] // height) + 1):
            page.screenshot(path=str(folder / f"comparisons-{width}-part{n + 1}.png"),
                            full_page=True, clip={"x": 0, "y": y + n * height, "width": width,
                                                  "height": min(height, top["height"] - n * height)})
