"""Pure writers of the exports: the cell neutraliser and CSV, JSONL, Parquet and zip as byte chunks.

No Django here: rows in (tuples or dicts of str, int, float, bool, None, datetime), bytes out,
a chunk at a time, so a whole export never sits in memory. `exports.services` feeds these from
the database; the tests feed them hypothesis data. The `sql_csv_*` expressions let PostgreSQL's
COPY write the same CSV cells for a large export (`crlf_chunks` then gives its lines CRLF ends).

Spreadsheet formula injection (OWASP "CSV injection"): a CSV cell whose text begins with
``= + - @``, TAB, CR or NUL may be run as a formula by Excel, LibreOffice or Google Sheets.
`neutralise` prefixes such text cells with ``'``; `unneutralise` removes it
again on import, and the pair round-trips every string (property-tested), including text that
genuinely starts with ``'``.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
import sys
import time
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    # Stub-only names: the buffer protocol, and pyarrow for the schema (imported lazily below).
    import pyarrow as pa
    from _typeshed import ReadableBuffer

CHUNK_BYTES = 64 * 1024
PARQUET_ROWS = 50_000


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0")
# A signed decimal number is read as a number by every spreadsheet, never run: "-1" and "+0.5"
# are left as they are (a label column of codes -1, 0, 1 stays uniform), "-2+3" is a formula.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _dangerous(text: str) -> bool:
    """Whether a spreadsheet could run ``text`` (after its leading quotes) as a formula."""
    core = text.lstrip("'")
    return core[:1] in FORMULA_STARTS and not _PLAIN_NUMBER.fullmatch(core)

_Cell = TypeVar("_Cell")


@overload
def neutralise(value: str) -> str: ...
@overload
def neutralise(value: _Cell) -> _Cell: ...
def neutralise(value: object) -> object:
    """Return a CSV cell that no spreadsheet runs as a formula; only text is ever changed.

    A text whose first character after any leading ``'`` is ``= + - @``, TAB, CR or NUL gets one
    more leading ``'``, unless the text is a plain signed number (``-1``, ``+0.5``: read as a
    number, never run). Counting the leading quotes makes the rule invertible: ``'=1`` (a text
    that really starts with a quote) becomes ``''=1`` and imports back as ``'=1``. Numbers,
    booleans and None are returned unchanged (a negative number is not a formula).

    >>> neutralise("=SUM(A1)"), neutralise("-2+3"), neutralise("'=1"), neutralise("-1")
    ("'=SUM(A1)", "'-2+3", "''=1", '-1')
    """
    if isinstance(value, str) and _dangerous(value):
        return "'" + value
    return value


def unneutralise(text: str) -> str:
    """Undo the CSV export's formula neutralisation (`core.formats.neutralise`).

    One `'` is removed from a text that starts with `'` and that `neutralise` would have
    changed: `'=1+1` -> `=1+1`, `''=1` -> `'=1` (a text that really started with a quote),
    `'hello` and `'-1` unchanged. The pair round-trips every string.
    """
    if text[:1] == "'" and _dangerous(text):
        return text[1:]
    return text


def format_number(value: float | int) -> str:
    """Return a number as CSV text that parses back to the same float (1.0 -> "1")."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"{value!r} cannot be exported: not a finite number")
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def csv_cell(value: Any) -> str:
    """Return one CSV cell: text neutralised, numbers exact, flags 0/1, None empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, (bool, int, float)):
        return format_number(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to CSV")


def csv_chunks(header: Sequence[str], rows: Iterable[Sequence[Any]], *,
               chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield a UTF-8 CSV (no BOM, CRLF line ends, RFC 4180 quoting), header cells neutralised too."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(h) for h in header])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
        if buffer.tell() >= chunk_bytes:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode()


# --- the same CSV, written by PostgreSQL ---------------------------------------------------------
# SQL expressions that turn a column into the text of its CSV cell as `csv_cell` makes it (text
# neutralised, numbers as `format_number`, timestamps as UTC `isoformat`), for PostgreSQL's
# `COPY (…) TO STDOUT WITH (FORMAT csv)` to quote and join as Python's csv module does: a large
# export is then written by the database. An empty text is NULL, which COPY writes unquoted as
# Python does (COPY quotes an empty string). COPY ends lines with LF: `crlf_chunks` makes them
# CRLF. They assume standard_conforming_strings on (PostgreSQL's default since 9.1). NUL cannot be
# stored in PostgreSQL text, so it needs no rule here.

_QUOTE = chr(39)  # '


@functools.cache
def _sql_digits() -> str:
    """The characters that Python's ``\\d`` matches (Unicode category Nd), as bracket-expression
    ranges, so that PostgreSQL reads a plain number exactly as `_PLAIN_NUMBER` does."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code)) == "Nd":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


def sql_string(text: str) -> str:
    """A standard-conforming SQL string literal."""
    return _QUOTE + text.replace(_QUOTE, _QUOTE * 2) + _QUOTE


def sql_csv_text(column: str) -> str:
    """SQL for the CSV cell of a text column, neutralised as `neutralise` does; NULL for an empty
    or NULL text (cheap tests first: most cells are empty or plain)."""
    digit = f"[{_sql_digits()}]"
    number = f"^'*[+-]({digit}+\\.?{digit}*|\\.{digit}+)([eE][+-]?{digit}+)?$"
    starts = ", ".join(str(ord(c)) for c in _QUOTE + "".join(FORMULA_STARTS) if c != "\0")
    danger = "^'*[-=+@\t\r]"
    return (f"CASE WHEN {column} = '' THEN NULL WHEN ascii({column}) IN ({starts}) "
            f"AND {column} ~ {sql_string(danger)} AND {column} !~ {sql_string(number)} "
            f"THEN {sql_string(_QUOTE)} || {column} ELSE {column} END")


def sql_csv_number_plain(column: str) -> str:
    """SQL telling whether `sql_csv_number` writes a float column as `format_number` does: not
    for magnitudes from 1e15 (the two print them differently), NaN and the infinities (which
    `format_number` refuses)."""
    return f"({column} IS NULL OR abs({column}) < 1e15)"


def sql_csv_number(column: str) -> str:
    """SQL for the CSV cell of a float column as `format_number` writes it (where
    `sql_csv_number_plain` holds); NULL for NULL."""
    return (f"CASE WHEN {column} = trunc({column}) AND abs({column}) < 1e15 "
            f"THEN {column}::bigint::text ELSE {column}::text END")


def sql_csv_flag(condition: str) -> str:
    """SQL for the CSV cell of a boolean column or condition: 1 or 0."""
    return f"CASE WHEN {condition} THEN '1' ELSE '0' END"


def sql_csv_timestamp(column: str) -> str:
    """SQL for the CSV cell of a timestamp with time zone: `datetime.isoformat` in UTC, with
    microseconds only when there are some."""
    moment = f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US+00:00')"
    return f"replace({moment}, '.000000+', '+')"


def crlf_chunks(blocks: Iterable[bytes]) -> Iterator[tuple[bytes, int]]:
    """Turn a CSV with LF line ends (PostgreSQL's COPY) into CRLF ones, as `csv_chunks` writes
    them; yield (chunk, the number of lines it ends). A LF inside a quoted cell is left as it
    is: a byte is inside quotes when an odd number of ``"`` precede it (a doubled quote counts
    twice), whatever the block boundaries."""
    inside = False
    for block in blocks:
        if b'"' not in block:
            if inside:
                yield block, 0
            else:
                yield block.replace(b"\n", b"\r\n"), block.count(b"\n")
            continue
        parts = block.split(b'"')
        lines = 0
        for n in range(0 if not inside else 1, len(parts), 2):  # the parts outside quotes
            lines += parts[n].count(b"\n")
            parts[n] = parts[n].replace(b"\n", b"\r\n")
        inside = inside != (len(parts) % 2 == 0)
        yield b'"'.join(parts), lines


# Characters that JSON allows raw in strings but that line splitters (Python's str.splitlines,
# JavaScript before ES2019) treat as line ends; escaping them keeps one record per line.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def json_line(record: dict[str, Any]) -> str:
    """Return one JSONL record: UTF-8 text as is, control characters escaped, no NaN."""
    text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=_json_default)
    for raw, escaped in _LINE_BREAKS.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text + "\n"


def jsonl_chunks(records: Iterable[dict[str, Any]], *,
                 chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield JSON Lines: one object per line, keys in the order given."""
    parts: list[str] = []
    size = 0
    for record in records:
        line = json_line(record)
        parts.append(line)
        size += len(line)
        if size >= chunk_bytes:
            yield "".join(parts).encode()
            parts, size = [], 0
    if parts:
        yield "".join(parts).encode()


class _Sink:
    """A write-only, non-seekable file that hands its bytes to the generator feeding a response."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def write(self, data: ReadableBuffer) -> int:
        data = bytes(data)
        self._parts.append(data)
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        # Part of the file protocol; the zip and Parquet writers never close a file handed to them.
        pass

    @property
    def closed(self) -> bool:
        return False

    def drain(self) -> Iterator[bytes]:
        if self._parts:
            data = b"".join(self._parts)
            self._parts.clear()
            yield data


def parquet_chunks(schema: pa.Schema, rows: Iterable[Sequence[Any]], *,
                   batch_rows: int = PARQUET_ROWS) -> Iterator[bytes]:
    """Yield a Parquet file with this explicit `pyarrow.schema`, `batch_rows` rows per row group.

    Rows are tuples in the schema's field order; None is null. Memory holds one row group.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = _Sink()
    columns: list[list[Any]] = [[] for _ in schema]

    def batch() -> pa.RecordBatch:
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
        for col in columns:
            col.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    try:
        pending = 0
        for row in rows:
            for col, value in zip(columns, row, strict=True):
                col.append(value)
            pending += 1
            if pending >= batch_rows:
                writer.write_batch(batch(), row_group_size=batch_rows)
                pending = 0
                yield from sink.drain()
        if pending:
            writer.write_batch(batch(), row_group_size=batch_rows)
    finally:
        writer.close()
    yield from sink.drain()


def zip_chunks(members: Iterable[tuple[str, Callable[[], Iterable[bytes]]]], *,
               date_time: tuple[int, int, int, int, int, int] | None = None) -> Iterator[bytes]:
    """Yield a zip archive (deflated, streamed: sizes in data descriptors) of the members.

    Each member is (name, a callable returning its chunks); members are produced one after the
    other, so the archive is streamed with one chunk in memory.
    """
    stamp = date_time or time.localtime()[:6]
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for name, produce in members:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as member:
                for chunk in produce():
                    member.write(chunk)
                    yield from sink.drain()
            yield from sink.drain()
    yield from sink.drain()
