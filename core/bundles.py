"""Read a methods bundle (the `bundle` export, a zip) back: its members, safely, and its
revisions file, validated completely.

Contract (user guide in docs/exports.md#replaying-a-bundle):

- `bundle_members` opens the zip from bytes (never from disk, never extracted) and returns the
  known members' bytes. It refuses, naming the archive: bytes that are not a zip, an archive
  larger than `ZipLimits.max_bytes`, more than `max_members` members, a member name that is
  absolute, climbs out (`..`), uses a backslash or a drive letter, a member whose declared or
  actual size passes `max_member_bytes`, a total uncompressed size over `max_total_bytes` (a
  "zip bomb" is refused from the sizes the archive declares, and no member is read beyond
  them), an encrypted member, a member whose bytes do not match its CRC, and a missing
  required member. Members it does not know are ignored.
- `revisions_parse` reads the bundle's `revisions.csv` (every revision of every answer; columns
  of `exports.selectors.REVISION_COLUMNS`) into presentations with their revisions, and reports
  every problem (file, line, column) in one `InputError`.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from core.comparative import JudgmentError, judgment_clean
from core.formats import unneutralise
from core.problems import Collector, InputError, Problem
from core.responses import MAX_ACTIVE_MS, MISSING, Cell
from core.tabular import DEFAULT_LIMITS, Limits, decode, read_grid, size_over_limit

# Every revision of every answer: the columns `import_bundle` reads (submitted_at, the time the
# server stored a revision, is accepted and not kept: a replayed revision is stored now).
# The study's definition in a bundle (written by the export, read by the replay).
DEFINITION = "definition.json"
REVISION_COLUMNS = ("annotator", "item", "presentation", "position", "revision", "current",
                    "question", "value", "missing", "comment", "active_ms", "source")
# A study with comparative questions adds each answer's judgment as stored, in JSON.
CHOICE = "choice"
SOURCES = ("app", "import")
PSEUDONYM = re.compile(r"A([1-9][0-9]{0,8})")
MAX_PRESENTATION = 32_767
MAX_POSITION = 2**31 - 1
_DRIVE = re.compile(r"^[A-Za-z]:")
INVALID = -1  # a number that was reported as a problem


@dataclass(frozen=True)
class ZipLimits:
    """Bounds of an uploaded bundle: its size, its members and what they unpack to."""

    max_bytes: int = 50 * 1024 * 1024
    max_members: int = 64
    max_member_bytes: int = 200 * 1024 * 1024
    max_total_bytes: int = 400 * 1024 * 1024
    # Every member a bundle is read for is text with short lines (indented JSON, CSV rows): a
    # NUL byte, or a line longer than this, refuses the member as soon as it is unpacked, not
    # after 200 MB of zeros were unpacked and parsed (11 s).
    max_line_bytes: int = 4 * 1_048_576


DEFAULT_ZIP_LIMITS = ZipLimits()


def _unsafe(name: str) -> str | None:
    """Why a member name is not a plain relative path inside the archive, or None."""
    if not name or "\x00" in name:
        return "an empty name or a NUL character"
    if "\\" in name:
        return "a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "'..' (a path out of the archive)"
    return None


def bundle_members(data: bytes, *, filename: str, wanted: Collection[str],
                   required: Collection[str] = (),
                   limits: ZipLimits = DEFAULT_ZIP_LIMITS) -> dict[str, bytes]:
    """Return {name: bytes} of the `wanted` members at the archive's top level.

    Raise `InputError` naming the archive (and the member) on any refusal listed in the module's
    docstring; nothing is decompressed before every name and declared size passed.
    """
    errors = Collector(filename)
    if len(data) > limits.max_bytes:
        errors.add(size_over_limit(len(data), limit=limits.max_bytes))
        errors.raise_if_any()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        errors.add("not a zip file: a bundle is the zip the bundle export writes")
        errors.raise_if_any()
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            errors.add(f"{len(infos)} members; a bundle has at most {limits.max_members}")
            errors.raise_if_any()
        total = 0
        chosen: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename
            shown = f"{filename}/{name[:80]}"
            why = _unsafe(name)
            if why:
                errors.add(f"member {name[:80]!r} has {why}; nothing is extracted from this "
                           "archive", column="path")
                continue
            if info.flag_bits & 0x1:
                errors.add("the member is encrypted", file=shown)
                continue
            if info.file_size > limits.max_member_bytes:
                errors.add(f"the member unpacks to {info.file_size} bytes, more than the "
                           f"{limits.max_member_bytes} allowed", file=shown)
            total += info.file_size
            if name in wanted and not info.is_dir():
                if name in chosen:
                    errors.add("the member appears twice", file=shown)
                chosen[name] = info
        if total > limits.max_total_bytes:
            errors.add(f"the members unpack to {total} bytes, more than the "
                       f"{limits.max_total_bytes} allowed")
        for name in required:
            if name not in chosen:
                errors.add(f"{name} is missing: is this a bundle export of Concord?")
        errors.raise_if_any()
        out: dict[str, bytes] = {}
        for name, info in chosen.items():
            try:
                body, why = _member_text(archive, info, limits)
            except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError,
                    ValueError) as exc:
                errors.add(f"the member cannot be read: {exc}", file=f"{filename}/{name}")
                continue
            if why:
                errors.add(why, file=f"{filename}/{name}")
                continue
            if len(body) != info.file_size:
                errors.add("the member's size is not the one the archive declares",
                           file=f"{filename}/{name}")
                continue
            out[name] = body
        errors.raise_if_any()
    return out


_CHUNK = 1024 * 1024


def _member_text(archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                 limits: ZipLimits) -> tuple[bytes, str | None]:
    """Unpack one member a megabyte at a time; return its bytes, or why it is not text.

    Never reads past the declared size (an archive lying about it is refused by the caller),
    and stops at the first NUL byte or over-long line: hostile bytes cost a megabyte of work.
    """
    pieces: list[bytes] = []
    line = 0  # bytes since the last newline
    read = 0
    with archive.open(info) as member:
        while read <= info.file_size:
            chunk = member.read(min(_CHUNK, info.file_size + 1 - read))
            if not chunk:
                break
            read += len(chunk)
            if b"\x00" in chunk:
                return b"", "the member is not text: it holds a NUL byte"
            parts = chunk.split(b"\n")
            longest = line + len(parts[0])  # the line the previous chunk left open, continued
            if len(parts) > 1:
                longest = max(longest, *(len(part) for part in parts[1:]))
                line = len(parts[-1])
            else:
                line = longest
            if longest > limits.max_line_bytes:
                return b"", (f"the member has a line longer than {limits.max_line_bytes} bytes;"
                             " a bundle's files have short lines")
            pieces.append(chunk)
    return b"".join(pieces), None


# --- the revisions file ---------------------------------------------------------------------


@dataclass
class Revision:
    """One stored revision of a presentation: its answers by question key."""

    number: int
    current: bool
    active_ms: int | None
    source: str
    line: int
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class Presentation:
    """One presentation of an item to an annotator, with every revision in order."""

    annotator: str  # a pseudonym, A1, A2, …
    item: str
    presentation: int
    position: int | None
    line: int
    revisions: list[Revision] = field(default_factory=list)

    @property
    def pseudonym_number(self) -> int:
        return int(self.annotator[1:])

    @property
    def first(self) -> Revision:
        return self.revisions[0]


def _whole(raw: str, errors: Collector, line: int, column: str, *, low: int, high: int,
           blank: bool) -> int | None:
    """A whole number in [low, high]; None when blank (if allowed); INVALID when reported."""
    text = raw.strip()
    if not text:
        if blank:
            return None
        errors.add("empty; a whole number is required", line=line, column=column)
        return INVALID
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not number.is_integer() or not low <= number <= high:
        errors.add(f"{text[:40]!r} is not a whole number between {low} and {high}", line=line,
                   column=column)
        return INVALID
    return int(number)


def revisions_parse(data: bytes, *, filename: str, items: Collection[str],
                    questions: Mapping[str, Sequence[float]], max_bytes: int,
                    limits: Limits = DEFAULT_LIMITS,
                    comparative: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
                    outputs: Mapping[str, Sequence[str]] | None = None) -> list[Presentation]:
    """Validate a bundle's revisions file; return its presentations in order of first row.

    `questions` maps each question key to its scale's values; `comparative` each comparative
    question's key to its kind and options, and `outputs` each comparison to its outputs: the
    answers to a comparative question carry their judgment in the file's `choice` column (JSON,
    checked by `core.comparative.judgment_clean`, its value derived again), stored in the
    `Cell`'s ``choice``. Each presentation (annotator,
    item, presentation number) must have revisions numbered 1, 2, … with exactly one current,
    the rows of one revision must agree on position, current flag, time and source, and a
    question is answered once per revision. Raise `InputError` listing every problem.
    """
    errors = Collector(filename)
    text = decode(data, errors, max_bytes=max_bytes)
    grid = None if text is None else read_grid(text, filename=filename, errors=errors,
                                               limits=limits, min_columns=2, unique=True)
    if grid is None:
        errors.raise_if_any()
        raise InputError([Problem(filename, None, None, "the file is empty")])
    at = {name: n for n, name in enumerate(grid.header)}
    missing_columns = [c for c in REVISION_COLUMNS if c not in at]
    for name in missing_columns:
        errors.add(f"the required column {name!r} is missing", line=1)
    errors.raise_if_any()
    known_items = set(items)
    scales = {key: {float(v) for v in values} for key, values in questions.items()}
    judged = _Judgments(comparative or {}, outputs or {})
    scales.update({key: set() for key in judged.questions})
    choice_at = at.get(CHOICE)
    grouped = _Grouped(errors)
    for line, cells in grid.rows:
        cell = {name: cells[at[name]] for name in REVISION_COLUMNS}
        cell[CHOICE] = "" if choice_at is None else cells[choice_at]
        row = _revision_row(cell, line, errors, items=known_items, scales=scales,
                            judged=judged)
        if row is not None:
            grouped.add(row, line)
    grouped.check_numbering()
    errors.raise_if_any()
    return list(grouped.presented.values())


class _Row(NamedTuple):
    """One valid row of the revisions file: one answer of one revision."""

    annotator: str
    item: str
    presentation: int
    position: int | None
    revision: int
    active_ms: int | None
    current: bool
    source: str
    question: str
    value: float | None
    missing: str
    comment: str
    choice: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Judgments:
    """The comparative questions (key → kind, options) and the comparisons' outputs."""

    questions: Mapping[str, tuple[str, Mapping[str, Any]]]
    outputs: Mapping[str, Sequence[str]]

    def read(self, cell: Mapping[str, str], key: str, item: str, line: int,
             errors: Collector) -> tuple[float | None, dict[str, Any] | None] | None:
        """The value and judgment of an answer to a comparative question; None (reported)."""
        raw = unneutralise(cell[CHOICE].strip())
        if not raw:
            if cell["value"].strip():
                errors.add("a value without its judgment (the choice column)", line=line,
                           column=CHOICE)
                return None
            return None, None
        kind, options = self.questions[key]
        try:
            loaded = json.loads(raw)
            value, choice = judgment_clean(kind, options, self.outputs.get(item, ()), loaded)
        except (ValueError, JudgmentError) as exc:  # JSONDecodeError is a ValueError
            why = str(exc) if isinstance(exc, JudgmentError) else "not a judgment in JSON"
            errors.add(f"{why[:120]}", line=line, column=CHOICE)
            return None
        return value, choice


def _revision_row(cell: Mapping[str, str], line: int, errors: Collector, *,
                  items: Collection[str], scales: Mapping[str, set[float]],
                  judged: _Judgments | None = None) -> _Row | None:
    """Check one row's cells, reporting every problem; return the row, or None when any."""
    ok = True
    annotator = unneutralise(cell["annotator"].strip())
    if not PSEUDONYM.fullmatch(annotator):
        errors.add(f"{annotator[:40]!r} is not a pseudonym (A1, A2, …)", line=line,
                   column="annotator")
        ok = False
    item = unneutralise(cell["item"].strip())
    if item not in items:
        errors.add(f"{item[:60]!r} is not an item of the bundle's items.csv", line=line,
                   column="item")
        ok = False
    number = _whole(cell["presentation"], errors, line, "presentation", low=1,
                    high=MAX_PRESENTATION, blank=False)
    position = _whole(cell["position"], errors, line, "position", low=0, high=MAX_POSITION,
                      blank=True)
    revision = _whole(cell["revision"], errors, line, "revision", low=1,
                      high=MAX_PRESENTATION, blank=False)
    active_ms = _whole(cell["active_ms"], errors, line, "active_ms", low=0,
                       high=MAX_ACTIVE_MS, blank=True)
    # INVALID is -1, never a valid value (a False marker would equal position 0).
    ok = ok and INVALID not in (number, position, revision, active_ms)
    current_raw = cell["current"].strip().lower()
    if current_raw not in ("0", "1", "true", "false"):
        errors.add(f"{current_raw[:20]!r} is not a flag (0 or 1)", line=line,
                   column="current")
        ok = False
    source = cell["source"].strip()
    if source not in SOURCES:
        errors.add(f"{source[:20]!r} is not a source ({' or '.join(SOURCES)})", line=line,
                   column="source")
        ok = False
    comparative = judged is not None and cell["question"].strip() in judged.questions
    answer = _answer(cell, line, errors, scales=scales, comparative=comparative)
    choice = None
    if answer is not None and judged is not None and comparative:
        read = judged.read(cell, answer[0], item, line, errors)
        if read is None:
            return None
        value, choice = read
        answer = (answer[0], value, answer[2])
        if value is not None and answer[2]:
            errors.add(f"a judgment and a missing reason ({answer[2]}): one of them is empty",
                       line=line, column="missing")
            return None
    if not ok or answer is None:
        return None
    assert number is not None and revision is not None
    key, value, reason = answer
    return _Row(annotator, item, number, position, revision, active_ms,
                current_raw in ("1", "true"), source, key, value, reason,
                unneutralise(cell["comment"]), choice)


def _answer(cell: Mapping[str, str], line: int, errors: Collector, *,
            scales: Mapping[str, set[float]],
            comparative: bool = False) -> tuple[str, float | None, str] | None:
    """The row's question, value and missing reason, or None when one of them is reported: a
    question of the definition, a value of its scale, a known reason, not both a value and a
    reason."""
    ok = True
    key = cell["question"].strip()
    value: float | None = None
    if key not in scales:
        errors.add(f"{key[:40]!r} is not a question of the bundle's definition "
                   f"({', '.join(scales)})", line=line, column="question")
        ok = False
    elif cell["value"].strip() and not comparative:  # a judgment's value is derived again
        try:
            value = float(cell["value"])
        except ValueError:
            value = None
        if value is None or value not in scales[key]:
            shown = ", ".join(f"{v:g}" for v in sorted(scales[key]))
            errors.add(f"{cell['value'].strip()[:40]!r} is not a value of the question's "
                       f"scale ({shown})", line=line, column="value")
            ok = False
    reason = cell["missing"].strip()
    if reason and reason not in MISSING:
        errors.add(f"{reason[:40]!r} is not a reason for a missing value "
                   f"({' or '.join(MISSING)}, or empty when answered)", line=line,
                   column="missing")
        ok = False
    elif reason and value is not None:
        errors.add(f"a value and a missing reason ({reason}): one of them is empty",
                   line=line, column="missing")
        ok = False
    return (key, value, reason) if ok else None


class _Grouped:
    """The valid rows gathered into presentations and their revisions, with the checks across
    rows: one position per presentation and one presentation per position of an annotator,
    the rows of one revision agreeing, a question answered once per revision."""

    def __init__(self, errors: Collector) -> None:
        self.errors = errors
        self.presented: dict[tuple[str, str, int], Presentation] = {}
        self.revisions: dict[tuple[str, str, int, int], Revision] = {}
        self.positions: dict[tuple[str, int], tuple[str, int, int]] = {}

    def add(self, row: _Row, line: int) -> None:
        group = self._presentation(row, line)
        found = None if group is None else self._revision(group, row, line)
        if found is None:
            return
        if row.question in found.cells:
            self.errors.add(f"question {row.question!r} is answered twice in revision "
                            f"{row.revision} of {row.annotator}'s presentation "
                            f"{row.presentation} of {row.item!r}", line=line,
                            column="question")
            return
        found.cells[row.question] = Cell(row.value, row.missing, row.comment, row.choice)

    def _presentation(self, row: _Row, line: int) -> Presentation | None:
        """The row's presentation (new on its first row), or None when its position differs."""
        annotator, item, number, position = row[:4]
        group = self.presented.get((annotator, item, number))
        if group is None:
            group = self.presented[(annotator, item, number)] = Presentation(
                annotator, item, number, position, line)
            if position is not None:
                earlier = self.positions.setdefault((annotator, position), (item, number, line))
                if earlier[:2] != (item, number):
                    self.errors.add(f"position {position} of {annotator} is already used on "
                                    f"line {earlier[2]}", line=line, column="position")
        elif group.position != position:
            self.errors.add(f"position {position} differs from the position {group.position} "
                            f"of this presentation on line {group.line}", line=line,
                            column="position")
            return None
        return group

    def _revision(self, group: Presentation, row: _Row, line: int) -> Revision | None:
        """The row's revision (new on its first row), or None when it disagrees with it."""
        key = (row.annotator, row.item, row.presentation, row.revision)
        found = self.revisions.get(key)
        if found is None:
            found = self.revisions[key] = Revision(
                row.revision, row.current, row.active_ms, row.source, line)
            group.revisions.append(found)
        elif (found.current, found.active_ms, found.source) != (row.current, row.active_ms,
                                                                row.source):
            self.errors.add(f"current, active_ms or source differ from the same revision's "
                            f"line {found.line}", line=line)
            return None
        return found

    def check_numbering(self) -> None:
        """Sort each presentation's revisions; report numbers other than 1, 2, … and a count
        of current revisions other than one."""
        for group in self.presented.values():
            group.revisions.sort(key=lambda r: r.number)
            numbers = [r.number for r in group.revisions]
            if numbers != list(range(1, len(numbers) + 1)):
                self.errors.add(f"revisions {numbers} of {group.annotator}'s presentation "
                                f"{group.presentation} of {group.item!r}: they are numbered "
                                f"1, 2, …", line=group.line, column="revision")
            currents = [r.number for r in group.revisions if r.current]
            if len(currents) != 1:
                self.errors.add(f"{group.annotator}'s presentation {group.presentation} of "
                                f"{group.item!r} has {len(currents)} current revisions; "
                                f"exactly one", line=group.line, column="current")


# --- the participants file ------------------------------------------------------------------

# Each annotator's state when the bundle was written (`exports.selectors.participant_rows`): what
# the study's pages count as complete, screened out, stopped or revoked. Bundles written before
# this file have none; their annotators replay as complete.
PARTICIPANTS = "participants.csv"
PARTICIPANT_COLUMNS = ("annotator", "assigned", "answered", "completed_at", "screening",
                       "stopped_at", "revoked_at")
SCREENING_STATES = ("", "pending", "passed", "failed")
MAX_ASSIGNED = 10_000_000


@dataclass(frozen=True)
class ParticipantState:
    """One annotator's recorded state: items assigned, and when (if) they finished, were
    stopped or revoked, and how the screening went ("" = the study has none)."""

    assigned: int
    completed_at: datetime | None
    screening: str
    stopped_at: datetime | None
    revoked_at: datetime | None


def _moment(raw: str, errors: Collector, line: int, column: str) -> datetime | None:
    text = raw.strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        errors.add(f"{text[:40]!r} is not a date and time (ISO 8601, e.g. "
                   "2026-11-27T17:00:00+00:00)", line=line, column=column)
        return None
    if moment.tzinfo is None:
        errors.add(f"{text[:40]!r} has no time zone (add +00:00)", line=line, column=column)
        return None
    return moment


def participants_parse(data: bytes, *, filename: str, annotators: Collection[str],
                       max_bytes: int, limits: Limits = DEFAULT_LIMITS,
                       ) -> dict[str, ParticipantState]:
    """Validate a bundle's participants file; return each annotator's state by pseudonym.

    Every row names an annotator of the revisions file (``annotators``) once; ``assigned`` is a
    whole number from 0, ``screening`` one of `SCREENING_STATES`, and the times ISO 8601 with a
    time zone or empty. Raise `InputError` listing every problem.
    """
    errors = Collector(filename)
    text = decode(data, errors, max_bytes=max_bytes)
    grid = None if text is None else read_grid(text, filename=filename, errors=errors,
                                               limits=limits, min_columns=2, unique=True)
    if grid is None:
        errors.raise_if_any()
        return {}
    at = {name: n for n, name in enumerate(grid.header)}
    for name in PARTICIPANT_COLUMNS:
        if name not in at:
            errors.add(f"the required column {name!r} is missing", line=1)
    errors.raise_if_any()
    known = set(annotators)
    out: dict[str, ParticipantState] = {}
    for line, cells in grid.rows:
        cell = {name: cells[at[name]].strip() for name in PARTICIPANT_COLUMNS}
        name = cell["annotator"]
        if name not in known:
            errors.add(f"{name[:40]!r} is not an annotator of the revisions file", line=line,
                       column="annotator")
            continue
        if name in out:
            errors.add(f"{name} is listed twice", line=line, column="annotator")
            continue
        assigned = _whole(cell["assigned"], errors, line, "assigned", low=0, high=MAX_ASSIGNED,
                          blank=False)
        if cell["screening"] not in SCREENING_STATES:
            errors.add(f"screening must be empty or one of {', '.join(SCREENING_STATES[1:])}, "
                       f"not {cell['screening'][:40]!r}", line=line, column="screening")
        moments = {c: _moment(cell[c], errors, line, c)
                   for c in ("completed_at", "stopped_at", "revoked_at")}
        if assigned is not None and assigned != INVALID:
            out[name] = ParticipantState(assigned, moments["completed_at"], cell["screening"],
                                         moments["stopped_at"], moments["revoked_at"])
    errors.raise_if_any()
    return out
