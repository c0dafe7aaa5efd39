"""LLM judges beside the annotators: what a run hands to the analysis (`JudgeInfo`,
`JudgeAnswers`) and the reader of a judge's answers file (docs/judges.md).

A judge's answers are never a person's: they are stored apart from the responses
(the `judges` app) and reach only the analyses that ask for them (issue 27).

The file is long, one row per answer to one question, like the responses' long file:

- scale questions: ``item,value[,question,run,rationale]``; ``item`` an item id of the study
  (not a comparison), ``value`` a value of the question's scale;
- comparative questions: ``items,choice[,question,run,rationale,strength]`` as the comparisons
  long file (`core.responses.comparisons`): ``items`` the outputs in the order the judge saw
  them, joined by ``|`` (the set of one of the study's comparisons), ``choice`` as
  `core.comparative.judgment_from_text` reads it;
- ``question`` may be left out when the study has one question of the row's kind; ``run`` left
  out (or blank) is the run named on the page, the command or the API (``"1"`` by default);
- a file may hold both kinds when it has all the columns: a row is of the kind of its question;
- a ``judge`` column (the judges export's) keeps the rows of the judge being imported and skips
  the others, so that export reads back one judge at a time.

It is read as leniently as the responses: a column it does not know is named in a warning and
skipped, a row without a value (or choice) is skipped and counted; every other problem (a value
outside the scale, an item the study does not have, a row given twice) is an error naming its
line and column, all of them reported at once, and nothing is imported then. The limits are
the table reader's (`core.tabular`: size, columns, field length, encoding).

Example::

    >>> rows = judge_answers_parse(
    ...     b"item,value,run\\ni1,4,1\\ni2,5,1\\ni1,3,2\\n", filename="j.csv", judge="j",
    ...     items={"i1", "i2"}, scales={"q": (1, 2, 3, 4, 5)}, max_bytes=1000).rows
    >>> [(r.run, r.question, r.item, r.value) for r in rows]
    [('1', 'q', 'i1', 4.0), ('1', 'q', 'i2', 5.0), ('2', 'q', 'i1', 3.0)]
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import numpy.typing as npt

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
from core.responses.comparisons import ComparativeQuestion
from core.responses.model import _norm, _short, _Values
from core.tabular import DEFAULT_LIMITS, Limits, decode, open_text, stream_grid

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class JudgeInfo:
    name: str                 # unique per study, e.g. "gpt-4o-mini judge"
    model: str = ""
    prompt: str = ""          # the prompt text or its version label
    version: str = ""
    date: str = ""            # ISO date as given ("" = unknown)
    temperature: float | None = None
    notes: str = ""


@dataclass(frozen=True)
class JudgeAnswers:
    """One run of one judge on one question."""

    judge: str                # JudgeInfo.name
    run: str                  # the run's label ("1", "2", … or as named in the file)
    question: str             # Question.key
    item_ids: tuple[str, ...]  # item external ids (a comparison's id for a comparative question)
    value: FloatArray         # scale questions: the raw answer on the question's scale (nan =
                              # no answer); comparative: the canonical value of
                              # core.comparative (0/1/0.5 for pairwise, …)
    choices: tuple[Mapping[str, Any], ...] = ()  # comparative only: the stored judgment form of
                              # core.comparative (judgment_clean's second value, with "shown"),
                              # one per item_id; () for scale questions
    rationale: tuple[str, ...] = ()  # optional, one per item (may be ())


# The columns a judge's file may have (their roles), and their other names.
COLUMNS = ("item", "value", "items", "choice", "question", "run", "rationale", "strength",
           "judge")
ALIASES = {"shown": "items", "comment": "rationale"}
DEFAULT_RUN = "1"
MAX_NAME = 200     # a judge's name, a run's label (Judge.name, JudgeRun.label)
MAX_RATIONALE = 20_000  # characters of one rationale
SKIPPED_LINES = 10  # lines of skipped rows a warning names


@dataclass(frozen=True)
class Comparison:
    """One comparison of the study as a judge's row is checked against it: its id and its
    outputs in canonical order."""

    item: str
    outputs: tuple[str, ...]


class JudgeRow(NamedTuple):
    """One answer of a judge: its run, question key, item id (a comparison's id for a
    comparative question), value, stored judgment (comparative) and rationale."""

    line: int
    run: str
    question: str
    item: str
    value: float
    choice: dict[str, Any] | None
    rationale: str


@dataclass
class JudgeStream:
    """A judge's file read row by row: its problems (growing while `rows` is iterated), what is
    worth saying (`warnings`, complete once `rows` is exhausted) and its checked rows."""

    errors: Collector
    warnings: list[str]
    rows: Iterator[JudgeRow]
    read: _Reader | None = None

    @property
    def skipped(self) -> int:
        return 0 if self.read is None else self.read.skipped

    def finish(self) -> None:
        """Add the warnings known once every row was read (rows skipped)."""
        if self.read is not None:
            self.warnings += self.read.warnings()


@dataclass
class JudgeFile:
    """A judge's file read whole: its rows in file order, the runs it names in order of first
    appearance, and what is worth saying."""

    rows: list[JudgeRow]
    runs: list[str]
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0


def judge_answers_stream(
    data: bytes | BinaryIO,
    *,
    filename: str,
    judge: str,
    run: str = DEFAULT_RUN,
    items: Collection[str] = (),
    scales: Mapping[str, Sequence[float]] | None = None,
    comparative: Mapping[str, ComparativeQuestion] | None = None,
    comparisons: Mapping[frozenset[str], Comparison] | None = None,
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
) -> JudgeStream:
    """Read a judge's file: its header now, its rows as they are iterated, each checked on its
    own (the checks across rows, a row given twice, are the consumer's: `judge_answers_parse`
    makes them in memory, the PostgreSQL import in SQL).

    ``items`` are the item ids a scale question asks about (the study's items that are not
    comparisons), ``scales`` the scale questions' values by key, ``comparative`` the comparative
    questions by key, ``comparisons`` the study's comparisons by their set of outputs. ``run``
    labels the rows without one; ``judge`` keeps the rows of a ``judge`` column that name it.
    """
    errors = Collector(filename)
    warnings: list[str] = []
    scales = dict(scales or {})
    comparative = dict(comparative or {})
    if not scales and not comparative:
        errors.add("this study has no question yet: add its questions before a judge's answers")
        return JudgeStream(errors, warnings, iter(()))
    problem = label_problem(run)
    if problem:
        errors.add(f"the run's label {problem}", column="run")
        return JudgeStream(errors, warnings, iter(()))
    text = decode(data, errors, max_bytes=max_bytes) if isinstance(data, bytes) \
        else open_text(data, errors, max_bytes=max_bytes)
    grid = None if text is None else stream_grid(text, filename=filename, errors=errors,
                                                 limits=limits, min_columns=2)
    if grid is None or not grid.header:
        return JudgeStream(errors, warnings, iter(()))
    at = _columns(grid.header, errors, warnings, scales=scales, comparative=comparative)
    if at is None:
        return JudgeStream(errors, warnings, iter(()))
    read = _Reader(errors, at, judge=judge.strip(), run=run.strip(), items=set(items),
                   scales=scales, comparative=comparative, comparisons=comparisons or {})

    def rows() -> Iterator[JudgeRow]:
        for line, cells in grid.rows:
            row = read(line, cells)
            if row is not None:
                yield row

    return JudgeStream(errors, warnings, rows(), read)


def judge_answers_parse(data: bytes | BinaryIO, *, filename: str, judge: str, **options: Any
                        ) -> JudgeFile:
    """Read and check a judge's file completely (`judge_answers_stream`'s arguments), a row
    given twice (same run, question and item) included; raise `InputError` listing every
    problem."""
    stream = judge_answers_stream(data, filename=filename, judge=judge, **options)
    rows: list[JudgeRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    runs: dict[str, None] = {}
    for row in stream.rows:
        earlier = seen.setdefault((row.run, row.question, row.item), row.line)
        if earlier != row.line:
            stream.errors.add(duplicate_message(row.run, row.question, row.item, earlier),
                              line=row.line)
            continue
        runs.setdefault(row.run, None)
        rows.append(row)
    if not rows and not stream.errors:
        stream.errors.add("the file holds no answer of this judge" + (
            f" ({stream.skipped} row{'s' if stream.skipped != 1 else ''} skipped)"
            if stream.skipped else ""))
    stream.errors.raise_if_any()
    stream.finish()
    return JudgeFile(rows=rows, runs=list(runs), warnings=stream.warnings,
                     skipped=stream.skipped)


def duplicate_message(run: str, question: str, item: str, earlier: int) -> str:
    """The problem of a row that answers again what an earlier row answered."""
    return (f"duplicate row: run {_short(run, 40)!r} already answers question {question!r} "
            f"about {_short(item)!r} on line {earlier}")


def label_problem(label: str) -> str:
    """Why a run's label (or a judge's name) cannot be stored, or ""."""
    label = label.strip()
    if not label:
        return "is empty"
    if len(label) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    if any(ord(c) < 32 for c in label):
        return "holds a control character"
    return ""


def _columns(header: Sequence[str], errors: Collector, warnings: list[str], *,
             scales: Mapping[str, Any], comparative: Mapping[str, Any]) -> dict[str, int] | None:
    """Where each role's column is; None (problems recorded) when the file cannot be read.

    An unknown column is skipped with a warning; a role given twice is an error.
    """
    at: dict[str, int] = {}
    unknown: list[str] = []
    for index, raw in enumerate(header):
        name = _norm(raw).lower()
        role = ALIASES.get(name, name)
        if role in COLUMNS and role not in at:
            at[role] = index
        elif role in COLUMNS:
            errors.add(f"column {_short(raw)!r} appears twice", line=1, column=_short(raw))
        elif len(unknown) < 20:
            unknown.append(_short(raw, 40) or f"#{index + 1}")
    if unknown:
        more = ", …" if len(header) - len(at) > len(unknown) else ""
        warnings.append(f"columns not read: {', '.join(unknown)}{more} (a judge's file has "
                        "item, value, items, choice, question, run, rationale)")
    scale_file = "item" in at or "value" in at
    compare_file = "items" in at or "choice" in at
    ok = True
    for first, second in (("item", "value"), ("items", "choice")):
        if (first in at) != (second in at):
            missing = second if first in at else first
            errors.add(f"the column {missing!r} is missing (a judge's file has "
                       f"{first},{second} columns)", line=1)
            ok = False
    if not scale_file and not compare_file:
        errors.add("the required columns are missing: item,value for scale questions, "
                   "items,choice for comparative ones", line=1)
        return None
    # A file of both kinds (the judges export) is read row by row: only a file of one kind
    # the study does not ask is refused whole.
    if scale_file and not compare_file and not scales:
        errors.add("this study has no scale question: answer its comparative questions with "
                   "items,choice columns", line=1)
        ok = False
    if compare_file and not scale_file and not comparative:
        errors.add("this study has no comparative question: answer its scale questions with "
                   "item,value columns", line=1)
        ok = False
    if "question" not in at:
        for kind, asked, here in (("scale", scales, scale_file),
                                  ("comparative", comparative, compare_file)):
            if here and len(asked) > 1:
                errors.add(f"the required column 'question' is missing: this study asks "
                           f"several {kind} questions ({', '.join(asked)})", line=1)
                ok = False
    return at if ok else None


class _Reader:
    """Read and check the rows one by one (the hot loop of a large file: lookups once)."""

    def __init__(self, errors: Collector, at: Mapping[str, int], *, judge: str, run: str,
                 items: set[str], scales: Mapping[str, Sequence[float]],
                 comparative: Mapping[str, ComparativeQuestion],
                 comparisons: Mapping[frozenset[str], Comparison]):
        self.errors, self.at, self.judge, self.run = errors, at, judge, run
        self.items, self.comparative, self.comparisons = items, comparative, comparisons
        self.values = {key: _Values(values, None) for key, values in scales.items()}
        self.single_scale = next(iter(scales)) if len(scales) == 1 else None
        self.single_comparative = next(iter(comparative)) if len(comparative) == 1 else None
        self.shown = ", ".join([*scales, *comparative])
        self.parsed: dict[tuple[str, str], float | None] = {}
        self.labels: dict[str, str] = {}
        self.skipped = 0
        self.skipped_lines: list[int] = []
        self.other_judges = 0

    def cell(self, cells: Sequence[str], role: str) -> str:
        index = self.at.get(role)
        return "" if index is None else unneutralise(cells[index].strip())

    def skip(self, line: int) -> None:
        self.skipped += 1
        if len(self.skipped_lines) < SKIPPED_LINES:
            self.skipped_lines.append(line)

    def warnings(self) -> list[str]:
        out = []
        if self.other_judges:
            out.append(f"{self.other_judges} row{'s' if self.other_judges != 1 else ''} of "
                       "other judges skipped (the judge column names another judge)")
        if self.skipped:
            lines = ", ".join(str(n) for n in self.skipped_lines)
            more = ", …" if self.skipped > len(self.skipped_lines) else ""
            plural = "s" if self.skipped != 1 else ""
            out.append(f"{self.skipped} row{plural} without a value or a choice skipped "
                       f"(line{plural} {lines}{more})")
        return out

    def __call__(self, line: int, cells: Sequence[str]) -> JudgeRow | None:
        errors = self.errors
        if "judge" in self.at:
            named = _norm(self.cell(cells, "judge"))
            if named and named != self.judge:
                self.other_judges += 1
                return None
        run = self.cell(cells, "run") or self.run
        ok = True
        if run not in self.labels:
            problem = label_problem(run)
            if problem:
                errors.add(f"the run's label {problem}", line=line, column="run")
                ok = False
            elif len(self.labels) < 100_000:
                self.labels[run] = run
        key = _norm(self.cell(cells, "question"))
        scale_cells = self.cell(cells, "item"), self.cell(cells, "value")
        compare_cells = self.cell(cells, "items"), self.cell(cells, "choice")
        if not key:
            # The kind of the row: the one whose cells it fills (a scale row when it fills both).
            scale_row = any(scale_cells) or not any(compare_cells)
            key = (self.single_scale if scale_row else self.single_comparative) or ""
            if not key:
                errors.add(f"empty question (this study's questions: {self.shown})", line=line,
                           column="question")
                return None
        rationale = self.cell(cells, "rationale")
        if len(rationale) > MAX_RATIONALE:
            errors.add(f"the rationale is {len(rationale)} characters long; the limit is "
                       f"{MAX_RATIONALE}", line=line, column="rationale")
            ok = False
        if key in self.values:
            row = self._scale(line, key, run, *scale_cells, rationale)
        elif key in self.comparative:
            row = self._comparative(line, key, run, *compare_cells, self.cell(cells, "strength"),
                                    rationale)
        else:
            errors.add(f"{_short(key, 40)!r} is not a question of this study (its questions: "
                       f"{self.shown})", line=line, column="question")
            return None
        return row if ok else None

    def _scale(self, line: int, key: str, run: str, item: str, raw: str, rationale: str
               ) -> JudgeRow | None:
        errors = self.errors
        if "item" not in self.at:
            errors.add(f"{key!r} is a scale question: its rows need the item and value "
                       "columns", line=line, column="question")
            return None
        item = _norm(item)
        ok = True
        if not item:
            errors.add("empty item id", line=line, column="item")
            ok = False
        elif item not in self.items:
            errors.add(f"{_short(item)!r} is not an item id of this study (an item, not a "
                       "comparison)", line=line, column="item")
            ok = False
        if not raw:
            if ok:
                self.skip(line)
            return None
        value = self.parsed.get((key, raw))
        if value is None:
            value = self.values[key].parse(raw, errors, line, "value")
            if value is None:
                return None
            if len(self.parsed) < 100_000:
                self.parsed[(key, raw)] = value
        return JudgeRow(line, run, key, item, value, None, rationale) if ok else None

    def _comparative(self, line: int, key: str, run: str, listed_text: str, text: str,
                     strength: str, rationale: str) -> JudgeRow | None:
        errors = self.errors
        question = self.comparative[key]
        if "items" not in self.at:
            errors.add(f"{key!r} is a {question.kind} question: its rows need the items and "
                       "choice columns", line=line, column="question")
            return None
        if not listed_text:
            errors.add("empty items: list the outputs shown, separated by |", line=line,
                       column="items")
            return None
        listed = [part.strip() for part in listed_text.split(SEPARATOR)]
        if not all(listed) or len(set(listed)) != len(listed):
            errors.add(f"the outputs {_short(listed_text, 60)!r} must be ids separated by |, "
                       "each once", line=line, column="items")
            return None
        kind = question.kind
        if not MIN_OUTPUTS[kind] <= len(listed) <= MAX_OUTPUTS[kind]:
            errors.add(f"a {kind} question compares {MIN_OUTPUTS[kind]} to {MAX_OUTPUTS[kind]} "
                       f"outputs, not {len(listed)}", line=line, column="items")
            return None
        comparison = self.comparisons.get(frozenset(listed))
        if comparison is None:
            errors.add(f"no comparison of this study shows the outputs "
                       f"{_short(listed_text, 60)!r} (a judge answers the study's own "
                       "comparisons; build them on the comparisons page first)", line=line,
                       column="items")
            return None
        if not text:
            if strength:
                errors.add("a strength without a choice", line=line, column="strength")
            else:
                self.skip(line)
            return None
        if kind == "ranking" and any(TIE_MARK in name for name in listed):
            errors.add("an output id holds '=', which a ranking's choice puts between tied "
                       "outputs", line=line, column="items")
            return None
        try:
            if strength and kind != "pairwise":
                raise JudgmentError(f"a {kind} question takes no strength")
            if kind == "pairwise":
                _, choice = judgment_clean(kind, question.options, listed,
                                           {"shown": listed, "pick": text, "strength": strength})
            else:
                _, choice = judgment_from_text(kind, question.options, listed, text)
            # As a person's: the value is the chosen output's index in the canonical order.
            value, choice = judgment_clean(kind, question.options, comparison.outputs, choice)
        except JudgmentError as exc:
            errors.add(str(exc), line=line,
                       column="strength" if "strength" in str(exc) else "choice")
            return None
        return JudgeRow(line, run, key, comparison.item, value, choice, rationale)
