"""The one table of the filtering rules: each rule's name, label, family, settings and the test
that flags an annotator, read by the dashboard's tables, its charts, the annotator page and the
docs' tables (tests/unit/test_rules.py keeps the docs and the rule lists of core.stats equal to
it). Adding a rule is one row here, its function in core.stats and its settings section.

The paper's five (Borovikova et al. 2022, §4; `core.stats.heuristics`) come first, in its order,
then the four beyond it (`core.stats.quality`, docs/statistics/quality.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.stats.heuristics import RULES
from core.stats.quality import QUALITY_RULES


@dataclass(frozen=True)
class Rule:
    """One filtering rule.

    ``family``: ``heuristics`` (the paper's) or ``quality``: the section of the results document
    and of the analysis settings it lives in (its parameters: ``settings.<family>.<name>``).
    ``value`` is what the rule measures per annotator, ``flags`` the comparison with its
    threshold that flags one (``value flags threshold``), as the charts' tooltips say it.
    """

    name: str
    label: str
    family: str
    value: str
    flags: str

    @property
    def settings(self) -> str:
        """The key path of the rule's parameters in the analysis settings."""
        return f"{self.family}.{self.name}"


RULE_TABLE: tuple[Rule, ...] = (
    Rule("slow", "Slow", "heuristics", "mean s", ">"),
    Rule("low_variance", "Low variance", "heuristics", "std", "<"),
    Rule("high_random", "High on random controls", "heuristics", "controls − others", ">"),
    Rule("disagreeable", "Disagreeable", "heuristics", "share", ">"),
    Rule("sentiment", "Sentiment-driven", "heuristics", "std", ">"),
    Rule("too_fast", "Too fast", "quality", "share too fast", ">"),
    Rule("attention", "Attention checks", "quality", "failed checks", "≥"),
    Rule("straight_lining", "Straight-lining", "quality", "longest run", "≥"),
    Rule("duplicate_inconsistency", "Duplicate inconsistency", "quality",
         "share inconsistent", ">"),
)
RULE_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULE_TABLE}


def rule_labels(family: str) -> dict[str, str]:
    """Return {name: label} of one family's rules, in the table's order."""
    return {rule.name: rule.label for rule in RULE_TABLE if rule.family == family}


def rule_tests(family: str) -> dict[str, tuple[str, str]]:
    """Return {name: (value, comparison)} of one family's rules, in the table's order."""
    return {rule.name: (rule.value, rule.flags) for rule in RULE_TABLE if rule.family == family}


if tuple(rule_labels("heuristics")) != RULES or tuple(rule_labels("quality")) != QUALITY_RULES:
    raise ImportError("core.rules.RULE_TABLE lists other rules than core.stats")  # pragma: no cover
