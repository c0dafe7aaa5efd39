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
from functools import cached_property
from typing import Any

from core.results import LARGEST_GAPS
from core.rules import rule_labels
from core.settings import LEVELS, RULES

RULE_LABELS = rule_labels("heuristics")  # the one table of the rules: core.rules
BASELINE = "Baseline (no filter)"


def rule_name(rule: str) -> str:
    """Return a rule's readable name ("Low variance"); an unknown rule keeps its key."""
    return RULE_LABELS.get(rule) or QUALITY_RULE_LABELS.get(rule) or rule.replace("_", " ")


def rule_set_name(rules: Iterable[str]) -> str:
    """Return the one name of a set of rules, as tables, charts and chart data show it: the
    rules' readable names in the paper's order, joined by " + " ("Low variance +
    Sentiment-driven"); the empty set is the baseline."""
    order = {rule: n for n, rule in enumerate((*RULES, *QUALITY_RULE_LABELS))}
    names = sorted({str(r) for r in rules}, key=lambda r: (order.get(r, len(order)), r))
    return " + ".join(rule_name(r) for r in names) or BASELINE


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
    mc_error: Mapping[str, float | None] = field(default_factory=dict)  # sampled only
    samples_wanted: int | None = None  # the trust_samples asked (sampled only)
    budget_s: float | None = None  # the time limit that reduced the samples

    @cached_property
    def by_name(self) -> dict[str, float | None]:
        # Built once: the template looks one annotator up per row of the trust table.
        return {a: c for a, c, _ in self.rows}

    @cached_property
    def shown(self) -> dict[str, str]:
        """Each annotator's coefficient as the page shows it: 3 decimals, and for a sampled
        estimate ``± `` its Monte-Carlo standard error (a dash where there is none)."""
        out = {}
        for a, c, _ in self.rows:
            if c is None:
                out[a] = "—"
                continue
            text = f"{c:.3f}".replace("-0.000", "0.000")
            err = self.mc_error.get(a)
            out[a] = f"{text} ± {err:.3f}" if self.method == "sampled" and err is not None else text
        return out

    @cached_property
    def parts(self) -> dict[str, tuple[str, str]]:
        """``shown`` cut in two, the coefficient and its ``± error`` ("" for none), so that a
        narrow screen can put the error under the value."""
        return {a: (text.split(" ± ")[0], text.split(" ± ")[1] if " ± " in text else "")
                for a, text in self.shown.items()}

    @property
    def reduced(self) -> bool:
        """Whether fewer subsets were drawn than asked, to stay within the time limit."""
        return (self.method == "sampled" and self.samples_wanted is not None
                and self.n_subsets < self.samples_wanted)


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
    outlying = set(outliers)
    rows = [(a, c, a in outlying) for a, c in r.get("coefficients", {}).items()]
    rows.sort(key=lambda row: (row[1] is None, -(row[1] or 0.0), row[0]))
    return TrustTable(scale, items, r.get("level", ""), r.get("variant", ""), r.get("method"),
                      r.get("n_subsets", 0), rows, outliers, r.get("reason", ""),
                      mc_error=r.get("mc_error") or {}, samples_wanted=r.get("samples_wanted"),
                      budget_s=(doc.get("settings") or {}).get("trust_budget_s"))


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
    # A stored document (`concord.results/3`) keeps the largest gaps of each metric; a full
    # one, or one before /3, every item's.
    section = "item_gaps" if isinstance(doc.get("item_gaps"), list) else "largest_gaps"
    rows = [r for r in _by(doc.get(section, []), scale=scale, aggregate=aggregate)
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


# --------------------------------------------------------------------------- quality sections

QUALITY_RULE_LABELS = rule_labels("quality")
COMPETENCE_LABELS = {"dawid_skene": "Dawid–Skene", "mace": "MACE"}


@dataclass
class RankRow:
    annotator: str
    trust: float | None
    trust_rank: int | None
    competence: dict[str, float | None]  # by method
    ranks: dict[str, int | None]  # by method
    quality: list[Mapping[str, Any] | None]  # one per quality rule shown
    flags: list[str]  # every rule (paper's and new) that flags the annotator, as labels
    mean_rank: float | None = None

    @property
    def methods(self) -> list[tuple[float | None, int | None]]:
        return [(self.competence.get(m), self.ranks.get(m)) for m in COMPETENCE_LABELS]


@dataclass
class RankTable:
    scale: str
    n: int
    rules: list[str]  # quality rules with records
    rule_labels: list[str]
    rows: list[RankRow]
    models: list[Mapping[str, Any]]  # the competence fits of this scale


def rank_table(doc: Mapping[str, Any], *, scale: str) -> RankTable | None:
    """Rank the annotators by trust, Dawid–Skene and MACE on one scale, with every rule's flag.

    Rows come most suspicious first: most flags, then the worst mean rank over the methods.
    """
    names = list(doc.get("annotators", []))
    if not names:
        return None
    trust = next(iter(_by(doc.get("trust", []), scale=scale, items="all")), {})
    coefficients = trust.get("coefficients") or {}
    trust_ranks = trust.get("ranks") or {}
    competence = _by(doc.get("competence", []), scale=scale)
    if not competence and not coefficients:
        return None
    quality = doc.get("quality", [])
    rules = [r for r in QUALITY_RULE_LABELS if any(q["rule"] == r for q in quality)]
    cells: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for q in quality:
        cells[q["annotator"]][q["rule"]] = q
    flagged = _rank_flags(doc.get("heuristics", []), quality, trust)
    by_annotator: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for c in competence:  # one pass, not one per annotator (quadratic at thousands)
        by_annotator[c["annotator"]].append(c)
    rows = [_rank_row(name, coefficients.get(name), trust_ranks.get(name), by_annotator[name],
                      [cells[name].get(r) for r in rules], flagged[name]) for name in names]
    rows.sort(key=lambda r: (-len(r.flags), -(r.mean_rank or 0.0), _annotator_key(r.annotator)))
    # The ranks are out of every analysed annotator, also when the page shows some of them.
    total = (doc.get("counts") or {}).get("annotators")
    return RankTable(scale, total if isinstance(total, int) else len(names), rules, [QUALITY_RULE_LABELS[r] for r in rules], rows,
                     _by(doc.get("competence_models", []), scale=scale))


def _rank_flags(heuristics: Iterable[Mapping[str, Any]], quality: Iterable[Mapping[str, Any]],
                trust: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every rule that flags each annotator, as labels: the paper's rules, then the quality
    rules, then trust."""
    flagged: dict[str, list[str]] = defaultdict(list)
    for h in heuristics:
        if h.get("flagged"):
            flagged[h["annotator"]].append(RULE_LABELS.get(h["rule"], h["rule"]))
    for q in quality:
        if q.get("flagged"):
            flagged[q["annotator"]].append(QUALITY_RULE_LABELS.get(q["rule"], q["rule"]))
    if trust.get("outliers"):
        for name in trust["outliers"]:
            flagged[name].append("Trust outlier")
    return flagged


def _rank_row(name: str, trust: float | None, trust_rank: int | None,
              competence: Iterable[Mapping[str, Any]], quality: list[Mapping[str, Any] | None],
              flags: list[str]) -> RankRow:
    """One annotator's row: their competence and rank by each method, and their mean rank over
    trust and the methods."""
    comp: dict[str, float | None] = {m: None for m in COMPETENCE_LABELS}
    ranks: dict[str, int | None] = {m: None for m in COMPETENCE_LABELS}
    for c in competence:
        comp[c["method"]] = c.get("competence")
        ranks[c["method"]] = c.get("rank")
    known = [r for r in [trust_rank, *ranks.values()] if r is not None]
    return RankRow(name, trust, trust_rank, comp, ranks, quality, flags,
                   sum(known) / len(known) if known else None)


def _intervals(doc: Mapping[str, Any], table: str) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    out = {}
    for r in doc.get("correlation_intervals", []):
        if r.get("table") != table:
            continue
        key = (tuple(r.get("rules", [])), r.get("set"), r.get("style"), r.get("filtered"),
               r["metric"])
        out[key] = r
    return out


def attach_intervals(table: CorrelationTable, doc: Mapping[str, Any]) -> CorrelationTable:
    """Give every cell of the paper's correlation table its bootstrap interval (``ci``)."""
    intervals = _intervals(doc, "correlations")
    for row in table.rows:
        row["intervals"] = [intervals.get((tuple(row["rules"]), None, None, None, m))
                            for m in table.metrics]
        row["pairs"] = list(zip(row["ordered"], row["intervals"], strict=True))
    return table


def quality_correlation_table(doc: Mapping[str, Any]) -> CorrelationTable:
    """The correlations with each new rule alone and every rule together, with intervals."""
    records = doc.get("quality_correlations", [])
    metrics = sorted({r["metric"] for r in records})
    intervals = _intervals(doc, "quality_correlations")
    grouped: dict[str, dict[str, Any]] = {}
    for r in records:
        row = grouped.setdefault(r["set"], {"set": r["set"], "rules": list(r["rules"]),
                                            "removed": list(r["removed"]), "cells": {}})
        row["cells"][r["metric"]] = r
    rows = sorted(grouped.values(), key=lambda row: (row["set"] == "all",
                                                    list(QUALITY_RULE_LABELS).index(row["set"])
                                                    if row["set"] in QUALITY_RULE_LABELS else 99))
    for row in rows:
        row["label"] = ("All rules together" if row["set"] == "all"
                        else QUALITY_RULE_LABELS.get(row["set"], row["set"]))
        row["pairs"] = [(row["cells"].get(m), intervals.get((tuple(row["rules"]), row["set"],
                                                             None, None, m)))
                        for m in metrics]
    return CorrelationTable(metrics, rows)


def style_correlation_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Solomon et al. 2021, table 2: radical / centrist, unfiltered / filtered, per metric."""
    intervals = _intervals(doc, "style_correlations")
    rows = []
    for r in doc.get("style_correlations", []):
        rows.append({**r, "interval": intervals.get(((), None, r["style"], r["filtered"],
                                                     r["metric"]))})
    rows.sort(key=lambda r: (r["metric"], r["style"] != "radical", r["filtered"]))
    return rows


def comparison_rows(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Williams' test of every pair of metrics, Pearson first."""
    return sorted(doc.get("metric_comparisons", []),
                  key=lambda r: (r["method"] != "pearson", r["metric_a"], r["metric_b"]))


# --------------------------------------------------------------------------- why a number is missing

def reason_notes(reasons: Iterable[str | None]) -> dict[str, int]:
    """Number the distinct reasons a table's numbers could not be computed, in order of first
    appearance: the page states each once under its table and marks each cell with its number,
    rather than repeating the same sentence in every row."""
    notes: dict[str, int] = {}
    for reason in reasons:
        if reason and reason not in notes:
            notes[reason] = len(notes) + 1
    return notes


def _missing(record: Mapping[str, Any] | None, *keys: str) -> str | None:
    """Return a record's reason when one of ``keys`` (default: ``value``) is null."""
    if not record:
        return None
    if any(record.get(k) is None for k in keys or ("value",)):
        return record.get("reason") or None
    return None


def dashboard_notes(*, alpha: list[AlphaTable], duplicates: list[Mapping[str, Any]],
                    flags: list[FlagRow], ranking: RankTable | None,
                    correlations: CorrelationTable, quality_correlations: CorrelationTable,
                    styles: list[Mapping[str, Any]], comparisons: list[Mapping[str, Any]],
                    noise: list[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Return the numbered reasons of each table of the dashboard (`reason_notes`)."""
    def pairs(table: CorrelationTable) -> Iterable[str | None]:
        return (_missing(c, "pearson", "spearman") for row in table.rows
                for c, _ in row.get("pairs", []))

    return {
        "alpha": reason_notes(c.reason for t in alpha for row in t.rows for c in row.cells
                              if c and c.value is None),
        "duplicates": reason_notes(d.get("reason") for d in duplicates),
        "flags": reason_notes(_missing(c) for row in flags for c in row.cells),
        "ranking": reason_notes(_missing(c) for row in (ranking.rows if ranking else [])
                                for c in row.quality),
        "correlations": reason_notes(pairs(correlations)),
        "quality_correlations": reason_notes(pairs(quality_correlations)),
        "styles": reason_notes(r.get("reason") for r in styles),
        "comparisons": reason_notes(r.get("reason") for r in comparisons),
        "noise": reason_notes(r.get("reason") for r in noise),
    }


# --- crowd-sized studies: the annotators a page shows ------------------------------------------

# Above this many annotators the page shows, in every table and chart of annotators, this many:
# the flagged ones first (any rule, any trust outlier), then the others in pseudonym order; it
# says so and links to the whole (``?annotators=all``). A crowd of 2 000 made a 7 MB page.
SHOWN_ANNOTATORS = 100


def flagged_annotators(doc: Mapping[str, Any]) -> list[str]:
    """The annotators any rule flags or trust finds an outlier, in pseudonym order."""
    names: set[str] = set()
    for section in ("heuristics", "quality"):
        names |= {str(r["annotator"]) for r in doc.get(section, [])
                  if isinstance(r, Mapping) and r.get("flagged") and r.get("annotator")}
    for r in doc.get("trust", []):
        if isinstance(r, Mapping):
            names |= {str(a) for a in r.get("outliers") or []}
    return sorted(names, key=_annotator_key)


def shown_annotators(doc: Mapping[str, Any], *, limit: int | None = SHOWN_ANNOTATORS,
                     flagged: list[str] | None = None) -> list[str] | None:
    """The annotators the page shows: None for all of them (at most ``limit``, or ``limit``
    None), else ``limit`` of them, the flagged ones first. ``flagged``: the document's
    `flagged_annotators` when the caller has them already."""
    names = [str(n) for n in doc.get("annotators", [])]
    if limit is None or len(names) <= limit:
        return None
    present = set(names)  # once, not once per flagged annotator (quadratic at thousands)
    flagged = flagged_annotators(doc) if flagged is None else flagged
    first = [n for n in flagged if n in present]
    chosen = set(first)
    return (first + [n for n in names if n not in chosen])[:limit]


def with_annotators(doc: Mapping[str, Any], keep: Iterable[str]) -> dict[str, Any]:
    """Return the document as it reads for the annotators ``keep`` only: every record of
    another annotator left out (pooled records, like the timing of "all", stay), trust
    coefficients and outliers restricted, the per-annotator error weights too."""
    kept = set(keep)
    view = dict(doc)
    view["annotators"] = [a for a in doc.get("annotators", []) if a in kept]
    for section, records in doc.items():
        if not isinstance(records, list) or section == "annotators":
            continue
        if section == "trust":
            view[section] = [_trust_for(r, kept) if isinstance(r, Mapping) else r
                             for r in records]
        elif section == "error_weights":
            view[section] = [r for r in records if not isinstance(r, Mapping)
                             or _weights_kept(r, kept)]
        elif any(isinstance(r, Mapping) and "annotator" in r for r in records[:1]):
            view[section] = [r for r in records
                             if not (type(r) is dict or isinstance(r, Mapping))
                             or r.get("annotator") in kept or r.get("annotator") == "all"]
    return view


def _trust_for(record: Mapping[str, Any], kept: set[str]) -> dict[str, Any]:
    """A trust record with the coefficients and outliers of the annotators ``kept`` only."""
    return {**record,
            "coefficients": {a: c for a, c in (record.get("coefficients") or {}).items()
                             if a in kept},
            "outliers": [a for a in record.get("outliers") or [] if a in kept]}


def _weights_kept(record: Mapping[str, Any], kept: set[str]) -> bool:
    """Whether an error-weights model stays: a metric's or the humans', or a kept annotator's."""
    target = str(record.get("target", ""))
    return not target.startswith("annotator:") or str(record["target"])[len("annotator:"):] in kept
