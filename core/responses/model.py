"""What a response file holds once read (`Upload`, `Annotator`, `Answer`, `Cell`, the summaries),
the formats' constants, and the reading shared by both formats: map files, values, questions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.problems import Collector
from core.tabular import (
    Limits,
    decode,
    read_records,
)

# `judgments`: a comparative question's long file (`core.responses.comparisons`).
FORMATS = ("wide", "long", "judgments")
LONG_COLUMNS = ("annotator", "item", "value", "question", "missing", "comment", "duration_ms",
                "position")
LONG_REQUIRED = ("annotator", "item", "value")
# Columns of the responses export that the import derives or records itself: accepted, ignored.
LONG_IGNORED = ("presentation", "duplicate", "submitted_at", "source", "control", "revision",
                "role", "system", "item_source")
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
    """The answer to one question: a value, or None and why (`missing`), and a comment; for a
    comparative question, the judgment as stored (`core.comparative`) in ``choice``."""

    value: float | None
    missing: str = ""
    comment: str = ""
    choice: dict[str, Any] | None = None

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


def _item_map(read: _MapRows, items: Iterable[str],
              questions: Sequence[str] = ()) -> dict[str, str]:
    """Return the item map (column -> item id); with ``questions`` (a wide file), a target may
    also name the question, ``item:question`` (split on the last colon, an item id first)."""
    pairs, where = read
    known = set(items)
    out: dict[str, str] = {}
    for line, column, item in pairs:
        head, colon, key = item.rpartition(":")
        if item not in known and not (questions and colon and head in known):
            where.add(f"{item!r} is not an item id of this study", line=line, column="item")
            continue
        if item not in known and key not in questions:
            where.add(f"{item!r}: {key!r} is not a question of this study (its questions: "
                      f"{', '.join(questions)})", line=line, column="item")
            continue
        if column in out and out[column] != item:
            where.add(f"column {_short(column)!r} is already mapped to {out[column]!r}",
                      line=line, column="column")
            continue
        out[column] = item
    return out



class _Questions:
    """The study's questions: key -> how its cells are read, in order."""

    def __init__(self, scales: Mapping[str, Sequence[float]], value_map: dict[str, float] | None):
        self.values = {key: _Values(scale, value_map) for key, scale in scales.items()}
        self.keys = list(scales)
        self.single = self.keys[0] if len(self.keys) == 1 else None
        self.shown = ", ".join(self.keys)

    def unknown(self, key: str) -> str:
        return f"{_short(key, 40)!r} is not a question of this study (its questions: {self.shown})"
