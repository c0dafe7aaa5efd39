"""Thin Celery task of the background exports: a job id in, one service call.

`acks_late` + `reject_on_worker_lost`: a worker killed mid-export leaves the message to be
redelivered, and `export_job_execute` starts the file again (a finished job is left alone).
The job's heartbeat lets the sweep send it again sooner than the broker's visibility timeout
(`jobs.sweep`); the delivery number makes the older message a no-op then.
"""

from jobs.tasks import job_task

from .models import ExportJob
from .services import export_job_execute


@job_task(model=ExportJob)
def run_export(job_id: int) -> None:
    """Run the job unless this message is superseded or the job over; retry after the stale
    interval while another worker holds it; its heartbeat beats while it runs
    (`jobs.tasks.job_task`)."""
    export_job_execute(job_id=job_id)
