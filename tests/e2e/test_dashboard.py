"""The researcher's results dashboard in a real browser, with a real Celery worker.

Start a run, follow its progress to 100 %, see every chart drawn under the strict CSP, change the
level of measurement and rerun, and download every export and a chart's spec and data; in a study
of several questions, pick a question and see its sections.
"""

import csv
import io
import json
import zipfile

import pytest
from playwright.sync_api import expect

from analysis.models import AnalysisRun
from demo.services import DEMO_PASSWORD, DEMO_USER, demo_seed
from tests.workers import require_worker_services, start_worker, stop_worker

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    require_worker_services()
    from config.celery import app

    app.control.purge()
    process = start_worker(tmp_path, "dashboard")
    yield process
    stop_worker(process)


def run_to_completion(page, statuses: list) -> None:
    """Submit the run form and wait until the page has reloaded with the finished run."""
    before = AnalysisRun.objects.filter(status="done").count()
    page.locator("#run-form button[type=submit]").click()
    expect(page.locator("#run-progress")).to_be_visible()
    page.wait_for_function(
        "() => !document.getElementById('run-progress') && document.getElementById('overview')",
        timeout=120_000)
    assert AnalysisRun.objects.filter(status="done").count() == before + 1
    assert statuses, "the page polled the run's status"
    assert statuses[-1]["status"] == "done" and statuses[-1]["progress"] == 100
    progress = [s["progress"] for s in statuses]
    assert progress == sorted(progress), progress  # progress only moves forward


def charts_drawn(page) -> list[str]:
    figures = page.locator("figure.chart")
    count = figures.count()
    assert count >= 8, count
    # every figure gets an SVG with at least one drawn mark
    page.wait_for_function(
        """n => [...document.querySelectorAll('figure.chart')].filter(
             f => f.querySelector('svg g[class*="mark-"] path, svg g[class*="mark-"] line, '
                                  + 'svg g[class*="mark-"] rect, svg g[class*="mark-"] text')).length === n""",
        arg=count, timeout=30_000)
    return [figures.nth(i).get_attribute("data-chart") for i in range(count)]


def test_a_researcher_runs_reads_reruns_and_downloads(live_server, page, worker, tmp_path):
    _, demos = demo_seed()
    study = next(d.study for d in demos if d.study.slug == "demo-coref")
    base = live_server.url
    statuses: list = []

    def record(route):
        # pass the status poll through, keeping what the page was told
        response = route.fetch()
        if response.ok:
            statuses.append(response.json())
        route.fulfill(response=response)

    page.route("**/status.json", record)
    errors: list = []
    page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    login(page, base, DEMO_USER, DEMO_PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/")
    page.get_by_role("link", name="Results").click()
    expect(page.get_by_text("No finished analysis yet")).to_be_visible()

    run_to_completion(page, statuses)
    expect(page.locator("#trust-outliers")).not_to_be_empty()
    names = charts_drawn(page)
    assert {"trust", "timing"} <= {n.split("-")[0] for n in names}, names
    assert page.csp_violations == [] and errors == [], (page.csp_violations, errors)

    # another level of measurement: the new run is the one shown
    page.select_option("#id_level", "interval")
    statuses.clear()
    run_to_completion(page, statuses)
    expect(page.locator("#agreement th.current").first).to_have_text("interval")
    expect(page.locator("#trust")).to_contain_text("interval level")
    assert AnalysisRun.objects.filter(study=study).order_by("-id").first().settings["level"] == "interval"
    charts_drawn(page)
    assert page.csp_violations == [] and errors == [], (page.csp_violations, errors)

    # every export downloads and opens
    links = page.locator("#export-links a")
    assert links.count() >= 8
    for i in range(links.count()):
        link = links.nth(i)
        with page.expect_download() as info:
            link.click()
        path = info.value.path()
        data = open(path, "rb").read()  # noqa: PTH123
        name = info.value.suggested_filename
        assert data, name
        if name.endswith(".csv"):
            rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
            assert len(rows) > 1, name
        elif name.endswith(".jsonl"):
            assert all(json.loads(line) for line in data.decode().splitlines()), name
        elif name.endswith(".json"):
            assert json.loads(data)["schema"] == "concord.results/3", name
        elif name.endswith(".zip"):
            assert {"README.md", "results.json"} <= set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        elif name.endswith(".parquet"):
            assert data[:4] == b"PAR1", name

    # a chart's spec and data
    trust = page.locator("figure.chart[data-chart^='trust']").first
    for label in ("Vega-Lite spec", "data (CSV)", "data (JSON)"):
        with page.expect_download() as info:
            trust.get_by_role("link", name=label).click()
        assert open(info.value.path(), "rb").read()  # noqa: PTH123
    assert page.csp_violations == [] and errors == [], (page.csp_violations, errors)


def test_a_researcher_reads_each_question_of_a_summeval_study(live_server, page, make_study,
                                                              alice):
    from analysis.services import analysis_run_create, analysis_run_execute
    from tests.analysis.test_questions import ITEMS, Summeval

    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=ITEMS)
    Summeval(study)
    # Which items each annotator draws depends on the database's keys, so the natural outliers do
    # too: a threshold near 1 makes the noisier annotators outliers on every database.
    run = analysis_run_execute(run_id=analysis_run_create(
        study=study, overrides={"outlier_threshold": 0.95}, enqueue=False).pk)
    errors: list = []
    missing: list = []
    # A missing resource is named by the response, not by the console (whose message has no URL);
    # the favicon is not the dashboard's.
    page.on("console", lambda msg: msg.type == "error" and "Failed to load resource" not in msg.text
            and errors.append(msg.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("response", lambda r: r.status >= 400 and not r.url.endswith("/favicon.ico")
            and missing.append(r.url))
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/results/")
    expect(page.get_by_label("Question")).to_have_value("coherence")
    charts_drawn(page)
    page.get_by_label("Question").select_option("fluency")
    page.locator("#scale-form button[type=submit]").click()
    page.wait_for_url("**question=fluency**")
    names = charts_drawn(page)
    trust = page.locator("figure.chart[data-chart='trust'] figcaption strong")
    expect(trust).to_have_text("fluency: Trust coefficients (raw scale).")
    (record,) = [t for t in run.results["trust"] if t["question"] == "fluency"
                 and t["scale"] == "raw" and t["items"] == "all"]
    assert record["outliers"], "the seeded fluency answers have a trust outlier"
    expect(page.locator("#trust-outliers")).to_have_text(", ".join(record["outliers"]))
    assert "timing" in names
    assert page.csp_violations == [] and errors == [] and missing == [], (
        page.csp_violations, errors, missing)
