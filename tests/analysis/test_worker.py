"""A real Celery worker runs analyses; a worker killed mid-run leads to one completed run."""

import signal
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings

from analysis.models import AnalysisRun, TrustChunk, TrustPlan
from analysis.services import analysis_run_create
from studies.services import participants_invite
from tests.analysis.test_fanout import assert_exact_trust, expected_chunks, rated_study
from tests.workers import require_worker_services, wait_for, wait_while_moving
from tests.workers import start_worker as start

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def start_worker(tmp_path, name: str, visibility_timeout: int = 5, **extra_env) -> subprocess.Popen:
    # A redelivered start finds the run's heartbeat stale (3 s) soon after its worker died.
    heartbeat = {"CONCORD_HEARTBEAT_SECONDS": "0.5", "CONCORD_HEARTBEAT_STALE_SECONDS": "3"}
    return start(tmp_path, name, CELERY_VISIBILITY_TIMEOUT=str(visibility_timeout),
                 **{**heartbeat, **extra_env})


@pytest.fixture
def redis_broker():
    require_worker_services()
    from config.celery import app

    app.control.purge()  # nothing left over from an earlier run
    return app


def annotated_study(make_study, alice, *, annotators=8, items=30):
    from tests.answers import submit

    rows = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(items))
    study = make_study(alice, slug="worker", items=rows)
    import uuid

    for j, participant in enumerate(participants_invite(study=study, count=annotators)):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item.position
            submit(participant, position, (item + j % 3) % 8, client_id=uuid.uuid4(),
                   active_ms=1000)
    return study


def test_a_worker_process_runs_an_analysis(tmp_path, redis_broker, make_study, alice):
    study = annotated_study(make_study, alice)
    worker = start_worker(tmp_path, "w1")
    try:
        run = analysis_run_create(study=study)
        done = wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, status="done").first(), 120,
                        "the run to finish")
        assert done.results["schema"] == "concord.results/3" and done.attempts == 1
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


def test_two_workers_share_the_trust_chunks_of_a_16_annotator_run(tmp_path, redis_broker, make_study,
                                                                  alice):
    study = rated_study(make_study, alice, annotators=16, slug="worker16")
    expected = expected_chunks(study, settings.CONCORD_TRUST_CHUNKS,
                               settings.CONCORD_TRUST_FANOUT_MIN_K)
    assert len(expected) >= 16
    # The visibility timeout of a deployment (minutes): here only the chunks are shared out.
    workers = [start_worker(tmp_path, name, visibility_timeout=120) for name in ("w1", "w2")]
    try:
        run = analysis_run_create(study=study)
        seen = set()

        def finished():
            current = AnalysisRun.objects.get(pk=run.pk)
            seen.add(current.progress)
            return current if current.status in ("done", "failed") else None

        done = wait_for(finished, 240, "the fanned-out run to finish")
        assert done.status == "done", done.error
        assert done.attempts == 1 and done.progress == 100
        timings = done.timings
        assert timings["trust_chunks"] == len(expected) and "trust_fallback" not in timings
        assert_exact_trust(done.results, study)
        assert not TrustPlan.objects.filter(run=run).exists() and not TrustChunk.objects.exists()
        hosts = timings["trust_workers"]  # e.g. {"w1@host": 40, "w2@host": 24}
        assert sum(hosts.values()) == len(expected)
        assert {h.split("@")[0] for h in hosts} <= {"w1", "w2"}
        print(f"chunks per worker: {hosts}; timings: {timings}; progress seen: {sorted(seen)}")
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(30)


def test_a_fanned_out_run_survives_a_worker_killed_among_its_chunks(tmp_path, redis_broker,
                                                                    make_study, alice):
    study = rated_study(make_study, alice, annotators=16, slug="killed16")
    many = {"CONCORD_TRUST_CHUNKS": "64"}  # a longer chord: 4 keys × 64 chunks
    expected = expected_chunks(study, 64, settings.CONCORD_TRUST_FANOUT_MIN_K)
    first = start_worker(tmp_path, "doomed", **many)
    second = None
    try:
        run = analysis_run_create(study=study)
        wait_for(lambda: AnalysisRun.objects.filter(pk=run.pk, progress__gt=6).exists(), 120,
                 "the first chunks")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        killed_at = AnalysisRun.objects.get(pk=run.pk)
        # The chunk it held becomes visible again after the visibility timeout (5 s); a worker
        # restores it on its first scan (kombu then scans 1 in 10 of its 10-second rounds).
        time.sleep(6)
        second = start_worker(tmp_path, "rescuer", **many)
        # The rescuer restores the lost chunk on one of its scans (up to ~100 s apart) and works
        # through the rest meanwhile: wait as long as chunks keep landing or the run moves.
        done = wait_while_moving(
            lambda: AnalysisRun.objects.filter(pk=run.pk, status__in=["done", "failed"]).first(),
            lambda: (TrustChunk.objects.count(),
                     AnalysisRun.objects.values_list("progress", flat=True).get(pk=run.pk)),
            idle=200, cap=900, what="the fanned-out run to finish")
        assert done.status == "done", done.error
        assert done.attempts == 1 and done.timings["trust_chunks"] == len(expected)
        assert_exact_trust(done.results, study)
        print(f"killed at {killed_at.progress} % ({killed_at.message}); timings {done.timings}")
        time.sleep(8)  # longer than the visibility timeout: nothing runs it again
        again = AnalysisRun.objects.get(pk=run.pk)
        assert (again.status, again.attempts, again.finished_at) == ("done", 1, done.finished_at)
        assert AnalysisRun.objects.count() == 1 and not TrustChunk.objects.exists()
        assert not TrustPlan.objects.exists()
    finally:
        for worker in (first, second):
            if worker and worker.poll() is None:
                worker.terminate()
                worker.wait(30)


def test_two_workers_share_the_section_groups_of_a_run(tmp_path, redis_broker, make_study, alice):
    """The analysis fanned out (analysis.sections) on real workers: the document is the one a
    single process builds, and every group's task is timed and named with its worker."""
    from analysis.models import RunBlob, RunTask
    from analysis.services import analysis_run_execute
    from tests.analysis.test_sections import comparable

    study = rated_study(make_study, alice, annotators=6, items=20, slug="sections")
    expected = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    on = {"CONCORD_ANALYSIS_FANOUT": "on"}
    workers = [start_worker(tmp_path, name, visibility_timeout=120, **on) for name in ("w1", "w2")]
    try:
        run = analysis_run_create(study=study)
        done = wait_for(lambda: AnalysisRun.objects.filter(
            pk=run.pk, status__in=["done", "failed"]).first(), 240, "the fanned-out run")
        assert done.status == "done", done.error
        assert done.attempts == 1 and done.progress == 100
        assert comparable(done.results) == comparable(expected.results)
        tasks = list(RunTask.objects.filter(run=run))
        assert tasks[0].name == "plan" and tasks[-1].name == "assemble"
        assert all(t.done_at and t.seconds is not None for t in tasks)
        assert {t.host.split("@")[0] for t in tasks if t.group and "family" in t.group} <= {"w1", "w2"}
        figures = done.timings["fanout"]
        assert figures["tasks"] == len(tasks) and figures["critical_path_s"] <= figures["work_s"]
        assert not RunBlob.objects.filter(run=run).exists()
        print(f"fanned out: {figures}")
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(30)
