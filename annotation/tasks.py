"""Periodic work of the annotation app, sent by Celery beat (CELERY_BEAT_SCHEDULE)."""

from celery import shared_task


@shared_task(ignore_result=True)
def reclaim_assignments() -> int:
    """Give abandoned assignments to new participants (`participants_reclaim`)."""
    from .services import participants_reclaim

    return participants_reclaim()
