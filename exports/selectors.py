"""Reads of the exports: the rows of each table, the size check, a job's file and its state.

Every reader takes a fixed number of queries whatever the study's size and reads querysets with
`.iterator(chunk_size=READ_CHUNK)`, so memory holds one chunk of rows, the pseudonym of each
annotator and the id of each item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.db import DatabaseError, connections, router
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Answer, Response
from annotation.selectors import event_list
from core.comparative import SEPARATOR, TIE, asks, judgment_text
from core.formats import (
    sql_csv_flag,
    sql_csv_number,
    sql_csv_number_plain,
    sql_csv_text,
    sql_csv_timestamp,
)
from jobs.selectors import job_status
from studies.models import Item, Participant, Question, Study
from studies.selectors import pseudonyms

from .models import ExportJob

# Exports that grow with the number of responses; the others are small whatever the study.
LARGE_WHATS = ("responses", "revisions", "matrix", "bundle", "labels", "gaps", "events",
               "judgments")
READ_CHUNK = 5000  # rows per database round trip of .iterator()

# The first ten columns are those of single-question exports before questions existed.
RESPONSE_COLUMNS = ("annotator", "item", "presentation", "position", "duplicate", "value",
                    "active_ms", "submitted_at", "source", "control", "question", "missing",
                    "comment", "revision", "role")
REVISION_COLUMNS = ("annotator", "item", "presentation", "position", "revision", "current",
                    "question", "value", "missing", "comment", "active_ms", "submitted_at",
                    "source")
# The item's system and source (docs/systems.md), after the columns above, only for a study whose
# items name them. `source` already says where an answer came from (collected or imported), so
# the item's source is `item_source`.
ITEM_LABEL_COLUMNS = ("system", "item_source")
TEXT_COLUMNS = ("text", "text_a", "text_b")
LABEL_COLUMNS = ("system", "source")
PREFIXES = (("metrics", "metric:"), ("features", "feature:"), ("meta", "meta:"))
KNOWN_PREFIXES = (("gold", "gold:"), ("tolerance", "tolerance:"))
SENTIMENT_META = ("sentiment_a", "sentiment_b")
PSEUDONYM_COLUMNS = ("pseudonym", "source", "external_id", "label")
# The systems analysis' sections of the results document (docs/results.md), each an export of
# the same name, with its records' fields as columns in this order (a field a record adds
# beyond them follows, in the order first met).
SYSTEM_COLUMNS: dict[str, tuple[str, ...]] = {
    "systems": ("question", "scale", "system", "sources", "items", "answers", "mean",
                "mean_low", "mean_high", "median", "rank", "rank_low", "rank_high", "cluster",
                "reason"),
    "system_tests": ("question", "scale", "system_a", "system_b", "sources", "mean_difference",
                     "effect_size", "test", "statistic", "p_value", "p_adjusted", "correction",
                     "significant", "reason"),
    "system_clusters": ("question", "scale", "cluster", "system", "mean", "rank"),
    "mixed_model": ("question", "scale", "kind", "name", "estimate", "std_error", "low", "high",
                    "share", "converged", "reason"),
    "metric_meta_evaluation": ("question", "scale", "metric", "level", "grouping", "statistic",
                               "value", "low", "high", "p_value", "n", "other_metric", "reason"),
}
# The judgments export: one row per current answer to a comparative question (docs/exports.md).
JUDGMENT_COLUMNS = ("annotator", "item", "question", "kind", "shown", "choice", "strength",
                    "value", "left", "missing", "comment", "revision", "received_at")
# The revisions export of a study with comparative questions ends with each answer's judgment
# as stored (JSON), which a replayed bundle stores again.
CHOICE_COLUMN = "choice"
# The keys of one line of the timing events export, in order (docs/exports.md).
EVENT_COLUMNS = ("annotator", "item", "presentation", "position", "revision", "current", "seq",
                 "event", "ms", "active_ms", "submitted_at")


def export_is_large(*, study: Study, what: str) -> bool:
    """Tell whether an export should run in the background (more than CONCORD_EXPORT_SYNC_MAX
    responses, for the exports that grow with them). One query, without counting every row."""
    if what not in LARGE_WHATS:
        return False
    limit = settings.CONCORD_EXPORT_SYNC_MAX
    beyond = (Response.objects.filter(participant__study=study).order_by()
              .values_list("pk", flat=True)[limit:limit + 1])
    return len(beyond) > 0


# --- responses (long format), revisions and the matrix --------------------------------------------

# One row per answer of the current revision of every answered presentation, with the first
# revision's active time (time is measured on the first answer, as the analysis reads it; see
# analysis.selectors) and the current revision's receipt time. Rows are ordered by annotator in
# pseudonym order (each annotator's lowest response id: a presentation's first revision is its
# lowest id), then by position, presentation and question.
_CURRENT_FROM = """
FROM {response} first
JOIN {participant} p ON p.id = first.participant_id
JOIN {response} cur ON cur.participant_id = first.participant_id
     AND cur.item_id = first.item_id AND cur.presentation = first.presentation AND cur.is_current
JOIN {answer} answer ON answer.response_id = cur.id
JOIN {question} question ON question.id = answer.question_id
JOIN {item} item ON item.id = first.item_id
WHERE p.study_id = %s AND first.revision = 1{only}
ORDER BY MIN(first.id) OVER (PARTITION BY first.participant_id), cur.position IS NULL,
         cur.position, first.presentation, first.id, question.position
"""
_CURRENT_SQL = """
SELECT first.participant_id, item.external_id, first.presentation, cur.position, question.key,
       answer.value, answer.missing, answer.comment, cur.revision, first.active_ms,
       cur.received_at, cur.source, item.is_control, first.item_id, answer.question_id,
       item.role, item.system, item.source""" + _CURRENT_FROM.replace("{only}", "")
# Every revision of every answered presentation, in the same order, revisions in order.
_REVISIONS_SQL = """
SELECT r.participant_id, item.external_id, r.presentation, r.position, r.revision, r.is_current,
       question.key, answer.value, answer.missing, answer.comment, r.active_ms, r.received_at,
       r.source, item.system, item.source, answer.choice
FROM {response} r
JOIN {participant} p ON p.id = r.participant_id
JOIN {answer} answer ON answer.response_id = r.id
JOIN {question} question ON question.id = answer.question_id
JOIN {item} item ON item.id = r.item_id
WHERE p.study_id = %s
ORDER BY MIN(r.id) OVER (PARTITION BY r.participant_id), r.position IS NULL, r.position,
         r.presentation, r.revision, question.position
"""


# Every response (each revision) with its raw timing events, in the order of the revisions export.
_EVENTS_SQL = """
SELECT r.participant_id, item.external_id, r.presentation, r.position, r.revision, r.is_current,
       r.active_ms, r.received_at, r.events
FROM {response} r
JOIN {participant} p ON p.id = r.participant_id
JOIN {item} item ON item.id = r.item_id
WHERE p.study_id = %s
ORDER BY MIN(r.id) OVER (PARTITION BY r.participant_id), r.position IS NULL, r.position,
         r.presentation, r.revision
"""


def _tables() -> dict[str, str]:
    return {"response": Response._meta.db_table, "answer": Answer._meta.db_table,
            "participant": Participant._meta.db_table, "question": Question._meta.db_table,
            "item": Item._meta.db_table}


def _stream(sql: str, params: list[int]) -> Iterator[tuple[Any, ...]]:
    """Yield the rows of a query READ_CHUNK at a time, through a server-side cursor on
    PostgreSQL (Django's `chunked_cursor`, the cursor of `.iterator()`): memory holds one chunk."""
    connection = connections[router.db_for_read(Response)]
    # Behind a transaction-mode pooler server-side cursors are turned off, as for .iterator().
    plain = connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    with (connection.cursor() if plain else connection.chunked_cursor()) as cursor:
        cursor.execute(sql.format(**_tables()), params)
        while batch := cursor.fetchmany(READ_CHUNK):
            yield from batch


def _aware(moment: Any) -> datetime:
    """A timestamp read by a raw query: SQLite gives text, PostgreSQL an aware datetime."""
    if isinstance(moment, str):
        moment = parse_datetime(moment)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    assert isinstance(moment, datetime)  # parsed, or read as one: a datetime by now
    return moment.astimezone(UTC)


def study_has_labels(*, study: Study) -> bool:
    """Tell whether some item of the study names a system or a source. One query."""
    return Item.objects.filter(study=study).filter(~Q(system="") | ~Q(source="")).exists()


def response_columns(*, study: Study) -> tuple[str, ...]:
    """The columns of the responses export: RESPONSE_COLUMNS, then `system` and `item_source`
    when the study's items name them. One query."""
    return RESPONSE_COLUMNS + (ITEM_LABEL_COLUMNS if study_has_labels(study=study) else ())


def study_is_comparative(*, study: Study) -> bool:
    """Tell whether the study asks a comparative question (the questions are cached)."""
    return any(q.is_comparative for q in study.question_list)


def revision_columns(*, study: Study) -> tuple[str, ...]:
    """The columns of the revisions export (as `response_columns`), then `choice` for a study
    with comparative questions. One query."""
    labels, comparative = Study.objects.filter(pk=study.pk).values_list(
        Exists(Item.objects.filter(study=OuterRef("pk")).filter(~Q(system="") | ~Q(source=""))),
        Exists(Question.objects.filter(study=OuterRef("pk")).exclude(
            kind=Question.Kind.SCALE))).get()
    return (REVISION_COLUMNS + (ITEM_LABEL_COLUMNS if labels else ())
            + ((CHOICE_COLUMN,) if comparative else ()))


def response_rows(*, study: Study, labels: bool = False) -> Iterator[tuple[object, ...]]:
    """Yield one tuple per stored answer of a current revision, in RESPONSE_COLUMNS order (then
    the item's system and source when ``labels``): one row per (annotator, item, presentation,
    question). Two queries.

    Annotators are pseudonyms (A1, A2, … as in the results document), rows ordered by annotator
    then position, then question. No token, no platform id: the mapping is the separate
    pseudonym download.
    """
    names = pseudonyms(study=study)
    for (pid, item, presentation, position, question, value, missing, comment, revision,
         active_ms, received, source, control, _, _, role, system, item_source) in _stream(
            _CURRENT_SQL, [study.pk]):
        row = (names[pid], item, presentation, position, presentation > 1, value, active_ms,
               _aware(received), source, bool(control), question, missing, comment, revision,
               role)
        yield (*row, system, item_source) if labels else row


# The responses export's CSV written by PostgreSQL's COPY (`response_csv_copy`): the rows of
# _CURRENT_SQL, each cell made by SQL into the text `core.formats.csv_cell` writes (text
# neutralised, an empty text NULL so that COPY writes it unquoted, numbers and UTC times as
# Python writes them), COPY quoting as Python's csv module does. The same rows as _CURRENT_SQL
# without its self-join: a current revision 1 is its own first revision (one revision 1 and one
# current revision per presentation), and only a later current revision looks its first one up.
_CURRENT_CSV_SQL = """
SELECT {cells}
FROM (
    SELECT cur.*, p.pseudonym_number,
           CASE WHEN cur.revision = 1 THEN cur.id ELSE (
               SELECT earlier.id FROM {response} earlier
               WHERE earlier.participant_id = cur.participant_id
                     AND earlier.item_id = cur.item_id
                     AND earlier.presentation = cur.presentation AND earlier.revision = 1)
           END AS first_id,
           CASE WHEN cur.revision = 1 THEN cur.active_ms ELSE (
               SELECT earlier.active_ms FROM {response} earlier
               WHERE earlier.participant_id = cur.participant_id
                     AND earlier.item_id = cur.item_id
                     AND earlier.presentation = cur.presentation AND earlier.revision = 1)
           END AS first_ms
    FROM {response} cur
    JOIN {participant} p ON p.id = cur.participant_id
    WHERE p.study_id = {study} AND cur.is_current) cur
JOIN {answer} answer ON answer.response_id = cur.id
JOIN {question} question ON question.id = answer.question_id
JOIN {item} item ON item.id = cur.item_id
WHERE cur.first_id IS NOT NULL
ORDER BY MIN(cur.first_id) OVER (PARTITION BY cur.participant_id), cur.position IS NULL,
         cur.position, cur.presentation, cur.first_id, question.position
"""
# Whether the study's items name a system or a source (the label columns), and whether some
# answer holds a value the database could write otherwise than Python (`sql_csv_number_plain`).
_CSV_CHECK_SQL = """
SELECT EXISTS (SELECT 1 FROM {item} item WHERE item.study_id = %s
                                              AND (item.system <> '' OR item.source <> '')),
       EXISTS (SELECT 1 FROM {answer} answer
               JOIN {response} r ON r.id = answer.response_id
               JOIN {participant} p ON p.id = r.participant_id
               WHERE p.study_id = %s AND NOT {plain})
"""


def _csv_sql(study_id: int, labels: bool) -> str:
    """_CURRENT_CSV_SQL with its cells, in RESPONSE_COLUMNS order (then the item's labels)."""
    cells = ("'A' || cur.pseudonym_number", sql_csv_text("item.external_id"), "cur.presentation",
             "cur.position", sql_csv_flag("cur.presentation > 1"), sql_csv_number("answer.value"),
             "cur.first_ms", sql_csv_timestamp("cur.received_at"), sql_csv_text("cur.source"),
             sql_csv_flag("item.is_control"), sql_csv_text("question.key"),
             sql_csv_text("answer.missing"), sql_csv_text("answer.comment"), "cur.revision",
             sql_csv_text("item.role"),
             *((sql_csv_text("item.system"), sql_csv_text("item.source")) if labels else ()))
    # COPY takes no parameters: the study's id is an int, written in.
    return _CURRENT_CSV_SQL.format(cells=", ".join(cells), study=int(study_id),
                                   **_tables()).replace("%%", "%")


def response_csv_plan(*, study: Study) -> tuple[bool, bool]:
    """Return (whether PostgreSQL can write the responses CSV, whether it has the label
    columns). One query on PostgreSQL (none elsewhere: the Python writer is used)."""
    connection = connections[router.db_for_read(Response)]
    if connection.vendor != "postgresql":
        return False, False
    with connection.cursor() as cursor:
        cursor.execute(_CSV_CHECK_SQL.format(plain=sql_csv_number_plain("answer.value"),
                                             **_tables()), [study.pk, study.pk])
        labels, odd = cursor.fetchone()
    return not odd, bool(labels)


def response_csv_copy(*, study: Study, labels: bool, spool: BinaryIO) -> None:
    """Write the data lines of the responses CSV into ``spool`` with PostgreSQL's COPY (LF line
    ends, RFC 4180 quoting): the rows and cells of `response_rows` as `core.formats.csv_chunks`
    writes them but for the line ends (`core.formats.crlf_chunks`). Memory holds one line.

    The file is spooled so that the connection is free again while it is streamed (a job
    reports its progress through it). PostgreSQL only, when `response_csv_plan` allows it."""
    connection = connections[router.db_for_read(Response)]
    with connection.cursor() as cursor:
        # Without JIT compilation: the cells' expressions cost it seconds to compile (in every
        # parallel worker) for a query that runs once.
        cursor.execute("SELECT set_config('jit', 'off', false)")
        try:
            with cursor.cursor.copy(f"COPY ({_csv_sql(study.pk, labels)}) TO STDOUT "
                                    "WITH (FORMAT csv)") as copy:
                for data in copy:
                    spool.write(data)
        finally:
            with suppress(DatabaseError):
                cursor.execute("RESET jit")


def revision_rows(*, study: Study, labels: bool = False,
                  choice: bool = False) -> Iterator[tuple[object, ...]]:
    """Yield one tuple per stored answer of every revision, in REVISION_COLUMNS order (then the
    item's system and source when ``labels``, then the judgment as JSON text, blank for a
    scale, when ``choice``). Two queries."""
    names = pseudonyms(study=study)
    for (pid, item, presentation, position, revision, current, question, value, missing, comment,
         active_ms, received, source, system, item_source, judgment) in _stream(
            _REVISIONS_SQL, [study.pk]):
        row: tuple[object, ...] = (names[pid], item, presentation, position, revision,
                                   bool(current), question, value, missing, comment, active_ms,
                                   _aware(received), source)
        if labels:
            row = (*row, system, item_source)
        if choice:
            row = (*row, "" if judgment is None else json.dumps(
                _json(judgment), ensure_ascii=False, separators=(",", ":")))
        yield row


def _json(value: Any) -> Any:
    """A JSON column read by a raw query: PostgreSQL's driver decodes it, SQLite gives text."""
    return json.loads(value) if isinstance(value, str) else value


# Every current answer to a comparative question, in the order of the responses export.
_JUDGMENTS_SQL = """
SELECT first.participant_id, item.external_id, question.key, question.kind, answer.choice,
       answer.value, answer.missing, answer.comment, cur.revision, cur.received_at""" + \
    _CURRENT_FROM.replace("{only}", " AND question.kind <> 'scale'")


def judgment_rows(*, study: Study) -> Iterator[tuple[object, ...]]:
    """Yield one tuple per current answer to a comparative question, in JUDGMENT_COLUMNS order:
    the annotator's pseudonym, the comparison, the question and its kind, the outputs shown
    (``a|b``, in the order shown), the choice as a judgments file writes it
    (`core.comparative.judgment_text`), a pairwise strength, the value (the canonical index of
    the chosen output), ``left`` (whether the output shown first was chosen: the pick, the best,
    or ranked first alone; blank for a tie or a missing judgment), the missing reason, the
    comment, the revision and when it was received. Two queries."""
    names = pseudonyms(study=study)
    for (pid, item, question, kind, raw, value, missing, comment, revision,
         received) in _stream(_JUDGMENTS_SQL, [study.pk]):
        choice = _json(raw)
        if not isinstance(choice, dict) or not choice.get("shown"):
            yield (names[pid], item, question, kind, "", "", "", value, None, missing, comment,
                   revision, _aware(received))
            continue
        shown = [str(name) for name in choice["shown"]]
        yield (names[pid], item, question, kind, SEPARATOR.join(shown), judgment_text(choice),
               str(choice.get("strength") or ""), value, _left(choice, shown[0]), missing,
               comment, revision, _aware(received))


def _left(choice: dict[str, Any], first: str) -> bool | None:
    """Whether the output shown first was chosen (None: a tie, or a tie at the top)."""
    if "pick" in choice:
        return None if choice["pick"] == TIE else choice["pick"] == first
    if "order" in choice:
        top = choice["order"][0] if choice["order"] else []
        return None if first in top and len(top) > 1 else list(top) == [first]
    return bool(choice.get("best") == first)


def event_rows(*, study: Study) -> Iterator[dict[str, Any]]:
    """Yield one record per raw timing event of every response (each revision), keyed by
    EVENT_COLUMNS: the annotator's pseudonym (never a token or platform id), the item's id, the
    presentation, position and revision, whether the revision is current, the event's number in
    its response (from 1), its kind (`shown`, `hidden`, `visible`, `select:…`, `answer`, …), its
    time in ms since the item was shown, the response's active time and receipt time. A
    response without events (an imported one) has no line. Two queries; memory holds one chunk
    of responses."""
    names = pseudonyms(study=study)
    for (pid, item, presentation, position, revision, current, active_ms, received,
         raw) in _stream(_EVENTS_SQL, [study.pk]):
        events = event_list(raw)
        if not events:
            continue
        submitted = _aware(received)
        for seq, (kind, ms) in enumerate(events, start=1):
            yield {"annotator": names[pid], "item": item, "presentation": presentation,
                   "position": position, "revision": revision, "current": bool(current),
                   "seq": seq, "event": kind, "ms": ms, "active_ms": active_ms,
                   "submitted_at": submitted}


# --- the annotator × item matrix ----------------------------------------------------------------


def matrix_columns(*, study: Study) -> tuple[list[str], dict[tuple[int, int, int], int]]:
    """Return the matrix header and {(item pk, presentation, question pk): column index}. Three
    queries (the questions are cached on the study).

    One column per item (first presentations, import order), then one more column per item and
    later presentation that anyone answered (the duplicates), in presentation then item order:
    `import_responses --format wide` reads the k-th column of an item as presentation k. A study
    of several questions has one column per item and question, headed `item:question` (the
    question's key), questions in their order within each item.
    """
    questions = study.question_list
    several = len(questions) > 1
    items = list(Item.objects.filter(study=study).order_by("position")
                 .values_list("pk", "external_id", "outputs"))
    latest = dict(Response.objects.filter(participant__study=study, presentation__gt=1)
                  .values("item_id").annotate(last=Max("presentation")).order_by()
                  .values_list("item_id", "last"))
    header = ["annotator"]
    index: dict[tuple[int, int, int], int] = {}
    for presentation in range(1, max(latest.values(), default=1) + 1):
        for pk, external, outputs in items:
            if latest.get(pk, 1) >= presentation:
                # the questions asked about the item (`Question.applies_to`): a comparison's
                # comparative ones, every other item's scales
                for question in questions:
                    if not asks(question.kind, len(outputs)):
                        continue
                    index[(pk, presentation, question.pk)] = len(header)
                    header.append(f"{external}:{question.key}" if several else external)
    return header, index


def matrix_rows(*, study: Study, width: int,
                index: dict[tuple[int, int, int], int]) -> Iterator[list[object]]:
    """Yield one row per annotator (pseudonym first), blank where there is no value (a blank,
    "can't judge"). Two queries."""
    names = pseudonyms(study=study)
    current: int | None = None
    row: list[object] = []
    for (pid, _, presentation, _, _, value, *_, item, question, _role, _, _) in _stream(
            _CURRENT_SQL, [study.pk]):
        if pid != current:
            if current is not None:
                yield row
            current, row = pid, [names[pid]] + [None] * (width - 1)
        column = index.get((item, presentation, question))
        if column is not None:  # an answer to a question not asked about the item: none
            row[column] = value
    if current is not None:
        yield row


# --- items --------------------------------------------------------------------------------------


def item_columns(*, study: Study) -> list[str]:
    """Return the `import_items` columns the study's items need. Two queries."""
    present = Item.objects.filter(study=study).aggregate(
        **{name: Count("pk", filter=~Q(**{name: ""})) for name in TEXT_COLUMNS + LABEL_COLUMNS},
        outputs=Count("pk", filter=~Q(outputs=[])))
    needed = ("text_a", "text_b") if study.display == Study.Display.PAIR else ("text",)
    header = ["id"] + [n for n in TEXT_COLUMNS if n in needed or present[n]] + ["control"]
    # An item's system and source (docs/systems.md), only when some item names one, so a study
    # without systems exports the columns it always did; a comparison's outputs (`a|b|c`),
    # only when the study has comparisons.
    header += [n for n in LABEL_COLUMNS if present[n]]
    if present["outputs"]:
        header.append("outputs")
    keys: dict[str, set[str]] = {attr: set() for attr, _ in PREFIXES + KNOWN_PREFIXES}
    rows = Item.objects.filter(study=study).values_list("metrics", "features", "meta", "gold",
                                                        "tolerance", "role", "check_at")
    roles: set[str] = set()
    placed = False
    for metrics, features, meta, gold, tolerance, role, check_at in rows.iterator(
            chunk_size=READ_CHUNK):
        keys["metrics"].update(metrics)
        keys["features"].update(features)
        keys["meta"].update(_exported_meta(study, meta))
        keys["gold"].update(gold)
        keys["tolerance"].update(tolerance)
        roles.add(role)
        placed = placed or check_at is not None
    for attr, prefix in PREFIXES:
        header += [prefix + name for name in sorted(keys[attr])]
    # Screening and check items: their role, known answers and places (only when there are any,
    # so a study without them exports the columns it always did).
    if roles - {Item.Role.MAIN}:
        header.append("role")
        for attr, prefix in KNOWN_PREFIXES:
            header += [prefix + name for name in sorted(keys[attr])]
        if placed:
            header.append("check_at")
    return header


def _exported_meta(study: Study, meta: dict[str, Any]) -> dict[str, Any]:
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
                         "features", "meta", "role", "gold", "tolerance", "check_at", "system",
                         "source", "outputs"))
    for (external, text, text_a, text_b, control, metrics, features, meta, role, gold,
         tolerance, check_at, system, source, outputs) in rows.iterator(chunk_size=READ_CHUNK):
        values = {"id": external, "text": text, "text_a": text_a, "text_b": text_b,
                  "control": int(control), "role": role, "check_at": check_at,
                  "system": system, "source": source, "outputs": SEPARATOR.join(outputs)}
        stores = {"metric:": metrics, "feature:": features, "meta:": _exported_meta(study, meta),
                  "gold:": gold, "tolerance:": tolerance}
        record = {}
        for column in header:
            prefix, _, name = column.partition(":")
            record[column] = (stores[prefix + ":"].get(name) if name else values[column])
        yield record


# --- system-level metric scores ----------------------------------------------------------------

SYSTEM_SCORE_COLUMNS = ("system", "metric", "value")


def system_score_rows(*, study: Study) -> Iterator[tuple[str, str, float]]:
    """Yield the study's system-level scores as (system, metric, value), by metric then
    system. One query."""
    yield from (study.system_scores.order_by("metric", "system")
                .values_list("system", "metric", "value").iterator(chunk_size=READ_CHUNK))


# --- the pseudonym mapping ----------------------------------------------------------------------


def participant_rows(*, study: Study) -> list[tuple[object, ...]]:
    """Return each annotator's state, in `core.bundles.PARTICIPANT_COLUMNS` order and
    pseudonym order: items assigned and answered, when they finished (null: they did not), the
    screening, when they were stopped by the attention checks or revoked. Two queries.

    What the study's pages count as complete (`Participant.status`), so that a replayed bundle
    counts the same; no platform id, no link, no consent time.
    """
    names = pseudonyms(study=study)
    rows = study.participants.filter(pk__in=list(names)).values_list(
        "pk", "n_assigned", "n_answered", "completed_at", "screening", "stopped_at", "revoked_at")
    out = [(names[pk], assigned, answered, _iso(completed), screening, _iso(stopped),
            _iso(revoked))
           for pk, assigned, answered, completed, screening, stopped, revoked in rows]
    return sorted(out, key=lambda row: int(str(row[0])[1:]))


def _iso(moment: datetime | None) -> str:
    return "" if moment is None else _aware(moment).isoformat()


def pseudonym_rows(*, study: Study) -> list[tuple[str, str, str, str]]:
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
    """Return about the number of data rows an export will write, for progress (one query; two
    for the bundle): stored answers of every revision stand for responses and revisions."""
    from analysis.selectors import item_record_count, latest_results
    if what == "results":
        return 1
    if what in SYSTEM_COLUMNS or what in ("comparison_scores", "judge_results"):
        section = "judges" if what == "judge_results" else what
        records = (latest_results(study=study) or {}).get(section)
        return max(1, len(records) if isinstance(records, list) else 0)
    if what == "events":  # a response holds a handful of events: shown, select, answer, …
        return 5 * Response.objects.filter(participant__study=study).count()
    if what in ("labels", "gaps"):
        document = latest_results(study=study)
        section = "item_labels" if what == "labels" else "item_gaps"
        return 1 if document is None else max(1, item_record_count(document=document,
                                                                   section=section))
    items = Item.objects.filter(study=study).count() if what in ("items", "bundle") else 0
    answers = (Answer.objects.filter(response__participant__study=study).count()
               if what != "items" else 0)
    return {"responses": answers, "revisions": answers, "matrix": answers, "items": items,
            "judgments": answers}.get(
        what, 3 * answers + items)


def export_job_status(*, job: ExportJob) -> dict[str, Any]:
    """Return what the job page and its polling script show: a job's state, and the file's."""
    return {**job_status(job=job), "what": job.what, "format": job.format, "rows": job.rows,
            "size_bytes": job.size_bytes}
