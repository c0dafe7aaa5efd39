"""Analysis runs: the record of each run (status, progress, settings, timings) and its results."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models import Study


class AnalysisRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="analysis_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=200, blank=True)
    settings = models.JSONField(default=dict)
    code_version = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    results = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "status", "-created_at"], name="run_latest_idx")]

    def __str__(self) -> str:
        return f"{self.study_id}#{self.pk} {self.status} {self.progress}%"
