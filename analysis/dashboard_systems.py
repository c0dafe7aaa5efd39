"""Shape the systems sections of a results document into the dashboard's Systems tables (pure:
no ORM, no Django).

The systems analysis (docs/statistics/systems.md) writes five sections, each a list of records
per question × scale (docs/results.md): ``systems`` (each system's mean, median, interval, rank,
rank interval and cluster), ``system_tests`` (every pair of systems), ``system_clusters``,
``mixed_model`` (fixed effects and variance components) and ``metric_meta_evaluation`` (how
well each metric ranks the systems and scores the items). `systems_section` reads them for the
question and scale the page shows; a document without them (a run before the systems analysis,
a study whose items name no system) gives None and the page shows no Systems section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .charts.systems import cluster_label, ranked, system_records, systems_scale
from .dashboard import _missing, reason_notes

# The statistics of the meta-evaluation, in the order its tables show them.
SYSTEM_STATISTICS = ("pearson", "spearman", "kendall", "pairwise_accuracy",
                     "soft_pairwise_accuracy")
ITEM_STATISTICS = ("pearson", "spearman", "kendall")
STATISTIC_LABELS = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ",
                    "pairwise_accuracy": "Pairwise accuracy",
                    "soft_pairwise_accuracy": "Soft pairwise accuracy",
                    "williams": "Williams' test"}
GROUPINGS = ("none", "item", "system")
GROUPING_LABELS = {"none": "no grouping (every item)", "item": "by source, across systems",
                   "system": "by system"}
VARIANCE_LABELS = {"annotator": "Annotators", "source": "Sources", "residual": "Residual"}


@dataclass
class SystemRow:
    record: Mapping[str, Any]
    cluster: str
    new_cluster: bool  # the first system of its cluster (the table draws a line above it)


@dataclass
class MetaTable:
    statistics: list[str]
    labels: list[str]
    rows: list[dict[str, Any]]  # {metric, grouping, grouping_label, cells: [record | None]}


@dataclass
class SystemsSection:
    scale: str
    scales: list[str]  # every scale with systems records
    rows: list[SystemRow]
    clusters: list[dict[str, Any]]  # {cluster, systems: [name]}
    tests: list[Mapping[str, Any]]
    significant: int
    fixed: list[Mapping[str, Any]]
    variance: list[dict[str, Any]]
    model_notes: list[str]
    meta_system: MetaTable
    williams: list[Mapping[str, Any]]
    meta_item: MetaTable
    notes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def other_scales(self) -> list[str]:
        return [s for s in self.scales if s != self.scale]


def systems_section(doc: Mapping[str, Any], *, scale: str | None) -> SystemsSection | None:
    """Return the Systems section of the document as it reads for one question, on ``scale``
    (or the first scale with systems records); None when the run has no systems records."""
    shown = systems_scale(doc, scale)
    if shown is None:
        return None
    records = ranked(system_records(doc, "systems", scale=shown))
    rows: list[SystemRow] = []
    seen: set[str] = set()
    for r in records:
        label = cluster_label(r.get("cluster"))
        rows.append(SystemRow(r, label, label not in seen and bool(seen)))
        seen.add(label)
    clusters = _clusters(doc, shown, rows)
    order = {r.record.get("system"): n for n, r in enumerate(rows)}
    tests = sorted(system_records(doc, "system_tests", scale=shown),
                   key=lambda t: (order.get(t.get("system_a"), len(order)),
                                  order.get(t.get("system_b"), len(order)),
                                  str(t.get("system_a")), str(t.get("system_b"))))
    model = system_records(doc, "mixed_model", scale=shown)
    # each system's fixed effect, in the systems' rank order (other terms first)
    fixed = sorted((m for m in model if m.get("kind") == "fixed"),
                   key=lambda m: (m.get("name") in order, order.get(m.get("name"), 0),
                                  str(m.get("name"))))
    variance = [{**m, "label": VARIANCE_LABELS.get(str(m.get("name")), str(m.get("name"))),
                 "share_label": _percent(m.get("share"))}
                for m in model if m.get("kind") == "variance"]
    meta = system_records(doc, "metric_meta_evaluation", scale=shown)
    section = SystemsSection(
        scale=shown, scales=_scales(doc), rows=rows, clusters=clusters, tests=tests,
        significant=sum(1 for t in tests if t.get("significant") is True),
        fixed=fixed, variance=variance, model_notes=_model_notes(model),
        meta_system=_meta_table([m for m in meta if m.get("level") == "system"],
                                SYSTEM_STATISTICS, grouped=False),
        williams=sorted((m for m in meta if m.get("level") == "system"
                         and m.get("statistic") == "williams"),
                        key=lambda m: (str(m.get("metric")), str(m.get("other_metric")))),
        meta_item=_meta_table([m for m in meta if m.get("level") == "item"], ITEM_STATISTICS,
                              grouped=True))
    section.notes = _notes(section)
    return section


def _percent(share: Any) -> str:
    if isinstance(share, bool) or not isinstance(share, (int, float)):
        return "—"
    return f"{100 * share:.1f} %"


def _scales(doc: Mapping[str, Any]) -> list[str]:
    found = {str(r.get("scale")) for r in system_records(doc, "systems")}
    order = [str(s.get("name")) for s in doc.get("scales") or [] if isinstance(s, Mapping)]
    return [s for s in order if s in found] + sorted(found - set(order))


def _clusters(doc: Mapping[str, Any], scale: str, rows: list[SystemRow]) -> list[dict[str, Any]]:
    """The clusters best first, each with its systems in rank order: from ``system_clusters``
    when the run wrote it, else from the systems' own cluster numbers."""
    members: dict[str, list[tuple[Any, str]]] = {}
    stored = system_records(doc, "system_clusters", scale=scale)
    if stored:
        for c in stored:
            rank = c.get("rank")
            members.setdefault(cluster_label(c.get("cluster")), []).append(
                (rank if isinstance(rank, int) else 10**9, str(c.get("system"))))
    else:
        for n, row in enumerate(rows):
            members.setdefault(row.cluster, []).append((n, str(row.record.get("system"))))
    labels = sorted(members, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    return [{"cluster": c, "systems": [name for _, name in sorted(members[c])]}
            for c in labels]


def _model_notes(model: list[Mapping[str, Any]]) -> list[str]:
    """What the page says of the mixed model as a whole: it did not converge, or why it has no
    estimate (each reason once)."""
    notes: list[str] = []
    if any(m.get("converged") is False for m in model):
        notes.append("The mixed model did not converge: read its estimates with care.")
    for m in model:
        reason = m.get("reason")
        if reason and m.get("estimate") is None and reason not in notes:
            notes.append(str(reason))
    return notes


def _meta_table(records: list[Mapping[str, Any]], statistics: tuple[str, ...], *,
                grouped: bool) -> MetaTable:
    """Pivot the meta-evaluation: one row per metric (and grouping), one column per statistic
    with records."""
    shown = [s for s in statistics if any(r.get("statistic") == s for r in records)]
    cells: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for r in records:
        if r.get("statistic") not in shown:
            continue
        key = (str(r.get("metric")), str(r.get("grouping") or "none") if grouped else "")
        cells.setdefault(key, {})[str(r.get("statistic"))] = r
    keys = sorted(cells, key=lambda k: (k[0], GROUPINGS.index(k[1]) if k[1] in GROUPINGS
                                        else len(GROUPINGS), k[1]))
    rows = [{"metric": metric, "grouping": grouping,
             "grouping_label": GROUPING_LABELS.get(grouping, grouping),
             "cells": [cells[(metric, grouping)].get(s) for s in shown]}
            for metric, grouping in keys]
    return MetaTable(shown, [STATISTIC_LABELS[s] for s in shown], rows)


def _notes(section: SystemsSection) -> dict[str, dict[str, int]]:
    """The numbered reasons of each Systems table (`analysis.dashboard.reason_notes`)."""
    return {
        "systems": reason_notes(_missing(r.record, "mean") or _missing(r.record, "rank_low")
                                for r in section.rows),
        "tests": reason_notes(_missing(t, "p_adjusted") for t in section.tests),
        "model": reason_notes(_missing(m, "estimate") for m in
                              [*section.fixed, *section.variance]),
        "meta_system": reason_notes(_missing(c) for row in section.meta_system.rows
                                    for c in row["cells"]),
        "williams": reason_notes(_missing(w, "p_value") for w in section.williams),
        "meta_item": reason_notes(_missing(c) for row in section.meta_item.rows
                                  for c in row["cells"]),
    }
