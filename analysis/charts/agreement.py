"""The agreement charts: trust coefficients, Krippendorff's alpha, duplicate consistency and the
noise in the agreed items (docs/charts.md). Pure: no Django."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.settings import LEVELS

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
    _mapping,
    _na_text,
    _num,
    _ordered,
    _pct,
    _qtip,
    _reason,
    _text,
    _tip,
    _valid,
)

# --- trust ----------------------------------------------------------------------------------

def _trust_record(ctx: _Context) -> Mapping[str, Any] | None:
    """The trust record of the scale over all items: the one at the analysis level, else the
    first there is."""
    candidates = ctx.records("trust", scale=ctx.scale, items="all")
    record = next((r for r in candidates if r.get("level") == ctx.level), None)
    if record is None and candidates:
        record = candidates[0]
    return record


def _trust_rows(record: Mapping[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """One row per annotator: their coefficient (null with the record's reason) and whether
    trust found them an outlier."""
    coefficients = _mapping(record.get("coefficients"))
    outliers = {a for a in record.get("outliers") or [] if isinstance(a, str)}
    reason = _reason(record, "not computed")
    rows = []
    for name in names:
        value = _num(coefficients.get(name))
        outlier = value is not None and name in outliers
        rows.append({
            "annotator": name, "coefficient": value, "outlier": outlier,
            "status": "outlier" if outlier else ("kept" if value is not None else "not computed"),
            "label": f"{name}: {_fmt(value)}" if outlier else "",
            "reason": reason if value is None else "",
        })
    return rows


def _trust_description(ctx: _Context, record: Mapping[str, Any], rows: list[dict[str, Any]],
                       order: list[str], threshold: float) -> str:
    level = _text(record.get("level")) or ctx.level
    if all(r["coefficient"] is None for r in rows):
        return (f"Trust coefficients were not computed on the {ctx.scale} scale "
                f"({level} alpha): {_reason(record, 'not computed')}.")
    named = [r["annotator"] for r in rows if r["outlier"]]
    who = ", ".join(sorted(named, key=order.index)) if named else "none"
    return (
        f"Trust coefficient (Borovikova et al. 2022, Algorithm 1) of each annotator on the "
        f"{ctx.scale} scale (all items, {level} alpha), sorted from most to least trusted; the "
        f"most trusted annotator has 1. Annotators at or left of the dashed line at "
        f"{_fmt(threshold)} are outliers, drawn in red and named: {who}.")


def _trust(ctx: _Context) -> Chart | None:
    record = _trust_record(ctx)
    if record is None:
        return None
    coefficients = _mapping(record.get("coefficients"))
    threshold = ctx.setting("outlier_threshold", 0.5)
    names = _ordered([str(n) for n in coefficients] or ctx.annotators, ctx.annotators)
    if not names:
        return None
    rows = _trust_rows(record, names)
    order = [r["annotator"] for r in sorted(
        rows, key=lambda r: (r["coefficient"] is None, -(r["coefficient"] or 0.0)))]
    description = _trust_description(ctx, record, rows, order, threshold)
    y = {"field": "annotator", "type": "nominal", "sort": order, "title": "annotator"}
    tooltip = [_tip("annotator"), _qtip("coefficient", "trust coefficient"), _tip("status")]
    layers = [
        {"transform": [_valid("coefficient")],
         "mark": {"type": "bar"},
         "encoding": {
             "y": y,
             "x": {"field": "coefficient", "type": "quantitative",
                   "title": "trust coefficient (1 = most trusted)"},
             "color": {"field": "status", "type": "nominal", "title": None,
                       "scale": {"domain": ["kept", "outlier"], "range": [BLUE, RED]}},
             "tooltip": tooltip}},
        {"transform": [_equal("outlier", True)],
         "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 4,
                  "fontWeight": "bold", "color": RED},
         "encoding": {"y": y, "x": {"field": "coefficient", "type": "quantitative"},
                      "text": {"field": "label"}}},
        {"data": {"values": [{"threshold": threshold,
                              "label": f"outlier line {_fmt(threshold)}"}]},
         "mark": {"type": "rule", "strokeDash": [5, 4], "color": DARK},
         "encoding": {"x": {"field": "threshold", "type": "quantitative",
                            **({} if any(r["coefficient"] is not None for r in rows)
                               else {"scale": {"domain": [0, 1]}})},
                      "tooltip": [_tip("label", "line")]}},
        _na_text(y, "coefficient", "not computed", tooltip=[_tip("annotator"), _tip("reason", "why")]),
    ]
    return _chart("trust", "trust", f"Trust coefficients ({ctx.scale} scale)", description, rows,
                  width="container", height=22 * len(order), layer=layers)


# --- alpha ----------------------------------------------------------------------------------

def _alpha_rows(records: list[Mapping[str, Any]], level: str) -> list[dict[str, Any]]:
    """One row per alpha record: its value and 95% interval (both null when either is), the
    items and annotators it covers; ``level`` is the analysis level, marked in the labels."""
    rows = []
    for r in records:
        row_level = _text(r.get("level")) or "?"
        items = "simple items" if r.get("items") == "simple" else "all items"
        without = [a for a in r.get("without") or [] if isinstance(a, str)]
        ci = r.get("ci95") if isinstance(r.get("ci95"), list) else []
        low, high = (_num(ci[0]), _num(ci[1])) if len(ci) == 2 else (None, None)
        value = _num(r.get("value"))
        if value is None or low is None or high is None:
            low = high = None
        rows.append({
            "level": row_level,
            "level_label": f"{row_level} (analysis level)" if row_level == level else row_level,
            "items": items,
            "annotators": "without outliers" if without else "all annotators",
            "variant": f"{items}, without {', '.join(without)}" if without else items,
            "without": ", ".join(without),
            "alpha": value, "ci_low": low, "ci_high": high,
            "n_items": _int(r.get("n_items")),
            "reason": _reason(r, "not computed") if value is None else "",
        })
    return rows


def _alpha(ctx: _Context) -> Chart | None:
    records = ctx.records("alpha", scale=ctx.scale)
    if not records:
        return None
    rows = _alpha_rows(records, ctx.level)
    level_order = [lv for lv in LEVELS if any(r["level"] == lv for r in rows)]
    level_order += [lv for lv in dict.fromkeys(r["level"] for r in rows) if lv not in level_order]
    labels = {r["level"]: r["level_label"] for r in rows}
    y = {"field": "level_label", "type": "nominal", "title": "level of measurement",
         "sort": [labels[lv] for lv in level_order]}
    variants = sorted({r["variant"] for r in rows},
                      key=lambda v: (not v.startswith("all"), "without" in v, v))
    y_offset = {"field": "variant", "type": "nominal", "sort": variants}
    tooltip = [_tip("level"), _tip("items"), _tip("without", "outliers removed"),
               _qtip("alpha"), _qtip("ci_low", "95% CI low"), _qtip("ci_high", "95% CI high"),
               _tip("n_items", "pairable items", kind="quantitative")]
    x_title = "Krippendorff's alpha (bars: 95% bootstrap CI)"
    layers = [
        {"data": {"values": [{"zero": 0}]},
         "mark": {"type": "rule", "color": GREY},
         "encoding": {"x": {"field": "zero", "type": "quantitative", "title": x_title}}},
        {"transform": [_valid("ci_low")],
         "mark": {"type": "rule", "strokeWidth": 1.5},
         "encoding": {"y": y, "yOffset": y_offset,
                      "x": {"field": "ci_low", "type": "quantitative", "title": x_title},
                      "x2": {"field": "ci_high"},
                      "color": {"field": "items", "type": "nominal", "title": None,
                                "scale": {"domain": ["all items", "simple items"],
                                          "range": [BLUE, "#f58518"]}}}},
        {"transform": [_valid("alpha")],
         "mark": {"type": "point", "filled": True, "size": 60},
         "encoding": {"y": y, "yOffset": y_offset,
                      "x": {"field": "alpha", "type": "quantitative", "title": x_title},
                      "color": {"field": "items", "type": "nominal", "title": None},
                      "shape": {"field": "annotators", "type": "nominal", "title": None,
                                "scale": {"domain": ["all annotators", "without outliers"],
                                          "range": ["circle", "triangle-right"]}},
                      "tooltip": tooltip}},
        _na_text(y, "alpha", y_offset=y_offset,
                 tooltip=[_tip("level"), _tip("variant"), _tip("reason", "why")]),
    ]
    description = (
        f"Krippendorff's alpha on the {ctx.scale} scale at each level of measurement, over all "
        f"items and over simple items (colour), with every annotator and without the trust "
        f"outliers (shape); the horizontal bar is the 95% bootstrap interval. The {ctx.level} "
        f"row is the analysis level; n/a marks an alpha that cannot be computed (hover for why).")
    return _chart("alpha", "alpha", f"Krippendorff's alpha ({ctx.scale} scale)", description,
                  rows, width="container", height=len(level_order) * (15 * len(variants) + 12),
                  layer=layers)


# --- duplicates -----------------------------------------------------------------------------

def _duplicates(ctx: _Context) -> Chart | None:
    records = ctx.records("duplicates", scale=ctx.scale)
    if not records:
        return None
    rows = []
    for r in records:
        agreement, diff = _num(r.get("exact_agreement")), _num(r.get("mean_abs_diff"))
        rows.append({
            "annotator": str(r.get("annotator")), "pairs": _int(r.get("pairs")),
            "exact_agreement": agreement, "mean_abs_diff": diff,
            "agreement_label": _pct(agreement).replace(".0%", "%"), "diff_label": _fmt(diff),
            "reason": _reason(r, "no pair answered twice") if agreement is None or diff is None
            else "",
        })
    order = _ordered([r["annotator"] for r in rows], ctx.annotators)
    y = {"field": "annotator", "type": "nominal", "sort": order, "title": "annotator"}
    tooltip = [_tip("annotator"), _tip("pairs", "duplicate pairs", kind="quantitative"),
               _qtip("exact_agreement", "same answer twice", ".0%"),
               _qtip("mean_abs_diff", "mean |first − repeat|", ".2f")]

    def panel(field: str, label: str, title: str, color: str, scale: dict | None = None) -> dict:
        x: dict[str, Any] = {"field": field, "type": "quantitative", "title": title}
        if scale:
            x["scale"] = scale
            x["axis"] = {"format": ".0%"}
        return {"width": 260, "height": {"step": 20}, "layer": [
            {"transform": [_valid(field)], "mark": {"type": "bar", "color": color},
             "encoding": {"y": y, "x": x, "tooltip": tooltip}},
            {"transform": [_valid(field)],
             "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 3,
                      "fontSize": 10, "color": DARK},
             "encoding": {"y": y, "x": x, "text": {"field": label}, "tooltip": tooltip}},
            _na_text(y, field, "no pairs", tooltip=[_tip("annotator"), _tip("reason", "why")]),
        ]}

    description = (
        f"For each annotator, the duplicated items they answered twice on the {ctx.scale} scale: "
        f"left, the share answered identically (higher is more consistent); right, the mean "
        f"absolute difference between the first answer and the repeat (lower is more consistent). "
        f"Hover a bar for the number of pairs.")
    return _chart("duplicates", "duplicates", f"Duplicate consistency ({ctx.scale} scale)",
                  description, rows,
                  hconcat=[panel("exact_agreement", "agreement_label", "same answer twice", BLUE,
                                 {"domain": [0, 1]}),
                           panel("mean_abs_diff", "diff_label",
                                 "mean |first − repeat| (scale points)", RED)],
                  resolve={"scale": {"y": "shared"}})


# --- noise ----------------------------------------------------------------------------------

_PARTS = ("disagreed (hard)", "agreed by chance (upper bound)", "agreed (easy)",
          "agreed (not split)")


def _noise_rows(records: list[Mapping[str, Any]], max_gamma: float) -> list[dict[str, Any]]:
    """One row per scale: the items agreed and disagreed, the agreed ones split into those that
    may be hard items agreeing by chance (t0 − d, when it is a share of the agreed) and the
    easy rest, and the model's figures."""
    rows = []
    for r in records:
        n, agreed, disagreed = _int(r.get("n_items")), _int(r.get("agreed")), _int(r.get("disagreed"))
        t0, gamma = _int(r.get("t0")), _num(r.get("gamma"))
        chance = t0 - disagreed if t0 is not None and disagreed is not None else None
        if chance is not None and (chance < 0 or agreed is None or chance > agreed):
            chance = None
        easy = agreed - chance if chance is not None and agreed is not None else None
        difference = _mapping(r.get("chance_difference"))
        confidence = _num(r.get("confidence"))
        rows.append({
            "scale": str(r.get("scale")), "n_items": n, "agreed": agreed, "disagreed": disagreed,
            _PARTS[0]: disagreed, _PARTS[1]: chance, _PARTS[2]: easy,
            _PARTS[3]: agreed if chance is None else None,
            "p": _num(r.get("p")), "kappa": _num(r.get("kappa")), "confidence": confidence,
            "t0": t0, "gamma": gamma, "max_gamma": max_gamma,
            "max_disagreements": _int(r.get("max_disagreements")),
            "chance_difference_chebyshev": _num(difference.get("chebyshev")),
            "chance_difference_normal": _num(difference.get("normal")),
            "reason": _reason(r, "not computed") if gamma is None else "",
        })
    return rows


def _noise(ctx: _Context) -> Chart | None:
    records = ctx.records("noise")
    if not records:
        return None
    max_gamma = ctx.setting("noise_max_gamma", 0.05)
    rows = _noise_rows(records, max_gamma)
    order = _ordered([r["scale"] for r in rows], ctx.scale_names)
    y = {"field": "scale", "type": "nominal", "sort": order, "title": "scale"}
    tooltip = [_tip("scale"), _tip("n_items", "items (≥ 2 answers)", kind="quantitative"),
               _tip("agreed", kind="quantitative"), _tip("disagreed", kind="quantitative"),
               _qtip("p", "p (hard item agreed by chance)"), _qtip("kappa", "kappa"),
               _tip("t0", "t0 (hard items, upper bound)", kind="quantitative"),
               _qtip("gamma", "γ (noise in agreed items)", ".1%"),
               _tip("max_disagreements", f"max disagreements for γ ≤ {_pct(max_gamma)}",
                    kind="quantitative"),
               _qtip("chance_difference_chebyshev", "chance difference (Chebyshev)", ".1f"),
               _tip("reason", "note")]
    confidence = next((r["confidence"] for r in rows if r["confidence"] is not None), 0.95)
    composition = {"width": 340, "height": {"step": 26}, "layer": [
        {"transform": [{"fold": list(_PARTS), "as": ["part", "items"]}, _valid("items")],
         "mark": {"type": "bar"},
         "encoding": {"y": y,
                      "x": {"field": "items", "type": "quantitative", "stack": "zero",
                            "title": "items with ≥ 2 answers"},
                      "color": {"field": "part", "type": "nominal", "title": None,
                                "scale": {"domain": list(_PARTS),
                                          "range": [RED, "#f2b447", BLUE, "#9ecae9"]},
                                "legend": {"orient": "bottom", "columns": 2}},
                      "order": {"field": "part_order", "type": "quantitative"},
                      "tooltip": [_tip("scale"), _tip("part"),
                                  _tip("items", kind="quantitative")] + tooltip[4:8]}},
        {"transform": [_valid("max_disagreements")],
         "mark": {"type": "tick", "color": DARK, "thickness": 2, "bandSize": 22},
         "encoding": {"y": y, "x": {"field": "max_disagreements", "type": "quantitative"},
                      "tooltip": tooltip}},
    ]}
    composition["layer"][0]["transform"].insert(1, {
        "lookup": "part", "from": {"data": {"values": [{"part": p, "part_order": i}
                                                      for i, p in enumerate(_PARTS)]},
                                   "key": "part", "fields": ["part_order"]}})
    gamma_x = {"field": "gamma", "type": "quantitative", "title": "γ, noise in the agreed items",
               "axis": {"format": ".0%"},
               "scale": {"domain": [0, max([max_gamma * 2] + [r["gamma"] for r in rows
                                                              if r["gamma"] is not None])]}}
    gamma = {"width": 200, "height": {"step": 26}, "layer": [
        {"data": {"values": [{"max_gamma": max_gamma}]},
         "mark": {"type": "rule", "color": DARK, "strokeDash": [5, 4]},
         "encoding": {"x": {"field": "max_gamma", **{k: v for k, v in gamma_x.items()
                                                      if k != "field"}},
                      "tooltip": [_qtip("max_gamma", "target γ", ".0%")]}},
        {"transform": [_valid("gamma")],
         "mark": {"type": "point", "filled": True, "size": 80, "color": DARK},
         "encoding": {"y": {**y, "title": None}, "x": gamma_x, "tooltip": tooltip}},
        _na_text({**y, "title": None}, "gamma", "γ undefined",
                 tooltip=[_tip("scale"), _tip("reason", "why")]),
    ]}
    description = (
        f"The easy/hard model of Beigman Klebanov and Beigman (2009) on each scale. Left: the "
        f"items with at least two answers, split into disagreed items (hard), agreed items that "
        f"may be hard items agreeing by chance (t0 − d, an upper bound at {_pct(confidence)} "
        f"confidence) and the rest (easy); "
        f"the black tick is the most disagreements that would still keep γ ≤ {_pct(max_gamma)}. "
        f"Right: γ, the share of the agreed items that may be noise, against the "
        f"{_pct(max_gamma)} line (γ is undefined with no agreed or no disagreed item).")
    return _chart("noise", "noise", "Noise in the agreed items", description, rows,
                  hconcat=[composition, gamma], resolve={"scale": {"y": "shared"}})
