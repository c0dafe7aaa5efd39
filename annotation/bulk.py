"""Import a long response file into PostgreSQL at COPY speed (issue 15).

`responses_import` calls `responses_import_copy` on PostgreSQL for the long format; SQLite and
the wide format (one row per annotator: small files) keep the in-memory parse of
`core.responses.responses_parse` and `bulk_create`. Both store the same rows.

Why this shape: at a million answers, building and saving one ORM object per response and per
answer took 70–76 % of a 100 s import, and holding the parsed file took 1.8 GB. Here each row is
checked on its own as it is read (`core.responses.long_row`, the same checks and messages) and
streamed into a temporary staging table with COPY; the checks across rows (a position used
twice, duplicate rows, which position is the repeated presentation) are window functions over
that table; the responses and answers are then inserted set-based from it. Python keeps only
what grows with the annotators and items (their ids), never with the rows; PostgreSQL sorts on
disk when it must. Everything happens in one transaction: on any problem it rolls back and
nothing is written, and every problem is reported at once with file, line and column.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, BinaryIO, cast

from django.db import connections, router, transaction
from django.utils import timezone

from annotation.models import Answer, Response
from core.comparative import asks
from core.problems import Collector, Problem
from core.responses import (
    INVALID,
    AnnotatorSummary,
    Cell,
    ImportSummary,
    LongRow,
    LongStream,
    Upload,
    later_presentations,
    long_unread,
    responses_stream_long,
)
from core.tabular import grouped
from studies.models import Item, Participant, Question, Study

from .store import SKIPPED, participant_ids, participants_create, pseudonyms_give

STAGE = "concord_import_rows"
# (fraction done, what is happening): called every PROGRESS_ROWS rows while reading, then at each
# step; a background import records it (`imports.services`).
Progress = Callable[[float, str], None]
PROGRESS_ROWS = 20_000
GROUPS = "concord_import_presentations"


@dataclass
class _Annotator:
    index: int
    first_ok: int | None = None  # line of the first valid row: where the annotator is named
    meta: dict[str, str] = field(default_factory=dict)


def responses_import_copy(
    *,
    study: Study,
    data: bytes | BinaryIO,
    filename: str,
    annotator_column: str | None,
    item_map: Upload | Mapping[str, str] | None,
    value_map: Upload | Mapping[str, str] | None,
    meta_columns: Sequence[str],
    max_bytes: int,
    dry_run: bool,
    progress: Progress | None = None,
) -> ImportSummary:
    """Validate and store a long response file with COPY, in one transaction (PostgreSQL).

    Same contract as `annotation.services.responses_import`; with `dry_run` the transaction
    is rolled back after counting.
    """
    with transaction.atomic():
        if not dry_run:
            # Serialise imports into one study, so two uploads of one annotator cannot both pass.
            Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        summary = _import(study=study, data=data, filename=filename,
                          annotator_column=annotator_column, item_map=item_map,
                          value_map=value_map, meta_columns=meta_columns, max_bytes=max_bytes,
                          dry_run=dry_run, progress=progress)
        if dry_run:
            transaction.set_rollback(True)
    return summary


def _read_fraction(data: bytes | BinaryIO) -> Any:
    """How far the reading has come, from the line being read: of the lines of bytes, or of the
    bytes of a file read so far (its position, a chunk ahead of the line)."""
    if isinstance(data, bytes):
        lines = max(1, data.count(b"\n"))
        return lambda line: line / lines
    position = data.tell()
    size = max(1, data.seek(0, io.SEEK_END))
    data.seek(position)
    return lambda line: data.tell() / size


def _import(*, study: Study, data: bytes | BinaryIO, filename: str, annotator_column: str | None,
            item_map: Any, value_map: Any, meta_columns: Sequence[str], max_bytes: int,
            dry_run: bool, progress: Progress | None) -> ImportSummary:
    # A response file answers the scale questions about the items that are not comparisons
    # (a comparative question's judgments have a file of their own, `judgments_import`).
    questions = [q for q in study.question_list if not q.is_comparative]
    question_ids = {q.key: q.pk for q in questions}
    item_ids = dict(study.items.filter(outputs=[]).values_list("external_id", "id"))
    stream = responses_stream_long(
        data, filename=filename, items=item_ids, questions={q.key: q.values for q in questions},
        annotator_column=annotator_column, item_map=item_map, value_map=value_map,
        meta_columns=meta_columns, max_bytes=max_bytes,
    )
    with connections[router.db_for_write(Response)].cursor() as cursor:
        _stage_create(cursor)
        annotators, rows = _stage_rows(cursor, stream=stream, data=data, item_ids=item_ids,
                                       question_ids=question_ids, progress=progress)
        if progress:
            progress(0.8, f"{grouped(rows)} rows read; checking across rows")
        _check(cursor, study=study, stream=stream, filename=filename, annotators=annotators,
               annotator_column=annotator_column, several=len(questions) > 1, rows=rows)
        rank = _ranks(annotators)
        per = _presentations(cursor, rank=rank, ids=not dry_run)
        ordered = sorted(annotators.items(), key=lambda pair: rank[pair[1].index])
        summary = _summary_warned(cursor, stream=stream, filename=filename, annotators=ordered,
                                  per=per, annotator_column=annotator_column)
        if not dry_run:
            if progress:
                progress(0.85, f"storing the answers of {len(annotators)} annotators")
            _store(cursor, study=study, filename=filename, annotators=ordered, per=per,
                   questions=[q.pk for q in questions])
        cursor.execute(f"DROP TABLE {STAGE}, {GROUPS}")
        if dry_run:
            return summary
    return replace(summary, imported=True)


def _stage_create(cursor: Any) -> None:
    """Create the (empty) staging table the rows are copied into."""
    cursor.execute("SET LOCAL work_mem = '64MB'")
    # ON COMMIT DROP, and dropped when done: an import inside a longer transaction (a test,
    # a bundle) may be followed by another one.
    cursor.execute(f"DROP TABLE IF EXISTS {STAGE}, {GROUPS}")
    cursor.execute(
        f"CREATE TEMP TABLE {STAGE} (line integer, annotator integer, item integer, "
        "question integer, position integer, value double precision, missing text, "
        "comment text, duration integer, ok boolean) ON COMMIT DROP")


def _stage_rows(cursor: Any, *, stream: LongStream, data: bytes | BinaryIO,
                item_ids: Mapping[str, int], question_ids: Mapping[str, int],
                progress: Progress | None) -> tuple[dict[str, _Annotator], int]:
    """Copy the file's rows into the staging table; return its annotators (by name, in order of
    appearance) and the number of rows read."""
    annotators: dict[str, _Annotator] = {}
    unknown: dict[str, int] = {}  # item ids that are not the study's: negative stand-ins
    rows = 0
    if stream.columns is None:
        return annotators, rows
    meta_at = stream.columns.meta_at
    with cursor.cursor.copy(
            f"COPY {STAGE} (line, annotator, item, question, position, value, missing, "
            "comment, duration, ok) FROM STDIN") as copy:
        write = copy.write_row
        read = _read_fraction(data) if progress else None
        for row, cells in stream.rows:
            rows += 1
            if read and rows % PROGRESS_ROWS == 0:
                # `read` is set only with a progress callback.
                cast(Progress, progress)(0.8 * min(1.0, read(row.line)),
                                         f"{grouped(rows)} rows read")
            if row.external:
                _stage_row(write, row, cells, annotators=annotators, unknown=unknown,
                           meta_at=meta_at, item_ids=item_ids, question_ids=question_ids)
    return annotators, rows


def _stage_row(write: Callable[[tuple[Any, ...]], None], row: LongRow, cells: list[str], *,
               annotators: dict[str, _Annotator], unknown: dict[str, int],
               meta_at: Mapping[int, str], item_ids: Mapping[str, int],
               question_ids: Mapping[str, int]) -> None:
    """Stage one row of a named annotator: a valid row whole, a refused one for its position."""
    who = annotators.get(row.external)
    if who is None:
        who = annotators[row.external] = _Annotator(len(annotators))
    if row.ok:
        if who.first_ok is None:
            who.first_ok = row.line
        for index, name in meta_at.items():
            if cells[index].strip():
                who.meta[name] = cells[index].strip()  # last non-blank wins
        write((row.line, who.index, item_ids[row.item],
               question_ids[row.key or ""], row.position, row.value,
               # A NUL is reported by the reader; PostgreSQL text cannot
               # hold one, even in the staging table.
               row.missing, row.comment.replace("\0", ""), row.duration, True))
    elif row.position is not None and row.position != INVALID:
        # Kept for the check of positions used twice, which counts every row.
        item = item_ids.get(row.item) or -unknown.setdefault(row.item, len(unknown) + 1)
        write((row.line, who.index, item, None, row.position, None, "", "", None, False))


def _check(cursor: Any, *, study: Study, stream: LongStream, filename: str,
           annotators: dict[str, _Annotator], annotator_column: str | None, several: bool,
           rows: int) -> None:
    """Raise every problem of the file at once: the rows', across rows, and the annotators
    already imported."""
    columns = stream.columns
    cross = _cross_row_problems(cursor, filename=filename, names=list(annotators),
                                several=several,
                                column=columns.name("position")
                                if columns and "position" in columns.at else "position")
    problems = _merged(stream.maps, stream.errors, cross)
    existing = set(Participant.objects.filter(
        study=study, source=Participant.Source.IMPORT).values_list("external_id", flat=True))
    for external, who in annotators.items():
        if external in existing and who.first_ok is not None:
            problems.add(
                f"annotator {external!r} was already imported into this study; remove "
                "their rows or import them into another study",
                line=who.first_ok, column=annotator_column or "annotator")
    if columns is not None and rows == 0 and not stream.errors and not cross:
        problems.add("the file has a header but no rows")
    problems.raise_if_any()


def _ranks(annotators: dict[str, _Annotator]) -> list[int]:
    """Return, per annotator index, its rank in the order of first valid rows."""
    order = sorted((who.first_ok or 0, who.index) for who in annotators.values())
    rank = [0] * len(annotators)
    for n, (_, index) in enumerate(order):
        rank[index] = n
    return rank


def _summary_warned(cursor: Any, *, stream: LongStream, filename: str,
                    annotators: list[tuple[str, _Annotator]],
                    per: dict[int, tuple[int, int, int, int]],
                    annotator_column: str | None) -> ImportSummary:
    """Return the summary with its warnings: unread export columns, later presentations."""
    summary = _summary(filename=filename, annotators=annotators, per=per, cursor=cursor)
    cursor.execute(f"SELECT count(*) FROM {GROUPS} WHERE stored AND presentation > 2")  # noqa: S608 (table names only)
    later = later_presentations(cursor.fetchone()[0])
    if stream.columns is not None:  # the export columns the import does not read
        summary = replace(summary, warnings=tuple(
            long_unread(stream.columns.header, annotator_column)) + tuple(later))
    return summary


def _cross_row_problems(cursor: Any, *, filename: str, names: Sequence[str], several: bool,
                        column: str) -> list[Problem]:
    """Return the problems across rows, as `responses_parse` reports them; mark those rows."""
    problems: list[Problem] = []
    # A position of an annotator names one item: a later row giving it another item is refused.
    cursor.execute(f"""
        SELECT line, annotator, position, first_line FROM (
            SELECT line, annotator, position, item,
                   first_value(item) OVER w AS first_item, first_value(line) OVER w AS first_line
            FROM {STAGE} WHERE position IS NOT NULL
            WINDOW w AS (PARTITION BY annotator, position ORDER BY line)) t
        WHERE item <> first_item ORDER BY line LIMIT 100000""")  # noqa: S608 (table names only)
    refused = cursor.fetchall()
    for line, annotator, position, first_line in refused:
        problems.append(Problem(filename, line, column,
                                f"position {position} of annotator {names[annotator]!r} is "
                                f"already used on line {first_line}"))
    if refused:
        cursor.execute(f"UPDATE {STAGE} SET ok = false WHERE line = ANY(%s)",  # noqa: S608 (table names only)
                       [[line for line, *_ in refused]])
    # The rows of one annotator and item are one presentation per position; a blank position
    # is allowed only when there is one presentation, and a question is answered once in each.
    cursor.execute(f"""
        SELECT t.line, t.annotator, i.external_id, t.position, q.key, t.first_line, t.mixed,
               t.question_line
        FROM (
            SELECT line, annotator, item, position, question,
                   first_value(line) OVER (PARTITION BY annotator, item ORDER BY line)
                       AS first_line,
                   (first_value(position IS NULL) OVER (PARTITION BY annotator, item
                                                        ORDER BY line)) <> (position IS NULL)
                       AS mixed,
                   first_value(line) OVER (PARTITION BY annotator, item, position, question
                                           ORDER BY line) AS question_line
            FROM {STAGE} WHERE ok) t
        JOIN {Item._meta.db_table} i ON i.id = t.item
        LEFT JOIN {Question._meta.db_table} q ON q.id = t.question
        WHERE t.mixed OR t.line <> t.question_line
        ORDER BY t.line LIMIT 100000""")  # noqa: S608 (table names only)
    for line, annotator, item, position, key, first_line, mixed, question_line in cursor.fetchall():
        who = names[annotator]
        if mixed:
            message = (f"duplicate row: annotator {who!r} already has a row for item {item!r} "
                       f"on line {first_line}; a repeated presentation needs a different "
                       "position")
        else:
            about = f" (question {key!r})" if several else ""
            if position is None:
                message = (f"duplicate row: annotator {who!r} already has a row for item "
                           f"{item!r}{about} on line {question_line}; a repeated presentation "
                           "needs a different position")
            else:
                message = (f"duplicate row: annotator {who!r} already has item {item!r} at "
                           f"position {position}{about} on line {question_line}")
        problems.append(Problem(filename, line, None, message))
    return problems


def _merged(maps: Collector, errors: Collector, cross: list[Problem]) -> Collector:
    """Return one collector: the maps' problems, then the file's, in the order of the lines."""
    report = Collector(errors.file)
    report.extend(maps)
    file_problems = sorted([*errors.problems, *cross],
                           key=lambda p: p.line if p.line is not None else 0)
    report.extend(file_problems)
    report.omitted += errors.omitted
    return report


def _presentations(cursor: Any, *, rank: list[int], ids: bool
                   ) -> dict[int, tuple[int, int, int, int]]:
    """Group the rows into presentations; return, per annotator index, (rows, presented,
    answered, repeated presentations answered): the numbers of the summary.

    With `ids`, each stored presentation takes its response id from the table's sequence (a dry
    run takes none)."""
    # The earlier position is the first presentation, whatever the order of the lines; response
    # ids follow the annotators' first appearance, then presentation and position.
    cursor.execute(f"""
        CREATE TEMP TABLE {GROUPS} ON COMMIT DROP AS
        SELECT g.*, CASE WHEN g.stored AND %s THEN nextval(pg_get_serial_sequence(
                    '{Response._meta.db_table}', 'id')) END AS rid
        FROM (
            SELECT s.annotator, s.item, coalesce(s.position, -1) AS pkey,
                   min(s.position) AS position,
                   row_number() OVER (PARTITION BY s.annotator, s.item
                                      ORDER BY min(s.position) NULLS LAST) AS presentation,
                   (array_agg(s.duration ORDER BY s.line)
                       FILTER (WHERE s.duration IS NOT NULL))[1] AS duration,
                   bool_or(s.value IS NOT NULL OR s.missing <> '' OR s.comment <> '') AS stored,
                   count(*) AS rows,
                   min(min(s.line)) OVER (PARTITION BY s.annotator, s.item) AS item_line,
                   (%s::int[])[s.annotator + 1] AS rank
            FROM {STAGE} s WHERE s.ok
            GROUP BY s.annotator, s.item, coalesce(s.position, -1)
            ORDER BY rank, presentation, coalesce(min(s.position), 0), item_line
        ) g""", [ids, rank])  # noqa: S608 (table names only)
    cursor.execute(f"""
        SELECT annotator, sum(rows), count(*), count(*) FILTER (WHERE stored),
               count(*) FILTER (WHERE stored AND presentation > 1)
        FROM {GROUPS} GROUP BY annotator""")  # noqa: S608 (table names only)
    return {a: (int(r), p, s, d) for a, r, p, s, d in cursor.fetchall()}


def _summary(*, filename: str, annotators: list[tuple[str, _Annotator]],
             per: dict[int, tuple[int, int, int, int]], cursor: Any) -> ImportSummary:
    summaries = []
    for external, who in annotators:
        rows, presented, answered, duplicates = per.get(who.index, (0, 0, 0, 0))
        if not rows:
            continue
        summaries.append(AnnotatorSummary(
            external_id=external, rows=rows, presented=presented, answered=answered,
            blanks=presented - answered, duplicates=duplicates, meta=dict(who.meta)))
    cursor.execute(f"SELECT count(DISTINCT item) FROM {GROUPS} WHERE stored")  # noqa: S608 (table names only)
    items = cursor.fetchone()[0]
    return ImportSummary(
        filename=filename, fmt="long", rows=sum(s.rows for s in summaries),
        annotators=tuple(summaries), items=items,
        answers=sum(s.answered for s in summaries), blanks=sum(s.blanks for s in summaries),
        duplicates=sum(s.duplicates for s in summaries),
        merged_rows=0,  # a long file's rows are one answer each
    )


def _store(cursor: Any, *, study: Study, filename: str, annotators: list[tuple[str, _Annotator]],
           per: dict[int, tuple[int, int, int, int]], questions: list[int]) -> None:
    now = timezone.now()
    label = f"imported from {PurePath(filename).name}"[:200]
    present = [(external, who) for external, who in annotators if who.index in per]
    # One participant per annotator (a few thousand at most): the ORM's one multi-row INSERT.
    participants_create(participants=[
        Participant(study=study, source=Participant.Source.IMPORT, external_id=external,
                    label=label, meta=who.meta, n_assigned=per[who.index][1],
                    n_answered=per[who.index][2],
                    # An imported submission is final: nobody will answer its blanks later.
                    completed_at=now)
        for external, who in present])
    ids = participant_ids(study=study, external_ids=[external for external, _ in present])
    indexes = [who.index for _, who in present]
    pids = [ids[external] for external, _ in present]
    response, answer = Response._meta.db_table, Answer._meta.db_table
    cursor.execute(f"""
        INSERT INTO {response} (id, participant_id, item_id, presentation, assignment_id,
                                position, revision, is_current, client_id, active_ms, events,
                                source, received_at)
        SELECT g.rid, p.pid, g.item, g.presentation, NULL, g.position, 1, true,
               gen_random_uuid(), g.duration, '[]'::jsonb, %s, %s
        FROM {GROUPS} g JOIN unnest(%s::int[], %s::int[]) AS p(annotator, pid)
             ON p.annotator = g.annotator
        WHERE g.stored ORDER BY g.rid""",  # noqa: S608 (table names only)
                   [Response.Source.IMPORT, now, indexes, pids])
    # One answer per question, as the app stores them: a question the file left blank in an
    # answered presentation is "not answered" (skipped).
    cursor.execute(f"""
        INSERT INTO {answer} (response_id, question_id, value, missing, comment)
        SELECT g.rid, q.id, s.value,
               CASE WHEN s.missing <> '' THEN s.missing WHEN s.value IS NOT NULL THEN ''
                    ELSE %s END,
               coalesce(s.comment, '')
        FROM {GROUPS} g
        CROSS JOIN unnest(%s::int[]) WITH ORDINALITY AS q(id, n)
        LEFT JOIN {STAGE} s ON s.annotator = g.annotator AND s.item = g.item
             AND coalesce(s.position, -1) = g.pkey AND s.question = q.id
        WHERE g.stored ORDER BY g.rid, q.n""",  # noqa: S608 (table names only)
                   [Answer.Missing.SKIPPED, questions])
    # The pseudonyms A1, A2, … follow the file: given to the annotators with an answer, in
    # order of first appearance.
    pseudonyms_give(study=study, named=[], ids=[
        pid for (_, who), pid in zip(present, pids, strict=True) if per[who.index][2]])
    # The planner has no statistics for a million fresh rows: the first analysis would read
    # them with nested loops (52 s instead of 0.6 s measured after ANALYZE).
    for table in (response, answer, Participant._meta.db_table):
        cursor.execute(f"ANALYZE {table}")


# --- comparative judgments -------------------------------------------------------------------

JUDGMENT_BATCH = 20_000  # responses per INSERT of a judgments file


def judgments_store(*, study: Study, rows: Sequence[tuple[int, int, Mapping[str, Cell]]],
                    annotators: Sequence[str], label: str) -> None:
    """Store a judgments file's responses on PostgreSQL with COPY (JUDGMENT_BATCH responses
    at a time, their ids drawn from the table's sequence first), as `store.responses_store`
    stores them — one new imported participant per annotator (in order: the pseudonyms follow the file), one
    response per (annotator index, comparison id, answers by question key) row, one answer per
    comparative question (a question left out is "not answered"), each judgment in `choice` —
    but without an ORM object per response or answer: at 20 000 judgments `bulk_create` took
    23 of an import's 28 s, most of it preparing each object's values (COPY: under 2 s)."""
    now = timezone.now()
    answered = [0] * len(annotators)
    for annotator, _, _ in rows:
        answered[annotator] += 1
    participants_create(participants=[
        Participant(study=study, source=Participant.Source.IMPORT, external_id=external,
                    label=label[:200], n_assigned=answered[n], n_answered=answered[n],
                    completed_at=now)  # an imported submission is final
        for n, external in enumerate(annotators)])
    ids = participant_ids(study=study, external_ids=list(annotators))
    pids = [ids[external] for external in annotators]
    questions = [q for q in study.question_list if q.is_comparative]
    # the questions asked about each comparison: those that judge its number of outputs
    sizes = {pk: len(outputs) for pk, outputs
             in study.items.exclude(outputs=[]).values_list("pk", "outputs")}
    asked = {n: [q for q in questions if asks(q.kind, n)] for n in set(sizes.values())}
    response, answer = Response._meta.db_table, Answer._meta.db_table
    with connections[router.db_for_write(Response)].cursor() as cursor:
        for start in range(0, len(rows), JUDGMENT_BATCH):
            batch = rows[start:start + JUDGMENT_BATCH]
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) "
                           "FROM generate_series(1, %s)", [response, len(batch)])
            rids = [rid for (rid,) in cursor.fetchall()]
            with cursor.cursor.copy(
                    f"COPY {response} (id, participant_id, item_id, presentation, position, "
                    "revision, is_current, client_id, events, source, received_at) "
                    "FROM STDIN") as copy:
                for rid, (annotator, item, _) in zip(rids, batch, strict=True):
                    copy.write_row((rid, pids[annotator], item, 1, None, 1, True, uuid.uuid4(),
                                    "[]", Response.Source.IMPORT, now))
            with cursor.cursor.copy(
                    f"COPY {answer} (response_id, question_id, value, missing, comment, choice) "
                    "FROM STDIN") as copy:
                for rid, (_, item, cells) in zip(rids, batch, strict=True):
                    for q in asked[sizes[item]]:
                        cell = cells.get(q.key, SKIPPED)
                        copy.write_row((
                            rid, q.pk, cell.value,
                            cell.missing or ("" if cell.value is not None else SKIPPED.missing),
                            cell.comment.replace("\0", ""),
                            None if cell.choice is None else json.dumps(cell.choice)))
        pseudonyms_give(study=study, named=[], ids=[pid for n, pid in enumerate(pids)
                                                    if answered[n]])
        for table in (response, answer):
            cursor.execute(f"ANALYZE {table}")
