"""Shape a stored results document into the dashboard's tables (pure: no ORM, no Django).

The dashboard reads the document and nothing else, so its query count does not grow with the
study; everything here is plain reshaping of the document's flat records.  The page shows one
question at a time: its functions take the document as it reads for that question
(`core.results.question_view`), so they never mix two questions' records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.settings import LEVELS, RULES

RULE_LABELS = {
    "slow": "Slow",
    "low_variance": "Low variance",
    "high_random": "High on random controls",
    "disagreeable": "Disagreeable",
    "sentiment": "Sentiment-driven",
}
LARGEST_GAPS = 10


@dataclass
class AlphaCell:
    value: float | None
    low: float | None
    high: float | None
    n_items: int
    reason: str = ""


@dataclass
class AlphaRow:
    items: str  # "all" | "simple"
    without: list[str]
    cells: list[AlphaCell | None]  # one per LEVELS


@dataclass
class AlphaTable:
    scale: str
    rows: list[AlphaRow]


@dataclass
class TrustTable:
    scale: str
    items: str
    level: str
    variant: str
    method: str | None
    n_subsets: int
    rows: list[tuple[str, float | None, bool]]  # annotator, coefficient, outlier
    outliers: list[str]
    reason: str = ""

    @property
    def by_name(self) -> dict[str, float | None]:
        return {a: c for a, c, _ in self.rows}


@dataclass
class FlagRow:
    annotator: str
    cells: list[dict[str, Any] | None]  # one per RULES: {value, threshold, flagged}
    style: str = ""
    n_flags: int = 0


@dataclass
class CorrelationTable:
    metrics: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)  # {rules, removed, cells{metric: rec}}


def _by(records: Iterable[Mapping[str, Any]], **match: Any) -> list[Mapping[str, Any]]:
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def scale_names(doc: Mapping[str, Any]) -> list[str]:
    return [s["name"] for s in doc.get("scales", [])]


def question_choices(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return ``(key, label)`` of each question of the document, for the question selector."""
    out = []
    for q in doc.get("questions") or []:
        prompt = (q.get("prompt") or "").strip()
        out.append((q["key"], f"{q['key']}: {prompt}" if prompt else q["key"]))
    return out


def alpha_tables(doc: Mapping[str, Any]) -> list[AlphaTable]:
    """Per scale: rows (all / simple) × (with / without the outliers), columns the four levels."""
    tables = []
    for scale in scale_names(doc):
        records = _by(doc.get("alpha", []), scale=scale)
        keys: list[tuple[str, tuple[str, ...]]] = []
        for r in records:
            key = (r["items"], tuple(r["without"]))
            if key not in keys:
                keys.append(key)
        keys.sort(key=lambda k: (k[0] != "all", len(k[1]) > 0))
        rows = []
        for items, without in keys:
            cells: list[AlphaCell | None] = []
            for level in LEVELS:
                match = [r for r in records if r["items"] == items and tuple(r["without"]) == without
                         and r["level"] == level]
                if not match:
                    cells.append(None)
                    continue
                r = match[0]
                ci = r.get("ci95") or [None, None]
                cells.append(AlphaCell(r.get("value"), ci[0], ci[1], r.get("n_items", 0),
                                       r.get("reason", "")))
            rows.append(AlphaRow(items, list(without), cells))
        tables.append(AlphaTable(scale, rows))
    return tables


def trust_table(doc: Mapping[str, Any], *, scale: str, items: str = "all") -> TrustTable | None:
    match = _by(doc.get("trust", []), scale=scale, items=items)
    if not match:
        return None
    r = match[0]
    outliers = list(r.get("outliers", []))
    rows = [(a, c, a in outliers) for a, c in r.get("coefficients", {}).items()]
    rows.sort(key=lambda row: (row[1] is None, -(row[1] or 0.0), row[0]))
    return TrustTable(scale, items, r.get("level", ""), r.get("variant", ""), r.get("method"),
                      r.get("n_subsets", 0), rows, outliers, r.get("reason", ""))


def duplicates_rows(doc: Mapping[str, Any], *, scale: str) -> list[Mapping[str, Any]]:
    rows = _by(doc.get("duplicates", []), scale=scale)
    return sorted(rows, key=lambda r: (-(r.get("mean_abs_diff") or 0.0), _annotator_key(r["annotator"])))


def timing_rows(doc: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]:
    """Return the pooled record and the per-annotator records (in annotator order)."""
    records = doc.get("timing", [])
    pooled = next((r for r in records if r["annotator"] == "all"), None)
    rows = sorted((r for r in records if r["annotator"] != "all"),
                  key=lambda r: _annotator_key(r["annotator"]))
    return pooled, rows


def flag_rows(doc: Mapping[str, Any]) -> tuple[list[str], list[FlagRow]]:
    """Annotator × rule table of the heuristics, with each annotator's answering style."""
    records = doc.get("heuristics", [])
    rules = [rule for rule in RULES if any(r["rule"] == rule for r in records)]
    styles = {r["annotator"]: r["style"] for r in doc.get("styles", [])}
    cells: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in records:
        cells[r["annotator"]][r["rule"]] = r
    rows = []
    for annotator in doc.get("annotators", []):
        row_cells = [cells[annotator].get(rule) for rule in rules]
        rows.append(FlagRow(annotator, [dict(c) if c else None for c in row_cells],
                            styles.get(annotator, ""),
                            sum(1 for c in row_cells if c and c.get("flagged"))))
    return rules, rows


def correlation_table(doc: Mapping[str, Any]) -> CorrelationTable:
    """Tabulate the correlations as Solomon et al. 2021, table 3 does.

    Rows: the baseline then every combination of rules; columns: metrics.
    """
    records = doc.get("correlations", [])
    metrics = sorted({r["metric"] for r in records})
    grouped: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in records:
        key = tuple(r["rules"])
        row = grouped.setdefault(key, {"rules": list(key), "removed": list(r["removed"]),
                                       "cells": {}})
        row["cells"][r["metric"]] = r
    rows = sorted(grouped.values(), key=lambda row: (len(row["rules"]),
                                                    [RULES.index(x) if x in RULES else 99
                                                     for x in row["rules"]]))
    for row in rows:
        row["ordered"] = [row["cells"].get(m) for m in metrics]
    return CorrelationTable(metrics, rows)


def gap_rows(doc: Mapping[str, Any], *, scale: str, aggregate: str = "mean") -> list[Mapping[str, Any]]:
    rows = _by(doc.get("metric_gaps", []), scale=scale, aggregate=aggregate)
    return sorted(rows, key=lambda r: (r["items"] != "all", r.get("mean_abs_gap") is None,
                                       r.get("mean_abs_gap") or 0.0, r["metric"]))


def largest_gaps(doc: Mapping[str, Any], *, scale: str, aggregate: str = "mean",
                 limit: int = LARGEST_GAPS) -> list[Mapping[str, Any]]:
    rows = [r for r in _by(doc.get("item_gaps", []), scale=scale, aggregate=aggregate)
            if r.get("gap") is not None]
    rows.sort(key=lambda r: (-abs(r["gap"]), r["item"], r["metric"]))
    return rows[:limit]


def weight_table(doc: Mapping[str, Any], *, scale: str) -> tuple[list[str], list[Mapping[str, Any]]]:
    rows = _by(doc.get("error_weights", []), scale=scale)
    features = sorted({f for r in rows for f in (r.get("coefficients") or {})})
    return features, rows


def noise_rows(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(doc.get("noise", []))


def _annotator_key(name: str) -> tuple[int, str]:
    digits = name[1:] if name[:1] == "A" else ""
    return (int(digits), name) if digits.isdigit() else (10**9, name)
