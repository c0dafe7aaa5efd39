"""Input problems reported all at once: file, line, column and what is wrong.

Every importer and reader collects every problem it finds, then raises one `InputError`; commands
print it and exit non-zero, pages show the list, and nothing is written. One problem renders as
`file:line: column C: message` (`items.csv:4: column id: id 'a' already used on line 2`), with
the parts that do not apply left out.

A report keeps the first `MAX_PROBLEMS` problems and counts the rest (`… and N more`): a file
with a million bad lines must not produce a million-line page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_PROBLEMS = 200


@dataclass(frozen=True, order=True)
class Problem:
    """One problem of an input file; `line` is 1-based, `column` a 1-based number or a name."""

    file: str
    line: int | None
    column: str | int | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.column not in (None, ""):
            where += f": column {self.column}"
        return f"{where}: {self.message}"


class InputError(ValueError):
    """One or more problems in a user's input; nothing was written.

    `problems` holds at most `MAX_PROBLEMS` problems, in the order they were found; `omitted`
    counts those left out.
    """

    def __init__(self, problems: Iterable[Problem], *, omitted: int = 0):
        problems = list(problems)
        self.problems = problems[:MAX_PROBLEMS]
        self.omitted = omitted + len(problems) - len(self.problems)
        super().__init__(self.render())

    @property
    def count(self) -> int:
        """Return the number of problems found, listed or not."""
        return len(self.problems) + self.omitted

    def render(self, limit: int = MAX_PROBLEMS) -> str:
        """Return the report: a count line, then one indented line per problem."""
        shown = self.problems[:limit]
        lines = [f"{self.count} problem(s); nothing was imported:"]
        lines += [f"  {p}" for p in shown]
        if self.count > len(shown):
            lines.append(f"  … and {self.count - len(shown)} more")
        return "\n".join(lines)


class Collector:
    """Accumulate the problems of one file (or of several, naming each) and raise them together.

    Only the first `limit` problems are kept; later ones are counted, so collecting stays cheap
    however broken the input is.
    """

    def __init__(self, file: str, *, limit: int = MAX_PROBLEMS):
        self.file = file
        self.limit = limit
        self.problems: list[Problem] = []
        self.omitted = 0

    def add(self, message: str, *, line: int | None = None, column: str | int | None = None,
            file: str | None = None) -> None:
        """Record a problem of this collector's file (or of `file`)."""
        if len(self.problems) < self.limit:
            self.problems.append(Problem(self.file if file is None else file, line, column,
                                         message))
        else:
            self.omitted += 1

    def extend(self, other: Collector | InputError | Iterable[Problem]) -> None:
        """Append the problems of another collector or error (or a list), keeping the cap."""
        omitted = 0
        if isinstance(other, (Collector, InputError)):
            problems: Iterable[Problem] = other.problems
            omitted = other.omitted
        else:
            problems = other
        for problem in problems:
            if len(self.problems) < self.limit:
                self.problems.append(problem)
            else:
                self.omitted += 1
        self.omitted += omitted

    @property
    def count(self) -> int:
        """Return the number of problems found, kept or not."""
        return len(self.problems) + self.omitted

    def __bool__(self) -> bool:
        return self.count > 0

    def raise_if_any(self) -> None:
        """Raise one `InputError` with every problem collected, if there is any."""
        if self:
            raise InputError(self.problems, omitted=self.omitted)
