"""Read a long file of comparative judgments: `annotator,items,choice[,question,comment]`.

One row is one judgment of one annotator on one comparison (docs/importing-responses.md,
"Comparative judgments"):

- ``items`` lists the outputs shown, in the order shown, separated by ``|`` (every one an item
  id of the study, not itself a comparison; as many as the question's kind compares:
  `core.comparative.MIN_OUTPUTS` to `MAX_OUTPUTS`);
- ``choice`` is the chosen output or ``tie`` (pairwise), the outputs best to worst separated by
  ``|`` with ``=`` between tied ones (ranking), or ``best|worst`` (best–worst), as
  `core.comparative.judgment_from_text` reads it;
- ``question`` names the comparative question (it may be left out when the study has one);
  ``comment`` is kept; ``strength`` (``slightly`` or ``much``, pairwise) and ``missing``
  (``cant_judge`` or ``skipped``, with an empty choice) are read too, so the judgments export
  reads back; the export's other columns (``item``, ``kind``, ``value``, ``left``,
  ``revision``, ``received_at``) are ignored, ``shown`` is read as ``items``.

The comparison a row judges is the study's comparison of the same *set* of outputs (the first
one, when the design made several), or a new one whose canonical order is the order the file
first lists them in (`JudgmentFile.new`). The stored judgment keeps the order shown; its value
is the index of the chosen output in the comparison's canonical order.

A row repeating an annotator's judgment of the same comparison for the same question is a
duplicate (an error), as a repeated row of the long format without a position. A row without a
choice, a missing reason or a comment is skipped, and the number of such rows is a warning.
Every problem is reported at once, with its line and column.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from core.comparative import (
    MAX_OUTPUTS,
    MIN_OUTPUTS,
    SEPARATOR,
    TIE_MARK,
    JudgmentError,
    judgment_clean,
    judgment_from_text,
)
from core.formats import unneutralise
from core.problems import Collector
from core.responses.model import MAX_ID_LENGTH, MISSING, Cell, _norm, _short
from core.tabular import DEFAULT_LIMITS, Limits, decode, open_text, stream_grid

JUDGMENT_COLUMNS = ("annotator", "items", "choice", "question", "comment", "strength",
                    "missing")
JUDGMENT_REQUIRED = ("annotator", "items", "choice")
JUDGMENT_ALIASES = {"shown": "items"}
# Columns of the judgments export that the import derives again: accepted, not read.
JUDGMENT_IGNORED = ("item", "kind", "value", "left", "revision", "received_at")


@dataclass(frozen=True)
class ComparativeQuestion:
    """A comparative question as the file is checked against it: its kind and options."""

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Judged:
    """One comparison judged by one annotator: its outputs in canonical order, its answers by
    question key."""

    outputs: tuple[str, ...]
    line: int
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class JudgmentAnnotator:
    external_id: str
    line: int  # first appearance in the file
    rows: int = 0
    judged: dict[frozenset[str], Judged] = field(default_factory=dict)


@dataclass
class JudgmentFile:
    """A judgments file read: its annotators in order of first appearance, the output sets it
    judges that the study has no comparison of (canonical order: the first listing), and the
    rows read and skipped."""

    annotators: list[JudgmentAnnotator]
    new: list[tuple[str, ...]]
    rows: int
    skipped: int


def judgments_parse(
    data: bytes | BinaryIO,
    *,
    filename: str,
    outputs: Collection[str],
    questions: Mapping[str, ComparativeQuestion],
    comparisons: Mapping[frozenset[str], Sequence[str]] | None = None,
    existing_annotators: Collection[str] = (),
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
    warnings: list[str] | None = None,
) -> JudgmentFile:
    """Validate a judgments file completely; raise `InputError` listing every problem.

    ``outputs`` are the item ids a comparison may name (the study's items that are not
    comparisons), ``questions`` the study's comparative questions by key, ``comparisons`` the
    study's comparisons by their set of outputs (their canonical order). What is accepted but
    worth saying (rows skipped, columns not read, comparisons to create) is appended to
    ``warnings``. ``data`` is the file's bytes or the file itself, read a chunk at a time.
    """
    errors = Collector(filename)
    if not questions:
        errors.add("this study has no comparative question (pairwise, ranking or best–worst); "
                   "a judgments file answers one")
        errors.raise_if_any()
    text = decode(data, errors, max_bytes=max_bytes) if isinstance(data, bytes) \
        else open_text(data, errors, max_bytes=max_bytes)
    grid = None if text is None else stream_grid(text, filename=filename, errors=errors,
                                                 limits=limits, min_columns=2)
    read = _Reader(errors, outputs=set(outputs), questions=questions,
                   comparisons=comparisons or {})
    if grid is not None and grid.header:
        at = _columns(grid.header, errors, questions)
        if at is not None:
            for line, cells in grid.rows:
                read.row(line, cells, at)
            if warnings is not None:
                warnings += _unread(grid.header)
    existing = set(existing_annotators)
    for annotator in read.annotators.values():
        if annotator.external_id in existing:
            errors.add(f"annotator {annotator.external_id!r} was already imported into this "
                       "study; remove their rows or import them into another study",
                       line=annotator.line, column="annotator")
    if grid is not None and grid.header and read.rows == 0 and not errors:
        errors.add("the file has a header but no rows")
    errors.raise_if_any()
    if warnings is not None:
        if read.skipped:
            lines = ", ".join(str(n) for n in read.skipped_lines)
            more = ", …" if read.skipped > len(read.skipped_lines) else ""
            warnings.append(f"{read.skipped} row{'s' if read.skipped != 1 else ''} without a "
                            f"choice, a missing reason or a comment skipped (line"
                            f"{'s' if read.skipped != 1 else ''} {lines}{more})")
        if read.new:
            count = len(read.new)
            warnings.append(f"{count} comparison{'s' if count != 1 else ''} of outputs this "
                            f"study does not compare yet will be created")
    return JudgmentFile(list(read.annotators.values()), list(read.new.values()), read.rows,
                        read.skipped)


def _columns(header: Sequence[str], errors: Collector,
             questions: Mapping[str, ComparativeQuestion]) -> dict[str, int] | None:
    """Where each role's column is; None (problems recorded) when the file cannot be read."""
    at: dict[str, int] = {}
    ignored: set[str] = set()
    for index, raw in enumerate(header):
        name = _norm(raw).lower()
        role = JUDGMENT_ALIASES.get(name, name)
        if role in JUDGMENT_COLUMNS and role not in at:
            at[role] = index
        elif role in JUDGMENT_COLUMNS or name in ignored:
            errors.add(f"column {_short(raw)!r} appears twice", line=1, column=_short(raw))
        elif name in JUDGMENT_IGNORED:
            ignored.add(name)
        else:
            errors.add(f"unknown column {_short(raw)!r} (expected annotator, items, choice, "
                       "question, comment, strength, missing)", line=1, column=_short(raw))
    for role in JUDGMENT_REQUIRED:
        if role not in at:
            errors.add(f"the required column {role!r} is missing", line=1)
    if "question" not in at and len(questions) > 1:
        errors.add(f"the required column 'question' is missing: this study asks several "
                   f"comparative questions ({', '.join(questions)})", line=1)
    if any(role not in at for role in JUDGMENT_REQUIRED) or (
            "question" not in at and len(questions) > 1):
        return None
    return at


def _unread(header: Sequence[str]) -> list[str]:
    unread = [_norm(h) for h in header if _norm(h).lower() in JUDGMENT_IGNORED]
    if not unread:
        return []
    return [f"columns not read: {', '.join(dict.fromkeys(unread))} (columns of the judgments "
            "export that the import derives again)"]


class _Reader:
    """Read and check the rows one by one, gathering the annotators and their judgments."""

    SKIPPED_LINES = 10  # lines of skipped rows the warning names

    def __init__(self, errors: Collector, *, outputs: set[str],
                 questions: Mapping[str, ComparativeQuestion],
                 comparisons: Mapping[frozenset[str], Sequence[str]]):
        self.errors, self.outputs, self.questions = errors, outputs, questions
        self.comparisons = comparisons
        self.single = next(iter(questions)) if len(questions) == 1 else None
        self.annotators: dict[str, JudgmentAnnotator] = {}
        self.new: dict[frozenset[str], tuple[str, ...]] = {}
        self.seen: dict[tuple[str, frozenset[str], str], int] = {}
        self.rows = 0
        self.skipped = 0
        self.skipped_lines: list[int] = []

    def _cell(self, cells: Sequence[str], at: Mapping[str, int], role: str) -> str:
        return unneutralise(cells[at[role]].strip()) if role in at else ""

    def row(self, line: int, cells: Sequence[str], at: Mapping[str, int]) -> None:
        self.rows += 1
        errors = self.errors
        ok = True
        external = cells[at["annotator"]].strip()
        if not external:
            errors.add("empty annotator id", line=line, column="annotator")
            ok = False
        elif len(external) > MAX_ID_LENGTH:
            errors.add(f"annotator id longer than {MAX_ID_LENGTH} characters", line=line,
                       column="annotator")
            ok = False
        key = _norm(self._cell(cells, at, "question")) or self.single
        question = None if key is None else self.questions.get(key)
        if key is None:
            errors.add(f"empty question (this study's comparative questions: "
                       f"{', '.join(self.questions)})", line=line, column="question")
            ok = False
        elif question is None:
            errors.add(f"{_short(key, 40)!r} is not a comparative question of this study (its "
                       f"comparative questions: {', '.join(self.questions)})", line=line,
                       column="question")
            ok = False
        listed = self._listed(cells[at["items"]], line, question)
        choice_text = self._cell(cells, at, "choice")
        missing = self._cell(cells, at, "missing")
        strength = self._cell(cells, at, "strength")
        comment = self._cell(cells, at, "comment")
        if missing and missing not in MISSING:
            errors.add(f"{_short(missing, 40)!r} is not a reason for a missing judgment "
                       f"({' or '.join(MISSING)}, or empty when judged)", line=line,
                       column="missing")
            ok = False
        elif missing and choice_text:
            errors.add(f"a choice and a missing reason ({missing}): leave one of them empty",
                       line=line, column="missing")
            ok = False
        if listed is None or question is None or not ok:
            return
        assert key is not None
        if not (choice_text or missing or comment):
            self.skipped += 1
            if len(self.skipped_lines) < self.SKIPPED_LINES:
                self.skipped_lines.append(line)
            return
        outputs = frozenset(listed)
        canonical = tuple(self.comparisons.get(outputs, ())) or self.new.get(outputs) \
            or tuple(listed)
        cell = self._judgment(line, question, listed, canonical, choice_text, strength,
                              missing, comment)
        if cell is None:
            return
        earlier = self.seen.setdefault((external, outputs, key), line)
        if earlier != line:
            about = f" (question {key!r})" if len(self.questions) > 1 else ""
            errors.add(f"duplicate row: annotator {external!r} already judged these outputs"
                       f"{about} on line {earlier}", line=line)
            return
        if outputs not in self.comparisons and outputs not in self.new:
            self.new[outputs] = canonical
        annotator = self.annotators.get(external)
        if annotator is None:
            annotator = self.annotators[external] = JudgmentAnnotator(external, line)
        annotator.rows += 1
        judged = annotator.judged.get(outputs)
        if judged is None:
            judged = annotator.judged[outputs] = Judged(canonical, line)
        judged.cells[key] = cell

    def _listed(self, raw: str, line: int, question: ComparativeQuestion | None
                ) -> list[str] | None:
        """The outputs of the ``items`` cell in the order shown, or None (reported)."""
        errors = self.errors
        text = unneutralise(raw.strip())  # the whole cell, as the export neutralised it
        if not text:
            errors.add("empty items: list the outputs shown, separated by |", line=line,
                       column="items")
            return None
        listed = [part.strip() for part in text.split(SEPARATOR)]
        ok = True
        for name in listed:
            if not name:
                errors.add(f"an empty output id in {_short(text, 60)!r}", line=line,
                           column="items")
                ok = False
            elif name not in self.outputs:
                errors.add(f"{_short(name)!r} is not an item id of this study (an output "
                           "a comparison may show)", line=line, column="items")
                ok = False
        if len(set(listed)) != len(listed):
            errors.add(f"an output is listed twice in {_short(text, 60)!r}", line=line,
                       column="items")
            ok = False
        if question is not None and not \
                MIN_OUTPUTS[question.kind] <= len(listed) <= MAX_OUTPUTS[question.kind]:
            errors.add(f"a {question.kind} question compares {MIN_OUTPUTS[question.kind]} to "
                       f"{MAX_OUTPUTS[question.kind]} outputs, not {len(listed)}", line=line,
                       column="items")
            ok = False
        return listed if ok else None

    def _judgment(self, line: int, question: ComparativeQuestion, listed: list[str],
                  canonical: Sequence[str], text: str, strength: str, missing: str,
                  comment: str) -> Cell | None:
        """The answer of one row, or None (reported)."""
        if not text:
            if strength:
                self.errors.add("a strength without a choice", line=line, column="strength")
                return None
            return Cell(None, missing or "skipped", comment)
        kind, options = question.kind, question.options
        tied = [name for name in listed if TIE_MARK in name]
        if kind == "ranking" and tied:
            self.errors.add(f"the output id {_short(tied[0], 40)!r} holds '=', which a "
                            "ranking's choice puts between tied outputs: rename the output to "
                            "import its rankings", line=line, column="items")
            return None
        try:
            if strength and kind != "pairwise":
                raise JudgmentError(f"a {kind} question takes no strength")
            if kind == "pairwise":
                _, choice = judgment_clean(kind, options, listed, {
                    "shown": listed, "pick": text, "strength": strength})
            else:
                _, choice = judgment_from_text(kind, options, listed, text)
            # The value is the chosen output's index in the comparison's canonical order.
            value, choice = judgment_clean(kind, options, canonical, choice)
        except JudgmentError as exc:
            self.errors.add(str(exc), line=line,
                            column="strength" if "strength" in str(exc) else "choice")
            return None
        return Cell(value, "", comment, choice)
