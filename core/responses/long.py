"""The long format: one row per answer to one question, read whole (`_parse_long`, for
`responses_parse`) or row by row (`responses_stream_long`, for the bulk import).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from core.formats import unneutralise
from core.problems import Collector
from core.responses.model import (
    INVALID,
    LONG_ALIASES,
    LONG_COLUMNS,
    LONG_IGNORED,
    LONG_REQUIRED,
    MAX_ACTIVE_MS,
    MAX_ID_LENGTH,
    MISSING,
    Annotator,
    Answer,
    Cell,
    Upload,
    _item_map,
    _norm,
    _parse_number,
    _Questions,
    _read_map,
    _short,
    _value_map,
)
from core.tabular import (
    DEFAULT_LIMITS,
    Limits,
    Row,
    decode,
    open_text,
    stream_grid,
)


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
