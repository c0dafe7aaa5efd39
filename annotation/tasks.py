"""Work of the annotation app in the background: periodic tasks sent by Celery beat
(CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .services import participants_reclaim


@shared_task(ignore_result=True)
def reclaim_assignments() -> int:
    """Give abandoned assignments to new participants (`participants_reclaim`)."""
    return participants_reclaim()
