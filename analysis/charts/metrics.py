"""The metric charts: each item's metric value against the humans, the mean metric–human gap and
the error-type weights (docs/charts.md). Pure: no Django."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.results import GAP_SAMPLE

from .vega import (
    BLUE,
    DARK,
    GREY,
    RED,
    Chart,
    _chart,
    _Context,
    _equal,
    _fmt,
    _int,
    _invalid,
    _mapping,
    _na_text,
    _num,
    _qtip,
    _reason,
    _symmetric,
    _tip,
    _valid,
)

# --- gaps -----------------------------------------------------------------------------------

def _gap_aggregate(records: list[Mapping[str, Any]]) -> str | None:
    aggregates = [r.get("aggregate") for r in records]
    if "mean" in aggregates:
        return "mean"
    return next((a for a in aggregates if isinstance(a, str)), None)


MAX_SCATTER_POINTS = GAP_SAMPLE  # per metric panel: the page embeds the data inline


def _thin_scatter(rows: list[dict[str, Any]], metrics: list[str]) -> tuple[list[dict[str, Any]], int]:
    """Keep at most MAX_SCATTER_POINTS evenly spaced items per metric, plus its largest gaps."""
    kept: list[dict[str, Any]] = []
    left_out = 0
    grouped = _by_metric(rows)
    for metric in metrics:
        panel = grouped.get(metric, [])
        if len(panel) > MAX_SCATTER_POINTS:
            every = set(range(0, len(panel), -(-len(panel) // MAX_SCATTER_POINTS)))
            sample = [r for i, r in enumerate(panel) if i in every or r["largest"]]
            left_out += len(panel) - len(sample)
            panel = sample
        kept += panel
    return kept, left_out


def _stored_gaps(ctx: _Context) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """The points of a stored document (`concord.results/3` without ``item_gaps``): its sample
    of each metric's items plus its largest gaps, and each metric's items in all (from
    ``metric_gaps``), by (aggregate, metric)."""
    records = list(ctx.records("item_gap_sample", scale=ctx.scale))
    seen = {(r.get("item"), r.get("metric"), r.get("aggregate")) for r in records}
    records += [r for r in ctx.records("largest_gaps", scale=ctx.scale)
                if (r.get("item"), r.get("metric"), r.get("aggregate")) not in seen]
    totals = {f"{r.get('aggregate')}\t{r.get('metric')}": int(r["n_items"])
              for r in ctx.records("metric_gaps", scale=ctx.scale, items="all")
              if isinstance(r.get("n_items"), int)}
    return records, totals


def _gap_rows(records: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per item and metric: the human aggregate, the metric's value and their gap (the
    difference, when the record gives both values but no gap)."""
    rows = []
    for r in records:
        human, value, gap = _num(r.get("human")), _num(r.get("metric_value")), _num(r.get("gap"))
        if gap is None and human is not None and value is not None:
            gap = value - human
        rows.append({"item": str(r.get("item")), "metric": str(r.get("metric")),
                     "human": human, "metric_value": value, "gap": gap,
                     "abs_gap": abs(gap) if gap is not None else None, "largest": False,
                     "reason": _reason(r, "not computed")
                     if human is None or value is None else ""})
    return rows


def _drawn(row: Mapping[str, Any]) -> bool:
    return row["human"] is not None and row["metric_value"] is not None


def _by_metric(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The rows of each metric, in their order: one pass, not one per metric panel."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        grouped.setdefault(r["metric"], []).append(r)
    return grouped


def _mark_largest(rows: list[dict[str, Any]], metrics: list[str]) -> None:
    """Mark each metric's three largest absolute gaps (ties: by item) as ``largest``."""
    grouped = _by_metric(rows)
    for metric in metrics:
        ranked = sorted((r for r in grouped.get(metric, []) if r["abs_gap"] is not None
                         and _drawn(r)),
                        key=lambda r: (-r["abs_gap"], r["item"]))
        for r in ranked[:3]:
            r["largest"] = True


def _left_out_of_sample(rows: list[dict[str, Any]], metrics: list[str], totals: dict[str, int],
                        aggregate: str | None) -> int:
    """A stored document's points are already a sample: what it leaves out is what the run's
    item table holds beyond it."""
    grouped = _by_metric(rows)
    return sum(max(0, totals.get(f"{aggregate}\t{m}", 0) - len(grouped.get(m, [])))
               for m in metrics)


def _scatter_panel(metric: str, rows: list[dict[str, Any]], aggregate: str | None,
                   tooltip: list[dict[str, Any]]) -> dict[str, Any]:
    """One metric's panel: the diagonal, its items' points and the names of its largest gaps."""
    x_title, y_title = f"human {aggregate}, rescaled to 0–1", "metric value"
    axis_x = {"type": "quantitative", "title": x_title, "scale": {"domain": [0, 1]}}
    axis_y = {"type": "quantitative", "title": y_title, "scale": {"domain": [0, 1]}}
    missing = sum(1 for r in rows if not _drawn(r))  # the rows are the metric's (_by_metric)
    title: dict[str, Any] = {"text": metric}
    if missing:
        title["subtitle"] = f"{missing} item{'s' if missing > 1 else ''} without a value"
    return {"title": title, "width": 210, "height": 210, "layer": [
        {"data": {"values": [{"h0": 0, "m0": 0, "h1": 1, "m1": 1}]},
         "mark": {"type": "rule", "color": GREY, "strokeDash": [4, 4]},
         "encoding": {"x": {"field": "h0", **axis_x}, "y": {"field": "m0", **axis_y},
                      "x2": {"field": "h1"}, "y2": {"field": "m1"}}},
        {"transform": [_equal("metric", metric), _valid("human"), _valid("metric_value")],
         "mark": {"type": "point", "filled": True, "size": 30, "opacity": 0.7},
         "encoding": {"x": {"field": "human", **axis_x},
                      "y": {"field": "metric_value", **axis_y},
                      "color": {"field": "largest", "type": "nominal", "title": None,
                                "scale": {"domain": [False, True], "range": [BLUE, RED]},
                                "legend": None},
                      "tooltip": tooltip}},
        {"transform": [_equal("metric", metric), _equal("largest", True)],
         "mark": {"type": "text", "align": "left", "dx": 5, "fontSize": 9, "color": RED},
         "encoding": {"x": {"field": "human", **axis_x},
                      "y": {"field": "metric_value", **axis_y},
                      "text": {"field": "item"}, "tooltip": tooltip}},
    ]}


def _scatter_description(scale: str, aggregate: str | None, thinned: int) -> str:
    description = (
        f"Each item's metric value against the {aggregate} human answer on the {scale} scale "
        f"rescaled to 0–1, one panel per metric: points above the dashed diagonal are items the "
        f"metric rates higher than the humans, points below lower. The three largest gaps per "
        f"metric are red and named.")
    if thinned:
        description += (
            f" With more than {MAX_SCATTER_POINTS} items a panel draws an evenly spaced sample of "
            f"at most {MAX_SCATTER_POINTS} of them plus the largest gaps ({thinned} points left "
            f"out in all); every item's gap is in the item-gaps export.")
    return description


def _gaps_scatter(ctx: _Context) -> Chart | None:
    full = isinstance(ctx.doc.get("item_gaps"), list)  # a full document, or one before /3
    records, totals = ((ctx.records("item_gaps", scale=ctx.scale), {}) if full
                       else _stored_gaps(ctx))
    aggregate = _gap_aggregate(records)
    records = [r for r in records if r.get("aggregate") == aggregate]
    if not records:
        return None
    rows = _gap_rows(records)
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    _mark_largest(rows, metrics)
    if full:
        rows, thinned = _thin_scatter(rows, metrics)
    else:
        thinned = _left_out_of_sample(rows, metrics, totals, aggregate)
    tooltip = [_tip("item"), _tip("metric"), _qtip("human", f"human {aggregate} (0–1)"),
               _qtip("metric_value", "metric"), _qtip("gap", "gap (metric − human)", "+.3f")]
    grouped = _by_metric(rows)
    panels = [_scatter_panel(metric, grouped.get(metric, []), aggregate, tooltip)
              for metric in metrics]
    return _chart("gaps-scatter", "gaps", f"Metric vs human per item ({ctx.scale} scale)",
                  _scatter_description(ctx.scale, aggregate, thinned), rows, concat=panels,
                  columns=4)


def _gaps_mean(ctx: _Context) -> Chart | None:
    records = ctx.records("metric_gaps", scale=ctx.scale)
    if not records:
        return None
    rows = []
    for r in records:
        absolute, signed = _num(r.get("mean_abs_gap")), _num(r.get("mean_signed_gap"))
        rows.append({"metric": str(r.get("metric")),
                     "aggregate": "mode" if r.get("aggregate") == "mode" else "mean",
                     "items": "simple items" if r.get("items") == "simple" else "all items",
                     "mean_abs_gap": absolute, "mean_signed_gap": signed,
                     "n_items": _int(r.get("n_items")),
                     "reason": _reason(r, "not computed") if absolute is None else ""})
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    y = {"field": "metric", "type": "nominal", "sort": metrics, "title": None}
    y_offset = {"field": "aggregate", "type": "nominal", "sort": ["mean", "mode"]}
    x_title = "gap, metric − human (0–1 scale)"
    tooltip = [_tip("metric"), _tip("items"), _tip("aggregate", "human aggregate"),
               _qtip("mean_abs_gap", "mean |gap|"), _qtip("mean_signed_gap", "mean gap", "+.3f"),
               _tip("n_items", "items", kind="quantitative")]
    layers = [
        {"transform": [_valid("mean_abs_gap")],
         "mark": {"type": "bar"},
         "encoding": {"y": y, "yOffset": y_offset,
                      "x": {"field": "mean_abs_gap", "type": "quantitative", "title": x_title},
                      "color": {"field": "aggregate", "type": "nominal",
                                "title": "human aggregate",
                                "scale": {"domain": ["mean", "mode"], "range": [BLUE, "#72b7b2"]}},
                      "tooltip": tooltip}},
        {"transform": [_valid("mean_signed_gap")],
         "mark": {"type": "tick", "color": DARK, "thickness": 2},
         "encoding": {"y": y, "yOffset": y_offset,
                      "x": {"field": "mean_signed_gap", "type": "quantitative", "title": x_title},
                      "tooltip": tooltip}},
        _na_text(y, "mean_abs_gap", y_offset=y_offset,
                 tooltip=[_tip("metric"), _tip("aggregate"), _tip("reason", "why")]),
    ]
    description = (
        f"Borovikova et al. (2022), table 2, on the {ctx.scale} scale: for each metric, the bar "
        f"is the mean absolute gap between the metric and the human aggregate (mean or mode, "
        f"rescaled to 0–1) and the black tick the mean signed gap (right of 0: the metric rates "
        f"items higher than the humans); all items left, simple items right.")
    return _chart("gaps-mean", "gaps", f"Mean metric–human gap ({ctx.scale} scale)", description,
                  rows,
                  facet={"column": {"field": "items", "type": "nominal", "title": None,
                                    "sort": ["all items", "simple items"]}},
                  spec={"width": 240, "height": {"step": 13, "for": "offset"}, "layer": layers})


# --- weights --------------------------------------------------------------------------------

def _target_label(target: str) -> tuple[int, str]:
    kind, _, name = target.partition(":")
    if kind == "metric":
        return 0, f"{name} (metric)"
    if kind == "human":
        return 1, f"humans, {name}"
    if kind == "annotator":
        return 2, name
    return 3, target


def _weights(ctx: _Context) -> Chart | None:
    records = ctx.records("error_weights", scale=ctx.scale)
    if not records:
        return None
    features = list(dict.fromkeys(str(f) for r in records
                                  for f in _mapping(r.get("coefficients"))))
    if not features:
        return None
    rows = []
    targets: list[tuple[tuple[int, int], str]] = []
    for index, r in enumerate(records):
        target = str(r.get("target"))
        rank, name = _target_label(target)
        r2 = _num(r.get("r2"))
        label = f"{name} · R² {_fmt(r2)}"
        targets.append(((rank, index), label))
        coefficients = _mapping(r.get("coefficients"))
        for feature in features:
            value = _num(coefficients.get(feature))
            reason = _reason(r) if r2 is None else ""
            if value is None:
                reason = reason or ("constant feature" if feature in coefficients
                                    else "feature not in this model")
            rows.append({"target": target, "row": label, "feature": feature,
                         "coefficient": value, "r2": r2, "n_items": _int(r.get("n_items")),
                         "label": _fmt(value), "strong": False, "reason": reason})
    domain = _symmetric(r["coefficient"] for r in rows)
    for row in rows:
        row["strong"] = row["coefficient"] is not None and abs(row["coefficient"]) > domain[1] * 0.6
    order = list(dict.fromkeys(label for _, label in sorted(targets)))
    x = {"field": "feature", "type": "nominal", "sort": features, "title": "error type (feature)",
         "axis": {"orient": "top", "labelAngle": 0}}
    y = {"field": "row", "type": "nominal", "sort": order, "title": None}
    tooltip = [_tip("target"), _tip("feature"), _qtip("coefficient", "standardised coefficient"),
               _qtip("r2", "R²"), _tip("n_items", "items", kind="quantitative"),
               _tip("reason", "note")]
    layers = [
        {"transform": [_valid("coefficient")],
         "mark": {"type": "rect"},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "coefficient", "type": "quantitative",
                                "title": "coefficient",
                                "scale": {"scheme": "redblue", "domain": domain,
                                          "domainMid": 0}}}},
        {"transform": [_invalid("coefficient")],
         "mark": {"type": "rect", "color": "#f2f2f2"},
         "encoding": {"x": x, "y": y, "tooltip": tooltip}},
        {"mark": {"type": "text", "fontSize": 10, "baseline": "middle"},
         "encoding": {"x": x, "y": y, "text": {"field": "label"}, "tooltip": tooltip,
                      "color": {"condition": {"test": {"field": "strong", "equal": True},
                                              "value": "white"}, "value": DARK}}},
    ]
    description = (
        f"Borovikova et al. (2022), table 3, on the {ctx.scale} scale: each row is a linear model "
        f"of a score (a metric, the human mean or mode, or one annotator) on the items' error "
        f"counts, z-scored, with its R²; each cell is the weight of an error type. Red cells lower "
        f"the score (the expected sign), blue cells raise it, grey cells could not be estimated.")
    return _chart("weights", "weights", f"Error-type weights ({ctx.scale} scale)", description,
                  rows, width={"step": 80}, height={"step": 22}, layer=layers)
