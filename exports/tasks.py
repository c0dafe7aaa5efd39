"""Thin Celery task of the background exports: a job id in, one service call.

`acks_late` + `reject_on_worker_lost`: a worker killed mid-export leaves the message to be
redelivered, and `export_job_execute` starts the file again (a finished job is left alone).
"""

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_export(job_id: int) -> None:
    from .services import export_job_execute

    export_job_execute(job_id=job_id)
