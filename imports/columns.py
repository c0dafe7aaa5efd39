"""The on-screen column mapper of a wide response file (a Google Forms export), beside the
upload's kept file and import job (`imports.services`).

`columns_upload` keeps the file as a response check (`ImportJob`, `dry_run`) waiting for its
columns: done at once, never sent to a worker, its options saying ``columns: pending``; the
hourly sweep of kept uploads deletes it after a day like any check nobody confirmed.
`columns_read` reads the header and a few values of each column for the page. `columns_apply`
turns the researcher's choices into the options a hand-made item map gives
(`core.responses.columns.columns_mapping`), checks the file with them while it stays kept (a
small file: problems are shown on the mapper, the file still there to map again), then hands the
kept file to the check job every upload gets — the preview, then **Confirm import** — so there is
one import path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404
from django.utils import timezone

from annotation.responses_import import responses_import
from core.decoding import decode
from core.problems import Collector, InputError
from core.responses import Upload
from core.responses.columns import (
    GUESS_TEXTS_MAX_ITEMS,
    ColumnChoice,
    ColumnMapping,
    columns_mapping,
)
from core.tabular import stream_grid
from jobs.models import Job
from studies.models import Study

from .models import ImportJob
from .services import (
    DATA,
    _folder,
    _large,
    import_job_create,
    import_job_discard,
    import_job_run,
)

PENDING = "pending"  # options["columns"] of a kept file waiting for its columns to be mapped
HEAD_BYTES = 1024 * 1024  # the start of the file the page reads: the header and a few rows
SAMPLE_ROWS = 20  # rows looked at for sample values
SAMPLES = 3  # values shown per column
SAMPLE_CHARS = 60
# The page posts three fields per column (use, item, question); Django refuses a form of more
# than DATA_UPLOAD_MAX_NUMBER_FIELDS fields, so a wider file is mapped with an item map file.
MAX_COLUMNS = 300


@dataclass(frozen=True)
class Column:
    """One column as the mapper shows it: its number (from 1), header and first values."""

    number: int
    header: str
    samples: tuple[str, ...]


# The item ids the page offers as suggestions (a datalist) up to this many items.
SUGGEST_MAX_ITEMS = 1000


def columns_items(*, study: Study) -> tuple[list[str], dict[str, str]]:
    """Return the item ids the page suggests (none for a study of more than
    `SUGGEST_MAX_ITEMS`) and every item's id and text for the guesses (the texts only for a
    study of at most `GUESS_TEXTS_MAX_ITEMS` items: `columns_guess` compares no more)."""
    count = study.items.count()
    if count > GUESS_TEXTS_MAX_ITEMS:
        texts = dict.fromkeys(study.items.values_list("external_id", flat=True), "")
    else:
        texts = {item: text or text_a for item, text, text_a in
                 study.items.order_by("position").values_list("external_id", "text", "text_a")}
    return (list(texts) if count <= SUGGEST_MAX_ITEMS else []), texts


def columns_awaiting(job: ImportJob) -> bool:
    """Tell whether the job is a kept file waiting for its columns (and still has it)."""
    return job.options.get("columns") == PENDING and bool(job.folder)


def columns_upload(*, study: Study, user: User | None, upload: UploadedFile[Any],
                   value_map: UploadedFile[Any] | None = None) -> ImportJob:
    """Keep a wide file (and its value map) for the mapper; refuse it, kept nothing, when its
    header cannot be read or is wider than `MAX_COLUMNS` (`InputError`)."""
    job = import_job_create(study=study, user=user, what=ImportJob.What.RESPONSES, upload=upload,
                            options={"fmt": "wide", "columns": PENDING},
                            maps={"value_map": value_map}, dry_run=True, enqueue=False)
    # Done at once: the jobs' sweep sends only queued jobs, and the kept-upload sweep deletes a
    # done check's file after a day.
    ImportJob.objects.filter(pk=job.pk).update(
        status=Job.Status.DONE, progress=100, finished_at=timezone.now(),
        message="waiting for its columns to be mapped")
    job.refresh_from_db()
    try:
        columns_read(job=job)
    except InputError:
        import_job_discard(job=job)
        raise
    return job


def columns_read(*, job: ImportJob) -> list[Column]:
    """Return the columns of the kept file with a few values each (its first `HEAD_BYTES`);
    raise `InputError` when the header cannot be read, Http404 when the file is gone."""
    folder = _folder(job)
    if folder is None or not (folder / DATA).is_file():
        raise Http404("The uploaded file is gone; upload it again")
    with (folder / DATA).open("rb") as file:
        head = file.read(HEAD_BYTES)
        if file.read(1):  # cut after the last whole line
            head = head[: head.rfind(b"\n") + 1] or head
    errors = Collector(job.filename)
    text = decode(head, errors, max_bytes=HEAD_BYTES)
    grid = None if text is None else stream_grid(text, filename=job.filename, errors=errors,
                                                 min_columns=2)
    errors.raise_if_any()
    assert grid is not None  # no problem recorded: the header was read
    if len(grid.header) > MAX_COLUMNS:
        errors.add(f"the file has {len(grid.header)} columns; the page maps at most "
                   f"{MAX_COLUMNS}: give an item map file instead", line=1)
        errors.raise_if_any()
    samples: list[list[str]] = [[] for _ in grid.header]
    for count, (_, cells) in enumerate(grid.rows):
        if count >= SAMPLE_ROWS:
            break
        for values, cell in zip(samples, cells, strict=False):
            value = " ".join(cell.split())[:SAMPLE_CHARS]
            if value and len(values) < SAMPLES and value not in values:
                values.append(value)
    return [Column(n, header, tuple(values))
            for n, (header, values) in enumerate(zip(grid.header, samples, strict=True), 1)]


def columns_apply(*, job: ImportJob, user: User | None,
                  choices: Sequence[ColumnChoice]) -> ImportJob:
    """Check the researcher's mapping, then start the check (the preview) of the kept file with
    it; return that job. Raise `InputError` naming each column of every problem, the file kept:
    the mapping's own problems, and for a file checked at once the import's (a value outside
    the scale, say)."""
    study = job.study
    header = [c.header for c in columns_read(job=job)]
    mapping = columns_mapping(header, choices, items=set(study.items.values_list(
        "external_id", flat=True)), questions=[q.key for q in study.question_list],
        filename=job.filename)
    options = {"fmt": "wide", "annotator_column": mapping.annotator_column,
               "meta_columns": list(mapping.meta_columns),
               "ignore_columns": list(mapping.ignore_columns), "item_map": mapping.item_map,
               "maps": job.options.get("maps", {}),
               "columns": [[c.use, c.item, c.question] for c in choices]}
    folder = _folder(job)
    assert folder is not None  # columns_read found the file
    if not _large(job.size_bytes):
        _check(job=job, folder=folder, mapping=mapping)
    claimed = ImportJob.objects.filter(pk=job.pk, folder=job.folder).exclude(
        folder="").update(folder="")
    if not claimed:
        raise Http404("This file was already mapped or cancelled")
    check = ImportJob.objects.create(
        study=study, created_by=user, what=job.what, filename=job.filename,
        size_bytes=job.size_bytes, folder=job.folder, dry_run=True, options=options,
        message="waiting for a worker")
    return import_job_run(job=check)


def _check(*, job: ImportJob, folder: Path, mapping: ColumnMapping) -> None:
    """Run the import as a dry run on the kept file, which stays whatever the outcome."""
    names = job.options.get("maps", {})
    value_map = (Upload(names["value_map"], (folder / "value_map").read_bytes())
                 if "value_map" in names else None)
    responses_import(study=job.study, data=(folder / DATA).read_bytes(), filename=job.filename,
                     fmt="wide", annotator_column=mapping.annotator_column,
                     item_map=mapping.item_map, value_map=value_map,
                     meta_columns=mapping.meta_columns, ignore_columns=mapping.ignore_columns,
                     dry_run=True, max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES)
