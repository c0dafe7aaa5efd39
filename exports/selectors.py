"""Reads of the exports: the rows of each table, the size check, a job's file and its state.

Every reader takes a fixed number of queries whatever the study's size and reads querysets with
`.iterator(chunk_size=READ_CHUNK)`, so memory holds one chunk of rows, the pseudonym of each
annotator and the id of each item.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Max, Min, Q, Window

from annotation.models import Response
from jobs.selectors import job_status
from studies.models import Item, Study
from studies.selectors import pseudonyms

from .models import ExportJob

# Exports that grow with the number of responses; the others are small whatever the study.
LARGE_WHATS = ("responses", "matrix", "bundle")
READ_CHUNK = 5000  # rows per database round trip of .iterator()

RESPONSE_COLUMNS = ("annotator", "item", "presentation", "position", "duplicate", "value",
                    "active_ms", "submitted_at", "source", "control")
TEXT_COLUMNS = ("text", "text_a", "text_b")
PREFIXES = (("metrics", "metric:"), ("features", "feature:"), ("meta", "meta:"))
SENTIMENT_META = ("sentiment_a", "sentiment_b")
PSEUDONYM_COLUMNS = ("pseudonym", "source", "external_id", "label")


def export_is_large(*, study: Study, what: str) -> bool:
    """Tell whether an export should run in the background (more than CONCORD_EXPORT_SYNC_MAX
    responses, for the exports that grow with them). One query, without counting every row."""
    if what not in LARGE_WHATS:
        return False
    limit = settings.CONCORD_EXPORT_SYNC_MAX
    beyond = (Response.objects.filter(participant__study=study).order_by()
              .values_list("pk", flat=True)[limit:limit + 1])
    return len(beyond) > 0


# --- responses (long format) ------------------------------------------------------------------


def _by_annotator(study: Study):
    """Return the study's current responses with their answer to the first question, ordered as
    the pseudonyms: by each annotator's first response."""
    return (Response.objects.filter(participant__study=study, is_current=True,
                                    answers__question=study.primary_question)
            .annotate(first_response=Window(Min("id"), partition_by=[F("participant_id")]),
                      value=F("answers__value")))


def response_rows(*, study: Study) -> Iterator[tuple]:
    """Yield one tuple per stored answer, in RESPONSE_COLUMNS order. Two queries.

    Annotators are pseudonyms (A1, A2, … as in the results document), rows ordered by annotator
    then position. No token, no platform id: the mapping is the separate pseudonym download.
    """
    names = pseudonyms(study=study)
    rows = (_by_annotator(study)
            .order_by("first_response", F("position").asc(nulls_last=True), "presentation", "id")
            .values_list("participant_id", "item__external_id", "presentation", "position",
                         "value", "active_ms", "received_at", "source", "item__is_control"))
    for pid, item, presentation, position, value, active_ms, received, source, control in (
            rows.iterator(chunk_size=READ_CHUNK)):
        yield (names.get(pid, f"P{pid}"), item, presentation, position, presentation > 1, value, active_ms,
               received, source, control)


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
    names = pseudonyms(study=study)
    rows = (_by_annotator(study).order_by("first_response", "id")
            .values_list("participant_id", "item_id", "presentation", "value"))
    current: int | None = None
    row: list = []
    for pid, item, presentation, value in rows.iterator(chunk_size=READ_CHUNK):
        if pid != current:
            if current is not None:
                yield row
            current, row = pid, [names.get(pid, f"P{pid}")] + [None] * (width - 1)
        row[index[(item, presentation)]] = value
    if current is not None:
        yield row


# --- items --------------------------------------------------------------------------------------


def item_columns(*, study: Study) -> list[str]:
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


# --- the pseudonym mapping ----------------------------------------------------------------------


def pseudonym_rows(*, study: Study) -> list[tuple]:
    """Return the researcher's key from pseudonyms to real annotator ids, in PSEUDONYM_COLUMNS
    order and pseudonym order. Two queries.

    Only the study's owner may see it: every other export carries the pseudonyms alone.
    """
    names = pseudonyms(study=study)
    people = {p.pk: p for p in study.participants.filter(pk__in=list(names))}
    return [(name, people[pid].source, people[pid].external_id, people[pid].label)
            for pid, name in names.items()]


# --- background jobs ----------------------------------------------------------------------------


def _root() -> Path:
    return Path(settings.EXPORTS_DIR).resolve()


def export_job_target(*, job: ExportJob) -> Path:
    """Return where a job's file goes: EXPORTS_DIR/<study id>/<job id>-<slug>-<what>.<format>."""
    return _root() / str(job.study_id) / f"{job.pk}-{job.study.slug}-{job.what}.{job.format}"


def export_job_file(*, job: ExportJob) -> Path | None:
    """Return the finished file of a job, or None (not done, gone, or a path outside EXPORTS_DIR)."""
    if job.status != ExportJob.Status.DONE or not job.path:
        return None
    root = _root()
    path = (root / job.path).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def export_row_estimate(*, study: Study, what: str) -> int:
    """Return the number of data rows an export will write, for progress (one query; two for
    the bundle)."""
    if what == "results":
        return 1
    items = Item.objects.filter(study=study).count() if what in ("items", "bundle") else 0
    responses = (Response.objects.filter(participant__study=study).count()
                 if what != "items" else 0)
    return {"responses": responses, "matrix": responses, "items": items}.get(
        what, 2 * responses + items)


def export_job_status(*, job: ExportJob) -> dict[str, Any]:
    """Return what the job page and its polling script show: a job's state, and the file's."""
    return {**job_status(job=job), "what": job.what, "format": job.format, "rows": job.rows,
            "size_bytes": job.size_bytes}
