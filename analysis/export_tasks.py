"""Thin Celery task of the background exports: a job id in, one service call.

Registered by `AnalysisConfig.ready()` (the worker's autodiscovery only looks for `tasks`).
`acks_late` + `reject_on_worker_lost`: a worker killed mid-export leaves the message to be
redelivered, and `export_job_execute` starts the file again (a finished job is left alone).
"""

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_export(job_id: int) -> None:
    from .exports import export_job_execute

    export_job_execute(job_id=job_id)
