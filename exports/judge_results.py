"""The `judge_results` export (docs/exports.md): the results document's ``judges`` section, one
row per judge × question × scale with its numbers flattened into columns (the per-annotator
lists and the plot stay in the results JSON), as CSV or JSON Lines, streamed like every export
of `exports.services` (which calls this writer and counts its rows). The judges' answers
themselves are another export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from core.formats import csv_chunks, jsonl_chunks

Tally = Callable[[str, Iterable[Any]], Iterator[Any]]

# (column, path in the record): the record of docs/results.md, "Judges", flattened.
_PATHS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("judge", ("judge",)), ("question", ("question",)), ("scale", ("scale",)),
    ("kind", ("kind",)), ("level", ("level",)), ("runs", ("runs",)), ("items", ("items",)),
    ("passed", ("alt_test", "passed")), ("winning_rate", ("alt_test", "winning_rate")),
    ("rho", ("alt_test", "rho")), ("epsilon", ("alt_test", "epsilon")),
    ("q", ("alt_test", "q")), ("metric", ("alt_test", "metric")),
    ("annotators", ("alt_test", "annotators")), ("reason", ("alt_test", "reason")),
    *((f"{name}{suffix}", ("correlations", name, part))
      for name in ("pearson", "spearman", "kendall")
      for suffix, part in (("", "value"), ("_low", "low"), ("_high", "high"))),
    ("correlation_items", ("correlations", "items")),
    ("majority_match", ("majority_match", "value")),
    ("majority_match_low", ("majority_match", "low")),
    ("majority_match_high", ("majority_match", "high")),
    ("majority_comparisons", ("majority_match", "comparisons")),
    ("alpha_humans", ("alpha", "humans")), ("alpha_judge_mean", ("alpha", "judge_mean")),
    ("alpha_humans_mean", ("alpha", "humans_mean")),
    ("alpha_replaced_mean", ("alpha", "replaced_mean")),
    ("replaced_up", ("alpha", "replaced_up")), ("replaced_down", ("alpha", "replaced_down")),
    ("self_consistency_alpha", ("self_consistency", "alpha")),
    ("self_consistency_runs", ("self_consistency", "runs")),
    ("first_share", ("position_bias", "first_share")),
    ("first_share_low", ("position_bias", "low")),
    ("first_share_high", ("position_bias", "high")),
    ("first_share_p", ("position_bias", "p")),
    ("humans_first_share", ("position_bias", "humans_first_share")),
    ("order_consistency", ("order_consistency", "share")),
    ("order_pairs", ("order_consistency", "pairs")),
    ("systems_tau", ("systems", "kendall_tau", "value")),
    ("systems_tau_low", ("systems", "kendall_tau", "low")),
    ("systems_tau_high", ("systems", "kendall_tau", "high")),
    ("systems_pairwise_accuracy", ("systems", "pairwise_accuracy")),
    ("systems", ("systems", "systems")),
)
JUDGE_RESULT_COLUMNS = ("judge", "question", "scale", "decision",
                        *(name for name, _ in _PATHS if name not in ("judge", "question",
                                                                      "scale")),
                        "with_judges")


def _at(record: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = record
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return None if isinstance(node, (Mapping, list)) else node


def decision_text(record: Mapping[str, Any]) -> str:
    """The decision as the dashboard words it (Calderon et al. 2025's test at ε)."""
    test = record.get("alt_test")
    test = test if isinstance(test, Mapping) else {}
    epsilon = test.get("epsilon")
    at = f" at ε = {epsilon:g}" if isinstance(epsilon, (int, float)) else ""
    if test.get("passed") is True:
        return f"may replace an annotator of this study{at}"
    if test.get("passed") is False:
        return f"may not replace an annotator of this study{at}"
    return f"not tested: {test.get('reason') or 'no reason given'}"


def with_judges_label(document: Mapping[str, Any]) -> str:
    """"with judges" when the run analysed the judges as annotators, else ""."""
    settings = document.get("settings")
    asked = isinstance(settings, Mapping) and settings.get("judges_as_annotators") is True
    return "with judges" if asked or document.get("judge_annotators") else ""


def judge_result_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``judges`` records of the document as flat rows (JUDGE_RESULT_COLUMNS), in its order."""
    records = document.get("judges")
    label = with_judges_label(document)
    out = []
    for r in records if isinstance(records, list) else []:
        if not isinstance(r, Mapping):
            continue
        row = {name: _at(r, path) for name, path in _PATHS}
        row["decision"] = decision_text(r)
        row["with_judges"] = label
        out.append({c: row.get(c) for c in JUDGE_RESULT_COLUMNS})
    return out


def judge_results_chunks(document: Mapping[str, Any], fmt: str, tally: Tally) -> Iterator[bytes]:
    """The judge_results export: the section's records as rows (CSV cells neutralised)."""
    rows = tally("judge_results", judge_result_rows(document))
    if fmt == "jsonl":
        return jsonl_chunks(rows)
    # every cell through core.formats' writer: a judge named "=HYPERLINK(...)" is neutralised
    return csv_chunks(JUDGE_RESULT_COLUMNS, ([r[c] for c in JUDGE_RESULT_COLUMNS] for r in rows))
