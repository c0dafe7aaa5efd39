"""Periodic work of the jobs, sent by Celery beat (CELERY_BEAT_SCHEDULE in config/settings.py)."""

from celery import shared_task


@shared_task(ignore_result=True)
def sweep_jobs() -> dict:
    """Send what was never sent, send again what a lost worker left (`jobs.sweep`)."""
    from .sweep import jobs_sweep

    return jobs_sweep().as_dict()
