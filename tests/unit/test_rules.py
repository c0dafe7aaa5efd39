"""The one table of the filtering rules (core.rules) is the one the code and the docs follow."""

from __future__ import annotations

from pathlib import Path

from core.rules import RULE_BY_NAME, RULE_TABLE, rule_labels, rule_tests
from core.stats.heuristics import RULES
from core.stats.quality import QUALITY_RULES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "statistics"


def test_it_lists_the_rules_of_core_stats_in_their_order():
    assert tuple(rule_labels("heuristics")) == RULES
    assert tuple(rule_labels("quality")) == QUALITY_RULES
    assert [r.name for r in RULE_TABLE] == [*RULES, *QUALITY_RULES]
    assert RULE_BY_NAME["too_fast"].settings == "quality.too_fast"


def test_every_rule_has_a_label_a_value_and_a_comparison():
    for rule in RULE_TABLE:
        assert rule.label and rule.label[0].isupper() and rule.value, rule
        assert rule.flags in {">", "<", "≥", "≤"}, rule
    assert rule_tests("heuristics")["low_variance"] == ("std", "<")


def test_the_method_pages_describe_every_rule_under_its_name_or_label():
    # heuristics.md: a table row per rule, by name; quality.md: a section per rule, by label
    heuristics = (DOCS / "heuristics.md").read_text(encoding="utf-8")
    for name in rule_labels("heuristics"):
        assert f"| `{name}` |" in heuristics, name
    quality = (DOCS / "quality.md").read_text(encoding="utf-8")
    for label in rule_labels("quality").values():
        assert f"\n## {label}\n" in quality, label
