"""The exports of comparative questions (docs/exports.md): the judgments, one row per current
answer to a comparative question, and the `comparison_scores` section of the results document
(issue 25), each as CSV, JSON Lines or Parquet, streamed like every export of `exports.services`
(which calls these writers and counts their rows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from core.formats import csv_chunks, jsonl_chunks, parquet_chunks
from studies.models import Study

from .selectors import JUDGMENT_COLUMNS, judgment_rows

if TYPE_CHECKING:
    import pyarrow as pa

# Counts the rows of one table as they stream (`exports.services._Tally`).
Tally = Callable[[str, Iterable[Any]], Iterator[Any]]

# The `comparison_scores` section's fields (CONTRACT of issue 25, docs/results.md), in order; a
# field a record adds beyond them follows in the CSV and JSON Lines, in the order first met.
SCORE_COLUMNS = ("question", "kind", "level", "name", "judgments", "wins", "losses", "ties",
                 "score", "strength", "strength_low", "strength_high", "rank", "rank_low",
                 "rank_high", "model", "reason")
_SCORE_TEXT = ("question", "kind", "level", "name", "model", "reason")
_SCORE_WHOLE = ("judgments", "wins", "losses", "ties", "rank", "rank_low", "rank_high")


def judgments_schema() -> pa.Schema:
    """The explicit Parquet schema of the judgments export."""
    import pyarrow as pa

    text = ("annotator", "item", "question", "kind", "shown", "choice", "strength")
    return pa.schema([
        *(pa.field(name, pa.string(), nullable=False) for name in text),
        pa.field("value", pa.float64()),
        pa.field("left", pa.bool_()),
        pa.field("missing", pa.string(), nullable=False),
        pa.field("comment", pa.string(), nullable=False),
        pa.field("revision", pa.int16(), nullable=False),
        pa.field("received_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ])


def judgments_chunks(study: Study, fmt: str, tally: Tally) -> Iterator[bytes]:
    """The judgments export of ``study`` in ``fmt`` (csv, jsonl or parquet)."""
    rows = tally("judgments", judgment_rows(study=study))
    if fmt == "csv":  # every text cell neutralised: an output id "=1+1" is not a formula
        return csv_chunks(JUDGMENT_COLUMNS, rows)
    if fmt == "jsonl":
        return jsonl_chunks(dict(zip(JUDGMENT_COLUMNS, row, strict=True)) for row in rows)
    return parquet_chunks(judgments_schema(), rows)


def score_records(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of the document's `comparison_scores` section, in its order: empty for a
    study without comparative questions or a run before their analysis."""
    records = document.get("comparison_scores")
    if not isinstance(records, list):
        return []
    return [dict(r) for r in records if isinstance(r, dict)]


def scores_schema() -> pa.Schema:
    """The explicit Parquet schema of the comparison_scores export (SCORE_COLUMNS)."""
    import pyarrow as pa

    def kind(name: str) -> pa.DataType:
        if name in _SCORE_TEXT:
            return pa.string()
        return pa.int64() if name in _SCORE_WHOLE else pa.float64()

    return pa.schema([pa.field(name, kind(name)) for name in SCORE_COLUMNS])


def _cell(value: Any) -> Any:
    # A list or object (none in the contract, but a later field might be one) as JSON text.
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


def _typed(name: str, value: Any) -> Any:
    """A field as the Parquet schema holds it (None stays null)."""
    if value is None:
        return None
    if name in _SCORE_TEXT:
        return str(value)
    if name in _SCORE_WHOLE:
        return int(value)
    return float(value)


def scores_chunks(document: dict[str, Any], fmt: str, tally: Tally) -> Iterator[bytes]:
    """The comparison_scores export: the section's records as rows."""
    records = score_records(document)
    rows = tally("comparison_scores", records)
    if fmt == "jsonl":
        return jsonl_chunks(rows)
    if fmt == "parquet":
        return parquet_chunks(scores_schema(), ([_typed(c, r.get(c)) for c in SCORE_COLUMNS]
                                                for r in rows))
    columns = list(SCORE_COLUMNS)
    for record in records:
        columns += [key for key in record if key not in columns]
    # every cell through core.formats' writer: an output named "=HYPERLINK(...)" is neutralised
    return csv_chunks(columns, ([_cell(r.get(c)) for c in columns] for r in rows))
