"""The one job abstraction: analysis runs and export jobs start, progress, finish, fail and
report a missing worker the same way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analysis.models import AnalysisRun
from exports.models import ExportJob
from jobs.models import ERROR_MAX, MESSAGE_MAX
from jobs.selectors import job_stalled, job_status
from jobs.services import job_done, job_error, job_fail, job_message, job_progress, job_start

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["run", "export"])
def job(request, alice, make_study):
    """A queued job of each kind."""
    study = make_study(alice, slug="jobs")
    if request.param == "run":
        return AnalysisRun.objects.create(study=study, created_by=alice,
                                          message="waiting for a worker")
    return ExportJob.objects.create(study=study, created_by=alice, what="items", format="csv",
                                    message="waiting for a worker")


def reread(job):
    return type(job).objects.get(pk=job.pk)


def test_it_starts_a_job_and_counts_the_attempt(job):
    job_fail(model=type(job), job_id=job.pk, error="an earlier attempt")
    job_start(model=type(job), job_id=job.pk, message="starting")
    job = reread(job)
    assert (job.status, job.progress, job.message, job.attempts, job.error) == (
        "running", 1, "starting", 1, "")
    assert job.started_at is not None


def test_it_records_progress_and_cuts_long_messages(job):
    job_progress(model=type(job), job_id=job.pk, progress=40, message="x" * 500)
    job = reread(job)
    assert job.progress == 40 and job.message == "x" * MESSAGE_MAX


def test_only_the_first_to_finish_records_the_job(job):
    assert job_done(model=type(job), job_id=job.pk, message="first")
    first = reread(job)
    assert not job_done(model=type(job), job_id=job.pk, message="second")
    job = reread(job)
    assert (job.status, job.progress, job.message, job.finished_at) == (
        "done", 100, "first", first.finished_at)


def test_a_done_job_never_turns_failed(job):
    job_done(model=type(job), job_id=job.pk)
    job_fail(model=type(job), job_id=job.pk, error=RuntimeError("late"))
    assert reread(job).status == "done"


def test_a_failed_job_says_why(job):
    job_fail(model=type(job), job_id=job.pk, error=ValueError("bad input"))
    job = reread(job)
    assert (job.status, job.message, job.error) == ("failed", "failed", "ValueError: bad input")
    assert job.finished_at is not None


def test_it_cuts_errors_and_messages_in_one_place():
    assert job_error("plain reason") == "plain reason"
    assert job_error(KeyError("k")) == "KeyError: 'k'"
    assert len(job_error("e" * (ERROR_MAX + 5))) == ERROR_MAX
    assert job_message("m" * 300) == "m" * MESSAGE_MAX


def test_the_status_carries_what_the_page_polls(job):
    assert job_status(job=job) == {
        "id": job.pk, "status": "queued", "status_label": "Queued", "progress": 0,
        "message": "waiting for a worker", "error": "", "stalled": False, "stalled_message": "",
        "attempts": 0, "heartbeat_at": None}


def test_a_queued_job_no_worker_picks_up_is_stalled(job, settings):
    settings.CONCORD_WORKER_WAIT_SECONDS = 20
    long_ago = timezone.now() - timedelta(seconds=25)
    type(job).objects.filter(pk=job.pk).update(created_at=long_ago, sent_at=long_ago)
    job = reread(job)
    status = job_status(job=job)
    assert status["stalled"] and f"No worker has picked this {job.noun} up in 20 s" in (
        status["stalled_message"])
    assert "celery -A config worker" in status["stalled_message"]


def test_a_job_saved_but_never_sent_says_the_sweep_sends_it(job, settings):
    settings.CONCORD_WORKER_WAIT_SECONDS = 20
    long_ago = timezone.now() - timedelta(seconds=25)
    type(job).objects.filter(pk=job.pk).update(created_at=long_ago)
    status = job_status(job=reread(job))
    assert status["stalled"] and "not yet handed to the task queue" in status["stalled_message"]
    assert "celery -A config beat" in status["stalled_message"]


def test_a_running_job_is_stalled_only_when_its_heartbeat_is_stale(job, settings):
    settings.CONCORD_WORKER_WAIT_SECONDS = 0
    settings.CONCORD_HEARTBEAT_STALE_SECONDS = 30
    assert job_stalled(job=job)
    job_start(model=type(job), job_id=job.pk, message="starting")
    assert not job_stalled(job=reread(job))
    job_progress(model=type(job), job_id=job.pk, progress=18, message="working")
    type(job).objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    status = job_status(job=reread(job))
    assert status["stalled"] and status["progress"] == 18
    assert "stopped answering (no sign of life for 31 s)" in status["stalled_message"]
