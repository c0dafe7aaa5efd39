"""Delivering jobs when a service is away (issue 12, points 6 and 7).

- Redis down: starting a run or an export is refused within seconds with a clear message
  (page) or a 503 (API), and the row is failed with the reason: nothing stays "queued".
- A job committed but never sent is sent by the periodic sweep (Celery beat).
- A killed worker: the job's heartbeat goes stale, the page says so within the configured
  interval, the sweep sends the job again exactly once and it completes once.

The machine's Redis is never stopped: the server under test is pointed at a closed port, and
only workers these tests start are killed.
"""

from __future__ import annotations

import signal
import threading
import time
from datetime import timedelta

import pytest
import requests
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create
from exports.models import ExportJob
from jobs.services import job_progress, job_start
from jobs.sweep import JOB_KINDS, jobs_sweep
from tests.analysis.test_worker import annotated_study
from tests.conftest import require
from tests.test_outage import Server, free_port, postgres_url
from tests.workers import require_worker_services, start_beat, start_worker, stop_worker, wait_for

QUICK = {  # intervals of seconds, for the processes the tests start
    "CONCORD_HEARTBEAT_SECONDS": "0.5",
    "CONCORD_HEARTBEAT_STALE_SECONDS": "4",
    "CONCORD_SWEEP_SECONDS": "1",
    "CONCORD_JOB_SEND_GRACE_SECONDS": "1",
}


def status_url(run) -> str:
    return f"/studies/{run.study.slug}/results/runs/{run.pk}/status.json"


# --------------------------------------------------------------------------- the sweep, in-process


@pytest.fixture
def stale_run(db, alice, make_study):
    """A run whose worker was lost at 18 %: running, heartbeat 60 s old."""
    run = analysis_run_create(study=make_study(alice, slug="stale"), enqueue=False)
    job_start(model=AnalysisRun, job_id=run.pk, message="loading the answers")
    job_progress(model=AnalysisRun, job_id=run.pk, progress=18, message="bootstrap")
    AnalysisRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=60), sent_at=timezone.now(), deliveries=1)
    return AnalysisRun.objects.get(pk=run.pk)


@pytest.fixture
def sent(monkeypatch):
    """Record what the sweep sends instead of publishing it: [(kind, job id, delivery)]."""
    calls: list[tuple[str, int, int]] = []
    lock = threading.Lock()
    for model in list(JOB_KINDS):
        def send(job_id, delivery, _name=model.__name__):
            with lock:
                calls.append((_name, job_id, delivery))
        monkeypatch.setitem(JOB_KINDS, model, send)
    return calls


def test_a_stale_run_shows_stalled_and_the_sweep_sends_it_again_once(stale_run, sent, settings,
                                                                     alice_client):
    settings.CONCORD_HEARTBEAT_STALE_SECONDS = 30
    state = alice_client.get(status_url(stale_run)).json()
    assert (state["status"], state["progress"], state["stalled"]) == ("running", 18, True)
    assert "stopped answering" in state["stalled_message"]
    page = alice_client.get(f"/studies/{stale_run.study.slug}/results/").content.decode()
    assert "stopped answering (no sign of life for 60 s)" in page

    call_command("sweep_jobs")
    call_command("sweep_jobs")  # a second sweep finds nothing left to send
    assert sent == [("AnalysisRun", stale_run.pk, 2)]
    run = AnalysisRun.objects.get(pk=stale_run.pk)
    assert (run.status, run.deliveries, run.heartbeat_at, run.attempts) == ("queued", 2, None, 1)
    assert "sent again: its worker stopped answering (attempt 1 of 3)" == run.message
    state = alice_client.get(status_url(run)).json()
    assert state["status"] == "queued" and state["stalled"] is False


def test_the_sweep_gives_up_after_the_last_attempt(stale_run, sent, settings, alice_client):
    settings.CONCORD_JOB_MAX_ATTEMPTS = 1
    assert jobs_sweep().failed == [f"AnalysisRun {stale_run.pk}"]
    assert sent == []
    state = alice_client.get(status_url(stale_run)).json()
    assert state["status"] == "failed" and state["stalled"] is False
    assert "the worker running this run was lost 1 times" in state["error"]
    assert "CONCORD_JOB_MAX_ATTEMPTS = 1" in state["error"]


def test_a_job_saved_but_never_sent_is_sent_by_the_sweep_after_the_grace(db, alice, make_study,
                                                                        sent, settings):
    settings.CONCORD_JOB_SEND_GRACE_SECONDS = 30
    study = make_study(alice, slug="unsent")
    run = analysis_run_create(study=study, enqueue=False)
    export = ExportJob.objects.create(study=study, what="items", format="csv")
    assert jobs_sweep().sent == []  # within the grace: the request may still be sending it
    old = timezone.now() - timedelta(seconds=31)
    AnalysisRun.objects.filter(pk=run.pk).update(created_at=old)
    ExportJob.objects.filter(pk=export.pk).update(created_at=old)
    assert sorted(jobs_sweep().sent) == sorted([f"AnalysisRun {run.pk}", f"ExportJob {export.pk}"])
    assert sorted(sent) == sorted([("AnalysisRun", run.pk, 1), ("ExportJob", export.pk, 1)])
    assert jobs_sweep().sent == []
    assert AnalysisRun.objects.get(pk=run.pk).sent_at is not None


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_send_each_stale_job_once(alice, make_study, sent, settings):
    require(connection.vendor == "postgresql", "concurrent sweeps need PostgreSQL")
    study = make_study(alice, slug="race")
    runs = [analysis_run_create(study=study, enqueue=False) for _ in range(20)]
    for run in runs:
        job_start(model=AnalysisRun, job_id=run.pk, message="working")
    AnalysisRun.objects.update(heartbeat_at=timezone.now() - timedelta(seconds=600), deliveries=1,
                               sent_at=timezone.now())
    barrier = threading.Barrier(2)
    reports = []

    def sweep():
        barrier.wait()
        try:
            reports.append(jobs_sweep())
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    resent = [name for report in reports for name in report.resent]
    assert sorted(resent) == sorted(f"AnalysisRun {run.pk}" for run in runs)  # once each
    assert sorted(sent) == sorted(("AnalysisRun", run.pk, 2) for run in runs)
    assert set(AnalysisRun.objects.values_list("deliveries", flat=True)) == {2}


# --------------------------------------------------------------------------- Redis down


@pytest.fixture
def server_without_redis(transactional_db):
    require(connection.vendor == "postgresql", "the server under test shares the test database")
    closed = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    db = connection.settings_dict
    server = Server(postgres_url(int(db["PORT"] or 5432)), REDIS_URL=closed)
    yield server
    server.stop()


def logged_in(server: Server, user) -> requests.Session:
    """A requests session of ``user`` (its session row is in the shared test database)."""
    client = Client()
    client.force_login(user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    session.get(f"{server.url}/accounts/login/", timeout=30)  # the CSRF cookie
    session.headers["X-CSRFToken"] = session.cookies["csrftoken"]
    return session


def timed(call):
    start = time.monotonic()
    return call(), time.monotonic() - start


def test_with_redis_down_starting_a_run_or_an_export_is_refused_at_once(
        server_without_redis, alice, make_study, settings):
    study = make_study(alice, slug="redisdown")
    url, session = server_without_redis.url, logged_in(server_without_redis, alice)

    api, api_s = timed(lambda: session.post(f"{url}/api/studies/{study.slug}/runs/", json={},
                                            timeout=60))
    assert api.status_code == 503 and api.headers["Retry-After"] == "30", api.text[:500]
    assert "The task queue (the Celery broker, Redis) did not answer" in api.json()["detail"]
    run = AnalysisRun.objects.get(pk=api.json()["run"]["id"])
    assert run.status == "failed" and run.sent_at is None and "Connection refused" in run.error

    form, form_s = timed(lambda: session.post(
        f"{url}/studies/{study.slug}/results/runs/",
        data={"level": "ordinal", "trust_variant": "notebook", "simple_threshold": 2,
              "csrfmiddlewaretoken": session.cookies["csrftoken"]}, timeout=60))
    assert form.status_code == 200 and form.history[0].status_code == 302, form.status_code
    assert "was not started. The task queue (the Celery broker, Redis) did not answer" in form.text

    export, export_s = timed(lambda: session.post(
        f"{url}/studies/{study.slug}/exports/responses.csv",
        data={"csrfmiddlewaretoken": session.cookies["csrftoken"]}, timeout=60))
    assert export.status_code == 503 and "The export failed: The task queue (the Celery" in (
        export.text)
    assert not AnalysisRun.objects.filter(status__in=["queued", "running"]).exists()
    assert list(ExportJob.objects.values_list("status", flat=True)) == ["failed"]
    print(f"seconds until refused: API {api_s:.2f}, form {form_s:.2f}, export {export_s:.2f}")
    assert max(api_s, form_s, export_s) < 5, (api_s, form_s, export_s)
    log = server_without_redis.stop()
    assert "Traceback" not in log, log[-3000:]


# --------------------------------------------------------------------------- real worker and beat


@pytest.fixture
def redis_broker():
    require_worker_services()
    from config.celery import app

    app.control.purge()
    return app


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_beat_sends_a_run_that_was_committed_but_never_sent(tmp_path, redis_broker, make_study,
                                                           alice):
    study = annotated_study(make_study, alice)
    run = analysis_run_create(study=study, enqueue=False)  # the web process died before sending
    worker = start_worker(tmp_path, "w1", **QUICK)
    beat = start_beat(tmp_path, **QUICK)
    try:
        done = wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="done").first(), 120,
                        "the swept run to finish")
        assert (done.deliveries, done.attempts) == (1, 1) and done.sent_at is not None
    finally:
        stop_worker(beat)
        stop_worker(worker)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_shows_stalled_then_the_run_is_sent_again_and_done_once(
        tmp_path, redis_broker, make_study, alice, alice_client, settings):
    settings.CONCORD_HEARTBEAT_STALE_SECONDS = 4  # the page's view of staleness, as the workers'
    study = annotated_study(make_study, alice)
    # The broker must not redeliver by itself during the test: only the sweep sends it again.
    doomed = start_worker(tmp_path, "doomed", CONCORD_JOB_TEST_DELAY_SECONDS="300",
                          CELERY_VISIBILITY_TIMEOUT="600", **QUICK)
    workers = [doomed]
    beat = None
    try:
        run = analysis_run_create(study=study, user=alice)  # sent after the commit: delivery 1
        assert AnalysisRun.objects.get(pk=run.pk).deliveries == 1
        wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="running").exists(), 120,
                 "the run to start")
        workers.append(start_worker(tmp_path, "rescuer", CELERY_VISIBILITY_TIMEOUT="600", **QUICK))
        beat_before = AnalysisRun.objects.get(pk=run.pk).heartbeat_at
        wait_for(lambda: AnalysisRun.objects.get(pk=run.pk).heartbeat_at != beat_before, 10,
                 "a heartbeat while the task runs")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
        killed = time.monotonic()
        state = wait_for(lambda: (s := alice_client.get(status_url(run)).json())["stalled"] and s,
                         30, "the page to show the run stalled")
        stalled_s = time.monotonic() - killed
        assert state["status"] == "running" and "stopped answering" in state["stalled_message"]
        assert stalled_s < 4 + 2, stalled_s  # the stale interval, plus a poll

        beat = start_beat(tmp_path, **QUICK)
        done = wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="done").first(), 120,
                        "the run sent again to finish")
        done_s = time.monotonic() - killed
        assert (done.deliveries, done.attempts) == (2, 2), (done.deliveries, done.attempts)
        assert done.results["schema"] == "concord.results/3"

        # The broker's own copy of delivery 1 (the killed worker never acknowledged it) comes
        # back to a worker with a short visibility timeout: superseded, it runs nothing.
        stop_worker(beat)
        beat = None
        stop_worker(workers[1])  # the rescuer: the late worker alone takes what comes back
        workers.append(start_worker(tmp_path, "late", CELERY_VISIBILITY_TIMEOUT="1", **QUICK))
        wait_for(lambda: f"AnalysisRun {run.pk}: delivery 1 superseded by delivery 2" in (
            tmp_path / "late.log").read_text(), 90, "the old message to come back")
        again = AnalysisRun.objects.get(pk=run.pk)
        assert (again.status, again.attempts, again.finished_at) == ("done", 2, done.finished_at)
        assert AnalysisRun.objects.count() == 1
        print(f"stalled shown {stalled_s:.1f} s after the kill; done {done_s:.1f} s after it")
    finally:
        if beat is not None:
            stop_worker(beat)
        for worker in workers:
            if worker.poll() is None:
                stop_worker(worker)
