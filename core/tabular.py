"""Read an uploaded table (CSV, TSV, semicolon-separated or JSON Lines) within limits.

- `decode` (from `core.decoding`) turns an upload's bytes into text: size limit, empty file,
  UTF-8 with or without BOM; a UTF-16 file and a file that is not UTF-8 are named as such, the
  latter with the line and column of its first bad byte.
- `read_grid` reads a delimited file into its header and `(line, cells)` rows, `line` being the
  line on which the record starts (a quoted cell may span lines). Blank rows are skipped; a row
  with another number of fields than the header is a problem. Repeated header names are allowed
  (a wide response file repeats an item's question), unless `unique=True`.
- `read_records` reads every non-blank record of a headerless file (the map files).
- `read_table` reads CSV/TSV or JSON Lines into `(line, {column: text})` rows: the dict rows the
  item files need; its header names must be unique.

The delimiter is the most frequent of comma, semicolon and tab in the header record outside
quotes (ties in that order, comma when there is none); a `.tsv` file is tab-separated. A file is
JSON Lines when its suffix is `.jsonl`/`.ndjson`, or when it is not `.csv`/`.tsv`/`.txt` and
starts with `{`.

Every reader is linear in its input and refuses, with a problem naming the line:

- more than `max_columns` columns (2 000 by default), counted on the header record before it is
  split into cells, so a header of 300 000 columns is refused before any row is read;
- a CSV field longer than `max_field_chars` (131 072 characters, `csv.field_size_limit()`'s
  default: an unclosed quote runs into it instead of swallowing the rest of the file);
- a JSON Lines line longer than `max_line_chars` (1 048 576 characters) or nested deeper than
  `max_depth` (20), checked before `json.loads`, whose parser recurses;
- a NUL character in a cell (PostgreSQL text cannot hold one), naming the line and column.

Problems go to a `core.problems.Collector`, which keeps the first 200 and counts the rest.

Example::

    >>> errors = Collector("items.csv")
    >>> grid = read_grid("id;text\\na;Hello\\n", filename="items.csv", errors=errors)
    >>> grid.delimiter, grid.header, grid.rows
    (';', ['id', 'text'], [(2, ['a', 'Hello'])])
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import BinaryIO

from core.decoding import decode as decode
from core.decoding import grouped as grouped
from core.decoding import size_over_limit as size_over_limit
from core.problems import Collector
from core.text import printable, text_problem

MAX_COLUMNS = 2000
MAX_FIELD_CHARS = 131_072
MAX_LINE_CHARS = 1_048_576
MAX_DEPTH = 20
DELIMITERS = (",", ";", "\t")
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
DELIMITED_SUFFIXES = frozenset({".csv", ".tsv", ".txt"})

Row = tuple[int, list[str]]


@dataclass(frozen=True)
class Limits:
    """What a reader accepts; see the module docstring for what each limit guards against."""

    max_columns: int = MAX_COLUMNS
    max_field_chars: int = MAX_FIELD_CHARS
    max_line_chars: int = MAX_LINE_CHARS
    max_depth: int = MAX_DEPTH


DEFAULT_LIMITS = Limits()


@dataclass
class Grid:
    """A delimited file: its header (stripped) and its non-blank `(line, cells)` rows."""

    header: list[str]
    rows: list[Row]
    delimiter: str


@dataclass
class Table:
    """An item-like file: unique column names and `(line, {column: text})` rows."""

    header: list[str] = field(default_factory=list)
    rows: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    jsonl: bool = False


# --- decoding (a whole upload: `core.decoding.decode`) ----------------------------------------


class TextFile:
    """A UTF-8 file read in chunks, for imports whose memory must not grow with the file.

    `open_text` makes one (the checks of `decode`: size, UTF-16, emptiness). `head` is the text
    of the first chunk (the header and the delimiter are found in it); `lines` yields the lines
    with their endings, decoded a chunk at a time: a chunk is cut after its last ``\n`` (a byte
    no UTF-8 sequence contains), so each decoded piece is whole lines and an undecodable byte
    is reported at its line and column, as `decode` reports it, and ends the reading (the lines
    before it are read, where `decode` refuses the whole text). `nul`
    turns true once a piece holding a NUL character has been decoded.
    """

    CHUNK = 1 << 20

    def __init__(self, file: BinaryIO, first: bytes, errors: Collector) -> None:
        # The head holds the first record whole (it may hold quoted line breaks), up to a bound.
        head = first.decode("utf-8", errors="replace")
        while len(first) < 4 * MAX_LINE_CHARS:
            end = _FIRST_RECORD.match(head).end()  # type: ignore[union-attr]  # matches ""
            if end < len(head) and head[end] in "\r\n":
                break
            chunk = file.read(self.CHUNK)
            if not chunk:
                break
            first += chunk
            head = first.decode("utf-8", errors="replace")
        self._file, self._first, self._errors = file, first, errors
        self.head = head
        self.nul = False

    def lines(self) -> Iterator[str]:
        carry, newlines = self._first, 0
        while True:
            chunk = self._file.read(self.CHUNK)
            data = carry + chunk if chunk else carry
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            piece, carry = data[:cut], data[cut:]
            if piece:
                try:
                    text = piece.decode("utf-8")
                except UnicodeDecodeError as exc:
                    # The lines before the byte are read (their problems reported too), then
                    # the byte ends the file.
                    good = piece.rfind(b"\n", 0, exc.start) + 1
                    yield from _lines(piece[:good].decode("utf-8"))
                    line = newlines + piece.count(b"\n", 0, exc.start) + 1
                    self._undecodable(piece[exc.start], line, exc.start - good + 1,
                                      piece[exc.start:])
                    return
                self.nul = self.nul or "\0" in text
                newlines += piece.count(b"\n")
                for match in _LINE.finditer(text):
                    yield match[0]
            if not chunk:
                return

    def _undecodable(self, byte: int, line: int, column: int, rest: bytes) -> None:
        # Like `decode`: the file looks Windows-1252 when all of it (from here) decodes so.
        decoder = codecs.getincrementaldecoder("cp1252")()
        guess = "Windows-1252 or Latin-1"
        try:
            decoder.decode(rest)
            while chunk := self._file.read(self.CHUNK):
                decoder.decode(chunk)
        except UnicodeDecodeError:
            guess = "not UTF-8"
        self._errors.add(f"byte 0x{byte:02X} is not UTF-8 (the file looks {guess}); "
                         "save it as UTF-8", line=line, column=column)


def open_text(file: BinaryIO, errors: Collector, *, max_bytes: int) -> TextFile | None:
    """Return a `TextFile` reading a seekable binary file from its start, or None with the
    problem recorded (size, UTF-16, emptiness): the streaming counterpart of `decode`."""
    size = file.seek(0, io.SEEK_END)
    file.seek(0)
    if size > max_bytes:
        errors.add(size_over_limit(size, limit=max_bytes))
        return None
    first = file.read(TextFile.CHUNK)
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        errors.add("the file is UTF-16; save it as UTF-8 (CSV UTF-8 in spreadsheet programs)")
        return None
    first = first.removeprefix(b"\xef\xbb\xbf")
    if not first.strip():  # blank so far: is all of it? (ASCII white space)
        after = file.tell()
        while chunk := file.read(TextFile.CHUNK):
            if chunk.strip():
                file.seek(after)
                break
        else:
            errors.add("the file is empty")
            return None
    return TextFile(file, first, errors)



# --- delimited files --------------------------------------------------------------------------

# The first record: unquoted text up to a line break, and quoted sections (which may hold line
# breaks and delimiters). Both patterns are linear: a quoted section cannot start inside another.
_FIRST_RECORD = re.compile(r'[^"\r\n]*(?:"[^"]*"[^"\r\n]*)*')
_QUOTED = re.compile(r'"[^"]*"')


def is_jsonl(text: str, filename: str) -> bool:
    """Tell JSON Lines from a delimited file by the file's suffix, else by a first `{`."""
    suffix = PurePath(filename).suffix.lower()
    return suffix in JSONL_SUFFIXES or (
        suffix not in DELIMITED_SUFFIXES and re.match(r"\s*\{", text) is not None)


def _header_counts(text: str) -> dict[str, int]:
    """Count each candidate delimiter in the header record, outside quoted fields."""
    match = _FIRST_RECORD.match(text)
    record = _QUOTED.sub("", match[0] if match else "")
    return {d: record.count(d) for d in DELIMITERS}


def detect_delimiter(text: str, filename: str) -> str:
    """Return the delimiter of a file: tab for `.tsv`, else the header's most frequent one."""
    return _delimiter(_header_counts(text), filename)


def _delimiter(counts: dict[str, int], filename: str) -> str:
    if PurePath(filename).suffix.lower() == ".tsv":
        return "\t"
    return max(DELIMITERS, key=lambda d: counts[d]) if any(counts.values()) else ","


# A line and its ending, as `io.StringIO(text, newline="")` splits them (\n, \r\n or \r).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _lines(text: str) -> Iterator[str]:
    """Yield the lines of `text` one by one, endings kept, for `csv.reader`.

    Not `io.StringIO(text)`: it copies the text into four bytes a character, 1 GB for the
    260 MB file of ten million answers.
    """
    for match in _LINE.finditer(text):
        yield match[0]


def _records(text: str | TextFile, delimiter: str, errors: Collector, limits: Limits, *,
             header: bool) -> Iterator[Row]:
    """Yield every record with the line it starts on; record what is wrong with it.

    Stops at the first malformed record: the csv module cannot resynchronise after a broken
    quote.
    """
    # One scan of the text spares a scan of every cell; a streamed file says once it met one.
    if isinstance(text, TextFile):
        streamed: TextFile | None = text
        lines, has_nul = text.lines(), False
    else:
        streamed, lines, has_nul = None, _lines(text), "\0" in text
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    # csv's own limit (process-wide, 131 072 by default) bounds a field while it is read; a
    # lower limit of ours is checked on the cells it returns.
    check_length = limits.max_field_chars < csv.field_size_limit()
    end = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            start = end + 1
            # csv reports its field limit only in the message; say what it means for the user.
            if "field larger than field limit" in str(exc):
                errors.add(f"a field is longer than {csv.field_size_limit()} characters "
                           "(is a quote left open?)", line=start)
            elif header and start == 1:
                errors.add(f"cannot read the header: {exc}", line=1)
            else:
                errors.add(f"malformed line: {exc}", line=reader.line_num)
            return
        start, end = end + 1, reader.line_num
        if has_nul or (streamed is not None and streamed.nul):
            for column, cell in enumerate(cells, start=1):
                if "\0" in cell:
                    errors.add("a NUL character (0x00) in the cell; remove it", line=start,
                               column=column)
        if check_length:
            for column, cell in enumerate(cells, start=1):
                if len(cell) > limits.max_field_chars:
                    errors.add(f"the field is {len(cell)} characters long; the limit is "
                               f"{limits.max_field_chars}", line=start, column=column)
        yield start, cells


def _too_many_columns(count: int, errors: Collector, limits: Limits, *, line: int,
                      what: str = "columns") -> bool:
    if count <= limits.max_columns:
        return False
    errors.add(f"{count} {what}; the limit is {limits.max_columns} columns", line=line)
    return True


def read_grid(
    text: str,
    *,
    filename: str,
    errors: Collector,
    limits: Limits = DEFAULT_LIMITS,
    min_columns: int = 1,
    unique: bool = False,
) -> Grid | None:
    """Read a delimited file into its header and rows; None (problems recorded) without a header.

    A header of fewer than `min_columns` columns is reported once (a wrong delimiter), without
    reading the rows; so is a header of more than `limits.max_columns`. With `unique`, a header
    name given twice is a problem.
    """
    stream = stream_grid(text, filename=filename, errors=errors, limits=limits,
                         min_columns=min_columns, unique=unique)
    if stream is None:
        return None
    return Grid(header=stream.header, rows=list(stream.rows), delimiter=stream.delimiter)


@dataclass
class GridStream:
    """A delimited file read row by row: its header and an iterator of its non-blank rows."""

    header: list[str]
    rows: Iterator[Row]
    delimiter: str


def stream_grid(
    text: str | TextFile,
    *,
    filename: str,
    errors: Collector,
    limits: Limits = DEFAULT_LIMITS,
    min_columns: int = 1,
    unique: bool = False,
) -> GridStream | None:
    """Read a delimited file's header now and its rows as they are iterated (see `read_grid`).

    A file of a million rows is never held as a list of rows: the bulk import stores each row
    as it is read. Given a `TextFile`, not even its text is held.
    """
    counts = _header_counts(text.head if isinstance(text, TextFile) else text)
    delimiter = _delimiter(counts, filename)
    # Refuse a huge header from a count of its delimiters, before splitting it into cells.
    if _too_many_columns(counts[delimiter] + 1, errors, limits, line=1, what="columns in the header"):
        return None
    records = _records(text, delimiter, errors, limits, header=True)
    first = next(records, None)
    if first is None:
        return None
    header = [h.strip() for h in first[1]]
    if _too_many_columns(len(header), errors, limits, line=1, what="columns in the header"):
        return None
    if len(header) < min_columns:
        name = " ".join(header[0].split()) if header else ""
        name = name if len(name) <= 60 else name[:59] + "…"
        shape = f"a single column ({name!r})" if len(header) == 1 else f"{len(header)} columns"
        errors.add(f"the header has {shape}; separate columns with commas, semicolons or tabs",
                   line=1)
        return None
    if unique:
        seen: set[str] = set()
        for column, name in enumerate(header, start=1):
            if name in seen:
                errors.add(f"column {name!r} appears twice", line=1, column=column)
            seen.add(name)
    return GridStream(header=header, rows=_grid_rows(records, len(header), delimiter, errors),
                      delimiter=delimiter)


def _grid_rows(records: Iterator[Row], width: int, delimiter: str,
               errors: Collector) -> Iterator[Row]:
    for line, cells in records:
        if len(cells) != width:
            if any(c.strip() for c in cells):
                errors.add(f"{len(cells)} fields where the header has {width} "
                           f"(delimiter {delimiter!r})", line=line)
            continue
        if cells[0].strip() or any(c.strip() for c in cells):
            yield line, cells


def read_records(
    text: str, *, filename: str, errors: Collector, limits: Limits = DEFAULT_LIMITS,
) -> Iterator[Row]:
    """Yield the non-blank `(line, cells)` records of a headerless delimited file."""
    delimiter = detect_delimiter(text, filename)
    for line, cells in _records(text, delimiter, errors, limits, header=False):
        if _too_many_columns(len(cells), errors, limits, line=line, what="fields"):
            continue
        if any(c.strip() for c in cells):
            yield line, cells


# --- JSON Lines -------------------------------------------------------------------------------

# A JSON string, closed or running to the end of the text: possessive, so never re-scanned.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"?')
_BRACKET = re.compile(r"[\[{\]}]")


def json_too_deep(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Return whether JSON text nests arrays/objects deeper than `max_depth`, without parsing it.

    Linear and recursion-free, so it can guard `json.loads` (whose parser recurses); brackets
    inside strings do not count. Unbalanced text is judged by its opening brackets only.

    >>> json_too_deep('{"a": [[1]]}', 3), json_too_deep('{"a": [[1]]}', 2), json_too_deep('"[[["', 1)
    (False, True, False)
    """
    if text.count("[") + text.count("{") <= max_depth:
        return False  # too few brackets to be too deep: the common case costs two counts
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if match[0] in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def read_jsonl(text: str, *, errors: Collector, limits: Limits = DEFAULT_LIMITS) -> Table:
    """Read JSON Lines, one object a line, into `(line, {key: text})` rows.

    A value must be a string, a number, a boolean (`1`/`0`) or null (blank); a key missing from a
    line is blank in that row. The header lists the keys in order of first appearance.
    """
    header: dict[str, None] = {}
    rows = list(iter_jsonl(text, errors=errors, limits=limits, header=header))
    return Table(header=list(header), rows=rows, jsonl=True)


def iter_jsonl(text: str, *, errors: Collector, limits: Limits = DEFAULT_LIMITS,
               header: dict[str, None]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield the `(line, {key: text})` rows of JSON Lines one by one (see `read_jsonl`); the
    keys are added to `header` in order of first appearance as the rows are read."""
    # Universal newlines: \n, \r\n and \r end a line, as in the delimited files.
    for number, raw in enumerate(io.StringIO(text, newline=None), start=1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        if len(line) > limits.max_line_chars:
            errors.add(f"the line is {len(line)} characters long; the limit is "
                       f"{limits.max_line_chars}", line=number)
            continue
        if json_too_deep(line, limits.max_depth):
            errors.add(f"the JSON is nested deeper than {limits.max_depth} levels", line=number)
            continue
        try:
            obj = json.loads(line)
        except RecursionError:  # only if the check above was fooled; never let it escape
            errors.add(f"the JSON is nested deeper than {limits.max_depth} levels", line=number)
            continue
        except json.JSONDecodeError as exc:
            errors.add(f"invalid JSON: {exc.msg}", line=number, column=exc.colno)
            continue
        except ValueError as exc:  # an integer of more digits than Python converts
            errors.add(f"invalid JSON: {str(exc).split(';')[0]}", line=number)
            continue
        if not isinstance(obj, dict):
            errors.add("each line must be a JSON object", line=number)
            continue
        if _too_many_columns(len(obj), errors, limits, line=number, what="keys"):
            continue
        # A key is quoted in the messages below: one that cannot be text is named by its place.
        bad_key = next((why for key in obj if (why := text_problem(key))), None)
        if bad_key:
            errors.add(f"a key {bad_key}", line=number)
            continue
        row: dict[str, str] = {}
        for key, value in obj.items():
            cell = _json_cell(value)
            if cell is None:
                errors.add(f"field {key!r} must be a string or a number", line=number, column=key)
                continue
            if "\0" in cell:
                errors.add("a NUL character (0x00) in the cell; remove it", line=number,
                           column=key)
            elif why := text_problem(cell):  # a lone surrogate ("\ud800"): not storable text
                errors.add(f"the cell {why}", line=number, column=key)
                cell = printable(cell)  # refused already; later messages may quote it
            if len(cell) > limits.max_field_chars:
                errors.add(f"the field is {len(cell)} characters long; the limit is "
                           f"{limits.max_field_chars}", line=number, column=key)
            row[key] = cell
            if key not in header:
                header[key] = None
                if len(header) > limits.max_columns:
                    errors.add(f"more than {limits.max_columns} distinct keys in the file; the "
                               f"limit is {limits.max_columns} columns", line=number, column=key)
                    return
        yield number, row


def _json_cell(value: object) -> str | None:
    """Return a JSON value as cell text, None for a list or an object."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


# --- either -----------------------------------------------------------------------------------


def read_table(text: str, *, filename: str, errors: Collector,
               limits: Limits = DEFAULT_LIMITS) -> Table:
    """Read CSV/TSV or JSON Lines into `(line, {column: text})` rows with unique column names."""
    if is_jsonl(text, filename):
        return read_jsonl(text, errors=errors, limits=limits)
    grid = read_grid(text, filename=filename, errors=errors, limits=limits, unique=True)
    if grid is None:
        return Table()
    return Table(header=grid.header,
                 rows=[(line, dict(zip(grid.header, cells, strict=True)))
                       for line, cells in grid.rows])


@dataclass
class TableStream:
    """An item-like file read row by row: its unique column names and its `(line, {column:
    text})` rows as they are iterated."""

    header: list[str]
    rows: Iterator[tuple[int, dict[str, str]]]
    jsonl: bool = False


def stream_table(text: str, *, filename: str, errors: Collector,
                 limits: Limits = DEFAULT_LIMITS) -> TableStream:
    """Read CSV/TSV or JSON Lines like `read_table`, never holding the rows.

    JSON Lines name their columns line by line: a first pass, whose problems are dropped (the
    second reports them), collects the header the checks of the columns need up front.
    """
    if is_jsonl(text, filename):
        header: dict[str, None] = {}
        for _ in iter_jsonl(text, errors=Collector(filename), limits=limits, header=header):
            pass
        return TableStream(header=list(header), jsonl=True,
                           rows=iter_jsonl(text, errors=errors, limits=limits, header={}))
    grid = stream_grid(text, filename=filename, errors=errors, limits=limits, unique=True)
    if grid is None:
        return TableStream(header=[], rows=iter(()))
    names = grid.header
    return TableStream(header=names, rows=((line, dict(zip(names, cells, strict=True)))
                                           for line, cells in grid.rows))
