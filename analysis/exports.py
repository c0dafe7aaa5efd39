"""Exports of a study: responses, the annotator × item matrix, items, results and the methods bundle.

Every export is a generator of bytes fed by querysets read with `.iterator(chunk_size=…)`: memory
stays constant in the number of responses (it holds one chunk of rows, the pseudonym of each
annotator and the id of each item) and the number of queries is fixed whatever the size. The web
streams small studies straight to the browser; larger ones, and any on request, are written to
a file under `settings.EXPORTS_DIR` by a background `ExportJob` (`export_job_create` →
Celery task `analysis.export_tasks.run_export` → `export_job_execute`). The pure writers
(CSV, JSONL, Parquet, zip and the cell neutraliser) are in `analysis.export_formats`.

Formats, columns and the bundle are documented in docs/exports.md.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q, Window
from django.template.loader import render_to_string
from django.utils import timezone

from annotation.models import Response
from annotation.selectors import participant_pseudonyms
from studies.models import Item, Study

from .export_formats import (
    csv_chunks,
    jsonl_chunks,
    neutralise,
    parquet_chunks,
    zip_chunks,
)
from .models import ExportJob
from .selectors import latest_results

__all__ = ["neutralise", "ExportError", "Export", "export_validate", "export_open",
           "export_is_large", "export_job_create", "export_job_execute", "export_job_file"]

# what -> its formats, the first being the default.
WHATS: dict[str, tuple[str, ...]] = {
    "responses": ("csv", "jsonl", "parquet"),
    "matrix": ("csv",),
    "items": ("csv", "jsonl"),
    "results": ("json",),
    "bundle": ("zip",),
}
FORMATS = ("csv", "jsonl", "parquet", "json", "zip")
TEXT_FORMATS = ("csv", "jsonl", "json")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
    "zip": "application/zip",
}
# Exports that grow with the number of responses; the others are small whatever the study.
LARGE_WHATS = ("responses", "matrix", "bundle")
READ_CHUNK = 5000  # rows per database round trip of .iterator()
PROGRESS_EVERY = 10_000  # rows between two progress reports of a job

RESPONSE_COLUMNS = ("annotator", "item", "presentation", "position", "duplicate", "value",
                    "active_ms", "submitted_at", "source", "control")
TEXT_COLUMNS = ("text", "text_a", "text_b")
PREFIXES = (("metrics", "metric:"), ("features", "feature:"), ("meta", "meta:"))
SENTIMENT_META = ("sentiment_a", "sentiment_b")


class ExportError(ValueError):
    """An export that cannot be made: a bad `what`/`format`, or no results to export.

    `option` names the command-line option at fault ("what" or "format"), or is None.
    """

    def __init__(self, message: str, *, option: str | None = None):
        super().__init__(message)
        self.option = option


@dataclass
class Export:
    """An export ready to stream: iterate `chunks` once; `counts` fill in as it is consumed.

    `counts` maps each table written (responses, matrix, items) to its number of data rows.
    """

    what: str
    fmt: str
    filename: str
    content_type: str
    chunks: Iterator[bytes]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def export_validate(*, what: str, fmt: str | None = None) -> tuple[str, str]:
    """Return (what, format), the format defaulting per `what`; raise ExportError naming the option."""
    if what not in WHATS:
        raise ExportError(f"{what!r} is not an export; choose one of {', '.join(WHATS)}",
                          option="what")
    fmt = fmt or WHATS[what][0]
    if fmt not in WHATS[what]:
        allowed = " or ".join(WHATS[what])
        raise ExportError(f"{what} is exported as {allowed}, not {fmt!r}", option="format")
    return what, fmt


def export_is_large(*, study: Study, what: str) -> bool:
    """Tell whether an export should run in the background (more than CONCORD_EXPORT_SYNC_MAX
    responses, for the exports that grow with them). One query, without counting every row."""
    if what not in LARGE_WHATS:
        return False
    limit = settings.CONCORD_EXPORT_SYNC_MAX
    beyond = (Response.objects.filter(participant__study=study).order_by()
              .values_list("pk", flat=True)[limit:limit + 1])
    return len(beyond) > 0


def export_open(*, study: Study, what: str, fmt: str | None = None,
                progress: Callable[[int], None] | None = None) -> Export:
    """Prepare an export of the study; nothing is read until `chunks` is iterated.

    Checks that can fail (the format, a results document to export) are made here, before the
    first byte, so a caller can still answer with an error. `progress(rows)` is called every
    PROGRESS_EVERY data rows while streaming.
    """
    what, fmt = export_validate(what=what, fmt=fmt)
    document = _results_document(study) if what in ("results", "bundle") else None
    counts: dict[str, int] = {}
    tally = _Tally(counts, progress)
    if what == "responses":
        chunks = _responses_chunks(study, fmt, tally)
    elif what == "matrix":
        chunks = _matrix_chunks(study, tally)
    elif what == "items":
        chunks = _items_chunks(study, fmt, tally)
    elif what == "results":
        chunks = iter([_json_bytes(document)])
    else:
        chunks = _bundle_chunks(study, document, tally)
    return Export(what=what, fmt=fmt, filename=f"{study.slug}-{what}.{fmt}",
                  content_type=CONTENT_TYPES[fmt], chunks=chunks, counts=counts)


class _Tally:
    """Count the data rows of each table as they stream, and report progress now and then."""

    def __init__(self, counts: dict[str, int], progress: Callable[[int], None] | None):
        self.counts = counts
        self.progress = progress

    def __call__(self, table: str, rows: Iterable) -> Iterator:
        self.counts.setdefault(table, 0)
        for row in rows:
            self.counts[table] += 1
            if self.progress and self.counts[table] % PROGRESS_EVERY == 0:
                self.progress(sum(self.counts.values()))
            yield row


# --- responses (long format) ------------------------------------------------------------------


def _by_annotator(study: Study):
    """Return the study's responses ordered as the pseudonyms: by each annotator's first response."""
    return (Response.objects.filter(participant__study=study)
            .annotate(first_response=Window(Min("id"), partition_by=[F("participant_id")])))


def response_rows(*, study: Study) -> Iterator[tuple]:
    """Yield one tuple per stored answer, in RESPONSE_COLUMNS order. Two queries.

    Annotators are pseudonyms (A1, A2, … as in the results document), rows ordered by annotator
    then position. No token, no platform id: the mapping is the separate pseudonym download.
    """
    names = participant_pseudonyms(study_id=study.pk)
    rows = (_by_annotator(study)
            .order_by("first_response", F("position").asc(nulls_last=True), "presentation", "id")
            .values_list("participant_id", "item__external_id", "presentation", "position",
                         "value", "active_ms", "received_at", "source", "item__is_control"))
    for pid, item, presentation, position, value, active_ms, received, source, control in (
            rows.iterator(chunk_size=READ_CHUNK)):
        yield (names[pid], item, presentation, position, presentation > 1, value, active_ms,
               received, source, control)


def responses_schema():
    """Return the explicit Parquet schema of the responses export."""
    import pyarrow as pa

    return pa.schema([
        pa.field("annotator", pa.string(), nullable=False),
        pa.field("item", pa.string(), nullable=False),
        pa.field("presentation", pa.int16(), nullable=False),
        pa.field("position", pa.int32()),
        pa.field("duplicate", pa.bool_(), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("active_ms", pa.int64()),
        pa.field("submitted_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("control", pa.bool_(), nullable=False),
    ])


def _responses_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    rows = tally("responses", response_rows(study=study))
    if fmt == "csv":
        return csv_chunks(RESPONSE_COLUMNS, rows)
    if fmt == "jsonl":
        return jsonl_chunks(dict(zip(RESPONSE_COLUMNS, row, strict=True)) for row in rows)
    return parquet_chunks(responses_schema(), rows)


# --- the annotator × item matrix ----------------------------------------------------------------


def matrix_columns(*, study: Study) -> tuple[list[str], dict[tuple[int, int], int]]:
    """Return the matrix header and {(item pk, presentation): column index}. Two queries.

    One column per item (first presentations, import order), then one more column per item and
    later presentation that anyone answered (the duplicates), in presentation then item order:
    `import_responses --format wide` reads the k-th column of an item as presentation k.
    """
    items = list(Item.objects.filter(study=study).order_by("position")
                 .values_list("pk", "external_id"))
    latest = dict(Response.objects.filter(participant__study=study, presentation__gt=1)
                  .values("item_id").annotate(last=Max("presentation")).order_by()
                  .values_list("item_id", "last"))
    header = ["annotator"] + [external for _, external in items]
    index: dict[tuple[int, int], int] = {(pk, 1): n for n, (pk, _) in enumerate(items, start=1)}
    for presentation in range(2, max(latest.values(), default=1) + 1):
        for pk, external in items:
            if latest.get(pk, 1) >= presentation:
                index[(pk, presentation)] = len(header)
                header.append(external)
    return header, index


def matrix_rows(*, study: Study, width: int, index: dict[tuple[int, int], int]) -> Iterator[list]:
    """Yield one row per annotator (pseudonym first), blank where there is no answer. Two queries."""
    names = participant_pseudonyms(study_id=study.pk)
    rows = (_by_annotator(study).order_by("first_response", "id")
            .values_list("participant_id", "item_id", "presentation", "value"))
    current: int | None = None
    row: list = []
    for pid, item, presentation, value in rows.iterator(chunk_size=READ_CHUNK):
        if pid != current:
            if current is not None:
                yield row
            current, row = pid, [names[pid]] + [None] * (width - 1)
        row[index[(item, presentation)]] = value
    if current is not None:
        yield row


def _matrix_chunks(study: Study, tally: _Tally) -> Iterator[bytes]:
    header, index = matrix_columns(study=study)
    yield from csv_chunks(header, tally("matrix", matrix_rows(study=study, width=len(header),
                                                              index=index)))


# --- items --------------------------------------------------------------------------------------


def _items_header(study: Study) -> list[str]:
    """Return the `import_items` columns the study's items need. Two queries."""
    present = Item.objects.filter(study=study).aggregate(
        **{name: Count("pk", filter=~Q(**{name: ""})) for name in TEXT_COLUMNS})
    needed = ("text_a", "text_b") if study.display == Study.Display.PAIR else ("text",)
    header = ["id"] + [n for n in TEXT_COLUMNS if n in needed or present[n]] + ["control"]
    keys: dict[str, set[str]] = {attr: set() for attr, _ in PREFIXES}
    rows = Item.objects.filter(study=study).values_list("metrics", "features", "meta")
    for metrics, features, meta in rows.iterator(chunk_size=READ_CHUNK):
        keys["metrics"].update(metrics)
        keys["features"].update(features)
        keys["meta"].update(_exported_meta(study, meta))
    for attr, prefix in PREFIXES:
        header += [prefix + name for name in sorted(keys[attr])]
    return header


def _exported_meta(study: Study, meta: dict) -> dict:
    """Return the meta an import needs to rebuild the item.

    Sentence pairs get `sentiment_source` on import, and their VADER sentiments are computed
    again (identically) when the file has none; only imported sentiments are exported.
    """
    if study.display != Study.Display.PAIR:
        return meta
    drop = {"sentiment_source"}
    if meta.get("sentiment_source") == "vader":
        drop.update(SENTIMENT_META)
    return {k: v for k, v in meta.items() if k not in drop}


def item_rows(*, study: Study, header: list[str]) -> Iterator[dict[str, Any]]:
    """Yield one {column: value} per item in import order; absent values are None. One query."""
    rows = (Item.objects.filter(study=study).order_by("position")
            .values_list("external_id", "text", "text_a", "text_b", "is_control", "metrics",
                         "features", "meta"))
    for external, text, text_a, text_b, control, metrics, features, meta in rows.iterator(
            chunk_size=READ_CHUNK):
        values = {"id": external, "text": text, "text_a": text_a, "text_b": text_b,
                  "control": int(control)}
        stores = {"metric:": metrics, "feature:": features, "meta:": _exported_meta(study, meta)}
        record = {}
        for column in header:
            prefix, _, name = column.partition(":")
            record[column] = (stores[prefix + ":"].get(name) if name else values[column])
        yield record


def _items_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    header = _items_header(study)
    records = tally("items", item_rows(study=study, header=header))
    if fmt == "jsonl":
        yield from jsonl_chunks(records)
    else:
        yield from csv_chunks(header, ([r[c] for c in header] for r in records))


# --- results and the bundle ---------------------------------------------------------------------


def _results_document(study: Study) -> dict:
    document = latest_results(study=study)
    if document is None:
        raise ExportError(
            f"study {study.slug!r} has no completed analysis run: run "
            f"`python manage.py analyze {study.slug}` or start a run from the results page")
    return document


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _scale_description(study: Study) -> dict[str, Any]:
    scale = study.scale
    return {"preset": scale.preset, "values": scale.values,
            "labels": {str(k): v for k, v in scale.labels.items()},
            "reductions": scale.reductions, "rubric": scale.rubric}


def bundle_settings(*, study: Study, document: dict) -> dict[str, Any]:
    """Return settings.json of the bundle: the study's design and scale, the analysis settings."""
    from .services import code_version

    return {
        "study": {"slug": study.slug, "title": study.title, "display": study.display,
                  "language": study.language, "status": study.status},
        "design": {"items_per_participant": study.items_per_participant,
                   "annotators_per_item": study.annotators_per_item,
                   "duplicates_per_participant": study.duplicates_per_participant,
                   "duplicate_min_gap": study.duplicate_min_gap, "seed": study.seed},
        "scale": _scale_description(study),
        "analysis": document.get("settings", {}),
        "run": document.get("study", {}).get("run"),
        "results_generated_at": document.get("generated_at"),
        "code_version": {"results": document.get("study", {}).get("code_version"),
                         "export": code_version()},
        "exported_at": timezone.now().isoformat(),
    }


def _bundle_chunks(study: Study, document: dict, tally: _Tally) -> Iterator[bytes]:
    meta = bundle_settings(study=study, document=document)
    members: list[tuple[str, Callable[[], Iterable[bytes]]]] = [
        ("responses.csv", lambda: _responses_chunks(study, "csv", tally)),
        ("matrix.csv", lambda: _matrix_chunks(study, tally)),
        ("items.csv", lambda: _items_chunks(study, "csv", tally)),
        ("results.json", lambda: [_json_bytes(document)]),
        ("settings.json", lambda: [_json_bytes(meta)]),
        ("VERSION", lambda: [(f"results {meta['code_version']['results']}\n"
                              f"export {meta['code_version']['export']}\n").encode()]),
        # Last, so that it states the row counts actually written.
        ("README.md", lambda: [bundle_readme(study=study, document=document, meta=meta,
                                             counts=tally.counts).encode()]),
    ]
    return zip_chunks(members)


def bundle_readme(*, study: Study, document: dict, meta: dict, counts: dict[str, int]) -> str:
    """Return the bundle's README.md: what each file holds and how each number was computed."""
    scale = study.scale
    values = [{"value": v, "label": scale.label_for(v)} for v in scale.values]
    reductions = [{"name": name, "groups": _reduction_groups(mapping)}
                  for name, mapping in scale.reductions.items()]
    return render_to_string("analysis/exports/bundle_README.md", {
        "study": study, "document": document, "meta": meta, "counts": counts,
        "values": values, "reductions": reductions, "settings": document.get("settings", {}),
        "annotators": len(document.get("annotators", [])),
        "sections": [s for s in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps",
                                 "error_weights", "heuristics", "styles", "correlations",
                                 "noise", "timing") if s in document],
    })


def _reduction_groups(mapping: dict) -> str:
    """Describe a reduction as "0 → 0; 1, 2 → 1; …" in code order."""
    groups: dict[float, list[str]] = {}
    for raw, code in mapping.items():
        groups.setdefault(code, []).append(str(raw))
    return "; ".join(f"{', '.join(raws)} → {_plain(code)}" for code, raws in
                     sorted(groups.items(), key=lambda kv: kv[0]))


def _plain(number) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


# --- background jobs ----------------------------------------------------------------------------


def export_job_create(*, study: Study, user=None, what: str, fmt: str | None = None,
                      enqueue: bool = True) -> ExportJob:
    """Record a queued export and enqueue its task once the transaction commits.

    A job of the same export still queued or running is returned instead (a double click
    starts one job).
    """
    what, fmt = export_validate(what=what, fmt=fmt)
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        running = (ExportJob.objects.filter(
            study=study, what=what, format=fmt,
            status__in=[ExportJob.Status.QUEUED, ExportJob.Status.RUNNING]).first())
        if running is not None:
            return running
        job = ExportJob.objects.create(study=study, created_by=user, what=what, format=fmt,
                                       message="waiting for a worker")
    if enqueue:
        from .export_tasks import run_export

        transaction.on_commit(lambda: run_export.delay(job.pk))
    return job


def _exports_root() -> Path:
    return Path(settings.EXPORTS_DIR).resolve()


def export_job_file(*, job: ExportJob) -> Path | None:
    """Return the finished file of a job, or None (not done, gone, or a path outside EXPORTS_DIR)."""
    if job.status != ExportJob.Status.DONE or not job.path:
        return None
    root = _exports_root()
    path = (root / job.path).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def _job_update(job_id: int, **fields) -> None:
    if "message" in fields:
        fields["message"] = fields["message"][:200]
    ExportJob.objects.filter(pk=job_id).update(**fields)


def _job_estimate(study: Study, what: str) -> int:
    """Return the number of data rows an export will write, for progress (one query)."""
    if what == "results":
        return 1
    items = Item.objects.filter(study=study).count() if what in ("items", "bundle") else 0
    responses = (Response.objects.filter(participant__study=study).count()
                 if what != "items" else 0)
    return {"responses": responses, "matrix": responses, "items": items}.get(
        what, 2 * responses + items)


def export_job_execute(*, job_id: int) -> ExportJob:
    """Write a job's export to a file under EXPORTS_DIR (idempotent; a redelivered job restarts).

    The file is written to a temporary name in the same folder, synced, then renamed: a reader
    sees the whole file or none. A job already done whose file exists is left as it is. An
    ExportError (e.g. no results yet) fails the job without a retry; other errors fail it and
    propagate to Celery.
    """
    job = ExportJob.objects.select_related("study", "study__scale").get(pk=job_id)
    if export_job_file(job=job) is not None:
        return job
    study = job.study
    _job_update(job.pk, status=ExportJob.Status.RUNNING, progress=1, message="starting",
                attempts=F("attempts") + 1, error="")
    folder = _exports_root() / str(study.pk)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{job.pk}-{study.slug}-{job.what}.{job.format}"
    _sweep_partials(folder, final.name)
    partial = folder / f".{final.name}.{secrets.token_hex(4)}.part"
    try:
        total = max(1, _job_estimate(study, job.what))
        last = [0.0]

        def report(rows: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                last[0] = now
                _job_update(job.pk, progress=min(99, max(1, 100 * rows // total)),
                            message=f"{rows} of about {total} rows written")

        export = export_open(study=study, what=job.what, fmt=job.format, progress=report)
        size = 0
        with open(partial, "wb") as out:
            for chunk in export.chunks:
                out.write(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, final)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        ExportJob.objects.filter(pk=job.pk).exclude(status=ExportJob.Status.DONE).update(
            status=ExportJob.Status.FAILED, finished_at=timezone.now(), message="failed",
            error=str(exc) if isinstance(exc, ExportError) else f"{type(exc).__name__}: {exc}")
        if isinstance(exc, ExportError):
            job.refresh_from_db()
            return job
        raise
    _job_update(job.pk, status=ExportJob.Status.DONE, progress=100,
                message=f"{export.rows} rows, {size} bytes", path=f"{study.pk}/{final.name}",
                size_bytes=size, rows=export.rows, finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _sweep_partials(folder: Path, name: str, max_age_s: float = 3600.0) -> None:
    """Delete partial files of this job left by a killed worker (old enough not to be live)."""
    cutoff = time.time() - max_age_s
    for partial in folder.glob(f".{name}.*.part"):
        try:
            if partial.stat().st_mtime < cutoff:
                partial.unlink()
        except OSError:
            continue


def export_job_status(*, job: ExportJob) -> dict[str, Any]:
    """Return what the job page and its polling script show."""
    waiting = (job.status == ExportJob.Status.QUEUED and
               (timezone.now() - job.created_at).total_seconds()
               > settings.CONCORD_WORKER_WAIT_SECONDS)
    message = job.message
    if waiting:
        message = (f"no worker has started this export after "
                   f"{settings.CONCORD_WORKER_WAIT_SECONDS} s: is a Celery worker running?")
    return {"id": job.pk, "what": job.what, "format": job.format, "status": job.status,
            "progress": job.progress, "message": message, "rows": job.rows,
            "size_bytes": job.size_bytes, "error": job.error, "no_worker": waiting}
