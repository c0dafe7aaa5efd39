"""No researcher page scrolls sideways on a phone (issue 23, point 11): at 390 px every page fits
its width; a wide table scrolls inside its own box, never the page."""

from __future__ import annotations

import pytest

from studies.models import Study

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FITS = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"


@pytest.fixture
def narrow(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    yield page
    context.close()


def test_every_researcher_page_fits_a_phone(live_server, narrow, make_study, alice):
    from analysis.services import analysis_run_create, analysis_run_execute
    from demo.services import demo_seed
    from studies.services import member_add
    from tests.analysis.test_questions import ITEMS, Summeval

    demo_seed()  # the demo studies' titles and presets made the studies list 5 px too wide
    for slug in ("demo-coref", "demo-similarity"):
        member_add(study=Study.objects.get(slug=slug), username="alice", role="viewer",
                   user=None)
    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=ITEMS)
    Summeval(study)
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    login(narrow, live_server.url, "alice", "alice-password-1")
    base = f"{live_server.url}/studies/{study.slug}"
    for url in (f"{live_server.url}/studies/", f"{base}/", f"{base}/results/",
                f"{base}/results/?question=fluency", f"{base}/participants/", f"{base}/items/",
                f"{base}/settings/", f"{base}/history/", f"{live_server.url}/account/tokens/",
                f"{live_server.url}/methods/alpha/"):
        narrow.goto(url)
        assert narrow.evaluate(FITS), (url, narrow.evaluate(
            "() => document.documentElement.scrollWidth"))


def test_the_private_links_stay_on_one_line_on_a_phone(live_server, narrow, make_study, alice):
    from studies.services import participants_invite

    study = make_study(alice)
    participants_invite(study=study, count=2)
    login(narrow, live_server.url, "alice", "alice-password-1")
    narrow.goto(f"{live_server.url}/studies/{study.slug}/")
    links = narrow.locator("#progress code.copy")
    assert links.count() == 2
    for n in range(2):
        box = links.nth(n).bounding_box()
        line = float(links.nth(n).evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
        assert box["height"] <= 1.5 * line, box  # one line, not one every three characters
        assert links.nth(n).evaluate("e => e.textContent").startswith("http")
