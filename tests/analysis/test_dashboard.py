"""The results dashboard: sections from the stored document, run control, downloads, scoping."""

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from analysis.charts import build_charts
from analysis.models import AnalysisRun
from analysis.selectors import full_document
from analysis.services import analysis_run_create, analysis_run_execute
from studies.selectors import pseudonyms as stored_pseudonyms

pytestmark = pytest.mark.django_db

# session, user, study, recent runs, latest finished run, participant counts, the questions (a
# comparative one offers the judgments export), whether the study has LLM judges (their export);
# the first visit reads the run's document apart (analysis.selectors.run_document keeps it
# decoded for the next ones)
DASHBOARD_QUERIES = 8


@pytest.fixture
def demos(demo_studies):
    _, created = demo_studies
    return {d.study.slug: d for d in created}


@pytest.fixture
def owner_client(demos):
    client = Client()
    client.force_login(demos["demo-coref"].study.owner)
    return client


def finished_run(study, **overrides) -> AnalysisRun:
    run = analysis_run_create(study=study, enqueue=False, overrides=overrides)
    return analysis_run_execute(run_id=run.pk)


def url(view, study, **kwargs):
    return reverse(f"analysis:{view}", kwargs={"slug": study.slug, **kwargs})


def planted(demo, behaviour) -> str:
    names = stored_pseudonyms(study=demo.study)
    (pk,) = [pk for pk, b in demo.behaviours.items() if b == behaviour]
    return names[pk]


@pytest.mark.parametrize("slug", ["demo-coref", "demo-similarity"])
def test_the_demos_fast_random_clicker_and_straight_liner_are_shown_flagged(owner_client, demos,
                                                                            slug):
    demo = demos[slug]
    finished_run(demo.study)
    html = owner_client.get(url("dashboard", demo.study)).content.decode()
    table = html[html.index('id="ranking-table"'):]
    table = table[:table.index("</table>")]
    rows = dict(re.findall(r'<th scope="row"><a href="[^"]*">(A\d+)</a></th>(.*?)</tr>', table,
                           re.S))
    assert len(rows) == len(demo.behaviours)
    fast = [name for name, cells in rows.items() if ">Too fast</span>" in cells]
    straight = [name for name, cells in rows.items() if ">Straight-lining</span>" in cells]
    assert fast == [planted(demo, "random")]
    assert planted(demo, "constant") in straight
    # the clicker is last or nearly so by both competence models
    competence = re.findall(r'<td class="num">[-0-9.]+ <small>\((\d+)\)</small></td>',
                            rows[planted(demo, "random")])
    assert len(competence) == 3 and all(int(rank) >= len(rows) - 2 for rank in competence[1:])


def test_before_any_run_it_offers_the_run_form(owner_client, demos):
    study = demos["demo-coref"].study
    html = owner_client.get(url("dashboard", study)).content.decode()
    assert "No finished analysis yet" in html
    assert 'id="run-form"' in html and "csrfmiddlewaretoken" in html


def test_it_shows_every_section_of_the_stored_results(owner_client, demos):
    demo = demos["demo-coref"]
    run = finished_run(demo.study)
    response = owner_client.get(url("dashboard", demo.study))
    html = response.content.decode()
    assert response.status_code == 200
    for anchor in ("overview", "agreement", "trust", "duplicates", "timing", "heuristics",
                   "correlations", "gaps", "weights", "noise", "exports"):
        assert f'id="{anchor}"' in html, anchor
    # the planted random clicker is the named outlier; four scales each get an alpha table
    outliers = re.search(r'id="trust-outliers">([^<]*)<', html).group(1)
    assert outliers == planted(demo, "random")
    assert len(re.findall(r'<table class="table alpha"', html)) == 4
    # the methods are cited by author and year
    text = re.sub(r"<[^>]*>", "", html)
    for citation in ("Trust coefficients (Borovikova et al. 2022, Algorithm 1)",
                     "Solomon et al. 2021, §5.1:", "Solomon et al. 2021, table 3:",
                     "Borovikova et al. 2022, table 2:", "Borovikova et al. 2022, table 3:",
                     "Beigman Klebanov and Beigman 2009:"):
        assert citation in text, citation
    # ... each a link to its full entry on the references page
    assert ('<a class="cite" href="/methods/references/#ref-borovikova-et-al-2022">'
            "Borovikova et al. 2022</a>") in html
    # every chart of the document is on the page with its spec as a JSON data block
    charts = build_charts(run.results, scale="raw", level=run.settings["level"])
    assert charts, "the demo document yields charts"
    for chart in charts:
        assert f'data-chart-spec="spec-{chart.name}"' in html
        block = re.search(rf'<script id="spec-{re.escape(chart.name)}" type="application/json">'
                          r"(.*?)</script>", html, re.S)
        assert json.loads(block.group(1)) == chart.spec
    # no inline script: every <script> has a src or is a JSON data block
    for tag in re.findall(r"<script[^>]*>", html):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    assert "style=" not in html


def test_the_completion_rate_counts_consenting_people_only(owner_client, demos):
    from studies.services import participants_invite

    demo = demos["demo-coref"]
    finished_run(demo.study)
    before = re.search(r'id="completion">([^<]*)<small>([^<]*)<',
                       owner_client.get(url("dashboard", demo.study)).content.decode()).groups()
    consented = demo.study.participants.filter(consented_at__isnull=False).count()
    assert consented and before[1] == f"of {consented} who consented"
    participants_invite(study=demo.study, count=5)  # links made, never opened
    after = re.search(r'id="completion">([^<]*)<small>([^<]*)<',
                      owner_client.get(url("dashboard", demo.study)).content.decode()).groups()
    assert after == before


def test_the_per_annotator_sections_follow_the_chosen_scale(owner_client, demos):
    study = demos["demo-coref"].study
    run = finished_run(study)
    html = owner_client.get(url("dashboard", study) + "?scale=gravity").content.decode()
    assert 'value="gravity" selected' in html
    trust = next(t for t in run.results["trust"] if t["scale"] == "gravity" and t["items"] == "all")
    table = html[html.index('id="trust-table"'):html.index("</table>", html.index('id="trust-table"'))]
    shown = re.findall(r'<th scope="row">(A\d+)', table)
    assert set(shown) == set(trust["coefficients"])
    # an unknown scale falls back to raw rather than failing
    assert owner_client.get(url("dashboard", study) + "?scale=nope").status_code == 200


def test_the_trust_section_says_which_estimate_each_coefficient_is(owner_client, demos):
    """Exact below the exact limit; sampled (here: the exact limit lowered to 2 for the demo's
    12 annotators) shows every coefficient ± its Monte-Carlo error, and says so."""
    study = demos["demo-coref"].study

    def section():
        html = owner_client.get(url("dashboard", study)).content.decode()
        return html[html.index('id="trust-title"'):html.index('id="duplicates"')]

    finished_run(study)
    exact = section()
    assert "<strong>Exact</strong>: every one of the 4083 subsets" in exact
    assert "±" not in exact
    run = finished_run(study, trust_max_exact=2, trust_samples=2000)
    record = next(t for t in run.results["trust"] if t["scale"] == "raw" and t["items"] == "all")
    assert record["method"] == "sampled"
    sampled = section()
    assert "<strong>Sampled</strong>: 2000 random subsets" in sampled
    assert "± its Monte-Carlo error" in sampled
    table = sampled[sampled.index('id="trust-table"'):]
    for name, value in record["coefficients"].items():
        assert (f"{value:.3f} <small class=\"mc\">± {record['mc_error'][name]:.3f}</small>"
                in table)


def test_the_query_count_does_not_grow_with_the_study(owner_client, demos, django_assert_num_queries):
    small, large = demos["demo-coref"].study, demos["demo-similarity"].study
    sizes = [len(full_document(document=finished_run(s).results)["item_gaps"])
             for s in (small, large)]
    assert sizes[1] > 2 * sizes[0]  # the similarity demo has far more per-item records
    for study in (small, large):
        with django_assert_num_queries(DASHBOARD_QUERIES + 1):
            assert owner_client.get(url("dashboard", study)).status_code == 200
        with django_assert_num_queries(DASHBOARD_QUERIES):
            assert owner_client.get(url("dashboard", study)).status_code == 200


def test_starting_a_run_from_the_form_queues_it_after_commit(
        owner_client, demos, django_capture_on_commit_callbacks):
    study = demos["demo-coref"].study
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_client.post(url("run_start", study), {
            "level": "interval", "trust_variant": "notebook", "simple_threshold": 2})
    assert response.status_code == 302 and response["Location"].endswith("#run")
    assert len(callbacks) == 1
    run = AnalysisRun.objects.get(study=study)
    assert (run.status, run.settings["level"], run.settings["trust_variant"],
            run.settings["simple_threshold"]) == ("queued", "interval", "notebook", 2)
    html = owner_client.get(url("dashboard", study)).content.decode()
    assert f'data-status-url="{url("run_status", study, run_id=run.pk)}"' in html
    state = owner_client.get(url("run_status", study, run_id=run.pk)).json()
    assert state["status"] == "queued" and state["stalled"] is False
    analysis_run_execute(run_id=run.pk)
    state = owner_client.get(url("run_status", study, run_id=run.pk)).json()
    assert (state["status"], state["progress"]) == ("done", 100)
    html = owner_client.get(url("dashboard", study)).content.decode()
    assert 'id="run-progress"' not in html
    assert '<option value="interval" selected>' in html  # the form starts from the shown run


def test_a_run_no_worker_picks_up_is_reported_plainly(owner_client, demos, settings):
    settings.CONCORD_WORKER_WAIT_SECONDS = 20
    study = demos["demo-coref"].study
    run = analysis_run_create(study=study, enqueue=False)
    long_ago = timezone.now() - timedelta(seconds=25)
    AnalysisRun.objects.filter(pk=run.pk).update(created_at=long_ago, sent_at=long_ago)
    state = owner_client.get(url("run_status", study, run_id=run.pk)).json()
    assert state["stalled"] is True and "No worker has picked this run up" in state["stalled_message"]
    html = owner_client.get(url("dashboard", study)).content.decode()
    alert = re.search(r'<p class="job-alert error" role="alert" data-job-part="alert"( hidden)?>'
                      r'([^<]*)<', html)
    assert alert.group(1) is None and "celery -A config worker" in alert.group(2)


def test_a_bad_setting_starts_nothing(owner_client, demos):
    study = demos["demo-coref"].study
    response = owner_client.post(url("run_start", study), {
        "level": "fancy", "trust_variant": "paper", "simple_threshold": 0}, follow=True)
    assert AnalysisRun.objects.filter(study=study).count() == 0
    html = response.content.decode()
    assert "The run was not started" in html and "Level of measurement" in html


def test_each_chart_downloads_as_spec_and_data(owner_client, demos):
    study = demos["demo-coref"].study
    run = finished_run(study)
    charts = build_charts(run.results, scale="raw", level=run.settings["level"])
    for chart in charts:
        spec = owner_client.get(url("chart_spec", study, name=chart.name))
        assert spec["Content-Disposition"].startswith("attachment")
        assert json.loads(spec.content) == chart.spec
        data = owner_client.get(url("chart_data", study, name=chart.name, fmt="json")).json()
        assert data == chart.spec["data"]["values"] if "values" in chart.spec.get("data", {}) else True
        rows = list(csv.reader(io.StringIO(
            owner_client.get(url("chart_data", study, name=chart.name, fmt="csv")).content.decode())))
        assert len(rows) == len(data) + 1
    assert owner_client.get(url("chart_data", study, name=charts[0].name, fmt="xlsx")).status_code == 404
    assert owner_client.get(url("chart_spec", study, name="no-such-chart")).status_code == 404


def test_chart_data_csv_neutralises_formulas(owner_client, demos):
    study = demos["demo-coref"].study
    run = finished_run(study)
    # an annotator pseudonym cannot carry a formula, but an item id can: forge one into the stored
    # document the way an imported item id would arrive, and download the gap scatter's data
    document = run.results
    for record in document["item_gap_sample"] + document["largest_gaps"]:
        record["item"] = "=HYPERLINK(\"http://x\",\"y\")"
    AnalysisRun.objects.filter(pk=run.pk).update(results=document)
    charts = [c for c in build_charts(document, scale="raw", level=run.settings["level"])
              if any(isinstance(v, dict) and str(v.get("item", "")).startswith("=")
                     for v in c.spec.get("data", {}).get("values", []))]
    assert charts, "a chart draws item ids"
    body = owner_client.get(url("chart_data", study, name=charts[0].name, fmt="csv")).content.decode()
    cells = [cell for row in csv.reader(io.StringIO(body)) for cell in row]
    assert "'=HYPERLINK(\"http://x\",\"y\")" in cells
    assert not any(cell.startswith("=") for cell in cells)


@pytest.mark.parametrize("view, kwargs, method", [
    ("dashboard", {}, "get"),
    ("run_start", {}, "post"),
    ("run_status", {"run_id": 0}, "get"),
    ("chart_spec", {"name": "trust"}, "get"),
    ("chart_data", {"name": "trust", "fmt": "csv"}, "get"),
])
def test_another_researcher_gets_404_everywhere(demos, bob, view, kwargs, method):
    study = demos["demo-coref"].study
    run = finished_run(study)
    if "run_id" in kwargs:
        kwargs = {"run_id": run.pk}
    client = Client()
    client.force_login(bob)
    response = getattr(client, method)(url(view, study, **kwargs),
                                       {"level": "ordinal", "trust_variant": "paper",
                                        "simple_threshold": 3} if method == "post" else None)
    assert response.status_code == 404
    assert AnalysisRun.objects.filter(study=study).count() == 1


def test_it_needs_a_login(demos):
    study = demos["demo-coref"].study
    response = Client().get(url("dashboard", study))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_status_poll_makes_a_fixed_number_of_queries(owner_client, demos,
                                                         django_assert_num_queries):
    study = demos["demo-coref"].study
    run = finished_run(study)
    with django_assert_num_queries(4):  # session, user, the owner-scoped study, the run
        assert owner_client.get(url("run_status", study, run_id=run.pk)).json()["progress"] == 100


def test_times_are_shown_as_people_read_them_with_the_exact_value_in_a_title(owner_client,
                                                                             demos):
    import re

    demo = demos["demo-similarity"]
    run = finished_run(demo.study)
    html = owner_client.get(url("dashboard", demo.study)).content.decode()
    text = re.sub(r"<[^>]*>", " ", html)  # attributes (datetime, title) may hold ISO values
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text)
    exact = re.findall(r'<time datetime="([^"]+)" title="\1">(\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC)'
                       r"</time>", html)
    assert exact and any(value == run.results["generated_at"] for value, _ in exact), exact


def test_a_run_records_each_sections_time_and_its_peak_memory_and_the_page_shows_them(
        owner_client, demos):
    study = demos["demo-similarity"].study
    run = finished_run(study)
    sections = run.timings["sections_s"]
    # Every section that ran on this study (it has metrics, several scales and quality rules).
    for name in ("prepare", "timing", "trust", "alpha", "duplicates", "competence", "noise",
                 "gaps", "quality", "heuristics", "styles", "correlations", "write"):
        assert name in sections and sections[name] >= 0, name
    ordered = [seconds for _, seconds in run.sections_by_time]
    assert ordered == sorted(sections.values(), reverse=True)
    # The parts add up to no more than the analyses' time, and the peak is a real process size.
    assert sum(sections.values()) <= run.timings["analyses_s"] + 0.01
    assert 20 < run.timings["peak_rss_mb"] < 100_000
    html = owner_client.get(url("dashboard", study)).content.decode()
    costs = html[html.index('id="run-costs"'):html.index("</details>", html.index('id="run-costs"'))]
    assert f"Time and memory of run {run.pk}" in costs
    assert costs.count("<tr><td>") == len(sections) and "<td>correlations</td>" in costs
    assert f"{run.timings['peak_rss_mb']:.0f} MB" in costs


def test_the_peak_memory_is_the_runs_own_not_the_workers_lifetime_peak():
    from analysis.services import peak_rss_mb, peak_rss_reset

    ballast = bytearray(300 * 2**20)  # 300 MB touched, then freed
    ballast[::4096] = b"x" * len(ballast[::4096])
    high = peak_rss_mb()
    del ballast
    peak_rss_reset()
    after = peak_rss_mb()
    assert high is not None and after is not None and after < high - 200


def test_a_crowd_shows_its_flagged_annotators_first_and_links_to_them_all(owner_client, demos,
                                                                         monkeypatch):
    from analysis import dashboard

    demo = demos["demo-coref"]
    finished_run(demo.study)
    monkeypatch.setattr(dashboard, "SHOWN_ANNOTATORS", 3)
    html = owner_client.get(url("dashboard", demo.study)).content.decode()

    def rows(table_id):
        table = html[html.index(f'id="{table_id}"'):]
        return re.findall(r'<th scope="row">(?:<a href="[^"]*">)?(A\d+)', table[:table.index(
            "</table>")])

    shown = rows("flags-table")
    assert len(shown) == 3 and sorted(shown) == sorted(rows("ranking-table"))
    assert sorted(rows("timing-table")) == sorted(shown)
    # the planted fast clicker is flagged, so it is among the three shown
    assert planted(demo, "random") in shown
    assert f"shows 3 of the {len(demo.behaviours)} annotators" in html
    assert f"({planted(demo, 'random')}" in html or f", {planted(demo, 'random')}" in html
    everyone = owner_client.get(url("dashboard", demo.study), {"annotators": "all"})
    html = everyone.content.decode()
    assert "shows 3 of" not in html and len(rows("flags-table")) == len(demo.behaviours)
