"""Work of the imports app in the background: the thin task of an import job (a job id in, one
call) and the hourly sweep of kept uploads (CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from jobs.tasks import job_task

from .models import ImportJob
from .services import import_job_execute, imports_sweep


@shared_task(ignore_result=True)
def sweep_imports() -> int:
    """Delete kept upload folders nobody needs any more (`imports.services.imports_sweep`)."""
    return imports_sweep()


@job_task(model=ImportJob)
def run_import(job_id: int) -> None:
    """Run an import job unless this message is superseded or the job over; retry after the
    stale interval while another worker holds it (`jobs.tasks.job_task`). A worker killed
    mid-import wrote nothing (one transaction): the redelivered message starts it again."""
    import_job_execute(job_id=job_id)


@job_task(model=ImportJob, name="annotation.tasks.run_import")
def run_import_queued_before_the_move(job_id: int) -> None:
    """The same task under the name it had in `annotation`, so that a message queued before an
    upgrade still runs (the jobs now send `imports.tasks.run_import`)."""
    import_job_execute(job_id=job_id)
