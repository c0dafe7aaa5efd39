"""A real Celery worker runs analyses; a worker killed mid-run leads to one completed run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create
from studies.services import participants_invite
from tests.conftest import require

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def start_worker(tmp_path, name: str) -> subprocess.Popen:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_VISIBILITY_TIMEOUT": "5",
        "DATABASE_POOL": "0",
    }
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-n", f"{name}@%h",
         "--loglevel", "info", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def redis_broker():
    require(connection.vendor == "postgresql", "the worker tests need PostgreSQL (DATABASE_URL)")
    require(settings.CELERY_BROKER_URL.startswith("redis://"), "the worker tests need Redis (REDIS_URL)")
    from config.celery import app

    app.control.purge()  # nothing left over from an earlier run
    return app


def annotated_study(make_study, alice, *, annotators=8, items=30):
    from annotation.services import response_submit

    rows = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(items))
    study = make_study(alice, slug="worker", items=rows)
    import uuid

    for j, participant in enumerate(participants_invite(study=study, count=annotators)):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item.position
            response_submit(participant=participant, position=position, value=(item + j % 3) % 8,
                            client_id=uuid.uuid4(), active_ms=1000)
    return study


def test_a_worker_process_runs_an_analysis(tmp_path, redis_broker, make_study, alice):
    study = annotated_study(make_study, alice)
    worker = start_worker(tmp_path, "w1")
    try:
        run = analysis_run_create(study=study)
        done = wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="done").first(), 120,
                        "the run to finish")
        assert done.results["schema"] == "concord.results/1" and done.attempts == 1
    finally:
        worker.terminate()
        worker.wait(30)


def test_a_run_survives_its_worker_being_killed(tmp_path, redis_broker, make_study, alice):
    study = annotated_study(make_study, alice)
    first = start_worker(tmp_path, "doomed")
    second = None
    try:
        # Enough bootstrap resamples that the run is still going when the worker dies.
        run = analysis_run_create(study=study, overrides={"bootstrap_samples": 25000})
        wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="running", progress__gt=1)
                 .exists(), 120, "the run to start")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        assert AnalysisRun.objects.get(pk=run.pk).status == "running"
        second = start_worker(tmp_path, "rescuer")
        done = wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="done").first(), 240,
                        "the redelivered run to finish")
        assert done.attempts == 2 and done.results["settings"]["bootstrap_samples"] == 25000
        time.sleep(8)  # longer than the visibility timeout: no third delivery
        assert AnalysisRun.objects.get(pk=run.pk).attempts == 2
        assert AnalysisRun.objects.count() == 1
    finally:
        for worker in (first, second):
            if worker and worker.poll() is None:
                worker.terminate()
                worker.wait(30)
