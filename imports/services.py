"""Browser uploads of items and responses, kept and imported as an `ImportJob` (issue 15, 22).

Every response upload, whatever its size, is kept the same way: `import_job_create` copies it,
chunk by chunk, to a folder of its own under IMPORTS_DIR and records an `ImportJob`;
`import_job_run` then runs it at once, in the request, for a file up to
CONCORD_IMPORT_SYNC_MAX_BYTES, and sends its task to a worker (once the transaction commits) for a
larger one (within the browser's CONCORD_MAX_UPLOAD_BYTES). An item upload takes the same job
when it is large (a small one is imported at once by the page). `import_job_execute` runs the
very import the page and the commands run (`studies.services.items_import`,
`annotation.responses_import`: the same checks, the same messages, one transaction,
nothing written on any problem), records its progress, then either the summary or every problem,
and deletes the folder whatever the outcome.

A response file is checked first: the first job is a dry run (`dry_run`) whose page previews
what the file holds; `import_job_confirm` then starts the import of the same kept file
(validated again), `import_job_discard` deletes it. A kept file nobody confirms is deleted after
a day (`imports_sweep`, the one sweep of kept uploads).
"""

from __future__ import annotations

import functools
import logging
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path, PurePath
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404

from annotation.responses_import import responses_import
from core.problems import Collector, InputError, Problem
from core.responses import ImportSummary, Upload
from core.tabular import grouped, size_over_limit
from jobs.models import Job
from jobs.services import job_done, job_enqueue, job_fail, job_progress, job_start
from studies.models import Study
from studies.selectors import item_label_counts, labels_phrase
from studies.services import coref_items_import, items_import

from .models import ImportJob

log = logging.getLogger(__name__)

DATA = "data"  # the uploaded file, in the job's folder; the maps beside it under their names
SYSTEM = "system"  # a coreference job's system file, beside the gold (DATA)
MAPS = ("item_map", "value_map")
FOLDER_MAX_AGE_S = 24 * 3600  # a folder left by a job that never ran (its row deleted, say)
# The annotators a check's preview lists (in the job's summary): every one of a file of the
# browser's size but the largest crowd studies, whose page says how many are not listed.
PREVIEW_ANNOTATORS = 1000


def import_is_large(upload: UploadedFile[Any]) -> bool:
    """Tell whether an upload is imported by a background job rather than at once."""
    return _large(upload.size or 0)


def _large(size: int) -> bool:
    return size > settings.CONCORD_IMPORT_SYNC_MAX_BYTES


def import_job_run(*, job: ImportJob) -> ImportJob:
    """Run a new job: at once, in this request, when its file is small (the returned copy is
    done or failed), by a worker when it is large (sent once the transaction commits).

    A web process that dies in the middle of a small one leaves a job the periodic sweep sends
    to a worker (`jobs.sweep`), like a large one whose sending failed.
    """
    if _large(job.size_bytes):
        _enqueue(job)
        return job
    return import_job_execute(job_id=job.pk)


def import_job_ran_at_once(*, job: ImportJob) -> bool:
    """Tell whether `import_job_run` ran this job in the request (its file is small)."""
    return not _large(job.size_bytes)


def upload_read(file: UploadedFile[Any], *, max_bytes: int | None = None) -> Upload:
    """Read an uploaded file, refusing one over the size limit before reading it."""
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    name, size = file.name or "", file.size or 0
    if size > limit:
        raise InputError([Problem(name, None, None, size_over_limit(size, limit=limit))])
    return Upload(PurePath(name).name, file.read())


def import_job_create(*, study: Study, user: User | None, what: str,
                      upload: UploadedFile[Any], options: Mapping[str, Any] | None = None,
                      maps: Mapping[str, UploadedFile[Any] | None] | None = None,
                      dry_run: bool = False, enqueue: bool = True) -> ImportJob:
    """Keep an upload (and its map files) under IMPORTS_DIR, record a queued job, and send its
    task once the transaction commits.

    Refuses a file over the browser's limit (CONCORD_MAX_UPLOAD_BYTES) with `InputError`
    before anything is kept. A broker that does not answer marks the job failed (`job_send`),
    in the returned copy too; its folder is deleted then.
    """
    limit = settings.CONCORD_MAX_UPLOAD_BYTES
    files = {DATA: upload, **{name: part for name, part in (maps or {}).items() if part}}
    for part in files.values():
        if (part.size or 0) > limit:
            raise InputError([Problem(PurePath(part.name or "").name, None, None,
                                      size_over_limit(part.size or 0, limit=limit))])
    imports_sweep()
    key = secrets.token_hex(16)
    folder = Path(settings.IMPORTS_DIR) / key
    folder.mkdir(parents=True)
    try:
        for name, part in files.items():
            with (folder / name).open("wb") as out:
                for chunk in part.chunks():  # never the whole file in memory
                    out.write(chunk)
        names = {name: PurePath(part.name or name).name for name, part in files.items()}
        job = ImportJob.objects.create(
            study=study, created_by=user, what=what, filename=names.pop(DATA),
            size_bytes=upload.size or 0, folder=key, dry_run=dry_run,
            options={**(options or {}), "maps": names}, message="waiting for a worker")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if enqueue:
        _enqueue(job)
    return job


def _enqueue(job: ImportJob) -> None:
    # The broker refused it: nothing will run, so the kept file goes.
    job_enqueue(job=job, refused=functools.partial(_forget, job))


def import_job_confirm(*, job: ImportJob, user: User | None,
                       enqueue: bool = True) -> ImportJob:
    """Start the import of the file a finished check kept (a new job); 404 when it was already
    confirmed or cancelled.

    The kept file passes to the new job by one conditional UPDATE, so a double click imports
    once.
    """
    if job.options.get("columns") == "pending":  # its columns are not mapped yet
        raise Http404("The columns of this file are not mapped yet")
    folder = _checked(job)
    new = ImportJob.objects.create(
        study=job.study, created_by=user, what=job.what, filename=job.filename,
        size_bytes=job.size_bytes, folder=folder, options=job.options,
        message="waiting for a worker")
    if enqueue:
        _enqueue(new)
    return new


def import_job_discard(*, job: ImportJob) -> None:
    """Delete the file a finished check kept; 404 when it was already confirmed or cancelled."""
    folder = _checked(job)
    shutil.rmtree(Path(settings.IMPORTS_DIR) / folder, ignore_errors=True)


def _checked(job: ImportJob) -> str:
    """Take the kept file of a successful check away from it; return its folder, or 404."""
    claimed = ImportJob.objects.filter(pk=job.pk, dry_run=True, status=Job.Status.DONE,
                                       folder=job.folder).exclude(folder="").update(folder="")
    if not claimed:
        raise Http404("This file was already imported or cancelled")
    return job.folder


def import_job_execute(*, job_id: int) -> ImportJob:
    """Run a queued import job (idempotent: a job already done or failed is left alone).

    The import is all or nothing: a killed worker leaves nothing written and the folder in
    place, so the redelivered task starts again. Problems of the file fail the job with the
    list of them; any other error fails it too and propagates to Celery.
    """
    job = ImportJob.objects.select_related("study", "created_by").get(pk=job_id)
    if job.status in (Job.Status.DONE, Job.Status.FAILED):
        return job
    folder = _folder(job)
    if folder is None or not (folder / DATA).is_file():
        job_fail(model=ImportJob, job_id=job.pk,
                 error="The uploaded file is gone (deleted after an earlier attempt, or by "
                       "a clean-up of the server's var directory); upload it again.")
        job.refresh_from_db()
        return job
    job_start(model=ImportJob, job_id=job.pk, message="reading the file")
    last = [0.0]

    def report(fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.5:  # one UPDATE at most every half second
            last[0] = now
            job_progress(model=ImportJob, job_id=job.pk,
                         progress=min(99, max(1, round(100 * fraction))), message=message)

    summary: dict[str, Any]
    try:
        if job.dry_run:
            result = _responses(job, folder, report)
            summary = _summary(result)
            message = (f"{job.filename} holds {grouped(result.answers)} {_answers(result)} of "
                       f"{grouped(len(result.annotators))} annotators; nothing is stored yet.")
        elif job.what == ImportJob.What.ITEMS and "coref_format" in job.options:
            count, warnings = _coref(job, folder)
            # What the scorers pass over, as the import page lists it (the first 20).
            summary = {"items": count, "warnings": [str(p) for p in warnings.problems[:20]]}
            message = (f"Imported {grouped(count)} coreference items from {job.filename} and "
                       f"{job.options['maps'].get(SYSTEM, SYSTEM)}.")
        elif job.what == ImportJob.What.ITEMS:
            count = items_import(study=job.study, data=(folder / DATA).read_bytes(),
                                 filename=job.filename, progress=report,
                                 user=job.created_by)
            labels = item_label_counts(study=job.study)
            # the systems and sources only when the items name some: a study without them
            # keeps the summary it always had
            summary = {"items": count, **({k: v for k, v in labels.items() if any(
                labels.values())})}
            message = (f"Imported {grouped(count)} items from {job.filename}"
                       f"{labels_phrase(labels)}.")
        else:
            result = _responses(job, folder, report)
            summary = _summary(result)
            message = (f"Imported {grouped(result.answers)} {_answers(result)} of "
                       f"{grouped(len(result.annotators))} annotators from {job.filename}.")
    except InputError as exc:
        ImportJob.objects.filter(pk=job.pk).update(
            problems=[[p.file, p.line, p.column, p.message] for p in exc.problems],
            omitted=exc.omitted)
        job_fail(model=ImportJob, job_id=job.pk,
                 error=f"{exc.count} problem{'s' if exc.count != 1 else ''}; nothing was "
                       "imported.")
        _forget(job)
        job.refresh_from_db()
        return job
    except Exception as exc:
        job_fail(model=ImportJob, job_id=job.pk, error=exc)
        _forget(job)
        raise
    job_done(model=ImportJob, job_id=job.pk, message=message, summary=summary)
    if not job.dry_run:  # a check keeps the file for the import it previews
        _forget(job)
    job.refresh_from_db()
    return job


def _coref(job: ImportJob, folder: Path) -> tuple[int, Collector]:
    """Import a coreference job's gold (the upload) and system file (kept beside it); return
    the items imported and the warnings (what the scorers pass over)."""
    warnings = Collector(job.filename)
    count = coref_items_import(
        study=job.study, gold=(folder / DATA).read_bytes(),
        system=(folder / SYSTEM).read_bytes(), gold_name=job.filename,
        system_name=job.options["maps"].get(SYSTEM, SYSTEM), fmt=job.options["coref_format"],
        warnings=warnings)
    return count, warnings


def coref_import_is_large(*, gold: UploadedFile[Any], system: UploadedFile[Any]) -> bool:
    """Tell whether a coreference upload is imported by a background job: either file larger
    than CONCORD_IMPORT_SYNC_MAX_BYTES, or more documents in the gold file than
    CONCORD_COREF_SYNC_MAX_DOCUMENTS (counted from its `#begin document` lines, or its JSON
    documents' opening braces as an upper bound, before anything is parsed): each document's
    metrics cost milliseconds, so 5 000 documents take tens of seconds."""
    if _large(gold.size or 0) or _large(system.size or 0):
        return True
    head = b"".join(gold.chunks())
    gold.seek(0)
    documents = head.count(b"#begin document") or head.count(b"{")
    return documents > settings.CONCORD_COREF_SYNC_MAX_DOCUMENTS


def import_job_problems(*, job: ImportJob) -> InputError | None:
    """Return the problems a failed job recorded, as the pages show an `InputError`."""
    if not job.problems:
        return None
    return InputError([Problem(*row) for row in job.problems], omitted=job.omitted)


def _responses(job: ImportJob, folder: Path,
               report: Callable[[float, str], None]) -> ImportSummary:
    options = job.options
    names = options.get("maps", {})
    maps = {name: Upload(names[name], (folder / name).read_bytes()) if name in names else None
            for name in MAPS}
    # The kept file itself: a long file on PostgreSQL is read a chunk at a time.
    with (folder / DATA).open("rb") as data:
        return responses_import(
            study=job.study, data=data, filename=job.filename,
            fmt=options["fmt"], annotator_column=options.get("annotator_column") or None,
            meta_columns=options.get("meta_columns", ()), dry_run=job.dry_run,
            progress=report, value_map=maps["value_map"],
            # the on-screen column mapper's choices (imports.columns), as a hand-made map
            item_map=options.get("item_map") or maps["item_map"],
            ignore_columns=options.get("ignore_columns", ()))


def _answers(summary: ImportSummary) -> str:
    """What a response file's answers are called: a judgments file's, one annotator's
    judgments of one comparison."""
    return "judged comparisons" if summary.fmt == "judgments" else "answers"


def _summary(summary: ImportSummary) -> dict[str, Any]:
    """Return what the job page shows of a response import: the counts, and a check's first
    `PREVIEW_ANNOTATORS` annotators (``annotator_list``)."""
    fields = asdict(summary)
    annotators = fields.pop("annotators")
    shown = {} if summary.imported else {"annotator_list": annotators[:PREVIEW_ANNOTATORS]}
    return {**fields, "annotators": len(summary.annotators),
            "warnings": list(summary.warnings), **shown}


def _folder(job: ImportJob) -> Path | None:
    if not job.folder or not job.folder.isalnum():
        return None
    return Path(settings.IMPORTS_DIR) / job.folder


def _forget(job: ImportJob) -> None:
    """Delete the job's upload: it is never needed again once the job is over."""
    folder = _folder(job)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    ImportJob.objects.filter(pk=job.pk).update(folder="")


def imports_sweep() -> int:
    """Delete folders older than a day that no queued or running job needs (a check's kept
    file nobody confirmed, a folder whose job is gone); return how many. A check whose file
    is deleted no longer offers *Confirm import* (its confirmation answers 404).

    Run when a file is uploaded and every hour by Celery beat
    (`imports.tasks.sweep_imports`)."""
    root = Path(settings.IMPORTS_DIR)
    if not root.is_dir():
        return 0
    cutoff = time.time() - FOLDER_MAX_AGE_S
    old = []
    for folder in root.iterdir():
        try:
            if folder.stat().st_mtime < cutoff:
                old.append(folder)
        except OSError:
            continue
    if not old:
        return 0
    active = set(ImportJob.objects.filter(status__in=ImportJob.ACTIVE,
                                          folder__in=[f.name for f in old])
                 .values_list("folder", flat=True))
    gone = [folder for folder in old if folder.name not in active]
    # The checks lose their file first, so that no confirmation starts on a folder being
    # deleted (a confirmation claims the folder by the same column).
    ImportJob.objects.filter(folder__in=[f.name for f in gone]).exclude(
        status__in=ImportJob.ACTIVE).update(folder="")
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return len(gone)
