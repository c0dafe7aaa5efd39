"""The systems charts: each system's mean with its interval, and the pairwise tests as a heatmap
(docs/charts.md). Pure: no Django.

Both read the sections ``systems`` and ``system_tests`` of a results document (docs/results.md)
for one question and one scale: the page's scale when the systems analysis has records for it,
else the first scale that has (`systems_scale`). A document without these sections (a run before
the systems analysis, a study without systems) gives no chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .vega import (
    DARK,
    GREY,
    LIGHT,
    Chart,
    _chart,
    _Context,
    _fmt,
    _int,
    _invalid,
    _num,
    _qtip,
    _reason,
    _text,
    _tip,
    _valid,
)

SYSTEM_SECTIONS = ("systems", "system_tests", "system_clusters", "mixed_model",
                   "metric_meta_evaluation")
# Cluster colours (Tableau 10, as Vega's default), repeated beyond ten clusters.
CLUSTER_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2",
                   "#eeca3b", "#9d755d", "#ff9da6", "#bab0ac")


def system_records(doc: Mapping[str, Any], section: str, *, scale: str | None = None,
                   **match: Any) -> list[Mapping[str, Any]]:
    """Return the records of one systems section for the document's question (and ``scale``).

    The document is read as `core.results.question_view` gives it; its records are filtered by
    question here too, so a view that does not yet know these sections reads right. A missing or
    malformed section reads as empty.
    """
    rows = doc.get(section)
    if not isinstance(rows, list):
        return []
    question = doc.get("question")
    out = []
    for r in rows:
        if not isinstance(r, Mapping) or not isinstance(r.get("scale"), str):
            continue  # a malformed record: every record names its scale
        if question is not None and r.get("question", question) not in (question, None):
            continue
        if scale is not None and r.get("scale") != scale:
            continue
        if all(r.get(k) == v for k, v in match.items()):
            out.append(r)
    return out


def systems_scale(doc: Mapping[str, Any], scale: str | None) -> str | None:
    """Return the scale whose systems records the page shows: ``scale`` when there are some for
    it, else the first scale with records (in the document's scale order), else None."""
    scales = [str(r.get("scale")) for r in system_records(doc, "systems")]
    if not scales:
        return None
    if scale in scales:
        return scale
    order = [s.get("name") for s in doc.get("scales") or [] if isinstance(s, Mapping)]
    return next((s for s in order if s in scales), scales[0])


def ranked(records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Systems best first: by rank, then by mean (highest first), then by name."""
    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        rank, mean = _num(r.get("rank")), _num(r.get("mean"))
        return (rank is None, rank or 0, mean is None, -(mean or 0.0), str(r.get("system")))
    return sorted(records, key=key)


def cluster_label(value: Any) -> str:
    """A cluster's name as the page shows it: "1", "2", … (n/a when the record has none)."""
    number = _int(value)
    if number is not None:
        return str(number)
    return _text(value) or "n/a"


def _means(ctx: _Context) -> Chart | None:
    scale = systems_scale(ctx.doc, ctx.scale)
    if scale is None:
        return None
    records = ranked(system_records(ctx.doc, "systems", scale=scale))
    rows = []
    for r in records:
        mean, low, high = _num(r.get("mean")), _num(r.get("mean_low")), _num(r.get("mean_high"))
        rows.append({"system": str(r.get("system")), "mean": mean, "mean_low": low,
                     "mean_high": high, "median": _num(r.get("median")),
                     "rank": _num(r.get("rank")), "rank_low": _num(r.get("rank_low")),
                     "rank_high": _num(r.get("rank_high")),
                     "cluster": cluster_label(r.get("cluster")),
                     "sources": _int(r.get("sources")), "items": _int(r.get("items")),
                     "label": _fmt(mean),
                     "reason": _reason(r, "not computed") if mean is None else ""})
    systems = [row["system"] for row in rows]
    clusters = list(dict.fromkeys(row["cluster"] for row in rows))
    y = {"field": "system", "type": "nominal", "sort": systems, "title": None}
    x_title = f"mean rating ({scale} scale), 95 % interval"
    colour = {"field": "cluster", "type": "nominal", "title": "cluster",
              "sort": clusters,
              "scale": {"domain": clusters,
                        "range": [CLUSTER_COLOURS[n % len(CLUSTER_COLOURS)]
                                  for n in range(len(clusters))]}}
    tooltip = [_tip("system"), _qtip("mean", "mean"), _qtip("mean_low", "interval low"),
               _qtip("mean_high", "interval high"), _qtip("median", "median"),
               _tip("rank", kind="quantitative"), _tip("rank_low", "rank interval low",
                                                      kind="quantitative"),
               _tip("rank_high", "rank interval high", kind="quantitative"), _tip("cluster"),
               _tip("sources", kind="quantitative"), _tip("items", kind="quantitative")]
    x = {"type": "quantitative", "title": x_title, "scale": {"zero": False}}
    layers = [
        {"transform": [_valid("mean_low"), _valid("mean_high")],
         "mark": {"type": "rule", "strokeWidth": 2},
         "encoding": {"y": y, "x": {"field": "mean_low", **x}, "x2": {"field": "mean_high"},
                      "color": colour, "tooltip": tooltip}},
        {"transform": [_valid("mean")],
         "mark": {"type": "point", "filled": True, "size": 80},
         "encoding": {"y": y, "x": {"field": "mean", **x}, "color": colour,
                      "shape": {"field": "cluster", "type": "nominal", "sort": clusters,
                                "legend": None},
                      "tooltip": tooltip}},
        {"transform": [_invalid("mean")],
         "mark": {"type": "text", "align": "left", "baseline": "middle", "color": GREY,
                  "fontStyle": "italic"},
         "encoding": {"y": y, "x": {"value": 3}, "text": {"value": "n/a"},
                      "tooltip": [_tip("system"), _tip("reason", "why")]}},
    ]
    description = (
        f"Each system's mean rating on the {scale} scale (a point) with its 95 % bootstrap "
        f"interval over the sources (a line), best first. Systems of one colour and shape are "
        f"one significance cluster: a new cluster begins where a system is significantly worse "
        f"than every system above it (pairwise tests with the correction of Holm 1979).")
    return _chart("system-means", "systems", f"System means ({scale} scale)", description, rows,
                  width="container", height={"step": 26}, layer=layers)


def _verdict(significant: Any, difference: float | None, p_value: float | None) -> str:
    if p_value is None and significant is None:
        return "n/a"
    if significant is True and difference is not None:
        return "row better" if difference > 0 else "column better"
    return "not significant"


VERDICTS = ("row better", "column better", "not significant", "n/a")
VERDICT_COLOURS = ("#2f7d32", "#c0392b", LIGHT, "#f2f2f2")


def _tests(ctx: _Context) -> Chart | None:
    scale = systems_scale(ctx.doc, ctx.scale)
    if scale is None:
        return None
    tests = system_records(ctx.doc, "system_tests", scale=scale)
    if not tests:
        return None
    order = [str(r.get("system")) for r in ranked(system_records(ctx.doc, "systems",
                                                                 scale=scale))]
    rows = []
    for r in tests:
        a, b = str(r.get("system_a")), str(r.get("system_b"))
        difference = _num(r.get("mean_difference"))
        effect = _num(r.get("effect_size"))
        p_value, p_adjusted = _num(r.get("p_value")), _num(r.get("p_adjusted"))
        significant = r.get("significant") if isinstance(r.get("significant"), bool) else None
        common = {"test": _text(r.get("test")) or "", "correction": _text(r.get("correction")) or "",
                  "p_value": p_value, "p_adjusted": p_adjusted, "significant": significant,
                  "sources": _int(r.get("sources")), "statistic": _num(r.get("statistic")),
                  "reason": _reason(r, "not computed") if p_adjusted is None else ""}
        for row, column, sign in ((a, b, 1.0), (b, a, -1.0)):
            diff = difference * sign if difference is not None else None
            rows.append({"row": row, "column": column, **common,
                         "mean_difference": diff,
                         "effect_size": effect * sign if effect is not None else None,
                         "verdict": _verdict(significant, diff, p_adjusted),
                         "label": _fmt(p_adjusted, 3) if p_adjusted is not None else "n/a"})
    order += [s for s in dict.fromkeys(r["row"] for r in rows) if s not in order]
    x = {"field": "column", "type": "nominal", "sort": order, "title": "compared with",
         "axis": {"orient": "top", "labelAngle": -40, "labelLimit": 120}}
    y = {"field": "row", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelLimit": 120}}
    tooltip = [_tip("row", "system"), _tip("column", "compared with"),
               _qtip("mean_difference", "mean difference (system − compared)", "+.3f"),
               _qtip("effect_size", "effect size", "+.3f"), _tip("test"),
               _qtip("p_value", "p", ".4f"), _qtip("p_adjusted", "adjusted p", ".4f"),
               _tip("correction"), _tip("sources", "shared sources", kind="quantitative"),
               _tip("verdict"), _tip("reason", "note")]
    layers = [
        {"mark": {"type": "rect", "stroke": "white", "strokeWidth": 1},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "verdict", "type": "nominal", "title": "verdict",
                                # two columns: the four verdicts fit a phone's width
                                "legend": {"columns": 2},
                                "scale": {"domain": list(VERDICTS),
                                          "range": list(VERDICT_COLOURS)}}}},
        {"mark": {"type": "text", "fontSize": 10, "baseline": "middle"},
         "encoding": {"x": x, "y": y, "text": {"field": "label"}, "tooltip": tooltip,
                      "color": {"condition": {"test": {"field": "significant", "equal": True},
                                              "value": "white"}, "value": DARK}}},
    ]
    correction = next((row["correction"] for row in rows if row["correction"]), "Holm")
    description = (
        f"Every pair of systems on the {scale} scale, tested on the sources both were rated on: "
        f"each cell is the row system against the column system, its text the p-value adjusted "
        f"for multiple comparisons ({correction}; Holm 1979). Green: the row system is "
        f"significantly better; red: significantly worse; light: the difference is not "
        f"significant. The tooltip gives the mean difference and the effect size.")
    return _chart("system-tests", "systems", f"Pairwise tests of the systems ({scale} scale)",
                  description, rows, width={"step": 46}, height={"step": 26}, layer=layers)
