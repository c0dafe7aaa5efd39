"""Work of the annotation app in the background: periodic tasks sent by Celery beat
(CELERY_BEAT_SCHEDULE) and the thin task of background imports (a job id in, one call)."""

from celery import shared_task

from jobs.tasks import job_task

from .imports import import_job_execute, imports_sweep
from .models import ImportJob
from .services import participants_reclaim


@shared_task(ignore_result=True)
def reclaim_assignments() -> int:
    """Give abandoned assignments to new participants (`participants_reclaim`)."""
    return participants_reclaim()


@shared_task(ignore_result=True)
def sweep_imports() -> int:
    """Delete kept upload folders nobody needs any more (`annotation.imports.imports_sweep`)."""
    return imports_sweep()


@job_task(model=ImportJob)
def run_import(job_id: int) -> None:
    """Run an import job unless this message is superseded or the job over; retry after the
    stale interval while another worker holds it (`jobs.tasks.job_task`). A worker killed
    mid-import wrote nothing (one transaction): the redelivered message starts it again."""
    import_job_execute(job_id=job_id)
