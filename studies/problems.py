"""Input problems reported all at once: file, line, column and what is wrong.

Every importer collects every problem it finds, then raises one `InputError`; commands print it
and exit non-zero, pages show the list, and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
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
    """One or more problems in a user's file; nothing was written."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self, limit: int = 200) -> str:
        lines = [f"{len(self.problems)} problem(s); nothing was imported:"]
        lines += [f"  {p}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"  … and {len(self.problems) - limit} more")
        return "\n".join(lines)


class Collector:
    """Accumulate problems for one file and raise them together."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, message: str, *, line: int | None = None, column: str | int | None = None) -> None:
        self.problems.append(Problem(self.file, line, column, message))

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self) -> None:
        if self.problems:
            raise InputError(self.problems)
