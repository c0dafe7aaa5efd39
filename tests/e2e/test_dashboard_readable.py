"""The results dashboard read in Chromium, 390 px wide, as a researcher without the repository.

Both demo studies and a 4-annotator study, every chart drawn: the page never scrolls sideways
(wide tables and charts scroll inside their own box), it names no repository path or seed file,
shows no bare ISO timestamp as text, and every "how it is computed" link opens the method's page,
which does not scroll sideways either. The Django-client half, faster, is
tests/analysis/test_dashboard_readable.py.
"""

import re

import pytest

from analysis.methods import title_of
from demo.services import DEMO_PASSWORD, DEMO_USER, demo_seed
from tests.analysis.test_dashboard_readable import ISO, REPOSITORY, analysed, four_annotators

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"


def charts_drawn(page) -> None:
    """Wait until every chart of the page has drawn (or said why it could not)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('figure.chart')].every(
             f => ['rendered', 'error'].includes(f.dataset.chartState))""", timeout=30_000)


def test_the_dashboards_read_on_a_phone_without_the_repository(live_server, browser,
                                                               make_study):
    owner, demos = demo_seed()
    studies = [d.study for d in demos] + [four_annotators(owner, make_study)]
    runs = {study.slug: analysed(study) for study in studies}
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(15_000)
    login(page, live_server.url, DEMO_USER, DEMO_PASSWORD)
    opened = set()
    for study in studies:
        page.goto(f"{live_server.url}/studies/{study.slug}/results/")
        charts_drawn(page)
        assert page.locator("figure.chart[data-chart-state=rendered]").count() >= 5, study.slug
        assert page.evaluate(NO_SIDEWAYS_SCROLL), (
            study.slug, page.evaluate("document.documentElement.scrollWidth"))
        html = page.content()
        assert not REPOSITORY.findall(html), (study.slug, REPOSITORY.findall(html)[:5])
        text = page.inner_text("body")
        assert not ISO.search(text), (study.slug, ISO.findall(text))
        assert re.search(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC", text)
        links = page.locator("a.method")
        hrefs = {links.nth(i).get_attribute("href") for i in range(links.count())}
        assert len(hrefs) >= 7, hrefs
        for href in sorted(hrefs):
            assert f"/runs/{runs[study.slug].pk}/methods/" in href
            response = page.request.get(live_server.url + href)
            name = href.rstrip("/").rsplit("/", 1)[1]
            assert response.status == 200, href
            assert title_of(name).replace("'", "&#x27;") in response.text(), href
            opened.add(name)
    assert {"alpha", "trust", "duplicates", "heuristics", "quality", "competence",
            "noise"} <= opened
    # A method page, reached by its link, reads at the same width; its formulas' blocks scroll.
    page.locator("a.method").first.click()
    page.wait_for_url("**/methods/**")
    assert page.get_by_role("heading", level=1).inner_text() == title_of("alpha")
    assert page.locator("#settings-table").is_visible()
    for name in ("alpha", "trust", "williams", "quality"):
        page.goto(f"{live_server.url}/studies/four/results/runs/{runs['four'].pk}/methods/{name}/")
        assert page.evaluate(NO_SIDEWAYS_SCROLL), name
    page.goto(f"{live_server.url}/methods/references/")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    context.close()
