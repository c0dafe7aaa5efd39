"""Move a job through its states: started, progressing, done or failed.

Every helper is one UPDATE of the job's row, by id, so that a Celery task, a chord's body and a
management command report the same way, and a worker never overwrites a row with a stale copy.
A job that is done stays done: a late failure or a second delivery finishing after the first
changes nothing.
"""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from .models import ERROR_MAX, MESSAGE_MAX, Job


def job_message(text: str) -> str:
    """Return a progress message cut to what the `message` column holds."""
    return text[:MESSAGE_MAX]


def job_error(error: BaseException | str) -> str:
    """Return the error recorded for a failed job: the exception's type and text, or the text."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return text[:ERROR_MAX]


def job_start(*, model: type[Job], job_id: int, message: str, progress: int = 1,
              **fields) -> None:
    """Mark a job running: started now, one more attempt, the error of an earlier attempt gone.

    ``fields`` are the kind's own columns to set in the same UPDATE.
    """
    model.objects.filter(pk=job_id).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), progress=progress,
        message=job_message(message), attempts=F("attempts") + 1, error="", **fields)


def job_progress(*, model: type[Job], job_id: int, progress: int, message: str) -> None:
    """Record how far a running job has come (0–100) and what it is doing."""
    model.objects.filter(pk=job_id).update(progress=progress, message=job_message(message))


def job_done(*, model: type[Job], job_id: int, message: str = "done", **fields) -> bool:
    """Mark a job done with ``fields`` (its results); return False when it already was.

    Only the first delivery to finish records the job: a duplicate (a broker redelivering after
    its visibility timeout) that finishes later writes nothing.
    """
    return bool(model.objects.filter(pk=job_id).exclude(status=Job.Status.DONE).update(
        status=Job.Status.DONE, progress=100, message=job_message(message), error="",
        finished_at=timezone.now(), **fields))


def job_fail(*, model: type[Job], job_id: int, error: BaseException | str) -> None:
    """Mark a job failed with the error (a job already done stays done)."""
    model.objects.filter(pk=job_id).exclude(status=Job.Status.DONE).update(
        status=Job.Status.FAILED, error=job_error(error), finished_at=timezone.now(),
        message="failed")
