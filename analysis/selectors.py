"""ORM rows to arrays: the only place that knows both the database and numpy."""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import connections, router
from django.db.models import Count, Q

from annotation.models import Answer, Response
from core.data import (
    ANALYSED_META,
    ItemColumns,
    QuestionData,
    StudyData,
    concat_item_columns,
    item_columns,
    question_data_from_answers,
)
from core.judges import JudgeAnswers, JudgeInfo
from core.results import Judgments, expand_gaps, judgments_from_choices
from judges.selectors import judges_for_analysis
from studies.models import Item, Participant, Question, Study, SystemScore
from studies.selectors import pseudonyms

if TYPE_CHECKING:
    from .models import AnalysisRun

# One row per answer of an answered presentation (unordered: the loader sorts by the first
# response's id, the order the analysis lists annotators in; they are named by their stored
# pseudonyms), with the first response's active time (time is measured on the first answer)
# and the current revision's answers to every question.  A presentation without any stored
# answer is not a row, nor is an answer to a screening or attention-check item (those never
# enter the main statistics).  Nearly every presentation has one revision, which is both the
# first and the current: the UNION's first part takes those without joining the table to
# itself (a three-column join PostgreSQL misestimates into a million index look-ups), the
# second the few that were revised.
_ANSWERS_SQL = """
SELECT f.first_id, f.participant_id, f.item_id, f.presentation, f.active_ms,
       answer.question_id, answer.value, answer.missing
FROM (
    SELECT r.id AS first_id, r.participant_id, r.item_id, r.presentation, r.active_ms,
           r.id AS current_id
    FROM {response} r JOIN {participant} p ON p.id = r.participant_id
    WHERE p.study_id = {study} AND r.revision = 1 AND r.is_current
    UNION ALL
    SELECT r.id, r.participant_id, r.item_id, r.presentation, r.active_ms, current.id
    FROM {response} r JOIN {participant} p ON p.id = r.participant_id
    JOIN {response} current ON current.participant_id = r.participant_id
         AND current.item_id = r.item_id AND current.presentation = r.presentation
         AND current.is_current
    WHERE p.study_id = {study} AND r.revision = 1 AND NOT r.is_current
) f
JOIN {item} i ON i.id = f.item_id AND i.role = 'main' AND {not_comparison}
JOIN {answer} answer ON answer.response_id = f.current_id
"""
# An item without outputs (a comparison has some: its answers are judgments, which
# `study_judgments` reads); the scale arrays never see comparisons nor comparative questions.
_NOT_COMPARISON = {"postgresql": "i.outputs = '[]'::jsonb",
                   "other": "(i.outputs IS NULL OR i.outputs = '[]')"}
_ANSWER_COLUMNS = ("first", "participant", "item", "presentation", "active_ms", "question",
                   "value", "missing")


def _answer_rows(study: Study) -> dict[str, np.ndarray]:
    """The rows of `_ANSWERS_SQL` as columns: integers, floats (nan = null) and, for
    ``missing``, whether the answer is "can't judge".

    PostgreSQL sends them as CSV text in chunks of a few thousand responses (`_CHUNKS_SQL`),
    which Arrow's CSV reader parses in C as they arrive: no Python object per answer, and a few
    hundred Python calls for 10⁷ answers (a ``COPY … TO STDOUT`` hands Python one message per
    row: 5 s of the 6 s it took at 10⁶). SQLite, the embedded default for small studies,
    fetches them.
    """
    # The study's primary key is an integer from the database, never input.
    connection = connections[router.db_for_read(Response)]
    sql = _ANSWERS_SQL.format(response=Response._meta.db_table, answer=Answer._meta.db_table,
                              participant=Participant._meta.db_table, item=Item._meta.db_table,
                              study=int(study.pk),
                              not_comparison=_NOT_COMPARISON.get(connection.vendor,
                                                                 _NOT_COMPARISON["other"]))
    if connection.vendor == "postgresql":
        return _chunked_rows(connection, _CHUNKS_SQL.format(answers=sql))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(_ANSWER_COLUMNS)
    out = {name: np.array(col, dtype=np.int64) for name, col in
           zip(_ANSWER_COLUMNS[:4], columns[:4], strict=True)}
    out["active_ms"] = np.array([np.nan if v is None else v for v in columns[4]], dtype=float)
    out["question"] = np.array(columns[5], dtype=np.int64)
    out["value"] = np.array([np.nan if v is None else v for v in columns[6]], dtype=float)
    out["cant_judge"] = np.array([m == Answer.Missing.CANT_JUDGE for m in columns[7]], bool)
    return out


# The answers as CSV lines (null: an empty field; every field a number or a word of
# Answer.Missing, so nothing to quote), a chunk of lines per row: responses grouped by their
# id's block of CHUNK_IDS, so a chunk holds at most that many responses' answers.
CHUNK_IDS = 8192
_CHUNKS_SQL = """
SELECT string_agg(concat_ws(',', f.first_id, f.participant_id, f.item_id, f.presentation,
                            coalesce(f.active_ms::text, ''), f.question_id,
                            coalesce(f.value::text, ''), f.missing), E'\n')
FROM ({answers}) f
GROUP BY f.first_id / """ + str(CHUNK_IDS)


class _ChunkStream(io.RawIOBase):
    """A readable file over text chunks (what Arrow's reader reads from), a line end after
    each."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self.chunks = chunks
        self.pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.pending = memoryview((chunk + "\n").encode())
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


def _chunked_rows(connection: Any, sql: str) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    types = {"first": pa.int64(), "participant": pa.int64(), "item": pa.int64(),
             "presentation": pa.int64(), "active_ms": pa.float64(), "question": pa.int64(),
             "value": pa.float64(), "missing": pa.string()}
    # A server-side cursor (Django's, as `.iterator()` uses): a few chunks in memory at a time.
    plain = connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    with (connection.cursor() if plain else connection.chunked_cursor()) as cursor:
        cursor.execute(sql)

        def chunks() -> Iterator[str]:
            while batch := cursor.fetchmany(4):
                for (text,) in batch:
                    if text:
                        yield text

        stream = io.BufferedReader(_ChunkStream(chunks()), buffer_size=1 << 20)
        if stream.peek(1):
            table = pa_csv.open_csv(
                stream,
                read_options=pa_csv.ReadOptions(column_names=list(_ANSWER_COLUMNS),
                                                block_size=8 << 20),
                parse_options=pa_csv.ParseOptions(quote_char=False),
                convert_options=pa_csv.ConvertOptions(column_types=types,
                                                      strings_can_be_null=False)).read_all()
        else:  # no answer at all (Arrow refuses an empty file)
            table = pa.table({name: pa.array([], type) for name, type in types.items()})
    out = {name: table[name].to_numpy() for name in _ANSWER_COLUMNS[:4]}
    out["question"] = table["question"].to_numpy()
    for name in ("active_ms", "value"):  # null → nan
        out[name] = table[name].to_numpy(zero_copy_only=False).astype(float)
    out["cant_judge"] = pc.equal(table["missing"], Answer.Missing.CANT_JUDGE.value).to_numpy(
        zero_copy_only=False)
    return out


def study_questions(*, study: Study) -> list[QuestionData]:
    """Load a study's items and every question's answers as arrays, questions in order.

    Four queries at most: the items, the questions (cached on ``study``), the answers, the
    pseudonyms.  Every question shares the study's rows (one per answered presentation, in the
    order of its first response); a question a response did not answer is a blank there.  Only
    the last revision of an answer counts; its time is the first revision's.
    """
    questions = [q for q in study.question_list if not q.is_comparative]
    if not questions:  # comparative questions only (`study_judgments`): no scale arrays
        return []
    item_pks, columns = _item_columns(study)
    rows = _answer_rows(study)
    # Presentations in the order of their first response; a presentation's answers together.
    order = np.argsort(rows["first"], kind="stable")
    first = rows["first"][order]
    starts = np.flatnonzero(np.r_[True, first[1:] != first[:-1]]) if first.size \
        else np.zeros(0, np.int64)
    presentation_of = np.cumsum(np.r_[False, first[1:] != first[:-1]]) if first.size \
        else np.zeros(0, np.int64)
    pick = order[starts]
    by_pk = np.argsort(item_pks)
    item = by_pk[np.searchsorted(item_pks, rows["item"][pick], sorter=by_pk)] \
        if pick.size else np.zeros(0, np.int64)
    question_pks = np.array([q.pk for q in questions], dtype=np.int64)
    asked = np.argsort(question_pks)
    column = asked[np.searchsorted(question_pks, rows["question"][order], sorter=asked)] \
        if order.size else np.zeros(0, np.int64)
    values = np.full((len(questions), starts.size), np.nan)
    cant_judge = np.zeros((len(questions), starts.size), bool)
    values[column, presentation_of] = rows["value"][order]
    cant_judge[column, presentation_of] = rows["cant_judge"][order]
    participant, presentation = rows["participant"][pick], rows["presentation"][pick]
    active_ms = rows["active_ms"][pick]
    del rows, order, first, presentation_of, column  # the answers' rows: their copies are made
    data = question_data_from_answers(
        columns,
        participant=participant,
        item=item,
        presentation=presentation,
        active_ms=active_ms,
        values={q.key: values[n] for n, q in enumerate(questions)},
        cant_judge={q.key: cant_judge[n] for n, q in enumerate(questions)},
        names=pseudonyms(study=study),
    )
    return [QuestionData(key=q.key, data=data[q.key], values=tuple(q.domain),
                         reductions=q.reduction_maps(), prompt=q.prompt) for q in questions]


ITEM_CHUNK = 20_000  # items read and turned into columns at a time


# The study's main items in order, their JSON columns as text (decoded a chunk at a time).
_ITEMS_SQL = """
SELECT id, external_id, is_control, metrics::text, features::text, meta::text, text, text_a,
       text_b, system, source
FROM {item} WHERE study_id = %s AND role = %s AND outputs = '[]'::jsonb
ORDER BY position
"""


def _item_rows(study: Study) -> Iterator[tuple]:
    """(id, external_id, is_control, metrics, features, meta, text, text_a, text_b, system,
    source) of the study's main items in order, the JSON fields decoded.

    PostgreSQL: through a server-side cursor, each chunk's JSON texts decoded by one
    ``json.loads`` (the ORM's converters, one call per field and item, took 5 s of the 8 s
    the items took at 10⁵ items, on a loaded machine); elsewhere the ORM's rows.
    """
    connection = connections[router.db_for_read(Item)]
    if connection.vendor != "postgresql":
        yield from (Item.objects.filter(study=study, role=Item.Role.MAIN, outputs=[])
                    .order_by("position")
                    .values_list("id", "external_id", "is_control", "metrics", "features",
                                 "meta", "text", "text_a", "text_b", "system", "source")
                    .iterator(chunk_size=ITEM_CHUNK))
        return
    plain = connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    with (connection.cursor() if plain else connection.chunked_cursor()) as cursor:
        cursor.execute(_ITEMS_SQL.format(item=Item._meta.db_table),
                       [int(study.pk), Item.Role.MAIN.value])
        while batch := cursor.fetchmany(ITEM_CHUNK):
            metrics, features, meta = (
                json.loads("[" + ",".join(row[k] or "null" for row in batch) + "]")
                for k in (3, 4, 5))
            for row, m, f, kept in zip(batch, metrics, features, meta, strict=True):
                yield (*row[:3], m, f, kept, *row[6:])


def _item_columns(study: Study) -> tuple[np.ndarray, ItemColumns]:
    """The study's main items in order: their primary keys and their columns.

    Read in chunks through a server-side cursor, each turned into columns at once (`item_columns`,
    then `concat_item_columns`): a million items held as rows of decoded JSON took 2.6 GB.  Of
    an item's ``meta`` only what the analyses read is kept (`ANALYSED_META`)."""
    pks: list[int] = []
    parts: list[ItemColumns] = []
    shared: dict[tuple, dict] = {}  # identical kept metas are one object
    chunk: list[tuple] = []

    def flush() -> None:
        metas = []
        for row in chunk:
            kept = {k: row[5][k] for k in ANALYSED_META if k in (row[5] or {})}
            key = tuple(sorted((k, repr(v)) for k, v in kept.items()))
            metas.append(shared.setdefault(key, kept))
        parts.append(item_columns([row[1] for row in chunk], [row[2] for row in chunk],
                                  [row[3] for row in chunk], [row[4] for row in chunk], metas,
                                  texts=[" ".join(row[6:9]) for row in chunk],
                                  systems=[row[9] for row in chunk],
                                  sources=[row[10] for row in chunk]))
        pks.extend(row[0] for row in chunk)
        chunk.clear()

    for row in _item_rows(study):
        chunk.append(row)
        if len(chunk) == ITEM_CHUNK:
            flush()
    if chunk:
        flush()
    columns = concat_item_columns(parts)
    if columns.system is not None:
        # Only a study whose items name systems reads its system-level metric scores (one
        # more query): a study without systems keeps its query count.
        scores: dict[str, dict[str, float]] = {}
        for system, metric, value in (SystemScore.objects.filter(study=study)
                                      .values_list("system", "metric", "value")):
            scores.setdefault(metric, {})[system] = value
        columns = replace(columns, system_scores=scores)
    return np.array(pks, dtype=np.int64), columns


def study_data(*, study: Study, question: Question | None = None) -> StudyData:
    """Load a study's items and one question's answers (the first question's by default).

    The rows are the study's, as `study_questions` loads them (three queries at most).
    """
    loaded = study_questions(study=study)
    if question is None:
        return loaded[0].data
    return next(q.data for q in loaded if q.key == question.key)


# The current answers to the comparative questions of a study's comparisons (main items; an
# attention check's answers are scored by the check code, never here), first presentations
# only, with their question's key, the participant and the comparison's id; in pseudonym order.
_JUDGMENTS_SQL = """
SELECT question.key, p.id, i.external_id, answer.value, answer.choice
FROM {answer} answer
JOIN {response} r ON r.id = answer.response_id AND r.is_current AND r.presentation = 1
JOIN {participant} p ON p.id = r.participant_id
JOIN {item} i ON i.id = r.item_id AND i.role = 'main'
JOIN {question} question ON question.id = answer.question_id AND question.kind <> 'scale'
WHERE p.study_id = {study}
ORDER BY p.pseudonym_number, r.id
"""


def study_judgments(*, study: Study) -> list[Judgments]:
    """Load the judgments of a study's comparative questions, one `Judgments` per question in
    order (an empty list when it has none, without a query beyond the cached questions).

    Three queries more: the answers (raw SQL, no model object per row), the comparisons'
    outputs, the outputs' systems and metrics; and the pseudonyms. A judgment's annotator is
    named by their pseudonym, as in every other section."""
    questions = [q for q in study.question_list if q.is_comparative]
    if not questions:
        return []
    connection = connections[router.db_for_read(Answer)]
    sql = _JUDGMENTS_SQL.format(answer=Answer._meta.db_table, response=Response._meta.db_table,
                                participant=Participant._meta.db_table,
                                item=Item._meta.db_table, question=Question._meta.db_table,
                                study=int(study.pk))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    names = pseudonyms(study=study)
    referenced: dict[str, None] = {}
    for outputs in (Item.objects.filter(study=study, role=Item.Role.MAIN).exclude(outputs=[])
                    .values_list("outputs", flat=True)):
        referenced.update(dict.fromkeys(o for o in outputs or [] if isinstance(o, str)))
    outputs: list[str] = []
    systems: list[str] = []
    metric_rows: list[dict] = []
    wanted = list(referenced)
    for start in range(0, len(wanted), ITEM_CHUNK):
        for external_id, system, metrics in (
                Item.objects.filter(study=study, external_id__in=wanted[start:start + ITEM_CHUNK])
                .values_list("external_id", "system", "metrics")):
            outputs.append(external_id)
            systems.append(system or "")
            metric_rows.append(metrics if isinstance(metrics, dict) else {})
    metric_names = sorted({k for m in metric_rows for k in m})
    metric_columns = {name: [_number(m.get(name)) for m in metric_rows] for name in metric_names}
    by_question: dict[str, list[tuple[str, str, float | None, Any]]] = {
        q.key: [] for q in questions}
    for key, participant, comparison, value, choice in rows:
        if isinstance(choice, str):  # SQLite hands JSON back as text
            choice = json.loads(choice)
        by_question[key].append((names.get(participant, f"P{participant}"), comparison, value,
                                 choice))
    order = list(names.values())
    return [judgments_from_choices(q.key, q.kind, outputs=outputs, systems=systems,
                                   metrics=metric_columns, rows=by_question[q.key],
                                   annotators=order, prompt=q.prompt, options=q.comparison)
            for q in questions]


def study_judges(*, study: Study) -> tuple[list[JudgeInfo], list[JudgeAnswers]]:
    """Load a study's LLM judges and every run of their answers (``judges`` app: one query per
    table). A run hands them to the results builder beside the people's answers, never inside
    them: only the judges section reads them, unless the run asks for the view with judges."""
    judges, answers = judges_for_analysis(study=study)
    return list(judges), list(answers)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return float("nan")
    return float(value)


def latest_results(*, study: Study) -> dict | None:
    """Return the results document of the newest finished run, or None. One query."""
    run = latest_run(study=study, fields=("results",))
    return None if run is None else run.results


# One annotator's answers, as the analysis reads them (the first response's time, the current
# revision's answers), with the item's id and the question's key: the per-annotator page's one
# read of answers.  Bounded by LIMIT: an annotator answers each item at most twice.
_ANNOTATOR_SQL = """
SELECT item.external_id, first.presentation, first.active_ms, question.key, answer.value,
       answer.missing
FROM {response} first
JOIN {item} item ON item.id = first.item_id
JOIN {response} current ON current.participant_id = first.participant_id
     AND current.item_id = first.item_id AND current.presentation = first.presentation
     AND current.is_current
JOIN {answer} answer ON answer.response_id = current.id
JOIN {question} question ON question.id = answer.question_id
WHERE first.participant_id = %s AND first.revision = 1
ORDER BY first.id, question.position, question.id
LIMIT %s
"""
ANNOTATOR_ROWS = 20_000  # answers shown at most on the per-annotator page


def annotator_answers(*, participant_id: int, limit: int = ANNOTATOR_ROWS) -> list[dict]:
    """Return one participant's answers in the order they were given, one query.

    Each row: ``item`` (its id in files), ``presentation`` (2 = the repeat of a duplicate),
    ``active_ms`` (the first revision's active time), ``question`` (key), ``value`` (None =
    blank), ``cant_judge``.
    """
    from studies.models import Question

    sql = _ANNOTATOR_SQL.format(response=Response._meta.db_table, answer=Answer._meta.db_table,
                                item=Item._meta.db_table, question=Question._meta.db_table)
    with connections[router.db_for_read(Response)].cursor() as cursor:
        cursor.execute(sql, [participant_id, limit])
        return [{"item": item, "presentation": presentation, "active_ms": active_ms,
                 "question": question, "value": value,
                 "cant_judge": missing == Answer.Missing.CANT_JUDGE}
                for item, presentation, active_ms, question, value, missing in cursor.fetchall()]


def run_settings(*, study: Study, run_id: int) -> dict | None:
    """Return the analysis settings a run of the study was made with, or None. One query."""
    from .models import AnalysisRun

    return (AnalysisRun.objects.filter(study=study, pk=run_id)
            .values_list("settings", flat=True).first())


def latest_run(*, study: Study, fields: Sequence[str] | None = None,
               kept: bool = False) -> AnalysisRun | None:
    """Return the newest finished run, or None: the one that finished last (the highest id among
    runs that finished at the same time). The one place that says which run the dashboard, its
    charts, the annotator pages, the API and the exports read. ``fields``: the columns to read
    (its id always), all when None. One query.

    ``kept``: read every column but the results document, which comes from `run_document`:
    decoded once per process (for the pages that only read it: the dashboard, its charts, the
    annotator page), else one more query the first time."""
    from .models import AnalysisRun

    runs = (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
            .order_by("-finished_at", "-id"))
    if kept:
        run = runs.defer("results").first()
        if run is not None:
            run.results = run_document(run_id=run.pk, finished_at=run.finished_at)
        return run
    return (runs if fields is None else runs.only(*fields)).first()


# A finished run's document never changes (a new analysis is a new run), so the pages that read
# it keep the last KEPT_DOCUMENTS decoded: the document of a 10⁶-answer study is 7.4 MB of JSON,
# whose reading (PostgreSQL writing the jsonb out as text, Python decoding it) was about 40 % of
# the dashboard's time; each process (a gunicorn worker) keeps its own, about 40 MB each at that
# size. The pages must not change what they read (tests/analysis/test_kept_documents.py renders
# every view of the dashboard and compares the kept document with the stored one after).
KEPT_DOCUMENTS = 2
_kept: OrderedDict[tuple[int, Any], dict[str, Any]] = OrderedDict()
_kept_lock = threading.Lock()


def kept_documents_clear() -> None:
    """Forget the kept documents (each test starts without them: a rolled-back SQLite database
    gives a run's id again)."""
    with _kept_lock:
        _kept.clear()


def run_document(*, run_id: int, finished_at: Any) -> dict[str, Any]:
    """Return a finished run's results document, decoded once per process (see `_kept`)."""
    from .models import AnalysisRun

    key = (run_id, finished_at)
    with _kept_lock:
        document = _kept.get(key)
        if document is not None:
            _kept.move_to_end(key)
            return document
    document = AnalysisRun.objects.values_list("results", flat=True).get(pk=run_id)
    with _kept_lock:
        _kept[key] = document
        while len(_kept) > KEPT_DOCUMENTS:
            _kept.popitem(last=False)
    return document


RECENT_RUNS = 5  # runs listed on the dashboard


@dataclass(frozen=True)
class DashboardData:
    """What the dashboard reads, besides the study: `analysis.dashboard_page` shapes it."""

    runs: list[AnalysisRun]  # the newest RECENT_RUNS runs, without their results
    finished: AnalysisRun | None  # the newest finished run with its results
    people: dict[str, int]  # participant counts: total, complete, started, consented, ...


def dashboard_data(*, study: Study) -> DashboardData:
    """Return the dashboard's reads of a study: three queries whatever the study's size."""
    from .models import AnalysisRun

    runs = list(AnalysisRun.objects.filter(study=study).defer("results")
                .order_by("-created_at", "-id")[:RECENT_RUNS])
    finished = latest_run(study=study, kept=True)
    # The completion rate counts consenting people only: an invitation link never opened (and
    # nobody who merely opened the open link: no participant exists before consent) is no one.
    people = study.participants.aggregate(
        total=Count("id"), complete=Count("id", filter=Q(completed_at__isnull=False)),
        started=Count("id", filter=Q(n_answered__gt=0)),
        consented=Count("id", filter=Q(consented_at__isnull=False)),
        consented_complete=Count("id", filter=Q(consented_at__isnull=False,
                                                completed_at__isnull=False)))
    return DashboardData(runs=runs, finished=finished, people=people)


def study_checks(*, study: Study) -> list[dict]:
    """Per annotator who answered an attention check: the counts the results' ``attention_checks``
    section reports (named by pseudonym). One query."""
    rows = (Participant.objects.filter(study_id=study.pk, pseudonym_number__isnull=False,
                                       checks_answered__gt=0)
            .order_by("pseudonym_number")
            .values_list("pseudonym_number", "checks_answered", "checks_failed", "stopped_at"))
    return [{"annotator": f"A{n}", "answered": answered, "failed": failed,
             "stopped": stopped is not None} for n, answered, failed, stopped in rows]


# --------------------------------------------------------------------------- item records
# A run of `concord.results/3` stores the records that grow with the items in their own tables
# (analysis.models.RunItem, ItemGap, ItemLabel); a document before /3 holds them itself.


LABEL_FIELDS = ("question", "scale", "method", "item", "label", "probability", "entropy", "n",
                "reason")
ITEM_RECORD_SECTIONS = ("item_gaps", "item_labels")
FETCH = 5000  # rows per fetch when streaming a run's item records


def document_run_id(document: dict) -> int | None:
    """The run a results document was built by (its ``study.run``), or None."""
    run = (document.get("study") or {}).get("run") if isinstance(document, dict) else None
    return run if isinstance(run, int) and not isinstance(run, bool) else None


def _label_record(row: tuple) -> dict:
    record = dict(zip(LABEL_FIELDS, row, strict=True))
    if not record["reason"]:
        del record["reason"]
    return record


def _check_section(section: str) -> None:
    if section not in ITEM_RECORD_SECTIONS:
        raise ValueError(f"{section!r} is not a section of item records; choose one of "
                         f"{', '.join(ITEM_RECORD_SECTIONS)}")


def _gap_metrics(document: dict) -> list[str]:
    metrics = document.get("item_gap_metrics")
    return [m for m in metrics if isinstance(m, str)] if isinstance(metrics, list) else []


def _gap_chunks(run: int, metrics: list[str], *, after_seq: int, match: dict
                ) -> Iterator[tuple[int, list[dict]]]:
    """Yield (seq, its records) of a run's `ItemGap` rows after ``after_seq``, in order, FETCH
    rows a query: each row and its item's metric values (`RunItem`) give one record per metric
    with a value (`core.results.expand_gaps`), filtered by ``match``."""
    from .models import ItemGap, RunItem

    rows = ItemGap.objects.filter(run_id=run, **{k: match[k] for k in ("question", "scale",
                                                                       "aggregate") if k in match})
    if "item" in match:
        rows = rows.filter(position__in=RunItem.objects.filter(
            run_id=run, item=match["item"]).values("position"))
    last = after_seq
    while True:
        chunk = list(rows.filter(seq__gt=last).order_by("seq")
                     .values_list("seq", "question", "scale", "aggregate", "position",
                                  "human")[:FETCH])
        if not chunk:
            return
        items = {position: (item, values) for position, item, values in RunItem.objects.filter(
            run_id=run, position__in={row[4] for row in chunk})
            .values_list("position", "item", "metrics")}
        for seq, question, scale, aggregate, position, human in chunk:
            item, values = items.get(position, ("", []))
            if len(values) != len(metrics):  # a damaged run: nothing to expand
                values = [None] * len(metrics)
            yield seq, [{"question": question, "item": item, "scale": scale,
                         "aggregate": aggregate, "metric": metric, "human": human,
                         "metric_value": value, "gap": gap}
                        for metric, value, gap in expand_gaps(metrics, values, human)
                        if match.get("metric", metric) == metric]
        last = chunk[-1][0]


def item_records(*, document: dict, section: str, **match) -> Iterator[dict]:
    """Yield every record of ``section`` (``item_gaps`` or ``item_labels``) of the run that built
    ``document``, in the full document's order, streamed (bounded memory), with the records
    matching ``match`` (field=value) only; a document before /3 yields its own records."""
    from .models import ItemLabel

    _check_section(section)
    inline = document.get(section)
    if isinstance(inline, list):
        yield from (r for r in inline if all(r.get(k) == v for k, v in match.items()))
        return
    run = document_run_id(document)
    if run is None:
        return
    if section == "item_gaps":
        for _, records in _gap_chunks(run, _gap_metrics(document), after_seq=-1, match=match):
            yield from records
        return
    rows = ItemLabel.objects.filter(run_id=run, **match).order_by("seq").values_list(
        *LABEL_FIELDS)
    for row in rows.iterator(chunk_size=FETCH):
        yield _label_record(row)


def item_records_page(*, document: dict, section: str, after: int = -1, limit: int = 500,
                      **match) -> tuple[list[dict], int | None]:
    """One page of a run's item records: up to ``limit`` records after the place ``after``,
    and the place to ask for next (None at the end).

    A place is a record's position in the full document's order: for labels its ``seq``, for
    gaps its row's ``seq`` × the number of metrics + the metric's index in
    ``item_gap_metrics``; a page is one index range scan however far it is."""
    from .models import ItemLabel

    _check_section(section)
    inline = document.get(section)
    if isinstance(inline, list):
        chosen = [(n, r) for n, r in enumerate(inline)
                  if n > after and all(r.get(k) == v for k, v in match.items())][:limit + 1]
        page = [r for _, r in chosen[:limit]]
        return page, chosen[limit - 1][0] if len(chosen) > limit else None
    run = document_run_id(document)
    if run is None:
        return [], None
    if section == "item_labels":
        rows = list(ItemLabel.objects.filter(run_id=run, seq__gt=after, **match)
                    .order_by("seq").values_list("seq", *LABEL_FIELDS)[:limit + 1])
        page = [_label_record(row[1:]) for row in rows[:limit]]
        return page, rows[limit - 1][0] if len(rows) > limit else None
    metrics = _gap_metrics(document)
    stride = max(1, len(metrics))
    places: list[tuple[int, dict]] = []
    for seq, records in _gap_chunks(run, metrics, after_seq=after // stride - 1, match=match):
        for record in records:
            place = seq * stride + metrics.index(record["metric"])
            if place > after:
                places.append((place, record))
        if len(places) > limit:
            break
    page = [record for _, record in places[:limit]]
    return page, places[limit - 1][0] if len(places) > limit else None


def item_record_count(*, document: dict, section: str) -> int:
    """How many records of ``section`` the run holds (the document's count, else one query)."""
    from .models import ItemLabel

    _check_section(section)
    inline = document.get(section)
    if isinstance(inline, list):
        return len(inline)
    counted = (document.get("counts") or {}).get(section)
    if isinstance(counted, int):
        return counted
    run = document_run_id(document)
    if run is None or section == "item_gaps":
        return 0
    return ItemLabel.objects.filter(run_id=run).count()


def item_labels_for(*, document: dict, items: list[str], scale: str) -> list[dict]:
    """The aggregated labels of ``items`` on ``scale``, every question and model (one query)."""
    if isinstance(document.get("item_labels"), list):
        wanted = set(items)
        return [r for r in document["item_labels"]
                if r.get("scale") == scale and r.get("item") in wanted]
    from .models import ItemLabel

    run = document_run_id(document)
    if run is None or not items:
        return []
    rows = (ItemLabel.objects.filter(run_id=run, scale=scale, item__in=sorted(set(items)))
            .order_by("seq").values_list(*LABEL_FIELDS))
    return [_label_record(row) for row in rows]


def full_document(*, document: dict) -> dict:
    """Return the full results document of a run (docs/results.md): ``document`` with its items,
    simple items, per-item gaps and labels put back from the run's tables.  Its size grows with
    the items: for tests, bundles' replay checks and small studies; a large study pages."""
    if isinstance(document.get("item_gaps"), list):
        return document
    from .models import RunItem

    run = document_run_id(document)
    full = dict(document)
    items = list(RunItem.objects.filter(run_id=run).order_by("position")
                 .values_list("item", "simple")) if run is not None else []
    entries = []
    for entry in document.get("questions") or []:
        entry = dict(entry)
        entry["simple_items"] = [item for item, simple in items if entry["key"] in simple]
        entries.append(entry)
    full["questions"] = entries
    full["items"] = [item for item, _ in items]
    full["simple_items"] = entries[0]["simple_items"] if entries else []
    full["item_gaps"] = list(item_records(document=document, section="item_gaps"))
    full["item_labels"] = list(item_records(document=document, section="item_labels"))
    return full
