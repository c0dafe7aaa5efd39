"""Exports of a study: responses, the annotator × item matrix, items, results and the methods bundle.

Every export is a generator of bytes fed by the readers of `exports.selectors`: memory stays
constant in the number of responses and the number of queries is fixed whatever the size. The
web streams small studies straight to the browser; larger ones, and any on request, are written
to a file under `settings.EXPORTS_DIR` by a background `ExportJob` (`export_job_create` →
Celery task `exports.tasks.run_export` → `export_job_execute`). The pure writers (CSV, JSONL,
Parquet, zip and the cell neutraliser) are in `core.formats`, the atomic file write in
`core.files`, the job's life (start, progress, done, failed) in `jobs.services`.

Formats, columns and the bundle are documented in docs/exports.md.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib.auth.models import User
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from core.bundles import DEFINITION as BUNDLE_DEFINITION
from core.bundles import PARTICIPANT_COLUMNS, PARTICIPANTS
from core.files import atomic_write, partial_name
from core.formats import (
    CHUNK_BYTES,
    crlf_chunks,
    csv_chunks,
    jsonl_chunks,
    parquet_chunks,
    zip_chunks,
)
from jobs.services import job_done, job_enqueue, job_fail, job_progress, job_start
from judges.bundles import ANSWERS_MEMBER, JUDGES_MEMBER
from judges.selectors import JUDGE_COLUMNS, judge_answer_rows, judges_info, study_has_judges
from studies.models import Question, Study
from studies.selectors import study_definition

from .comparisons import judgments_chunks, score_records, scores_chunks
from .judge_results import judge_result_rows, judge_results_chunks, with_judges_label
from .models import ExportJob
from .selectors import (
    CHOICE_COLUMN,
    ITEM_LABEL_COLUMNS,
    RESPONSE_COLUMNS,
    REVISION_COLUMNS,
    SYSTEM_COLUMNS,
    SYSTEM_SCORE_COLUMNS,
    event_rows,
    export_job_file,
    export_job_target,
    export_row_estimate,
    item_columns,
    item_rows,
    matrix_columns,
    matrix_rows,
    participant_rows,
    response_columns,
    response_csv_copy,
    response_csv_plan,
    response_rows,
    revision_columns,
    revision_rows,
    study_has_labels,
    study_is_comparative,
    system_score_rows,
)

if TYPE_CHECKING:
    import pyarrow as pa  # imported when a Parquet export runs (`responses_schema`)

T = TypeVar("T")

# what -> its formats, the first being the default.
WHATS: dict[str, tuple[str, ...]] = {
    "responses": ("csv", "jsonl", "parquet"),
    "revisions": ("csv", "jsonl"),
    "matrix": ("csv",),
    "items": ("csv", "jsonl"),
    "results": ("json",),
    "labels": ("csv", "jsonl"),
    "gaps": ("csv", "jsonl"),
    # The systems analysis: one export per section of the results document, of the same name.
    **{section: ("csv", "jsonl") for section in SYSTEM_COLUMNS},
    "bundle": ("zip",),
    "events": ("jsonl",),
    # Comparative questions (docs/exports.md): their judgments, and their scores.
    "judgments": ("csv", "jsonl", "parquet"),
    "comparison_scores": ("csv", "jsonl", "parquet"),
    # The judges section of the results (the judges' answers are exported apart).
    "judge_results": ("csv", "jsonl"),
    # The LLM judges' answers with their metadata (docs/judges.md), never the people's.
    "judges": ("csv", "jsonl"),
}
# The columns of the `labels` export: one row per item × question × scale × method.
LABEL_COLUMNS = ("item", "question", "scale", "method", "label", "probability", "entropy",
                 "n_answers")
# The columns of the `gaps` export: one row per item × question × scale × aggregate × metric
# with both a human answer and a metric value (the ``item_gaps`` records of docs/results.md).
GAP_COLUMNS = ("item", "question", "scale", "aggregate", "metric", "human", "metric_value", "gap")
RESULT_EXPORTS = ("results", "bundle", "labels", "gaps", "comparison_scores", "judge_results",
                  *SYSTEM_COLUMNS)
FORMATS = ("csv", "jsonl", "parquet", "json", "zip")
TEXT_FORMATS = ("csv", "jsonl", "json")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
    "zip": "application/zip",
}
PROGRESS_EVERY = 10_000  # rows between two progress reports of a job


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


def export_open(*, study: Study, what: str, fmt: str | None = None,
                progress: Callable[[int], None] | None = None) -> Export:
    """Prepare an export of the study; nothing is read until `chunks` is iterated.

    Checks that can fail (the format, a results document to export) are made here, before the
    first byte, so a caller can still answer with an error. `progress(rows)` is called every
    PROGRESS_EVERY data rows while streaming.
    """
    what, fmt = export_validate(what=what, fmt=fmt)
    document = _results_document(study) if what in RESULT_EXPORTS else None
    counts: dict[str, int] = {}
    tally = _Tally(counts, progress)
    if what == "responses":
        chunks = _responses_chunks(study, fmt, tally)
    elif what == "revisions":
        chunks = _revisions_chunks(study, fmt, tally)
    elif what == "matrix":
        chunks = _matrix_chunks(study, tally)
    elif what == "items":
        chunks = _items_chunks(study, fmt, tally)
    elif what == "events":
        chunks = jsonl_chunks(tally("events", event_rows(study=study)))
    elif what == "judgments":
        chunks = judgments_chunks(study, fmt, tally)
    elif what == "judges":
        chunks = _judges_chunks(study, fmt, tally)
    elif what == "comparison_scores":
        assert document is not None  # a result export (RESULT_EXPORTS): read above
        chunks = scores_chunks(document, fmt, tally)
    elif what == "judge_results":
        assert document is not None  # a result export (RESULT_EXPORTS): read above
        chunks = judge_results_chunks(document, fmt, tally)
    elif what == "results":
        chunks = iter([_json_bytes(document)])
    elif what == "labels":
        assert document is not None  # a result export (RESULT_EXPORTS): read above
        chunks = _labels_chunks(document, fmt, tally)
    elif what == "gaps":
        assert document is not None  # a result export (RESULT_EXPORTS): read above
        chunks = _gaps_chunks(document, fmt, tally)
    elif what in SYSTEM_COLUMNS:
        assert document is not None  # a result export (RESULT_EXPORTS): read above
        chunks = _system_chunks(document, what, fmt, tally)
    else:
        assert document is not None  # the bundle, a result export (RESULT_EXPORTS): read above
        chunks = _bundle_chunks(study, document, tally)
    # A run of the view with judges (its judges analysed as annotators) says so in the name of
    # every file made from it, so a download is never taken for the people's results.
    label = "-with-judges" if document is not None and with_judges_label(document) else ""
    return Export(what=what, fmt=fmt, filename=f"{study.slug}-{what}{label}.{fmt}",
                  content_type=CONTENT_TYPES[fmt], chunks=chunks, counts=counts)


class _Tally:
    """Count the data rows of each table as they stream, and report progress now and then."""

    def __init__(self, counts: dict[str, int], progress: Callable[[int], None] | None):
        self.counts = counts
        self.progress = progress

    def __call__(self, table: str, rows: Iterable[T]) -> Iterator[T]:
        self.counts.setdefault(table, 0)
        for row in rows:
            self.counts[table] += 1
            if self.progress and self.counts[table] % PROGRESS_EVERY == 0:
                self.progress(sum(self.counts.values()))
            yield row

    def add(self, table: str, rows: int) -> None:
        """Count `rows` more data rows of `table` at once (and report progress as `__call__`)."""
        before = self.counts.get(table, 0)
        self.counts[table] = before + rows
        if self.progress and before // PROGRESS_EVERY != self.counts[table] // PROGRESS_EVERY:
            self.progress(sum(self.counts.values()))


# --- the tables ---------------------------------------------------------------------------------


def responses_schema(*, labels: bool = False) -> pa.Schema:
    """Return the explicit Parquet schema of the responses export (with the item's system and
    source when ``labels``)."""
    import pyarrow as pa

    extra = [pa.field(name, pa.string(), nullable=False) for name in ITEM_LABEL_COLUMNS]
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
        pa.field("question", pa.string(), nullable=False),
        pa.field("missing", pa.string(), nullable=False),
        pa.field("comment", pa.string(), nullable=False),
        pa.field("revision", pa.int16(), nullable=False),
        pa.field("role", pa.string(), nullable=False),
        *(extra if labels else []),
    ])


def _responses_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    if fmt == "csv":
        in_database, labels = response_csv_plan(study=study)
        if in_database:
            return _database_csv_chunks(study, labels, tally)
    columns = response_columns(study=study)
    labels = len(columns) > len(RESPONSE_COLUMNS)
    rows = tally("responses", response_rows(study=study, labels=labels))
    if fmt == "csv":
        return csv_chunks(columns, rows)
    if fmt == "jsonl":
        return jsonl_chunks(dict(zip(columns, row, strict=True)) for row in rows)
    return parquet_chunks(responses_schema(labels=labels), rows)


def _database_csv_chunks(study: Study, labels: bool, tally: _Tally) -> Iterator[bytes]:
    """The responses CSV written by PostgreSQL (`exports.selectors.response_csv_copy`), the same
    bytes as `csv_chunks` of `response_rows`: the header, then the spooled lines with CRLF ends,
    CHUNK_BYTES at a time. Memory holds one chunk; the spool is a temporary file."""
    yield from csv_chunks(RESPONSE_COLUMNS + (ITEM_LABEL_COLUMNS if labels else ()), ())
    tally.counts.setdefault("responses", 0)
    with tempfile.TemporaryFile() as spool:
        response_csv_copy(study=study, labels=labels, spool=spool)
        spool.seek(0)
        for chunk, lines in crlf_chunks(iter(lambda: spool.read(CHUNK_BYTES), b"")):
            tally.add("responses", lines)
            yield chunk


def _revisions_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    columns = revision_columns(study=study)
    choice = CHOICE_COLUMN in columns
    rows = tally("revisions", revision_rows(
        study=study, labels=len(columns) - choice > len(REVISION_COLUMNS), choice=choice))
    if fmt == "jsonl":
        return jsonl_chunks(dict(zip(columns, row, strict=True)) for row in rows)
    return csv_chunks(columns, rows)


def _matrix_chunks(study: Study, tally: _Tally) -> Iterator[bytes]:
    header, index = matrix_columns(study=study)
    yield from csv_chunks(header, tally("matrix", matrix_rows(study=study, width=len(header),
                                                              index=index)))


def _items_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    header = item_columns(study=study)
    records = tally("items", item_rows(study=study, header=header))
    if fmt == "jsonl":
        yield from jsonl_chunks(records)
    else:
        yield from csv_chunks(header, ([r[c] for c in header] for r in records))


# --- results and the bundle ---------------------------------------------------------------------


def _results_document(study: Study) -> dict[str, Any]:
    # The analysis' modules (numba, scipy) are imported by the exports that need them, not by
    # every `export` command (the responses CSV starts a second sooner).
    from analysis.selectors import latest_results
    document = latest_results(study=study)
    if document is None:
        raise ExportError(
            f"study {study.slug!r} has no completed analysis run: run "
            f"`python manage.py analyze {study.slug}` or start a run from the results page")
    return document


def label_records(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The aggregated label of every item per question, scale and competence model (Dawid–Skene,
    MACE), the run's ``item_labels`` in the full document's order (streamed from the run's
    table); an item without answers has empty label, probability and entropy."""
    from analysis.selectors import item_records
    for r in item_records(document=document, section="item_labels"):
        yield {"item": r["item"], "question": r["question"], "scale": r["scale"],
               "method": r["method"], "label": r.get("label"), "probability": r.get("probability"),
               "entropy": r.get("entropy"), "n_answers": r.get("n", 0)}


def _labels_chunks(document: dict[str, Any], fmt: str, tally: _Tally) -> Iterator[bytes]:
    records = tally("labels", label_records(document))
    if fmt == "jsonl":
        yield from jsonl_chunks(records)
    else:  # every cell through core.formats' writer, text neutralised (an item id "=1+1")
        yield from csv_chunks(LABEL_COLUMNS, ([r[c] for c in LABEL_COLUMNS] for r in records))


def _gaps_chunks(document: dict[str, Any], fmt: str, tally: _Tally) -> Iterator[bytes]:
    from analysis.selectors import item_records
    records = tally("gaps", item_records(document=document, section="item_gaps"))
    if fmt == "jsonl":
        yield from jsonl_chunks(records)
    else:
        yield from csv_chunks(GAP_COLUMNS, ([r[c] for c in GAP_COLUMNS] for r in records))


def system_records(document: dict[str, Any], section: str) -> list[dict[str, Any]]:
    """The records of one systems section of the document, every question and scale, in the
    document's order: empty for a study without systems or a run before the systems analysis."""
    records = document.get(section)
    if not isinstance(records, list):
        return []
    return [dict(r) for r in records if isinstance(r, dict)]


def _system_cell(value: Any) -> Any:
    # A list or object (none in the contract, but a later field might be one) as JSON text.
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


def _system_chunks(document: dict[str, Any], section: str, fmt: str,
                   tally: _Tally) -> Iterator[bytes]:
    records = system_records(document, section)
    rows = tally(section, records)
    if fmt == "jsonl":
        yield from jsonl_chunks(rows)
        return
    columns = list(SYSTEM_COLUMNS[section])
    for record in records:
        columns += [key for key in record if key not in columns]
    # every cell through core.formats' writer: a system named "=HYPERLINK(...)" is neutralised
    yield from csv_chunks(columns, ([_system_cell(r.get(c)) for c in columns] for r in rows))


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _scale_description(question: Question) -> dict[str, Any]:
    return {"preset": question.preset, "values": question.values,
            "labels": {str(k): v for k, v in question.labels.items()},
            "reductions": question.reduction_maps(), "rubric": question.rubric}


def _question_description(question: Question) -> dict[str, Any]:
    # A comparative question's kind and options (ties, strength, size); a scale's kind only.
    kind = {"kind": question.kind,
            **({"options": dict(question.comparison)} if question.is_comparative else {})}
    return {"key": question.key, "prompt": question.prompt, "required": question.required,
            "allow_comment": question.allow_comment,
            "allow_cant_judge": question.allow_cant_judge, **kind,
            **_scale_description(question)}


def bundle_settings(*, study: Study, document: dict[str, Any]) -> dict[str, Any]:
    """Return settings.json of the bundle: the study's design and scale, the analysis settings."""
    from analysis.services import code_version

    return {
        "study": {"slug": study.slug, "title": study.title, "display": study.display,
                  "language": study.language, "status": study.status},
        "design": {"items_per_participant": study.items_per_participant,
                   "annotators_per_item": study.annotators_per_item,
                   "duplicates_per_participant": study.duplicates_per_participant,
                   "duplicate_min_gap": study.duplicate_min_gap, "seed": study.seed,
                   "source_order": study.source_order},
        "scale": _scale_description(study.primary_question),
        "questions": [_question_description(q) for q in study.question_list],
        "analysis": document.get("settings", {}),
        "run": document.get("study", {}).get("run"),
        "results_generated_at": document.get("generated_at"),
        "code_version": {"results": document.get("study", {}).get("code_version"),
                         "export": code_version()},
        "exported_at": timezone.now().isoformat(),
    }


def bundle_definition(*, study: Study, document: dict[str, Any]) -> dict[str, Any]:
    """Return definition.json of the bundle: the study's definition (`create_study
    --definition` reads it), its ``analysis`` the settings of the run that computed the
    bundle's results (the study's, with any override the run was started with), so that the
    definition alone reproduces results.json."""
    from analysis.selectors import run_settings
    definition = study_definition(study=study)
    run = document.get("study", {}).get("run")
    recorded = run_settings(study=study, run_id=run) if isinstance(run, int) else None
    if recorded:
        definition["analysis"] = recorded
    return definition


def _system_scores_chunks(study: Study, tally: _Tally) -> Iterator[bytes]:
    """The study's system-level scores as `import_system_scores` reads them."""
    yield from csv_chunks(SYSTEM_SCORE_COLUMNS, tally("system_scores", system_score_rows(
        study=study)))


def _judges_chunks(study: Study, fmt: str, tally: _Tally) -> Iterator[bytes]:
    """The judges' answers, one row per answer with the judge's metadata (`JUDGE_COLUMNS`),
    as `import_judge` reads them back; every text cell neutralised in CSV."""
    rows = tally("judges", judge_answer_rows(study=study))
    if fmt == "csv":
        return csv_chunks(JUDGE_COLUMNS, rows)
    return jsonl_chunks(dict(zip(JUDGE_COLUMNS, row, strict=True)) for row in rows)


def _bundle_chunks(study: Study, document: dict[str, Any], tally: _Tally) -> Iterator[bytes]:
    meta = bundle_settings(study=study, document=document)
    members: list[tuple[str, Callable[[], Iterable[bytes]]]] = [
        ("responses.csv", lambda: _responses_chunks(study, "csv", tally)),
        ("revisions.csv", lambda: _revisions_chunks(study, "csv", tally)),
        ("matrix.csv", lambda: _matrix_chunks(study, tally)),
        ("items.csv", lambda: _items_chunks(study, "csv", tally)),
        # Each annotator's state (complete, screened out, stopped), which the replay restores.
        (PARTICIPANTS, lambda: csv_chunks(PARTICIPANT_COLUMNS, tally(
            "participants", iter(participant_rows(study=study))))),
        ("results.json", lambda: [_json_bytes(document)]),
        # The records that grow with the items, which the results document keeps apart.
        ("labels.csv", lambda: _labels_chunks(document, "csv", tally)),
        ("item_gaps.csv", lambda: _gaps_chunks(document, "csv", tally)),
        # Comparative questions: their judgments and, when the run has them, their scores.
        *([("judgments.csv", lambda: judgments_chunks(study, "csv", tally))]
          if study_is_comparative(study=study) else []),
        *([("comparison_scores.csv", lambda: scores_chunks(document, "csv", tally))]
          if score_records(document) else []),
        # The judges section, when the run compared judges with the people.
        *([("judge_results.csv", lambda: judge_results_chunks(document, "csv", tally))]
          if judge_result_rows(document) else []),
        # The systems analysis' tables, when the run has them.
        *[(f"{section}.csv", lambda section=section: _system_chunks(document, section, "csv",
                                                                      tally))
          for section in SYSTEM_COLUMNS if system_records(document, section)],
        ("settings.json", lambda: [_json_bytes(meta)]),
        # The system-level metric scores (docs/systems.md), when the study has any.
        *([("system_scores.csv", lambda: _system_scores_chunks(study, tally))]
          if study.system_scores.exists() else []),
        # The LLM judges and their answers (docs/judges.md), when the study has any.
        *([(JUDGES_MEMBER, lambda: [_json_bytes(judges_info(study=study))]),
           (ANSWERS_MEMBER, lambda: _judges_chunks(study, "csv", tally))]
          if study_has_judges(study=study) else []),
        # The study as `create_study --definition` and `import_bundle` read it.
        (BUNDLE_DEFINITION, lambda: [_json_bytes(bundle_definition(study=study,
                                                                   document=document))]),
        ("VERSION", lambda: [(f"results {meta['code_version']['results']}\n"
                              f"export {meta['code_version']['export']}\n").encode()]),
        # Last, so that it states the row counts actually written.
        ("README.md", lambda: [bundle_readme(study=study, document=document, meta=meta,
                                             counts=tally.counts).encode()]),
    ]
    return zip_chunks(members)


def bundle_readme(*, study: Study, document: dict[str, Any], meta: dict[str, Any],
                  counts: dict[str, int]) -> str:
    """Return the bundle's README.md: what each file holds and how each number was computed."""
    questions = [{"key": q.key, "prompt": q.prompt, "preset": q.preset, "required": q.required,
                  "allow_cant_judge": q.allow_cant_judge, "allow_comment": q.allow_comment,
                  "values": [{"value": v, "label": q.label_for(v)} for v in q.values],
                  "reductions": [{"name": name, "groups": _reduction_groups(mapping)}
                                 for name, mapping in q.reduction_maps().items()]}
                 for q in study.question_list]
    return render_to_string("exports/bundle_README.md", {
        "study": study, "document": document, "meta": meta, "counts": counts,
        "questions": questions, "several": len(questions) > 1,
        "has_labels": study_has_labels(study=study),
        "settings": document.get("settings", {}),
        "annotators": len(document.get("annotators", [])),
        "sections": [s for s in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps",
                                 "error_weights", "heuristics", "styles", "correlations",
                                 "noise", "timing") if s in document],
    })


def _reduction_groups(mapping: dict[str, float]) -> str:
    """Describe a reduction as "0 → 0; 1, 2 → 1; …" in code order."""
    groups: dict[float, list[str]] = {}
    for raw, code in mapping.items():
        groups.setdefault(code, []).append(str(raw))
    return "; ".join(f"{', '.join(raws)} → {_plain(code)}" for code, raws in
                     sorted(groups.items(), key=lambda kv: kv[0]))


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


# --- background jobs ----------------------------------------------------------------------------


def export_job_create(*, study: Study, user: User | None = None, what: str, fmt: str | None = None,
                      enqueue: bool = True) -> ExportJob:
    """Record a queued export and enqueue its task once the transaction commits.

    A job of the same export still queued or running is returned instead (a double click
    starts one job).
    """
    what, fmt = export_validate(what=what, fmt=fmt)
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        running = (ExportJob.objects.filter(study=study, what=what, format=fmt,
                                            status__in=ExportJob.ACTIVE).first())
        if running is not None:
            return running
        job = ExportJob.objects.create(study=study, created_by=user, what=what, format=fmt,
                                       message="waiting for a worker")
    if enqueue:
        # After the commit; a broker that does not answer marks the job failed with the reason,
        # in this copy too (`jobs.services.job_enqueue`).
        job_enqueue(job=job)
    return job


def export_job_execute(*, job_id: int) -> ExportJob:
    """Write a job's export to a file under EXPORTS_DIR (idempotent; a redelivered job restarts).

    The file is written whole or not at all (`core.files.atomic_write`). A job already done whose
    file exists is left as it is. An ExportError (e.g. no results yet) fails the job without a
    retry; other errors fail it and propagate to Celery.
    """
    job = ExportJob.objects.select_related("study").get(pk=job_id)
    if export_job_file(job=job) is not None:
        return job
    study = job.study
    job_start(model=ExportJob, job_id=job.pk, message="starting")
    final = export_job_target(job=job)
    final.parent.mkdir(parents=True, exist_ok=True)
    _sweep_partials(final)
    try:
        total = max(1, export_row_estimate(study=study, what=job.what))
        last = [0.0]

        def report(rows: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                last[0] = now
                job_progress(model=ExportJob, job_id=job.pk,
                             progress=min(99, max(1, 100 * rows // total)),
                             message=f"{rows} of about {total} rows written")

        export = export_open(study=study, what=job.what, fmt=job.format, progress=report)
        size = atomic_write(final, export.chunks)
    except ExportError as exc:
        job_fail(model=ExportJob, job_id=job.pk, error=str(exc))  # the reason, not a crash
        job.refresh_from_db()
        return job
    except Exception as exc:
        job_fail(model=ExportJob, job_id=job.pk, error=exc)
        raise
    job_done(model=ExportJob, job_id=job.pk, message=f"{export.rows} rows, {size} bytes",
             path=f"{study.pk}/{final.name}", size_bytes=size, rows=export.rows)
    job.refresh_from_db()
    return job


def _sweep_partials(final: Path, max_age_s: float = 3600.0) -> None:
    """Delete partial files of this job left by a killed worker (old enough not to be live)."""
    cutoff = time.time() - max_age_s
    for partial in final.parent.glob(partial_name(final)):
        try:
            if partial.stat().st_mtime < cutoff:
                partial.unlink()
        except OSError:
            continue
