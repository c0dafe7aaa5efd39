"""Parse and validate response files collected elsewhere (Google Forms, Qualtrics, crowd platforms).

Contract (`import_responses`; user guide in docs/importing-responses.md):

- wide: one row per annotator (`annotator_column`), one column per item. A column whose header
  is an item id, or is mapped to one by the item map (CSV `column,item`), is an item; the k-th
  column of the same item is that annotator's presentation k (2 = the duplicate). A study of
  several questions names a column `item:question` (split on the last colon; question keys are
  slugs), the k-th column of the same item and question being presentation k. Columns
  named in `meta_columns` become participant metadata; any other column is an error. Rows of
  the same annotator merge, the last non-blank answer winning.
- long: `annotator,item,value[,question,missing,comment,duration_ms,position]`, one row per
  answer to one question (`question` may be left out when the study asks one question); the
  rows of one annotator, item and position are one presentation; a second presentation of the
  same item is the repeated one when its position differs, an error otherwise. `missing` says
  why a value is empty (`cant_judge` or `skipped`). The responses export's own columns
  (`active_ms` for `duration_ms`; `presentation`, `duplicate`, `submitted_at`, `source`,
  `control`, `revision`, `role`, derived or recorded by the import itself or the items, are
  ignored) read back.
- The value map (CSV `label,value`) turns option labels into scale values. A presentation
  without any value, reason or comment is a missing answer: no row is stored, but it is counted.

`responses_parse` validates a file completely and reports every problem at once (file, line,
column) in one `InputError`; `responses_summarize` counts what a parsed file holds. Files are
read by `core.tabular` (delimiter detection, encodings, limits). Storing is
`annotation.services.responses_import`'s job, in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from core.formats import unneutralise
from core.problems import Collector
from core.tabular import (
    DEFAULT_LIMITS,
    Limits,
    Row,
    decode,
    open_text,
    read_grid,
    read_records,
    stream_grid,
)

FORMATS = ("wide", "long")
LONG_COLUMNS = ("annotator", "item", "value", "question", "missing", "comment", "duration_ms",
                "position")
LONG_REQUIRED = ("annotator", "item", "value")
# Columns of the responses export that the import derives or records itself: accepted, ignored.
LONG_IGNORED = ("presentation", "duplicate", "submitted_at", "source", "control", "revision",
                "role")
LONG_ALIASES = {"active_ms": "duration_ms"}
MISSING = ("cant_judge", "skipped")  # the reasons of a missing value (annotation.Answer.missing)
SINGLE = ""  # the question key of a parse given one `scale` rather than `questions`
MAX_ID_LENGTH = 200  # Participant.external_id
MAX_ACTIVE_MS = 24 * 3600 * 1000  # Response.active_ms: at most a day
INVALID = -1  # a duration or position that was reported as a problem

# A map file's (line, key, target) rows (line None for a map given as a dict) and its problems.
_MapRows = tuple[list[tuple[int | None, str, str]], Collector]


@dataclass(frozen=True)
class Upload:
    """A file as received: its name (used in every message) and its bytes."""

    filename: str
    data: bytes


@dataclass
class Cell:
    """The answer to one question: a value, or None and why (`missing`), and a comment."""

    value: float | None
    missing: str = ""
    comment: str = ""

    @property
    def given(self) -> bool:
        return self.value is not None or bool(self.missing) or bool(self.comment)


@dataclass
class Answer:
    """One presentation of an item to an annotator, its answers by question key; stored when
    any question has a value, a missing reason or a comment (otherwise a blank)."""

    item: str
    presentation: int
    position: int | None
    cells: dict[str, Cell] = field(default_factory=dict)
    active_ms: int | None = None

    @property
    def stored(self) -> bool:
        return any(cell.given for cell in self.cells.values())


@dataclass
class Annotator:
    external_id: str
    line: int  # first appearance in the file
    rows: int = 0
    meta: dict[str, str] = field(default_factory=dict)
    answers: dict[tuple[str, int], Answer] = field(default_factory=dict)


@dataclass(frozen=True)
class AnnotatorSummary:
    external_id: str
    rows: int
    presented: int
    answered: int
    blanks: int
    duplicates: int  # answered repeat presentations (presentation >= 2)
    meta: dict[str, str]


@dataclass(frozen=True)
class ImportSummary:
    """What a file holds (dry run) or what was stored (`imported`)."""

    filename: str
    fmt: str
    rows: int
    annotators: tuple[AnnotatorSummary, ...]
    items: int  # distinct items with at least one answer
    answers: int  # stored rows: non-blank presentations
    blanks: int
    duplicates: int
    # Wide files: rows merged into an earlier row of the same annotator (a long file's rows are
    # one answer each, never merged: 0).
    merged_rows: int
    imported: bool = False
    # What was accepted but is worth saying (columns of the responses export not read).
    warnings: tuple[str, ...] = ()


# --- reading ----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    """Return a header or label with surrounding and repeated whitespace collapsed.

    Exports wrap long question texts and use non-breaking spaces; a researcher copying a header
    into a map file should not have to reproduce them exactly.
    """
    return " ".join(text.split())


def _short(text: str, limit: int = 60) -> str:
    text = _norm(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_map(
    source: Upload | Mapping[str, str] | None, *, kind: str, header: tuple[str, str],
    max_bytes: int, limits: Limits,
) -> _MapRows:
    """Return a map file's (line, key, target) rows and the collector of its problems."""
    if source is None:
        return [], Collector(kind)
    if isinstance(source, Mapping):
        return [(None, _norm(str(k)), str(v).strip()) for k, v in source.items()], Collector(kind)
    own = Collector(source.filename)
    text = decode(source.data, own, max_bytes=max_bytes)
    pairs: list[tuple[int | None, str, str]] = []
    if text is not None:
        for line, cells in read_records(text, filename=source.filename, errors=own,
                                        limits=limits):
            if [c.strip().lower() for c in cells] == list(header) and not pairs:
                continue
            if len(cells) != 2:
                own.add(f"a {kind} line has two fields ({header[0]},{header[1]}), "
                        f"not {len(cells)}", line=line)
                continue
            pairs.append((line, _norm(cells[0]), cells[1].strip()))
    return pairs, own


def _parse_number(raw: str) -> float | None:
    try:
        number = float(raw)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Values:
    """Turn a cell into a scale value: value-map label first, then a number of the scale."""

    def __init__(self, scale: Sequence[float], value_map: dict[str, float] | None):
        self.scale = {float(v) for v in scale}
        self.shown = ", ".join(_fmt(v) for v in scale)
        self.labels = value_map

    def parse(self, raw: str, errors: Collector, line: int, column: str | int) -> float | None:
        text = raw.strip()
        if self.labels and _norm(text) in self.labels:
            mapped = self.labels[_norm(text)]
            if mapped in self.scale:
                return mapped
            errors.add(f"{_short(text, 40)!r} maps to {_fmt(mapped)}, which is not a value of "
                       f"this question's scale ({self.shown})", line=line, column=column)
            return None
        number = _parse_number(text)
        if number is not None and number in self.scale:
            return number
        extra = " nor a label of the value map" if self.labels else ""
        errors.add(f"{_short(text, 40)!r} is not a value of the scale ({self.shown}){extra}",
                   line=line, column=column)
        return None


def _value_map(read: _MapRows, scale: Sequence[float]) -> dict[str, float]:
    pairs, where = read
    allowed = {float(v) for v in scale}
    shown = ", ".join(_fmt(v) for v in scale)
    out: dict[str, float] = {}
    seen: dict[str, int | None] = {}
    for line, label, target in pairs:
        number = _parse_number(target)
        if number is None or number not in allowed:
            where.add(f"{target!r} is not a value of the scale ({shown})", line=line, column="value")
            continue
        if label in out and out[label] != number:
            where.add(f"label {label!r} is already mapped to {_fmt(out[label])} on line "
                      f"{seen[label]}", line=line, column="label")
            continue
        out[label], seen[label] = number, line
    return out


def _item_map(read: _MapRows, items: Iterable[str]) -> dict[str, str]:
    pairs, where = read
    known = set(items)
    out: dict[str, str] = {}
    for line, column, item in pairs:
        if item not in known:
            where.add(f"{item!r} is not an item id of this study", line=line, column="item")
            continue
        if column in out and out[column] != item:
            where.add(f"column {_short(column)!r} is already mapped to {out[column]!r}",
                      line=line, column="column")
            continue
        out[column] = item
    return out


# --- parsing ----------------------------------------------------------------------------------


class _Questions:
    """The study's questions: key -> how its cells are read, in order."""

    def __init__(self, scales: Mapping[str, Sequence[float]], value_map: dict[str, float] | None):
        self.values = {key: _Values(scale, value_map) for key, scale in scales.items()}
        self.keys = list(scales)
        self.single = self.keys[0] if len(self.keys) == 1 else None
        self.shown = ", ".join(self.keys)

    def unknown(self, key: str) -> str:
        return f"{_short(key, 40)!r} is not a question of this study (its questions: {self.shown})"


def responses_parse(
    data: bytes,
    *,
    filename: str,
    fmt: str,
    items: Iterable[str],
    scale: Sequence[float] = (),
    questions: Mapping[str, Sequence[float]] | None = None,
    existing_annotators: Iterable[str] = (),
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
    warnings: list[str] | None = None,
) -> list[Annotator]:
    """Validate a response file completely; return its annotators in order of first appearance.

    `questions` maps each question key to its scale's values, in the study's order; a study of
    one question may give its `scale` alone (its answers are then keyed `SINGLE`). Raise
    `InputError` listing every problem of the map files, then of the file. What is accepted but
    worth saying (the export's columns a long file carries and the import does not read, answers
    to a third or later presentation of an item) is appended to `warnings` when given.
    """
    errors = Collector(filename)
    if fmt not in FORMATS:
        errors.add(f"unknown format {fmt!r}; use wide or long")
        errors.raise_if_any()
    scales = dict(questions) if questions else {SINGLE: scale}
    items = list(items)
    item_read = _read_map(item_map, kind="item map", header=("column", "item"),
                          max_bytes=max_bytes, limits=limits)
    value_read = _read_map(value_map, kind="value map", header=("label", "value"),
                           max_bytes=max_bytes, limits=limits)
    imap = _item_map(item_read, items)
    vmap = _value_map(value_read, sorted({float(v) for s in scales.values() for v in s}))
    known = _Questions(scales, vmap)
    existing = set(existing_annotators)
    annotators: list[Annotator] = []
    text = decode(data, errors, max_bytes=max_bytes)
    grid = None if text is None else read_grid(text, filename=filename, errors=errors,
                                               limits=limits, min_columns=2)
    if grid is not None:
        header, rows = grid.header, grid.rows
        if header:
            reader = _parse_wide if fmt == "wide" else _parse_long
            annotators = reader(header, rows, errors, items=set(items), item_map=imap,
                                questions=known, annotator_column=annotator_column,
                                meta_columns=[_norm(m) for m in meta_columns if _norm(m)])
            if not rows and not errors:
                errors.add("the file has a header but no rows")
            if fmt == "long" and warnings is not None:
                warnings += long_unread(header, annotator_column)
            if warnings is not None:
                warnings += later_presentations(sum(
                    x.stored and x.presentation > 2 for a in annotators for x in a.answers.values()))
            for annotator in annotators:
                if annotator.external_id in existing:
                    errors.add(
                        f"annotator {annotator.external_id!r} was already imported into this "
                        "study; remove their rows or import them into another study",
                        line=annotator.line, column=annotator_column or "annotator",
                    )
    report = Collector(filename)
    for collected in (item_read[1], value_read[1], errors):
        report.extend(collected)
    report.raise_if_any()
    return annotators


@dataclass
class LongStream:
    """A long file read row by row, for the bulk import (`annotation.bulk`).

    `maps` holds the problems of the map files; `errors` those of the file, growing while
    `rows` is iterated; `rows` yields every non-blank row, checked on its own (`long_row`), with
    its cells (for the meta columns). The checks across rows (duplicates, positions, annotators
    already imported) are the consumer's; `responses_parse` makes them in memory.
    """

    maps: Collector
    errors: Collector
    columns: LongColumns | None
    questions: _Questions
    rows: Iterator[tuple[LongRow, list[str]]]


def responses_stream_long(
    data: bytes | BinaryIO,
    *,
    filename: str,
    items: Iterable[str],
    questions: Mapping[str, Sequence[float]],
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
) -> LongStream:
    """Read a long file's maps and header now and its rows as they are iterated.

    No row is kept once yielded; ``data`` as bytes is decoded whole (memory: the file's text),
    a seekable binary file is read a chunk at a time (`core.tabular.TextFile`: memory
    independent of the file's size).
    """
    scales = dict(questions)
    items = set(items)
    maps = Collector(filename)
    item_read = _read_map(item_map, kind="item map", header=("column", "item"),
                          max_bytes=max_bytes, limits=limits)
    value_read = _read_map(value_map, kind="value map", header=("label", "value"),
                           max_bytes=max_bytes, limits=limits)
    imap = _item_map(item_read, items)
    vmap = _value_map(value_read, sorted({float(v) for s in scales.values() for v in s}))
    maps.extend(item_read[1])
    maps.extend(value_read[1])
    known = _Questions(scales, vmap)
    errors = Collector(filename)
    text = decode(data, errors, max_bytes=max_bytes) if isinstance(data, bytes) \
        else open_text(data, errors, max_bytes=max_bytes)
    grid = None if text is None else stream_grid(text, filename=filename, errors=errors,
                                                 limits=limits, min_columns=2)
    columns = None
    if grid is not None and grid.header:
        columns = long_columns(grid.header, errors, questions=known,
                               annotator_column=annotator_column,
                               meta_columns=[_norm(m) for m in meta_columns if _norm(m)])

    def rows() -> Iterator[tuple[LongRow, list[str]]]:
        if grid is None or columns is None:
            return
        read = LongReader(columns, errors, items=items, item_map=imap, questions=known)
        for line, cells in grid.rows:
            yield read(line, cells), cells

    return LongStream(maps=maps, errors=errors, columns=columns, questions=known, rows=rows())


def _wide_column(name: str, *, items: Set[str], item_map: Mapping[str, str],
                 questions: _Questions) -> tuple[str, str] | str:
    """Return (item, question key) of a wide column, or why it is not one."""
    if name in item_map or name in items:
        if questions.single is not None:
            return item_map.get(name, name), questions.single
        return (f"column {_short(name)!r} names an item but no question: this study asks "
                f"several questions, name it {_short(name)}:<question> ({questions.shown})")
    head, colon, key = name.rpartition(":")
    if colon and (head in item_map or head in items):
        if key in questions.values:
            return item_map.get(head, head), key
        return f"column {_short(name)!r}: {questions.unknown(key)}"
    return (f"unknown column {_short(name)!r}: not an item id of this study, not in the item "
            "map, not a meta column")


def _parse_wide(header: Sequence[str], rows: Sequence[Row], errors: Collector, *,
                items: Set[str], item_map: Mapping[str, str], questions: _Questions,
                annotator_column: str | None, meta_columns: Sequence[str]) -> list[Annotator]:
    if not annotator_column:
        errors.add("the wide format needs the annotator column (--annotator-column NAME)")
        return []
    want = _norm(annotator_column)
    meta_names = set(meta_columns)
    annotator_at: int | None = None
    meta_at: dict[int, str] = {}
    meta_found: set[str] = set()
    # index -> (item, presentation, position, question key)
    item_at: dict[int, tuple[str, int, int, str]] = {}
    repeats: dict[tuple[str, str], int] = {}
    positions: dict[tuple[str, int], int] = {}  # (item, presentation) -> position
    for index, raw in enumerate(header):
        name, column = _norm(raw), index + 1
        if name == want and annotator_at is None:
            annotator_at = index
            continue
        if name in meta_names:
            if name in meta_found:
                errors.add(f"meta column {_short(name)!r} appears twice", line=1, column=column)
            meta_at[index] = name
            meta_found.add(name)
            continue
        if name == want:
            errors.add(f"the annotator column {want!r} appears twice", line=1, column=column)
            continue
        if not name:
            errors.add("a column has no header", line=1, column=column)
            continue
        found = _wide_column(name, items=items, item_map=item_map, questions=questions)
        if isinstance(found, str):
            errors.add(found, line=1, column=column)
            continue
        item, key = found
        presentation = repeats[(item, key)] = repeats.get((item, key), 0) + 1
        position = positions.setdefault((item, presentation), len(positions))
        item_at[index] = (item, presentation, position, key)
    names = {_norm(h) for h in header}
    if annotator_at is None:
        errors.add(f"the annotator column {want!r} is not in the file", line=1)
    for name in meta_columns:
        if name not in names:
            errors.add(f"the meta column {_short(name)!r} is not in the file", line=1)
    if not item_at and header:
        errors.add("no column is an item: name columns by item id or map them with --item-map",
                   line=1)
    if annotator_at is None:
        return []

    annotators: dict[str, Annotator] = {}
    for line, cells in rows:
        external = cells[annotator_at].strip()
        if not external:
            errors.add("empty annotator id", line=line, column=annotator_at + 1)
            continue
        if len(external) > MAX_ID_LENGTH:
            errors.add(f"annotator id longer than {MAX_ID_LENGTH} characters", line=line,
                       column=annotator_at + 1)
            continue
        annotator = annotators.setdefault(external, Annotator(external, line))
        annotator.rows += 1
        for index, name in meta_at.items():
            if cells[index].strip():
                annotator.meta[name] = cells[index].strip()  # last non-blank wins
        for index, (item, presentation, position, key) in item_at.items():
            answer = annotator.answers.setdefault((item, presentation),
                                                  Answer(item, presentation, position))
            if cells[index].strip():
                value = questions.values[key].parse(cells[index], errors, line, index + 1)
                if value is not None:
                    answer.cells[key] = Cell(value)  # last non-blank wins
    return list(annotators.values())


@dataclass
class _Presented:
    """The rows of one annotator, item and position in a long file."""

    line: int
    position: int | None
    cells: dict[str, tuple[int, Cell]] = field(default_factory=dict)
    duration: int | None = None


@dataclass(frozen=True)
class LongColumns:
    """Where the roles of a long file are: role -> index, meta column index -> name."""

    header: tuple[str, ...]
    at: dict[str, int]
    meta_at: dict[int, str]

    def name(self, role: str) -> str:
        return _norm(self.header[self.at[role]])


def long_columns(header: Sequence[str], errors: Collector, *, questions: _Questions,
                 annotator_column: str | None, meta_columns: Sequence[str]) -> LongColumns | None:
    """Recognise the columns of a long file's header; None (problems recorded) when unusable."""
    names = {"annotator": _norm(annotator_column or "annotator")}
    roles = {names.get(r, r).lower(): r for r in reversed(LONG_COLUMNS)}
    roles.update({alias: role for alias, role in LONG_ALIASES.items() if alias not in roles})
    ignored = set(LONG_IGNORED) - set(roles)
    meta_names = set(meta_columns)
    at: dict[str, int] = {}
    meta_at: dict[int, str] = {}
    meta_found: set[str] = set()
    ignored_found: set[str] = set()
    for index, raw in enumerate(header):
        name = _norm(raw)
        role = roles.get(name.lower())
        if role and role not in at:
            at[role] = index
        elif name in meta_names and name not in meta_found:
            meta_at[index] = name
            meta_found.add(name)
        elif name.lower() in ignored and name.lower() not in ignored_found:
            ignored_found.add(name.lower())
        elif role or name in meta_found or name.lower() in ignored_found:
            errors.add(f"column {name!r} appears twice", line=1, column=name)
        else:
            errors.add(f"unknown column {_short(name)!r} (expected annotator, item, value, "
                       "question, missing, comment, duration_ms, position, or a meta column)",
                       line=1, column=name)
    for role in LONG_REQUIRED:
        if role not in at:
            errors.add(f"the required column {names.get(role, role)!r} is missing", line=1)
    if "question" not in at and questions.single is None:
        errors.add(f"the required column 'question' is missing: this study asks several "
                   f"questions ({questions.shown}), one row per answer to one question", line=1)
    for name in meta_columns:
        if name not in meta_found:
            errors.add(f"the meta column {_short(name)!r} is not in the file", line=1)
    if any(role not in at for role in LONG_REQUIRED) or (
            "question" not in at and questions.single is None):
        return None
    return LongColumns(tuple(header), at, meta_at)


class LongRow(NamedTuple):
    """One row of a long file, read and checked on its own (`ok`: no problem recorded).

    `position` is None when blank, `INVALID` when reported; `item` is the item id after the
    item map (possibly unknown when not `ok`); `key` the question key (None when unknown).
    """

    line: int
    external: str
    item: str
    key: str | None
    value: float | None
    missing: str
    comment: str
    duration: int | None
    position: int | None
    ok: bool


def long_row(columns: LongColumns, line: int, cells: Sequence[str], errors: Collector, *,
             items: Set[str], item_map: Mapping[str, str], questions: _Questions) -> LongRow:
    """Read and check one row of a long file on its own; the checks across rows are the caller's."""
    return LongReader(columns, errors, items=items, item_map=item_map, questions=questions)(
        line, cells)


class LongReader:
    """Read and check the rows of a long file one by one (see `long_row`).

    The hot loop of a million-row import: column indexes are looked up once, and the cells that
    repeat (item ids, values, whole numbers) are read through small caches.
    """

    CACHE = 100_000  # distinct cells remembered per cache; beyond, they are read each time

    def __init__(self, columns: LongColumns, errors: Collector, *, items: Set[str],
                 item_map: Mapping[str, str], questions: _Questions):
        self.columns, self.errors, self.items = columns, errors, items
        self.item_map, self.questions = item_map, questions
        at = columns.at
        self.annotator_at, self.item_at, self.value_at = at["annotator"], at["item"], at["value"]
        self.question_at = at.get("question")
        self.missing_at = at.get("missing")
        self.comment_at = at.get("comment")
        self.duration_at = at.get("duration_ms")
        self.position_at = at.get("position")
        self.norms: dict[str, str] = {}
        self.values: dict[tuple[str | None, str], float] = {}
        self.wholes: dict[str, int] = {}

    def _norm(self, raw: str) -> str:
        norm = self.norms.get(raw)
        if norm is None:
            norm = _norm(raw)
            if len(self.norms) < self.CACHE:
                self.norms[raw] = norm
        return norm

    def _whole(self, cells: Sequence[str], index: int | None, line: int, maximum: int
               ) -> int | None:
        if index is None:
            return None
        raw = cells[index]
        if raw.isascii() and raw.isdigit() and len(raw) < 10:  # the usual cell: "1234"
            number = int(raw)
            if number <= maximum:
                return number
        return _whole(cells, index, self.errors, line, self.columns.header, maximum)

    def __call__(self, line: int, cells: Sequence[str]) -> LongRow:
        errors, col, questions = self.errors, self.columns.name, self.questions
        external = cells[self.annotator_at].strip()
        raw_item = self._norm(cells[self.item_at])
        ok = True
        if not external:
            errors.add("empty annotator id", line=line, column=col("annotator"))
            ok = False
        elif len(external) > MAX_ID_LENGTH:
            errors.add(f"annotator id longer than {MAX_ID_LENGTH} characters", line=line,
                       column=col("annotator"))
            ok = False
        item = self.item_map.get(raw_item, raw_item)
        if not raw_item:
            errors.add("empty item id", line=line, column=col("item"))
            ok = False
        elif item not in self.items:
            errors.add(f"{_short(raw_item)!r} is not an item id of this study", line=line,
                       column=col("item"))
            ok = False
        key = (self._norm(cells[self.question_at]) if self.question_at is not None else ""
               ) or questions.single
        if key is None:
            errors.add(f"empty question (this study's questions: {questions.shown})", line=line,
                       column=col("question"))
            ok = False
        elif key not in questions.values:
            errors.add(questions.unknown(key), line=line, column=col("question"))
            ok = False
            key = None
        raw_value = cells[self.value_at]
        value = None
        if key is not None and raw_value.strip():
            value = self.values.get((key, raw_value))
            if value is None:
                value = questions.values[key].parse(raw_value, errors, line, col("value"))
                if value is not None and len(self.values) < self.CACHE:
                    self.values[(key, raw_value)] = value
            ok = ok and value is not None
        missing = cells[self.missing_at].strip() if self.missing_at is not None else ""
        if missing and missing not in MISSING:
            errors.add(f"{_short(missing, 40)!r} is not a reason for a missing value "
                       f"({' or '.join(MISSING)}, or empty when answered)", line=line,
                       column=col("missing"))
            ok = False
        elif missing and raw_value.strip():
            errors.add(f"a value and a missing reason ({missing}): leave one of them empty",
                       line=line, column=col("missing"))
            ok = False
        comment = unneutralise(cells[self.comment_at]) if self.comment_at is not None else ""
        duration = self._whole(cells, self.duration_at, line, MAX_ACTIVE_MS)
        position = self._whole(cells, self.position_at, line, 2**31 - 1)
        if duration == INVALID or position == INVALID:
            ok = False
        return LongRow(line, external, item, key, value, missing, comment, duration, position, ok)


def _parse_long(header: Sequence[str], rows: Sequence[Row], errors: Collector, *,
                items: Set[str], item_map: Mapping[str, str], questions: _Questions,
                annotator_column: str | None, meta_columns: Sequence[str]) -> list[Annotator]:
    columns = long_columns(header, errors, questions=questions, annotator_column=annotator_column,
                           meta_columns=meta_columns)
    if columns is None:
        return []
    col = columns.name
    several = questions.single is None
    annotators: dict[str, Annotator] = {}
    presented: dict[tuple[str, str], list[_Presented]] = {}
    positions: dict[tuple[str, int], tuple[int, str]] = {}
    read = LongReader(columns, errors, items=items, item_map=item_map, questions=questions)
    for line, cells in rows:
        row = read(line, cells)
        external, item, key, position, ok = row.external, row.item, row.key, row.position, row.ok
        if position is not None and position != INVALID and external:
            earlier, other = positions.setdefault((external, position), (line, item))
            if other != item:
                errors.add(f"position {position} of annotator {external!r} is already used on "
                           f"line {earlier}", line=line, column=col("position"))
                ok = False
        if not ok:
            continue
        assert key is not None
        annotator = annotators.setdefault(external, Annotator(external, line))
        annotator.rows += 1
        for index, name in columns.meta_at.items():
            if cells[index].strip():
                annotator.meta[name] = cells[index].strip()
        same = presented.setdefault((external, item), [])
        group = next((g for g in same if g.position == position), None)
        if group is None and same and (position is None or any(g.position is None for g in same)):
            errors.add(f"duplicate row: annotator {external!r} already has a row for item "
                       f"{item!r} on line {same[0].line}; a repeated presentation needs a "
                       "different position", line=line)
            continue
        if group is None:
            group = _Presented(line, position)
            same.append(group)
        if key in group.cells:
            about = f" (question {key!r})" if several else ""
            if group.position is None:
                errors.add(f"duplicate row: annotator {external!r} already has a row for item "
                           f"{item!r}{about} on line {group.cells[key][0]}; a repeated "
                           "presentation needs a different position", line=line)
            else:
                errors.add(f"duplicate row: annotator {external!r} already has item {item!r} "
                           f"at position {group.position}{about} on line {group.cells[key][0]}",
                           line=line)
            continue
        group.cells[key] = (line, Cell(row.value, row.missing, row.comment))
        if group.duration is None:
            group.duration = row.duration
    for (external, item), groups in presented.items():
        # The earlier position is the first presentation, whatever the order of the lines.
        groups.sort(key=lambda g: (g.position is None, g.position or 0))
        for n, g in enumerate(groups, start=1):
            annotators[external].answers[(item, n)] = Answer(
                item, n, g.position, {k: c for k, (_, c) in g.cells.items()}, g.duration)
    return list(annotators.values())


def long_unread(header: Sequence[str], annotator_column: str | None) -> list[str]:
    """Name the columns of the responses export a long file carries and the import ignores."""
    read = {_norm(annotator_column or "annotator").lower(), *LONG_COLUMNS, *LONG_ALIASES}
    unread = [_norm(h) for h in header
              if _norm(h).lower() in LONG_IGNORED and _norm(h).lower() not in read]
    if not unread:
        return []
    return [f"columns not read: {', '.join(dict.fromkeys(unread))} (columns of the responses "
            "export that the import derives again or takes from the items)"]


def later_presentations(count: int) -> list[str]:
    """Say that ``count`` answered presentations come after an item's second to its annotator.

    They are stored and exported, but the analysis pairs the first two presentations of an item
    and uses none after them (docs/importing-responses.md, "A third presentation")."""
    if not count:
        return []
    return [f"{count} answered presentation{'s' if count != 1 else ''} of an item after the "
            "annotator's second (presentation 3 or later): stored and exported, but the analysis "
            "uses only the first two presentations of an item"]


def _whole(cells: Sequence[str], index: int | None, errors: Collector, line: int,
           header: Sequence[str], maximum: int) -> int | None:
    """Return a non-negative whole number, None when blank or absent, INVALID (recorded)."""
    if index is None or not cells[index].strip():
        return None
    raw = cells[index].strip()
    number = _parse_number(raw)
    if number is None or not number.is_integer() or not 0 <= number <= maximum:
        errors.add(f"{_short(raw, 40)!r} is not a whole number between 0 and {maximum}",
                   line=line, column=_norm(header[index]))
        return INVALID
    return int(number)


def responses_summarize(annotators: Sequence[Annotator], *, filename: str, fmt: str
                        ) -> ImportSummary:
    """Count what a parsed file holds: annotators, items, answers, blanks, duplicates."""
    per = []
    for a in annotators:
        answered = [x for x in a.answers.values() if x.stored]
        per.append(AnnotatorSummary(
            external_id=a.external_id, rows=a.rows, presented=len(a.answers),
            answered=len(answered), blanks=len(a.answers) - len(answered),
            duplicates=sum(x.presentation > 1 for x in answered), meta=dict(a.meta),
        ))
    answered_items = {x.item for a in annotators for x in a.answers.values() if x.stored}
    return ImportSummary(
        filename=filename, fmt=fmt, rows=sum(a.rows for a in annotators),
        annotators=tuple(per), items=len(answered_items),
        answers=sum(p.answered for p in per), blanks=sum(p.blanks for p in per),
        duplicates=sum(p.duplicates for p in per),
        merged_rows=sum(a.rows - 1 for a in annotators) if fmt == "wide" else 0,
    )
