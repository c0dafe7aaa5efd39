"""Read a job's state: what its page shows and what the page's polling script receives."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from .models import Job


def job_stalled(*, job: Job) -> bool:
    """Tell whether a queued job has waited longer than CONCORD_WORKER_WAIT_SECONDS for a worker.

    Nothing else notices a missing worker: the broker keeps the message, and the page would
    otherwise say "queued" forever.
    """
    wait = timedelta(seconds=settings.CONCORD_WORKER_WAIT_SECONDS)
    return job.status == Job.Status.QUEUED and timezone.now() - job.created_at > wait


def job_stalled_message(*, job: Job) -> str:
    """Return what to tell the researcher when no worker has picked the job up."""
    return (f"No worker has picked this {job.noun} up in {settings.CONCORD_WORKER_WAIT_SECONDS} "
            "s. Is a Celery worker running? Start one with `celery -A config worker` "
            f"(`make run` starts one); the {job.noun} will start as soon as a worker answers.")


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
    }
