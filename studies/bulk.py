"""Import an item file into PostgreSQL at COPY speed, streaming (issue 15).

`studies.services.items_import` calls `items_import_copy` on PostgreSQL; SQLite keeps the
in-memory `core.items.items_parse` and `bulk_create`. Both store the same rows and report the
same problems.

Why this shape: parsing a file of a million items into a list of rows, then into model
instances, held 2.8 GB. Here each row is checked on its own as it is read
(`core.items.items_stream`: the same checks and messages) and streamed with COPY into a
temporary staging table; the checks across rows (an id used twice, on both its lines; an id
already an item of the study) are one window query over that table; the items are then inserted
from it in the order of the file. Python holds the file's text and one chunk of rows, never all
the rows. A sentence-pair file's metrics and sentiments are computed chunk by chunk (a chunk's
cache of sentences, not the file's). Everything happens in one transaction: on any problem
nothing is written, and every problem is reported at once with file, line and column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.db import connections, router

from core.items import ItemRow, items_problems, items_stream, outputs_problems
from core.problems import Collector, Problem
from core.tabular import grouped

from .item_metrics import pair_rows_score, sentiment_problems
from .models import Item, Study

STAGE = "concord_import_items"
CHUNK = 5_000  # rows scored (pair studies) and reported as progress together
Progress = Callable[[float, str], None]

_COLUMNS = ("external_id", "text", "text_a", "text_b", "is_control", "metrics", "features",
            "meta", "role", "gold", "tolerance", "check_at", "system", "source", "outputs")


class _Ids:
    """The id check of the stream: only notes that the row's id reached it (the check across
    rows is SQL's); `line` is the last such row."""

    line = 0

    def __call__(self, item_id: str, line: int) -> None:
        self.line = line


def items_import_copy(*, study: Study, data: bytes, filename: str, max_bytes: int,
                      questions: Mapping[str, tuple[float, ...]],
                      progress: Progress | None = None,
                      comparative: frozenset[str] = frozenset()) -> int:
    """Check an item file row by row, stage it with COPY, check it across rows, then insert it.

    Call inside a transaction (`items_import`): raises `InputError` with every problem, and the
    caller's rollback leaves nothing written. Returns the number of items stored.
    """
    ids = _Ids()
    stream = items_stream(data, filename=filename, display=study.display, max_bytes=max_bytes,
                          questions=questions, id_check=ids, comparative=comparative)
    pair = study.display == Study.Display.PAIR
    sentiments = Collector(filename)  # reported only when the file has no other problem
    table = Item._meta.db_table
    rows = 0
    with connections[router.db_for_write(Item)].cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute(f"DROP TABLE IF EXISTS {STAGE}")
        cursor.execute(
            f"CREATE TEMP TABLE {STAGE} (line integer, id_ok boolean, external_id text, "
            "text text, text_a text, text_b text, is_control boolean, metrics text, "
            "features text, meta text, role text, gold text, tolerance text, check_at integer, "
            "system text, source text, outputs text) "
            "ON COMMIT DROP")
        with cursor.cursor.copy(f"COPY {STAGE} (line, id_ok, {', '.join(_COLUMNS)}) "
                                "FROM STDIN") as copy:
            chunk: list[tuple[ItemRow, bool]] = []
            for row in stream.rows:
                rows += 1
                chunk.append((row, ids.line == row.line))
                if pair:
                    sentiments.extend(sentiment_problems([row], filename=filename))
                if len(chunk) == CHUNK:
                    _write(copy, chunk, score=pair and not (stream.errors or sentiments))
                    chunk = []
                    if progress:
                        progress(0.8 * min(1.0, row.line / max(1, stream.lines)),
                                 f"{grouped(rows)} items read")
            _write(copy, chunk, score=pair and not (stream.errors or sentiments))
        if progress:
            progress(0.8, f"{grouped(rows)} items read; checking the ids across rows")
        report = items_problems(stream.errors, [
            *_across(cursor, study=study, filename=filename),
            *_outputs_across(cursor, study=study, filename=filename)])
        if not report and sentiments:
            report = items_problems(sentiments)
        report.raise_if_any()
        if progress:
            progress(0.85, f"storing {grouped(rows)} items")
        cursor.execute(f"""
            INSERT INTO {table} (study_id, position, annotation, {', '.join(_COLUMNS)})
            SELECT %s, %s + row_number() OVER (ORDER BY line) - 1, '{{}}'::jsonb, external_id,
                   text, text_a, text_b, is_control, metrics::jsonb, features::jsonb,
                   meta::jsonb, role, gold::jsonb, tolerance::jsonb, check_at, system, source,
                   outputs::jsonb
            FROM {STAGE} ORDER BY line""",  # noqa: S608 (table names only)
                       [study.pk, study.items.count()])
        cursor.execute(f"DROP TABLE {STAGE}")
        cursor.execute(f"ANALYZE {table}")
    return rows


def _write(copy: Any, chunk: list[tuple[ItemRow, bool]], *, score: bool) -> None:
    """COPY a chunk of rows; a pair study's rows get their metrics and sentiments first (only
    while the file is clean: otherwise nothing will be stored)."""
    if score:
        pair_rows_score([row for row, _ in chunk])
    dumps = json.dumps
    for row, id_ok in chunk:
        if row.outputs:  # a comparison of the file (docs/comparisons.md)
            row.meta = {**row.meta, "design": "file"}
        # A NUL is reported by the reader; PostgreSQL text cannot hold one, even in the stage.
        copy.write_row((row.line, id_ok, row.external_id.replace("\0", ""),
                        row.text.replace("\0", ""), row.text_a.replace("\0", ""),
                        row.text_b.replace("\0", ""), row.is_control, dumps(row.metrics), dumps(row.features), dumps(row.meta),
                        row.role, dumps(row.gold), dumps(row.tolerance), row.check_at,
                        row.system.replace("\0", ""), row.source.replace("\0", ""),
                        dumps([name.replace("\0", "") for name in row.outputs])))


def _across(cursor: Any, *, study: Study, filename: str) -> list[Problem]:
    """Return the problems of ids across rows, as `items_parse` reports them: a later row using
    an id names the line of its first use; a first use of an id the study has is refused."""
    cursor.execute(f"""
        SELECT t.line, t.external_id, t.first_line, (t.line = t.first_line) AS existing
        FROM (SELECT line, external_id,
                     first_value(line) OVER (PARTITION BY external_id ORDER BY line) AS first_line
              FROM {STAGE} WHERE id_ok) t
        WHERE t.line <> t.first_line
           OR EXISTS (SELECT 1 FROM {Item._meta.db_table} i
                      WHERE i.study_id = %s AND i.external_id = t.external_id)
        ORDER BY t.line LIMIT 100000""", [study.pk])  # noqa: S608 (table names only)
    problems = []
    for line, item_id, first_line, existing in cursor.fetchall():
        message = (f"id {item_id!r} is already an item of this study" if existing
                   else f"id {item_id!r} already used on line {first_line}")
        problems.append(Problem(filename, line, "id", message))
    return problems


def _outputs_across(cursor: Any, *, study: Study, filename: str) -> list[Problem]:
    """The problems of comparisons' outputs across rows (`core.items.outputs_problems`): each
    must name an item of the file or the study that is not itself a comparison."""
    cursor.execute(f"SELECT line, outputs FROM {STAGE} WHERE outputs <> '[]' "  # noqa: S608
                   "ORDER BY line LIMIT 100000")
    rows = [(line, json.loads(outputs)) for line, outputs in cursor.fetchall()]
    if not rows:
        return []
    names = sorted({name for _, outputs in rows for name in outputs})
    cursor.execute(f"""
        SELECT external_id, outputs <> '[]' FROM {STAGE} WHERE external_id = ANY(%s)
        UNION ALL
        SELECT external_id, outputs <> '[]'::jsonb FROM {Item._meta.db_table}
        WHERE study_id = %s AND external_id = ANY(%s)""",  # noqa: S608 (table names only)
                   [names, study.pk, names])
    known: dict[str, bool] = {}
    for name, is_comparison in cursor.fetchall():
        known[name] = known.get(name, False) or bool(is_comparison)
    return outputs_problems(filename, rows, known=known.__contains__,
                            compared=lambda name: known.get(name, False))
