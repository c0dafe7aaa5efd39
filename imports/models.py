"""The one record of a kept upload: an `ImportJob` checks or imports a file of items or
responses, at once for a small file, by a worker for a large one (`imports.services`)."""

from __future__ import annotations

from django.db import models

from jobs.models import Job
from studies.models import Study


class ImportJob(Job):
    """A browser upload of items or responses imported in the background (a large file).

    The upload waits under IMPORTS_DIR/`folder` until the job has run; it is deleted then,
    whatever the outcome (a successful check keeps it for the import it previews). A file with problems fails the job: `problems` lists them
    ([file, line, column, message], the first 200) and `omitted` counts the rest; nothing was
    written. A done job keeps what was imported in `summary`.
    """

    noun = "import"

    class What(models.TextChoices):
        ITEMS = "items", "items"
        RESPONSES = "responses", "responses"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="import_jobs")
    what = models.CharField(max_length=10, choices=What.choices)
    # A check (responses): validate and summarise, nothing written; the upload is kept for the
    # import the researcher confirms (a new job), until cancelled or a day old.
    dry_run = models.BooleanField(default=False)
    filename = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField(default=0)
    folder = models.CharField(max_length=64, blank=True)  # under IMPORTS_DIR; "" once deleted
    # What the import reads besides the file (responses: format, annotator column, meta
    # columns, the names of the item and value maps kept beside it).
    options = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)
    omitted = models.PositiveIntegerField(default=0)

    class Meta(Job.Meta):
        # The table annotation created before the imports had an app of their own; its rows
        # (and any job in flight) stay where they are (migrations 0001 here, 0004 there).
        db_table = "annotation_importjob"

    def __str__(self) -> str:
        return f"{self.study_id} import of {self.what} {self.status}"
