"""The one body of every job's Celery task (`job_task`), and the periodic work of the jobs,
sent by Celery beat (CELERY_BEAT_SCHEDULE in config/settings.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task

from .models import Job
from .services import LATER, RUN, job_heartbeat, job_stale_after, job_take


def job_task(*, model: type[Job], name: str | None = None,
             ) -> Callable[[Callable[[int], object]], Any]:
    """Make ``execute(job_id)`` the Celery task of the jobs of ``model``, named as the function
    (``analysis.tasks.run_analysis``) unless ``name`` says otherwise (a task that moved keeps
    its old name as a second task, for the messages queued before the move).

    The task runs the job unless its message is superseded or the job over; it retries after
    the stale interval while another worker holds the job (`jobs.services.job_take`), and the
    job's heartbeat beats while it runs (`job_heartbeat`). ``acks_late`` +
    ``reject_on_worker_lost``: a worker killed in the middle leaves the message to be
    redelivered, and ``execute`` must be idempotent. Its record is the job's row (no result).
    """

    def decorate(execute: Callable[[int], object]) -> Any:
        def run(self: Any, job_id: int, delivery: int | None = None) -> None:
            take = job_take(model=model, job_id=job_id, delivery=delivery)
            if take == LATER:
                raise self.retry(countdown=job_stale_after().total_seconds())
            if take != RUN:
                return
            with job_heartbeat(model=model, job_id=job_id):
                execute(job_id)

        run.__module__, run.__name__ = execute.__module__, execute.__name__
        run.__qualname__, run.__doc__ = execute.__qualname__, execute.__doc__
        return shared_task(bind=True, acks_late=True, reject_on_worker_lost=True,
                           ignore_result=True, max_retries=None,
                           name=name or f"{execute.__module__}.{execute.__name__}")(run)

    return decorate


@shared_task(ignore_result=True)
def sweep_jobs() -> dict[str, list[str]]:
    """Send what was never sent, send again what a lost worker left (`jobs.sweep`)."""
    from .sweep import jobs_sweep

    return jobs_sweep().as_dict()
