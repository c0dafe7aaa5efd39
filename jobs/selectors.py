"""Read a job's state: what its page shows and what the page's polling script receives."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from .models import Job
from .services import job_stale_after


def job_stalled(*, job: Job) -> bool:
    """Tell whether a job is stuck, as its page says at once:

    - queued longer than CONCORD_WORKER_WAIT_SECONDS since it was sent (no worker takes it), or
      since it was saved when it was never sent (the sweep has not sent it: is beat running?);
    - running with a heartbeat older than CONCORD_HEARTBEAT_STALE_SECONDS (its worker was
      killed or froze; the sweep sends it again).
    """
    now = timezone.now()
    if job.status == Job.Status.QUEUED:
        wait = timedelta(seconds=settings.CONCORD_WORKER_WAIT_SECONDS)
        return now - (job.sent_at or job.created_at) > wait
    if job.status == Job.Status.RUNNING:
        beat = job.heartbeat_at or job.started_at or job.created_at
        return now - beat > job_stale_after()
    return False


def job_stalled_message(*, job: Job) -> str:
    """Return what to tell the researcher about a stalled job (see `job_stalled`)."""
    noun = job.noun
    if job.status == Job.Status.RUNNING:
        beat = job.heartbeat_at or job.started_at or job.created_at
        seconds = int((timezone.now() - beat).total_seconds())
        return (f"The worker running this {noun} stopped answering (no sign of life for "
                f"{seconds} s): it was stopped or has frozen. The {noun} is sent to a worker "
                f"again automatically (attempt {job.attempts} of "
                f"{settings.CONCORD_JOB_MAX_ATTEMPTS}); if this stays, check that Celery beat "
                "and a worker are running.")
    if job.sent_at is None:
        return (f"This {noun} was saved but not yet handed to the task queue. The periodic sweep "
                f"sends it within {settings.CONCORD_SWEEP_SECONDS} s: is Celery beat running "
                "(`celery -A config beat`; `make run` starts one)?")
    return (f"No worker has picked this {noun} up in {settings.CONCORD_WORKER_WAIT_SECONDS} "
            "s. Is a Celery worker running? Start one with `celery -A config worker` "
            f"(`make run` starts one); the {noun} is in the queue and starts as soon as a "
            "worker answers.")


def job_status(*, job: Job) -> dict[str, Any]:
    """Return the state of a job as its page renders it and `static/js/jobs.js` polls it.

    No query: everything comes from the row already read.
    """
    stalled = job_stalled(job=job)
    return {
        "id": job.pk,
        "status": job.status,
        "status_label": job.get_status_display(),
        "progress": job.progress,
        "message": job.message,
        "error": job.error,
        "stalled": stalled,
        "stalled_message": job_stalled_message(job=job) if stalled else "",
        "attempts": job.attempts,
        "heartbeat_at": job.heartbeat_at.isoformat() if job.heartbeat_at else None,
    }
