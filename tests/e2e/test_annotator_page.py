"""The per-annotator page in Chromium: its timing histogram draws under the strict CSP and counts
exactly the annotator's timed answers; the exclusion needs its confirmation."""

import pytest

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Response
from demo.services import DEMO_PASSWORD, DEMO_USER, demo_seed
from studies.models import Study

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""

# The data of every bar the view drew (Vega-Lite's count is the datum's __count).
BARS = """() => {
  const out = [];
  const walk = node => {
    if (node.marktype === 'rect') node.items.forEach(i => out.push(i.datum.__count));
    (node.items || []).forEach(walk);
  };
  walk(document.getElementById('chart-annotator-timing').chartView.scenegraph().root);
  return out;
}"""


def test_the_clickers_histogram_counts_its_answers_and_exclusion_needs_the_tick(live_server,
                                                                               page):
    _, demos = demo_seed()
    demo = next(d for d in demos if d.study.slug == "demo-coref")
    analysis_run_execute(run_id=analysis_run_create(study=demo.study, enqueue=False).pk)
    (bot,) = [pk for pk, b in demo.behaviours.items() if b == "random"]
    name = demo.study.participants.get(pk=bot).pseudonym
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.add_init_script(WATCH)
    login(page, live_server.url, DEMO_USER, DEMO_PASSWORD)
    page.goto(f"{live_server.url}/studies/demo-coref/results/annotators/{name}/")
    page.wait_for_selector("#chart-annotator-timing[data-chart-state=rendered]")
    timed = Response.objects.filter(participant_id=bot, revision=1,
                                    active_ms__isnull=False).count()
    bars = page.evaluate(BARS)
    assert bars and sum(bars) == timed
    assert page.evaluate("window.__csp") == [] and page.csp_violations == [] and problems == []
    # Unticked, the browser refuses the form: nothing is excluded.
    page.get_by_role("button", name=f"Exclude {name}").click()
    assert page.url.endswith(f"/annotators/{name}/")
    page.get_by_label(f"I confirm: exclude {name}").check()
    page.get_by_role("button", name=f"Exclude {name}").click()
    page.wait_for_url("**/participants/")
    assert name in Study.objects.get(pk=demo.study.pk).analysis_settings["excluded_annotators"]
    assert AnalysisRun.objects.filter(study=demo.study).count() == 1  # a new run is the user's call
