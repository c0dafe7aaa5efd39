"""Read a file of system-level metric scores: one `system,metric,value` row per system and metric.

A metric that scores whole systems rather than items (a corpus BLEU, an official leaderboard
score) is compared with the humans' system scores by the systems analysis (docs/systems.md).
The file is a CSV (or TSV, or semicolon-separated) table with the three columns, named in any
case and with any surrounding spaces:

    system,metric,value
    sys-A,BLEU,31.2
    sys-B,BLEU,28.9

Every problem is named at once, with its line and column: a missing column, an unknown one, an
empty system or metric, a value that is not a finite number, a (system, metric) given twice
(naming the line of its first use), a name over 200 characters or with an invisible character.
A system that no item of the study names is not an error (a leaderboard lists more systems than
a study rates): its rows are skipped, each with a warning.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from core.formats import unneutralise
from core.items import label_problem
from core.problems import Collector
from core.tabular import DEFAULT_LIMITS, Limits, decode, read_grid

COLUMNS = ("system", "metric", "value")


@dataclass(frozen=True)
class SystemScoreRow:
    """One valid row: `line` is where it is in the file."""

    line: int
    system: str
    metric: str
    value: float


@dataclass
class SystemScores:
    """A file's valid rows of known systems, and the warnings of the rows skipped."""

    rows: list[SystemScoreRow]
    warnings: Collector

    @property
    def metrics(self) -> list[str]:
        """The metrics the file scores, in the order of their first row."""
        return list(dict.fromkeys(row.metric for row in self.rows))


def system_scores_parse(data: bytes, *, filename: str, systems: Collection[str],
                        max_bytes: int, limits: Limits = DEFAULT_LIMITS) -> SystemScores:
    """Validate a system scores file completely; return its rows or raise `InputError`.

    `systems` are the systems the study's items name; a row of another system is skipped with a
    warning. A file whose every row is skipped is an error (it would change nothing).

    >>> parsed = system_scores_parse(b" System ,METRIC,Value\\nA,bleu,0.5\\nZ,bleu,1\\n",
    ...                              filename="s.csv", systems={"A"}, max_bytes=1000)
    >>> [(r.system, r.metric, r.value) for r in parsed.rows], parsed.warnings.count
    ([('A', 'bleu', 0.5)], 1)
    """
    errors = Collector(filename)
    warnings = Collector(filename)
    text = decode(data, errors, max_bytes=max_bytes)
    grid = None if text is None else read_grid(text, filename=filename, errors=errors,
                                               limits=limits, min_columns=3)
    if grid is None:
        if not errors:
            errors.add("the file is empty: expected the header system,metric,value")
        errors.raise_if_any()
        raise AssertionError("unreachable: raise_if_any raised")
    header = [name.strip().lower() for name in grid.header]
    at: dict[str, int] = {}
    for index, name in enumerate(header):
        if name not in COLUMNS:
            errors.add(f"unknown column {grid.header[index][:60]!r} (expected system, metric, "
                       "value)", line=1, column=grid.header[index][:60])
        elif name in at:
            errors.add(f"column {name!r} appears twice", line=1, column=name)
        else:
            at[name] = index
    for name in COLUMNS:
        if name not in at:
            errors.add(f"the required column {name!r} is missing", line=1)
    errors.raise_if_any()
    if not grid.rows:
        errors.add("the file has a header but no scores")
    known = set(systems)
    seen: dict[tuple[str, str], int] = {}
    rows: list[SystemScoreRow] = []
    for line, cells in grid.rows:
        if len(cells) < len(header):
            cells = cells + [""] * (len(header) - len(cells))
        system = unneutralise(cells[at["system"]].strip())
        metric = unneutralise(cells[at["metric"]].strip())
        raw = cells[at["value"]].strip()
        ok = True
        for name, value in (("system", system), ("metric", metric)):
            if not value:
                errors.add(f"empty {name}", line=line, column=name)
                ok = False
            elif (problem := label_problem(value, name)) is not None:
                errors.add(problem, line=line, column=name)
                ok = False
        number = _number(raw)
        if number is None:
            errors.add(f"{raw[:40]!r} is not a finite number" if raw else "empty value",
                       line=line, column="value")
            ok = False
        if not ok:
            continue
        first = seen.setdefault((system, metric), line)
        if first != line:
            errors.add(f"system {system!r} and metric {metric!r} already have a value on line "
                       f"{first}", line=line, column="system")
            continue
        if system not in known:
            warnings.add(f"system {system!r} is named by no item of the study: skipped",
                         line=line, column="system")
            continue
        assert number is not None
        rows.append(SystemScoreRow(line=line, system=system, metric=metric, value=number))
    if not errors and grid.rows and not rows:
        errors.add("no row names a system of the study's items (their systems: "
                   f"{', '.join(sorted(known)[:20]) or 'none'}): nothing to import")
    errors.raise_if_any()
    return SystemScores(rows=rows, warnings=warnings)


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
