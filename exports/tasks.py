"""Thin Celery task of the background exports: a job id in, one service call.

`acks_late` + `reject_on_worker_lost`: a worker killed mid-export leaves the message to be
redelivered, and `export_job_execute` starts the file again (a finished job is left alone).
The job's heartbeat lets the sweep send it again sooner than the broker's visibility timeout
(`jobs.sweep`); the delivery number makes the older message a no-op then.
"""

from celery import shared_task


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             max_retries=None)
def run_export(self, job_id: int, delivery: int | None = None) -> None:
    """Run the job unless this message is superseded or the job over; retry after the stale
    interval while another worker holds it (`jobs.services.job_take`); its heartbeat beats
    while it runs."""
    from jobs.services import LATER, RUN, job_heartbeat, job_stale_after, job_take

    from .models import ExportJob
    from .services import export_job_execute

    take = job_take(model=ExportJob, job_id=job_id, delivery=delivery)
    if take == LATER:
        raise self.retry(countdown=job_stale_after().total_seconds())
    if take != RUN:
        return
    with job_heartbeat(model=ExportJob, job_id=job_id):
        export_job_execute(job_id=job_id)
