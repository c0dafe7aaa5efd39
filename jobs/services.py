"""Move a job through its states: started, progressing, done or failed.

Every helper is one UPDATE of the job's row, by id, so that a Celery task, a chord's body and a
management command report the same way, and a worker never overwrites a row with a stale copy.
A job that is done stays done: a late failure or a second delivery finishing after the first
changes nothing.

Rows are reached through ``model._default_manager`` (each kind's ``objects``): `Job` is abstract,
so a ``type[Job]`` has no ``objects`` for the type checker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from .kinds import job_kind_send
from .models import ERROR_MAX, MESSAGE_MAX, Job

log = logging.getLogger(__name__)


class JobNotSent(Exception):
    """The broker refused a job's message: the job is marked failed with this reason."""


def job_message(text: str) -> str:
    """Return a progress message cut to what the `message` column holds."""
    return text[:MESSAGE_MAX]


def job_error(error: BaseException | str) -> str:
    """Return the error recorded for a failed job: the exception's type and text, or the text."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return text[:ERROR_MAX]


def job_start(*, model: type[Job], job_id: int, message: str, progress: int = 1,
              **fields: object) -> None:
    """Mark a job running: started now, one more attempt, the error of an earlier attempt gone.

    ``fields`` are the kind's own columns to set in the same UPDATE.
    """
    now = timezone.now()
    model._default_manager.filter(pk=job_id).update(
        status=Job.Status.RUNNING, started_at=now, heartbeat_at=now, progress=progress,
        message=job_message(message), attempts=F("attempts") + 1, error="", **fields)
    delay = float(settings.CONCORD_JOB_TEST_DELAY_SECONDS)
    if delay > 0:  # tests only: a task slow enough to kill its worker in the middle
        with job_heartbeat(model=model, job_id=job_id):
            time.sleep(delay)


def job_progress(*, model: type[Job], job_id: int, progress: int, message: str) -> None:
    """Record how far a running job has come (0–100) and what it is doing (a heartbeat too)."""
    model._default_manager.filter(pk=job_id).update(
        progress=progress, message=job_message(message), heartbeat_at=timezone.now())


# --------------------------------------------------------------------------- delivery


def job_send(*, model: type[Job], job: Job, send: Callable[[int], object]) -> bool:
    """Hand a committed job's message to the broker: ``send(delivery)`` publishes the task with
    this delivery number.  Returns True when it went out.

    The job's row is claimed first (one conditional UPDATE: only a job still queued and unsent,
    so that the request and the sweep never both send it).  When the broker refuses (Redis down:
    the connection is refused or times out after CELERY_BROKER_CONNECTION_TIMEOUT and the publish
    retries), the job is marked failed with the reason at once, and ``job`` (the caller's copy)
    says so; nothing is left queued that nobody will run.
    """
    now = timezone.now()
    claimed = model._default_manager.filter(
        pk=job.pk, status=Job.Status.QUEUED, sent_at__isnull=True,
    ).update(sent_at=now, deliveries=F("deliveries") + 1)
    if not claimed:
        return False
    delivery = model._default_manager.filter(pk=job.pk).values_list("deliveries", flat=True).get()
    try:
        send(delivery)
    except Exception as exc:  # noqa: BLE001 - whatever the broker raised, the job did not go out
        reason = job_not_sent_reason(job=job, error=exc)
        log.warning("%s %s not sent: %s", job.noun, job.pk, exc)
        job_fail(model=model, job_id=job.pk, error=reason)
        model._default_manager.filter(pk=job.pk).update(sent_at=None, message="not started")
        job.status, job.error, job.message = Job.Status.FAILED, reason, "not started"
        return False
    job.sent_at, job.deliveries = now, delivery
    return True


def job_enqueue(*, job: Job, refused: Callable[[], object] | None = None) -> None:
    """Send a new job's task once the transaction commits (a worker must find its row), through
    the task its kind registered (`jobs.kinds`).

    A broker that does not answer marks the job failed with the reason, in ``job`` (the
    caller's copy) too (`job_send`); ``refused`` then runs (an import deletes the file it kept).
    """
    model = type(job)

    def send() -> None:
        if not job_send(model=model, job=job, send=partial(job_kind_send, model, job.pk)) \
                and job.status == Job.Status.FAILED and refused is not None:
            refused()

    transaction.on_commit(send)


def job_not_sent_reason(*, job: Job, error: BaseException) -> str:
    """Return what the researcher reads when a job could not be handed to the broker."""
    return job_error(
        f"The task queue (the Celery broker, Redis) did not answer "
        f"({type(error).__name__}: {error}). Nothing was queued; start the {job.noun} again once "
        "the broker is back.")


RUN, SKIP, LATER = "run", "skip", "later"


def job_take(*, model: type[Job], job_id: int, delivery: int | None) -> str:
    """Tell what a task message should do with its job: RUN it, SKIP it, or ask again LATER.

    SKIP when the job is gone, done or failed, or when the message is an older delivery than
    the job's latest (the sweep sent the job again: the broker's redelivery of the first
    message, after its visibility timeout, finds it superseded).  LATER when the job is running
    with a fresh heartbeat: another worker is on it (a message redelivered while its task still
    runs); the task retries after the stale interval and then runs the job only if that worker
    has stopped beating.  ``delivery`` None: a message sent before deliveries were counted.
    """
    row = (model._default_manager.filter(pk=job_id)
           .values("status", "deliveries", "heartbeat_at").first())
    if row is None:
        return SKIP
    if delivery is not None and delivery != row["deliveries"]:
        log.info("%s %s: delivery %s superseded by delivery %s, skipped", model.__name__, job_id,
                 delivery, row["deliveries"])
        return SKIP
    if row["status"] in (Job.Status.DONE, Job.Status.FAILED):
        log.info("%s %s is %s, skipped", model.__name__, job_id, row["status"])
        return SKIP
    if row["status"] == Job.Status.RUNNING and row["heartbeat_at"] is not None:
        if timezone.now() - row["heartbeat_at"] < job_stale_after():
            log.info("%s %s is running elsewhere (fresh heartbeat): asked again later",
                     model.__name__, job_id)
            return LATER
    return RUN


def job_stale_after() -> timedelta:
    """How old a running job's heartbeat may get before the job counts as stalled."""
    return timedelta(seconds=float(settings.CONCORD_HEARTBEAT_STALE_SECONDS))


@contextmanager
def job_heartbeat(*, model: type[Job], job_id: int) -> Iterator[None]:
    """Keep a running job's heartbeat fresh while the block runs (every
    CONCORD_HEARTBEAT_SECONDS, from a thread with its own database connection).

    A worker killed (or frozen) stops beating: after CONCORD_HEARTBEAT_STALE_SECONDS the page
    shows the job stalled and the sweep sends it again.
    """
    stop = threading.Event()
    interval = float(settings.CONCORD_HEARTBEAT_SECONDS)

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    model._default_manager.filter(pk=job_id, status=Job.Status.RUNNING).update(
                        heartbeat_at=timezone.now())
                except Exception:  # noqa: BLE001 - a missed beat is retried; never kill the task
                    log.warning("heartbeat of %s %s failed", model.__name__, job_id,
                                exc_info=True)
        finally:
            connections.close_all()

    thread = threading.Thread(target=beat, name=f"heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def job_stale_filter(now: datetime | None = None) -> Q:
    """The running jobs whose heartbeat is stale (for the sweep and the page)."""
    cutoff = (now or timezone.now()) - job_stale_after()
    return Q(status=Job.Status.RUNNING) & (Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))


def job_done(*, model: type[Job], job_id: int, message: str = "done", **fields: object) -> bool:
    """Mark a job done with ``fields`` (its results); return False when it already was.

    Only the first delivery to finish records the job: a duplicate (a broker redelivering after
    its visibility timeout) that finishes later writes nothing.
    """
    return bool(model._default_manager.filter(pk=job_id).exclude(status=Job.Status.DONE).update(
        status=Job.Status.DONE, progress=100, message=job_message(message), error="",
        finished_at=timezone.now(), **fields))


def job_fail(*, model: type[Job], job_id: int, error: BaseException | str) -> None:
    """Mark a job failed with the error (a job already done stays done)."""
    model._default_manager.filter(pk=job_id).exclude(status=Job.Status.DONE).update(
        status=Job.Status.FAILED, error=job_error(error), finished_at=timezone.now(),
        message="failed")
