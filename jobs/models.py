"""The one record of a background job: what analysis runs and export jobs have in common.

`Job` is abstract: each kind of job has its own table (with its own `study` foreign key and
related name), and they all share these fields, their statuses and the helpers of
`jobs.services` and `jobs.selectors`. Celery only carries the work; the job's state lives here.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

MESSAGE_MAX = 200  # a progress line, shown beside the bar
ERROR_MAX = 10_000  # enough for a traceback's last lines, never a whole log


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    # How the job is named in what its page says ("No worker has picked this run up …").
    noun = "job"

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=MESSAGE_MAX, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Delivery (jobs.services.job_send, jobs.sweep): when the task message was last handed to the
    # broker (null: committed but never sent), how many messages were sent (the number each
    # message carries: an older, redelivered message is skipped), and the running task's last
    # sign of life (a stale one marks the job stalled and the sweep sends it again).
    sent_at = models.DateTimeField(null=True, blank=True)
    deliveries = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE
