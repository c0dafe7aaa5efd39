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


class TrustChunk(models.Model):
    """The alphas of one chunk of subsets, computed by one Celery task of a run's chord.

    Stored here (not in the result backend) so that a redelivered chunk is computed once and
    the merge reads exactly what was computed; ``fingerprint`` guards against mixed inputs.
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="trust_chunks")
    key = models.CharField(max_length=100)  # "<scale>:<items>", e.g. "raw:all"
    start = models.BigIntegerField()
    stop = models.BigIntegerField()
    k = models.PositiveSmallIntegerField()
    level = models.CharField(max_length=10)
    fingerprint = models.CharField(max_length=64)
    alphas = models.BinaryField()  # float64, little-endian, nan = undefined
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "key", "start"]
        constraints = [models.UniqueConstraint(fields=["run", "key", "start"],
                                               name="trust_chunk_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.key} [{self.start}, {self.stop})"


class ExportJob(models.Model):
    """A background export of a large study: written to a file, downloaded when done."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    what = models.CharField(max_length=10)  # responses|matrix|items|results|bundle
    format = models.CharField(max_length=10)  # csv|jsonl|parquet|json|zip
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.CharField(max_length=200, blank=True)
    path = models.CharField(max_length=500, blank=True)  # relative to settings.EXPORTS_DIR
    size_bytes = models.BigIntegerField(default=0)
    rows = models.BigIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.study_id} export {self.what}.{self.format} {self.status}"
