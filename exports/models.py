"""Background exports: the record of each export job (a `jobs.models.Job`) and its file."""

from __future__ import annotations

from django.db import models

from jobs.models import Job
from studies.models import Study


class ExportJob(Job):
    """A background export of a large study: written to a file, downloaded when done."""

    noun = "export"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    # responses|revisions|matrix|items|results|labels|gaps|bundle, or a systems section
    # (metric_meta_evaluation: 22 characters)
    what = models.CharField(max_length=30)
    format = models.CharField(max_length=10)  # csv|jsonl|parquet|json|zip
    path = models.CharField(max_length=500, blank=True)  # relative to settings.EXPORTS_DIR
    size_bytes = models.BigIntegerField(default=0)
    rows = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.study_id} export {self.what}.{self.format} {self.status}"
