"""Work of the annotation app in the background: periodic tasks sent by Celery beat
(CELERY_BEAT_SCHEDULE) and the thin task of background imports (a job id in, one call)."""

from celery import shared_task


@shared_task(ignore_result=True)
def reclaim_assignments() -> int:
    """Give abandoned assignments to new participants (`participants_reclaim`)."""
    from .services import participants_reclaim

    return participants_reclaim()


@shared_task(ignore_result=True)
def sweep_imports() -> int:
    """Delete kept upload folders nobody needs any more (`annotation.imports.imports_sweep`)."""
    from .imports import imports_sweep

    return imports_sweep()


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             max_retries=None)
def run_import(self, job_id: int, delivery: int | None = None) -> None:
    """Run an import job unless this message is superseded or the job over; retry after the
    stale interval while another worker holds it (`jobs.services.job_take`). A worker killed
    mid-import wrote nothing (one transaction): the redelivered message starts it again."""
    from jobs.services import LATER, RUN, job_heartbeat, job_stale_after, job_take

    from .imports import import_job_execute
    from .models import ImportJob

    take = job_take(model=ImportJob, job_id=job_id, delivery=delivery)
    if take == LATER:
        raise self.retry(countdown=job_stale_after().total_seconds())
    if take != RUN:
        return
    with job_heartbeat(model=ImportJob, job_id=job_id):
        import_job_execute(job_id=job_id)
