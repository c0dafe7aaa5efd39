"""The periodic sweep of background jobs (a Celery beat task every CONCORD_SWEEP_SECONDS, or
`manage.py sweep_jobs`): what was committed but never sent is sent; what a lost worker left
running is sent again, exactly once per stale heartbeat, or failed after
CONCORD_JOB_MAX_ATTEMPTS attempts.

Each kind of job registers its task (`jobs.kinds.job_kind_register`, from its app's `ready`),
so this module knows no concrete job.  Every change of a row is one conditional UPDATE on the
state the sweep read: two sweeps running at once (two beat processes, a beat and the command)
cannot both send a job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from .kinds import JOB_KINDS
from .models import Job
from .services import job_error, job_send, job_stale_filter

BATCH = 100  # jobs of each kind handled per sweep (the next sweep takes the rest)


@dataclass
class SweepReport:
    sent: list[str] = field(default_factory=list)  # committed, never sent: now sent
    resent: list[str] = field(default_factory=list)  # stale heartbeat: sent again
    failed: list[str] = field(default_factory=list)  # given up (or the broker refused)

    def as_dict(self) -> dict[str, list[str]]:
        return {"sent": self.sent, "resent": self.resent, "failed": self.failed}


def jobs_sweep() -> SweepReport:
    """Sweep every registered kind of job once; return what was done (``"AnalysisRun 7"``)."""
    report = SweepReport()
    now = timezone.now()
    grace = now - timedelta(seconds=float(settings.CONCORD_JOB_SEND_GRACE_SECONDS))
    limit = int(settings.CONCORD_JOB_MAX_ATTEMPTS)
    for model, send in JOB_KINDS.items():
        # 1. Committed but never sent (the web process died between its commit and its send).
        unsent = model._default_manager.filter(status=Job.Status.QUEUED, sent_at__isnull=True,
                                               created_at__lt=grace).order_by("pk")[:BATCH]
        for job in unsent:
            name = f"{model.__name__} {job.pk}"
            if job_send(model=model, job=job, send=partial(send, job.pk)):
                report.sent.append(name)
            elif job.status == Job.Status.FAILED:  # the broker refused it
                report.failed.append(name)
        # 2. Running with a stale heartbeat: its worker is gone.
        stale = (model._default_manager.filter(job_stale_filter(now)).order_by("pk")
                 .only("pk", "heartbeat_at", "attempts", "status", "sent_at")[:BATCH])
        for job in stale:
            name = f"{model.__name__} {job.pk}"
            same = model._default_manager.filter(pk=job.pk, status=Job.Status.RUNNING,
                                                 heartbeat_at=job.heartbeat_at)
            if job.attempts >= limit:
                reason = (f"Stopped: the worker running this {model.noun} was lost "
                          f"{job.attempts} times (no heartbeat for "
                          f"{settings.CONCORD_HEARTBEAT_STALE_SECONDS} s); it is not sent again "
                          f"(CONCORD_JOB_MAX_ATTEMPTS = {limit}). Start it again, and check "
                          "the workers' logs (memory, time limits).")
                if same.update(status=Job.Status.FAILED, error=job_error(reason),
                               message="failed", finished_at=now):
                    report.failed.append(name)
                continue
            # The guard: only the sweep whose UPDATE still finds the stale heartbeat it read
            # sends the job; a second sweep finds nothing to change.
            if not same.update(status=Job.Status.QUEUED, sent_at=None, heartbeat_at=None,
                               progress=0,
                               message=f"sent again: its worker stopped answering "
                                       f"(attempt {job.attempts} of {limit})"):
                continue
            job.status, job.sent_at = Job.Status.QUEUED, None
            if job_send(model=model, job=job, send=partial(send, job.pk)):
                report.resent.append(name)
            else:
                report.failed.append(name)
    return report
