"""Thin Celery tasks: an id in, one service call."""

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_analysis(run_id: int) -> None:
    from .services import analysis_run_execute

    analysis_run_execute(run_id=run_id)
