"""Run analyses and store their results; the same service serves Celery and `manage.py analyze`.

A run started by its Celery task may first fan its trust coefficients out to other workers:
that protocol is `analysis.fanout`, which finishes the run through `analysis_run_complete`.
"""

from __future__ import annotations

import functools
import io
import json
import math
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings as django_settings
from django.db import connections, router, transaction
from django.utils import timezone

from core.results import ItemRecords, SectionClock, build_results_split
from core.settings import AnalysisSettings
from jobs.services import job_done, job_enqueue, job_fail, job_progress, job_start
from studies.models import Study

from .models import AnalysisRun, ItemGap, ItemLabel, RunItem
from .selectors import (
    QuestionData,
    study_checks,
    study_judges,
    study_judgments,
    study_questions,
)


@functools.cache
def code_version() -> str:
    """Return the code's git commit (or CONCORD_VERSION), recorded with every result."""
    import os

    if os.environ.get("CONCORD_VERSION"):
        return os.environ["CONCORD_VERSION"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"],  # noqa: S607
                             cwd=Path(django_settings.BASE_DIR), capture_output=True, text=True,
                             timeout=5, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def analysis_settings(*, study: Study, overrides: Mapping[str, Any] | None = None
                      ) -> AnalysisSettings:
    """Return the settings of a run: the study's analysis settings with ``overrides`` applied
    (the `analyze` command's options and ``--set``s).

    Raises `core.settings.SettingsError` (a ValueError) naming every unknown or invalid key.
    """
    return AnalysisSettings.from_mapping(overrides or {}, base=study.analysis)


def analysis_run_create(*, study: Study, user=None, overrides: Mapping[str, Any] | None = None,
                        settings: AnalysisSettings | None = None,
                        enqueue: bool = True) -> AnalysisRun:
    """Record a queued run and send its task once the transaction commits.

    ``settings``: the run's settings object, as the rerun form and the API build it
    (`RunForm.run_settings`); without it, the study's with ``overrides`` applied. Stored as its
    dict once, read back as the object (`AnalysisRun.analysis`).

    When the broker cannot be reached the returned run is already failed, with the reason
    (the caller tells the researcher at once: a message, HTTP 503).
    """
    if settings is None:
        settings = analysis_settings(study=study, overrides=overrides)
    run = AnalysisRun.objects.create(
        study=study, created_by=user, settings=settings.to_dict(),
        code_version=code_version(), message="waiting for a worker",
    )
    if enqueue:
        # After the commit (a worker must find the row); a broker that does not answer marks
        # the run failed with the reason, in this copy too (`jobs.services.job_enqueue`).
        job_enqueue(job=run)
    return run


def _progress(run_id: int, low: int = 0, high: int = 100):
    """Report progress, rescaled from 0–100 into ``low``–``high`` (a fanned-out run's finisher)."""

    def report(pct: int, message: str) -> None:
        job_progress(model=AnalysisRun, job_id=run_id, progress=low + (high - low) * pct // 100,
                     message=message)

    return report


def analysis_run_fail(*, run_id: int, error: BaseException) -> None:
    """Mark a run failed with ``error``; a finished run stays as it is."""
    job_fail(model=AnalysisRun, job_id=run_id, error=error)


def analysis_run_execute(*, run_id: int) -> AnalysisRun:
    """Execute a run in this process (idempotent: a finished run is left as it is, a redelivered
    one restarts).  This is what ``manage.py analyze`` runs; trust is never fanned out here."""
    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return run
    return analysis_run_complete(run=run)


def peak_rss_reset() -> None:
    """Start measuring this process's peak memory afresh (Linux: ``/proc/self/clear_refs``).

    A Celery worker lives for many runs; resetting its high-water mark at the start of a run
    makes ``peak_rss_mb`` the peak of this run (and of anything the process does meanwhile).
    Elsewhere it does nothing, and ``peak_rss_mb`` is the process's lifetime peak.
    """
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float | None:
    """The process's peak resident memory in MB since `peak_rss_reset` (None if unknown)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def analysis_run_complete(*, run: AnalysisRun, data: list[QuestionData] | None = None,
                          load_s: float = 0.0,
                          resume_at: int | None = None, trust_results: Mapping | None = None,
                          timings: Mapping[str, Any] | None = None) -> AnalysisRun:
    """Build and store the results document of ``run`` (``data``: its questions, already loaded
    in ``load_s``).

    ``resume_at`` (the finisher of a fanned-out run): the run already counts as started (its
    ``started_at`` and ``attempts`` stay) and progress continues from this percentage;
    ``trust_results`` are merged trust coefficients to use, ``timings`` join the run's timings.
    """
    started = time.perf_counter()
    if data is None:  # else the caller loaded the answers, and reset the peak before
        peak_rss_reset()
    clock = SectionClock()
    if resume_at is None:
        job_start(model=AnalysisRun, job_id=run.pk, message="loading the answers")
        progress = _progress(run.pk)
    else:
        progress = _progress(run.pk, resume_at, 100)
    study = run.study
    try:
        if data is None:
            data = study_questions(study=study)
        judgments = study_judgments(study=study)
        judges, judge_answers = study_judges(study=study)
        loaded = time.perf_counter()
        document, records = build_results_split(
            data,
            settings=run.analysis,
            study={"slug": study.slug, "title": study.title, "run": run.pk,
                   "code_version": run.code_version},
            progress=progress,
            trust_results=trust_results,
            checks=study_checks(study=study),
            clock=clock,
            comparisons=judgments,
            judges=judges,
            judge_answers=judge_answers,
        )
    except Exception as exc:
        analysis_run_fail(run_id=run.pk, error=exc)
        raise
    finished = time.perf_counter()
    timings = {"load_s": round(load_s + loaded - started, 4),
               "analyses_s": round(finished - loaded, 4),
               "sections_s": clock.rounded(),
               "peak_rss_mb": peak_rss_mb(),
               **(timings or {})}
    return analysis_run_store(run=run, document=document, records=records, timings=timings)


def analysis_run_store(*, run: AnalysisRun, document: dict[str, Any], records: ItemRecords,
                       timings: dict[str, Any],
                       stored_hook: Callable[[dict[str, Any]], None] | None = None
                       ) -> AnalysisRun:
    """Record a run's document, item records and timings (``store_s`` added), once.

    Only the first to finish records the run: a duplicate delivery running at the same time
    (a broker redelivering after its visibility timeout) computed the same and writes nothing.
    The item records go in with the document, in one transaction: all of them or none.
    ``stored_hook`` (a fanned-out run's assembly) runs in that transaction once the records are
    in, and may add to ``timings`` before they are written.
    """
    document["generated_at"] = timezone.now().isoformat()
    stored = time.perf_counter()
    with transaction.atomic():
        if job_done(model=AnalysisRun, job_id=run.pk, results=document, timings=timings):
            item_records_store(run_id=run.pk, records=records)
            timings["store_s"] = round(time.perf_counter() - stored, 4)
            if stored_hook is not None:
                stored_hook(timings)
            AnalysisRun.objects.filter(pk=run.pk).update(timings=timings)
    run.refresh_from_db()
    return run


def _write_rows(cursor, table: str, columns: tuple[str, ...], rows) -> None:
    """Write ``rows`` (tuples in ``columns`` order) into ``table`` with INSERTs in batches (the
    embedded SQLite; PostgreSQL takes `_copy_tables`)."""
    names = ", ".join(columns)
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"  # noqa: S608 (model tables and columns, no input)
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) == 5000:
            cursor.executemany(sql, batch)
            batch = []
    if batch:
        cursor.executemany(sql, batch)


def _copy_tables(cursor, table: str, columns: tuple[str, ...], tables) -> None:
    """COPY Arrow ``tables`` (columns in ``columns`` order) into ``table`` as CSV: Arrow writes
    each block of rows in C (floats in their shortest exact form, null as an empty field, text
    quoted where needed), PostgreSQL parses it; no Python object per row."""
    import pyarrow.csv as pa_csv

    options = pa_csv.WriteOptions(include_header=False, quoting_style="needed")
    with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN "
                            "WITH (FORMAT csv)") as copy:
        for block in tables:
            buffer = io.BytesIO()
            pa_csv.write_csv(block, buffer, write_options=options)
            copy.write(buffer.getvalue())


GAP_COLUMNS = ("run_id", "seq", "question", "scale", "aggregate", "position", "human")
LABEL_COLUMNS = ("run_id", "seq", "question", "scale", "method", "item", "label", "probability",
                 "entropy", "n", "reason")
ITEM_COLUMNS = ("run_id", "position", "item", "simple", "metrics")


def _repeated(text: str, n: int):
    """``text`` n times as an Arrow column, without n Python strings (a dictionary of one)."""
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([text]))


def _arrow_gaps(run_id: int, records: ItemRecords):
    import pyarrow as pa

    seq = 0
    for question, scale, aggregate, items, human in records.human_blocks():
        n = int(items.size)
        yield pa.table([
            pa.array(np.full(n, run_id, np.int64)), pa.array(np.arange(seq, seq + n)),
            _repeated(question, n), _repeated(scale, n), _repeated(aggregate, n),
            pa.array(items, pa.int64()), pa.array(human, pa.float64())],
            names=list(GAP_COLUMNS))
        seq += n


def _arrow_labels(run_id: int, records: ItemRecords):
    import pyarrow as pa

    ids = pa.array(records.item_ids, pa.string())
    seq = 0
    for block in records.labels:
        labels, n = block.labels, len(block.labels)
        unanswered = labels.n == 0

        def floats(values: np.ndarray, unanswered=unanswered) -> pa.Array:
            return pa.array(values, pa.float64(), mask=unanswered)  # null where no answers

        yield pa.table([
            pa.array(np.full(n, run_id, np.int64)), pa.array(np.arange(seq, seq + n)),
            _repeated(block.question, n), _repeated(block.scale, n), _repeated(block.method, n),
            ids, floats(labels.label), floats(labels.probability), floats(labels.entropy),
            pa.array(labels.n, pa.int64()),
            pa.DictionaryArray.from_arrays(pa.array(unanswered.astype(np.int32)),
                                           pa.array(["", labels.REASON_UNANSWERED]))],
            names=list(LABEL_COLUMNS))
        seq += n


def _json_float(value: float) -> str:
    """``value`` as ``json.dumps`` writes it (nan: null, the item's metric without a value)."""
    if value != value:
        return "null"
    return float.__repr__(value) if math.isfinite(value) else json.dumps(value)


def _item_json(records: ItemRecords) -> tuple[list[str], list[str], list[str]]:
    """The items' ids, and their ``simple`` and ``metrics`` as JSON texts (floats in their
    shortest exact form, so the stored values are the run's): the texts ``json.dumps`` gives of
    `ItemRecords.item_rows`, built from the columns (its encoder, called per item, took 1.5 s
    at 10⁵ items; a test keeps them equal)."""
    masks = [(q, records.simple[q]) for q in records.questions if q in records.simple]
    n = len(records.item_ids)
    # Each item's combination of questions on which it is simple, as a number; one text each.
    code = np.zeros(n, np.int64)
    for bit, (_, mask) in enumerate(masks[:62]):
        code |= mask.astype(np.int64) << bit
    texts = {c: json.dumps([q for bit, (q, _) in enumerate(masks) if c >> bit & 1])
             for c in np.unique(code).tolist()}
    simple = [texts[c] for c in code.tolist()]
    if len(masks) > 62:  # never in practice: the rows themselves
        simple = [json.dumps(keys) for _, _, keys, _ in records.item_rows()]
    values = records.metric_values()
    width = values.shape[1]
    cells = [_json_float(v) for v in values.ravel().tolist()]
    metrics = ["[" + ", ".join(cells[i:i + width]) + "]" for i in range(0, n * width, width)] \
        if width else ["[]"] * n
    return list(records.item_ids), simple, metrics


def _arrow_items(run_id: int, records: ItemRecords):
    import pyarrow as pa

    ids, simple, metrics = _item_json(records)
    yield pa.table([pa.array(np.full(len(ids), run_id, np.int64)),
                    pa.array(np.arange(len(ids)), pa.int64()), pa.array(ids, pa.string()),
                    pa.array(simple, pa.string()), pa.array(metrics, pa.string())],
                   names=list(ITEM_COLUMNS))


def item_records_store(*, run_id: int, records: ItemRecords) -> None:
    """Write a run's item records to its tables (``RunItem``, ``ItemGap``, ``ItemLabel``), in
    the full document's order, in place of any it had (a run computed again replaces them); call
    it inside the transaction that records the run.  PostgreSQL: one COPY per table."""
    for model in (RunItem, ItemGap, ItemLabel):
        model.objects.filter(run_id=run_id).delete()
    connection = connections[router.db_for_write(ItemGap)]
    tables = ((RunItem, ITEM_COLUMNS), (ItemGap, GAP_COLUMNS), (ItemLabel, LABEL_COLUMNS))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for (model, columns), blocks in zip(tables, (_arrow_items(run_id, records),
                                                         _arrow_gaps(run_id, records),
                                                         _arrow_labels(run_id, records)),
                                                strict=True):
                _copy_tables(cursor, model._meta.db_table, columns, blocks)
            return
        rows = (((run_id, n, item, json.dumps(simple), json.dumps(metrics))
                 for n, item, simple, metrics in records.item_rows()),
                ((run_id, n, *row) for n, row in enumerate(records.human_rows())),
                ((run_id, n, *row[:-1], row[-1] or "")
                 for n, row in enumerate(records.label_rows())))
        for (model, columns), chunk in zip(tables, rows, strict=True):
            _write_rows(cursor, model._meta.db_table, columns, chunk)
