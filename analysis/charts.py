"""Vega-Lite chart specs built from a results document (`concord.results/2`). Pure: no Django.

`build_charts(doc, question=..., scale=..., level=...)` returns one `Chart` per non-empty section
of the document, as it reads for one question (`core.results.question_view`); each spec is a complete Vega-Lite v6 spec whose data are inline (`{"values": [...]}`),
and `chart_data(chart)` returns those rows (flat: strings, numbers, booleans, nulls) for the
"download data" links. A number the document gives as null is never drawn as a number: the row
keeps it as null with the record's `reason`, and the chart says "n/a" (or leaves the mark out and
says why). The specs use field predicates rather than expression strings wherever they can, and
the page renders them with the expression interpreter (strict CSP). See docs/charts.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from core.results import GAP_SAMPLE, question_keys, question_view
from core.settings import LEVELS, RULES

from .dashboard import rule_name, rule_set_name

SECTIONS = ("trust", "duplicates", "timing", "heuristics", "gaps", "weights", "noise", "alpha")
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
RULE_TESTS = {  # what the value is, and the test that flags (docs/statistics/heuristics.md)
    "slow": ("mean s", ">"),
    "low_variance": ("std", "<"),
    "high_random": ("controls − others", ">"),
    "disagreeable": ("share", ">"),
    "sentiment": ("std", ">"),
}

BLUE, RED, GREY, LIGHT, DARK = "#4c78a8", "#d6404e", "#9a9a9a", "#eef1f4", "#333333"
NA = "n/a"


@dataclass(frozen=True)
class Chart:
    name: str  # slug, unique, used in file names and DOM ids
    section: str  # one of SECTIONS
    title: str
    description: str  # one or two plain sentences: what is drawn and how to read it
    spec: dict  # a complete Vega-Lite v6 spec with inline data


# --- public interface -----------------------------------------------------------------------

def build_charts(doc: dict, *, question: str | None = None, scale: str = "raw",
                 level: str | None = None) -> list[Chart]:
    """Return the charts of a results document for one question and one scale.

    `question` selects the question (a key of the document's `questions`; None or an unknown key:
    the first); timing does not depend on it, and in a document of several questions every other
    chart's title starts with the question's key. `scale` selects the records of the scale-dependent sections (trust, alpha, duplicates, gaps,
    weights); heuristics, correlations, timing and noise (one row per scale) do not depend on it.
    `level` is the analysis level: it picks the trust record and is marked in the alpha chart;
    None means the run's (`settings.level`). Sections that are empty (or have no record for the
    scale) give no chart.
    """
    doc = doc if isinstance(doc, Mapping) else {}
    several = len(question_keys(doc)) > 1
    doc = question_view(doc, question)
    settings = _mapping(doc.get("settings"))
    run_level = _text(settings.get("level")) or "ordinal"
    ctx = _Context(doc=doc, settings=settings, scale=str(scale), level=level or run_level)
    charts: list[Chart] = []
    for builder in (_trust, _alpha, _duplicates, _timing, _heuristics, _correlations,
                    _gaps_scatter, _gaps_mean, _weights, _noise):
        chart = builder(ctx)
        if chart is not None:
            if several and chart.section != "timing":  # time is the study's, not a question's
                chart = _titled(chart, f"{doc.get('question')}: {chart.title}")
            charts.append(chart)
    return charts


def _titled(chart: Chart, title: str) -> Chart:
    spec = {**chart.spec, "title": {**_mapping(chart.spec.get("title")), "text": title}}
    return replace(chart, title=title, spec=spec)


def chart_data(chart: Chart) -> list[dict[str, Any]]:
    """Return the rows drawn by a chart (its top-level inline data values), as copies."""
    data = chart.spec.get("data")
    values = data.get("values") if isinstance(data, Mapping) else None
    return [dict(v) for v in values] if isinstance(values, list) else []


# --- helpers --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Context:
    doc: Mapping[str, Any]
    settings: Mapping[str, Any]
    scale: str
    level: str

    def records(self, section: str, **match: Any) -> list[Mapping[str, Any]]:
        rows = self.doc.get(section)
        if not isinstance(rows, list):
            return []
        return [r for r in rows if isinstance(r, Mapping)
                and all(r.get(k) == v for k, v in match.items())]

    @property
    def annotators(self) -> list[str]:
        names = self.doc.get("annotators")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    @property
    def scale_names(self) -> list[str]:
        scales = self.doc.get("scales")
        if not isinstance(scales, list):
            return []
        return [s["name"] for s in scales if isinstance(s, Mapping) and isinstance(s.get("name"), str)]

    def setting(self, key: str, default: float) -> float:
        value = _num(self.settings.get(key))
        return default if value is None else value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _num(value: Any) -> float | None:
    """A finite number as float (or int), else None: null, NaN, booleans and strings are absent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None and float(number).is_integer() else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _reason(record: Mapping[str, Any], default: str = "") -> str:
    reason = record.get("reason")
    return reason if isinstance(reason, str) and reason else default


def _fmt(value: float | None, digits: int = 2) -> str:
    """A short label for a number: n/a for null, fewer decimals for larger numbers."""
    if value is None:
        return NA
    size = abs(value)
    if round(value, digits) == 0:
        value = 0.0
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return NA
    percent = round(value * 100, 1) + 0.0  # + 0.0 turns -0.0 into 0.0
    if signed and percent != 0:
        return f"{percent:+.1f}%"
    return f"{percent:.1f}%"


def _ordered(names: Iterable[str], first: Iterable[str]) -> list[str]:
    """Names in the order of `first` (e.g. the document's annotators), then the others as met."""
    names = list(dict.fromkeys(names))
    known = [n for n in dict.fromkeys(first) if n in names]
    return known + [n for n in names if n not in known]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _spec(title: str, description: str, values: list[dict], **body: Any) -> dict[str, Any]:
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "title": {"text": title, "anchor": "start"},
        "description": description,
        "data": {"values": values},
        **body,
        "config": {"font": "system-ui, -apple-system, 'Segoe UI', sans-serif",
                   "axis": {"labelLimit": 280}, "legend": {"orient": "bottom", "labelLimit": 280}},
    }


def _chart(name: str, section: str, title: str, description: str, values: list[dict],
           **body: Any) -> Chart:
    if body.get("width") == "container":  # fill the width (the height is fixed: no fit-y)
        body["autosize"] = {"type": "fit-x", "contains": "padding"}
    spec = _spec(title, description, values, **body)
    _prune(spec, values)
    return Chart(name=name, section=section, title=title, description=description, spec=spec)


def _holds(predicate: Mapping[str, Any], row: Mapping[str, Any]) -> bool | None:
    """Evaluate the field predicates the specs use (None: not one of them)."""
    if "not" in predicate:
        inner = _holds(predicate["not"], row)
        return None if inner is None else not inner
    if predicate.get("valid") is True:
        return _num(row.get(predicate["field"])) is not None or isinstance(
            row.get(predicate["field"]), (str, bool))
    if "equal" in predicate:
        return row.get(predicate["field"]) == predicate["equal"]
    return None


def _draws_nothing(layer: Mapping[str, Any], rows: list[dict]) -> bool:
    """True when the layer's filters leave none of the inline rows (so it would draw nothing)."""
    if "data" in layer:
        return False
    filters = []
    for step in layer.get("transform", []):
        if "filter" not in step:
            return False  # fold, lookup...: not evaluated here
        filters.append(step["filter"])
    results = [[_holds(f, row) for f in filters] for row in rows]
    if any(r is None for result in results for r in result):
        return False
    return not any(all(result) for result in results)


def _prune(node: Any, rows: list[dict]) -> None:
    """Drop the layers that would draw nothing: Vega warns on the extent of an empty field."""
    if not isinstance(node, dict):
        return
    layers = node.get("layer")
    if isinstance(layers, list):
        kept = [layer for layer in layers if not _draws_nothing(layer, rows)]
        node["layer"] = kept or layers[:1]
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in node.get(key) or []:
            _prune(child, rows)
    _prune(node.get("spec"), rows)


def _valid(field: str) -> dict[str, Any]:
    return {"filter": {"field": field, "valid": True}}


def _invalid(field: str) -> dict[str, Any]:
    return {"filter": {"not": {"field": field, "valid": True}}}


def _equal(field: str, value: Any) -> dict[str, Any]:
    return {"filter": {"field": field, "equal": value}}


def _tip(field: str, title: str | None = None, fmt: str | None = None,
         kind: str = "nominal") -> dict[str, Any]:
    tip: dict[str, Any] = {"field": field, "type": kind}
    if title:
        tip["title"] = title
    if fmt:
        tip["format"] = fmt
    return tip


def _qtip(field: str, title: str | None = None, fmt: str = ".3f") -> dict[str, Any]:
    return _tip(field, title, fmt, "quantitative")


def _na_text(y: dict[str, Any], field: str, text: str = NA, *, y_offset: dict | None = None,
             tooltip: list | None = None) -> dict[str, Any]:
    """A layer writing `text` at the left edge of each row whose `field` is null."""
    encoding: dict[str, Any] = {"y": y, "x": {"value": 3}, "text": {"value": text},
                                "tooltip": tooltip or [_tip("reason", "why")]}
    if y_offset:
        encoding["yOffset"] = y_offset
    return {"transform": [_invalid(field)],
            "mark": {"type": "text", "align": "left", "baseline": "middle", "color": GREY,
                     "fontStyle": "italic"},
            "encoding": encoding}


def _symmetric(values: Iterable[float | None]) -> list[float]:
    top = max((abs(v) for v in values if v is not None), default=0.0)
    top = top if top > 0 else 1.0
    return [-top, top]


# --- trust ----------------------------------------------------------------------------------

def _trust(ctx: _Context) -> Chart | None:
    candidates = ctx.records("trust", scale=ctx.scale, items="all")
    record = next((r for r in candidates if r.get("level") == ctx.level), None)
    if record is None and candidates:
        record = candidates[0]
    if record is None:
        return None
    coefficients = _mapping(record.get("coefficients"))
    outliers = {a for a in record.get("outliers") or [] if isinstance(a, str)}
    threshold = ctx.setting("outlier_threshold", 0.5)
    names = _ordered([str(n) for n in coefficients] or ctx.annotators, ctx.annotators)
    if not names:
        return None
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
    order = [r["annotator"] for r in sorted(
        rows, key=lambda r: (r["coefficient"] is None, -(r["coefficient"] or 0.0)))]
    level = _text(record.get("level")) or ctx.level
    named = [r["annotator"] for r in rows if r["outlier"]]
    who = ", ".join(sorted(named, key=order.index)) if named else "none"
    description = (
        f"Trust coefficient (Borovikova et al. 2022, Algorithm 1) of each annotator on the "
        f"{ctx.scale} scale (all items, {level} alpha), sorted from most to least trusted; the "
        f"most trusted annotator has 1. Annotators at or left of the dashed line at "
        f"{_fmt(threshold)} are outliers, drawn in red and named: {who}.")
    if all(r["coefficient"] is None for r in rows):
        description = (f"Trust coefficients were not computed on the {ctx.scale} scale "
                       f"({level} alpha): {reason}.")
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

def _alpha(ctx: _Context) -> Chart | None:
    records = ctx.records("alpha", scale=ctx.scale)
    if not records:
        return None
    rows = []
    for r in records:
        level = _text(r.get("level")) or "?"
        items = "simple items" if r.get("items") == "simple" else "all items"
        without = [a for a in r.get("without") or [] if isinstance(a, str)]
        ci = r.get("ci95") if isinstance(r.get("ci95"), list) else []
        low, high = (_num(ci[0]), _num(ci[1])) if len(ci) == 2 else (None, None)
        value = _num(r.get("value"))
        if value is None or low is None or high is None:
            low = high = None
        rows.append({
            "level": level,
            "level_label": f"{level} (analysis level)" if level == ctx.level else level,
            "items": items,
            "annotators": "without outliers" if without else "all annotators",
            "variant": f"{items}, without {', '.join(without)}" if without else items,
            "without": ", ".join(without),
            "alpha": value, "ci_low": low, "ci_high": high,
            "n_items": _int(r.get("n_items")),
            "reason": _reason(r, "not computed") if value is None else "",
        })
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


# --- timing ---------------------------------------------------------------------------------

_QUANTILES = ("min_s", "p05_s", "q1_s", "median_s", "q3_s", "p95_s", "max_s")


def _timing(ctx: _Context) -> Chart | None:
    records = ctx.records("timing")
    if not records:
        return None
    rows = []
    for r in records:
        name = str(r.get("annotator"))
        row: dict[str, Any] = {"annotator": name,
                               "kind": "pooled" if name == "all" else "annotator",
                               "n": _int(r.get("n"))}
        for q in _QUANTILES:
            row[q] = _num(r.get(q))
        row["reason"] = _reason(r, "no recorded time") if row["median_s"] is None else ""
        rows.append(row)
    people = [r for r in rows if r["kind"] == "annotator"]
    if not people:
        return None
    pooled = next((r for r in rows if r["kind"] == "pooled" and r["median_s"] is not None), None)
    plotted = [r[q] for r in people for q in _QUANTILES if r[q] is not None]
    if pooled:
        plotted.append(pooled["median_s"])
    log = bool(plotted) and min(plotted) > 0
    scale = {"type": "log"} if log else {"type": "symlog"}
    order = _ordered([r["annotator"] for r in people], ctx.annotators)
    y = {"field": "annotator", "type": "nominal", "sort": order, "title": "annotator"}
    x_title = f"active time per answer, seconds ({'log' if log else 'symlog'} scale)"

    def x(field: str) -> dict[str, Any]:
        return {"field": field, "type": "quantitative", "scale": scale, "title": x_title}

    tooltip = [_tip("annotator"), _tip("n", "answers timed", kind="quantitative")] + [
        _qtip(q, q[:-2].replace("p05", "5th pct").replace("p95", "95th pct") + " (s)", ".1f")
        for q in _QUANTILES]
    annotators = {"filter": {"field": "kind", "equal": "annotator"}}
    layers = [
        {"transform": [annotators, _valid("p05_s"), _valid("p95_s")],
         "mark": {"type": "rule", "color": DARK},
         "encoding": {"y": y, "x": x("p05_s"), "x2": {"field": "p95_s"}}},
        {"transform": [annotators, _valid("q1_s"), _valid("q3_s")],
         "mark": {"type": "bar", "color": "#a6c4e0", "stroke": DARK, "strokeWidth": 0.8,
                  "height": {"band": 0.7}},
         "encoding": {"y": y, "x": x("q1_s"), "x2": {"field": "q3_s"}, "tooltip": tooltip}},
        {"transform": [annotators, _valid("median_s")],
         "mark": {"type": "tick", "color": DARK, "thickness": 2.5, "bandSize": 14},
         "encoding": {"y": y, "x": x("median_s"), "tooltip": tooltip}},
        {"transform": [annotators, _valid("min_s")],
         "mark": {"type": "point", "shape": "circle", "size": 12, "color": GREY},
         "encoding": {"y": y, "x": x("min_s"), "tooltip": tooltip}},
        {"transform": [annotators, _valid("max_s")],
         "mark": {"type": "point", "shape": "circle", "size": 12, "color": GREY},
         "encoding": {"y": y, "x": x("max_s"), "tooltip": tooltip}},
        {"transform": [annotators, _invalid("median_s")],
         "mark": {"type": "text", "align": "left", "baseline": "middle", "color": GREY,
                  "fontStyle": "italic"},
         "encoding": {"y": y, "x": {"value": 3}, "text": {"value": "no recorded time"},
                      "tooltip": [_tip("annotator"), _tip("reason", "why")]}},
    ]
    reference = ""
    if pooled:
        layers.append({
            "transform": [{"filter": {"field": "kind", "equal": "pooled"}}, _valid("median_s")],
            "mark": {"type": "rule", "color": RED, "strokeDash": [5, 4], "strokeWidth": 1.5},
            "encoding": {"x": x("median_s"),
                         "tooltip": [_qtip("median_s", "median of all answers (s)", ".1f"),
                                     _tip("n", "answers timed", kind="quantitative")]}})
        reference = (f" The dashed red line is the median of all answers pooled "
                     f"({_fmt(pooled['median_s'])} s).")
    description = (
        f"Active time per answer for each annotator (first presentations, hidden-tab time "
        f"excluded) on a {'log' if log else 'symmetric log'} scale: the box spans the quartiles, "
        f"the thick tick is the median, the whiskers reach the 5th and 95th percentiles and the "
        f"grey dots are the fastest and slowest answers.{reference}")
    return _chart("timing", "timing", "Active time per answer", description, rows,
                  width="container", height=22 * len(order), layer=layers)


# --- heuristics -----------------------------------------------------------------------------

def _rule_number(rule: str, seen: list[str]) -> int:
    if rule in RULES:
        return RULES.index(rule) + 1
    if rule not in seen:
        seen.append(rule)
    return len(RULES) + seen.index(rule) + 1


def _heuristics(ctx: _Context) -> Chart | None:
    records = ctx.records("heuristics")
    if not records:
        return None
    extra: list[str] = []
    thresholds: dict[str, float | None] = {}
    for r in records:
        rule = str(r.get("rule"))
        if thresholds.get(rule) is None:
            thresholds[rule] = _num(r.get("threshold"))
    labels = {}
    for rule, threshold in thresholds.items():
        test, op = RULE_TESTS.get(rule, ("value", ">"))
        cut = f" {op} {_fmt(threshold)}" if threshold is not None else ""
        labels[rule] = f"{rule_name(rule)}: {test}{cut}"
    rows = []
    for r in records:
        rule, value = str(r.get("rule")), _num(r.get("value"))
        flagged = r.get("flagged") is True
        rows.append({
            "rule": rule, "rule_label": labels[rule], "annotator": str(r.get("annotator")),
            "value": value, "threshold": _num(r.get("threshold")), "flagged": flagged,
            "status": "flagged" if flagged else ("not flagged" if value is not None
                                                 else "not computed"),
            "label": ("✕ " if flagged else "") + _fmt(value),
            "reason": _reason(r, "not computed") if value is None else "",
        })
    rule_order = sorted(labels, key=lambda rule: _rule_number(rule, extra))
    order = _ordered([r["annotator"] for r in rows], ctx.annotators)
    x = {"field": "annotator", "type": "nominal", "sort": order, "title": "annotator",
         "axis": {"orient": "top", "labelAngle": 0}}
    y = {"field": "rule_label", "type": "nominal", "sort": [labels[r] for r in rule_order],
         "title": None}
    tooltip = [_tip("annotator"), _tip("rule"), _qtip("value", fmt=".3f"),
               _qtip("threshold", fmt=".3g"), _tip("status"), _tip("reason", "why")]
    flagged_any = sorted({r["annotator"] for r in rows if r["flagged"]}, key=order.index)
    description = (
        "Each filtering rule of Solomon et al. (2021), §5.1 (rows, with its test) applied to "
        "each annotator (columns): red cells with ✕ are flagged, blue cells pass, grey cells "
        "could not be computed (hover for why); the number is the annotator's value for the rule. "
        f"Flagged: {', '.join(flagged_any) if flagged_any else 'nobody'}.")
    layers = [
        {"mark": {"type": "rect", "stroke": "white", "strokeWidth": 1},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "status", "type": "nominal", "title": None,
                                "scale": {"domain": ["flagged", "not flagged", "not computed"],
                                          "range": [RED, "#dbe6f1", "#f2f2f2"]}}}},
        {"mark": {"type": "text", "fontSize": 10, "baseline": "middle"},
         "encoding": {"x": x, "y": y, "text": {"field": "label"}, "tooltip": tooltip,
                      "color": {"condition": {"test": {"field": "flagged", "equal": True},
                                              "value": "white"}, "value": DARK}}},
    ]
    return _chart("heuristics", "heuristics", "Filtering heuristics per annotator", description,
                  rows, width={"step": 46}, height={"step": 26}, layer=layers)


# --- correlations ---------------------------------------------------------------------------

def _correlations(ctx: _Context) -> Chart | None:
    records = ctx.records("correlations")
    if not records:
        return None
    rows, combo_order, metric_order = [], [], []
    for r in records:
        rules = [str(x) for x in r.get("rules") or []]
        combo = rule_set_name(rules)  # the name the dashboard's table gives the same row
        metric = str(r.get("metric"))
        combo_order.append(combo)
        metric_order.append(metric)
        for measure in ("pearson", "spearman"):
            value, change = _num(r.get(measure)), _num(r.get(f"{measure}_change"))
            if not rules:
                label = _fmt(value)
            else:
                label = _pct(change, signed=True) if change is not None else NA
            rows.append({
                "combination": combo,
                "strong": False,
                "removed": ", ".join(a for a in r.get("removed") or [] if isinstance(a, str)),
                "metric": metric, "measure": measure.capitalize(),
                "correlation": value, "change": change, "label": label,
                "n_items": _int(r.get("n_items")),
                "reason": _reason(r, "not computed") if change is None else "",
            })
    combos = list(dict.fromkeys(combo_order))
    metrics = list(dict.fromkeys(metric_order))
    domain = _symmetric(r["change"] for r in rows)
    for row in rows:
        row["strong"] = row["change"] is not None and abs(row["change"]) > domain[1] * 0.6
    x = {"field": "metric", "type": "nominal", "sort": metrics, "title": None,
         "axis": {"orient": "top", "labelAngle": -30}}
    y = {"field": "combination", "type": "nominal", "sort": combos,
         # the rows name their rules in full (the table's names): no title, room for the names
         "title": None, "axis": {"labelLimit": 560}}
    tooltip = [_tip("combination", "rules"), _tip("removed", "annotators removed"),
               _tip("metric"), _tip("measure"), _qtip("correlation"),
               _qtip("change", "relative change", "+.1%"),
               _tip("n_items", "items", kind="quantitative"), _tip("reason", "why")]
    used = sorted({str(x) for r in records for x in r.get("rules") or []},
                  key=lambda x: _rule_number(x, []))
    legend = ", ".join(rule_name(rule) for rule in used)
    description = (
        "Solomon et al. (2021), table 3: correlation of each metric with the per-item mean human "
        "label (Pearson left, Spearman right): the first row is the baseline correlation, every "
        "other row the relative change after removing the annotators flagged by that combination "
        "of rules (blue: the metric agrees better with the remaining humans, red: worse). "
        f"Rules: {legend or 'none'}.")
    layers = [
        {"transform": [_valid("change")],
         "mark": {"type": "rect"},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "change", "type": "quantitative",
                                "title": "relative change",
                                "legend": {"format": "+.0%"},
                                "scale": {"scheme": "redblue", "domainMid": 0,
                                          "domain": domain}}}},
        {"transform": [_invalid("change")],
         "mark": {"type": "rect", "color": "#f2f2f2"},
         "encoding": {"x": x, "y": y, "tooltip": tooltip}},
        {"mark": {"type": "text", "fontSize": 9, "baseline": "middle"},
         "encoding": {"x": x, "y": y, "text": {"field": "label"}, "tooltip": tooltip,
                      "color": {"condition": {"test": {"field": "strong", "equal": True},
                                              "value": "white"}, "value": DARK}}},
    ]
    return _chart("correlations", "heuristics",
                  "Metric–human correlation after filtering annotators", description, rows,
                  facet={"column": {"field": "measure", "type": "nominal", "title": None,
                                    "sort": ["Pearson", "Spearman"]}},
                  spec={"width": {"step": 54}, "height": {"step": 17}, "layer": layers})


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
    for metric in metrics:
        panel = [r for r in rows if r["metric"] == metric]
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


def _gaps_scatter(ctx: _Context) -> Chart | None:
    full = isinstance(ctx.doc.get("item_gaps"), list)  # a full document, or one before /3
    records, totals = ((ctx.records("item_gaps", scale=ctx.scale), {}) if full
                       else _stored_gaps(ctx))
    aggregate = _gap_aggregate(records)
    records = [r for r in records if r.get("aggregate") == aggregate]
    if not records:
        return None
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
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    for metric in metrics:
        ranked = sorted((r for r in rows if r["metric"] == metric and r["abs_gap"] is not None
                         and r["human"] is not None and r["metric_value"] is not None),
                        key=lambda r: (-r["abs_gap"], r["item"]))
        for r in ranked[:3]:
            r["largest"] = True
    if full:
        rows, thinned = _thin_scatter(rows, metrics)
    else:  # already a sample: what it leaves out is what the run's item table holds beyond it
        thinned = sum(max(0, totals.get(f"{aggregate}\t{m}", 0)
                          - sum(1 for r in rows if r["metric"] == m)) for m in metrics)
    tooltip = [_tip("item"), _tip("metric"), _qtip("human", f"human {aggregate} (0–1)"),
               _qtip("metric_value", "metric"), _qtip("gap", "gap (metric − human)", "+.3f")]
    x_title, y_title = f"human {aggregate}, rescaled to 0–1", "metric value"
    axis_x = {"type": "quantitative", "title": x_title, "scale": {"domain": [0, 1]}}
    axis_y = {"type": "quantitative", "title": y_title, "scale": {"domain": [0, 1]}}
    panels = []
    for metric in metrics:
        missing = sum(1 for r in rows if r["metric"] == metric
                      and (r["human"] is None or r["metric_value"] is None))
        title: dict[str, Any] = {"text": metric}
        if missing:
            title["subtitle"] = f"{missing} item{'s' if missing > 1 else ''} without a value"
        panels.append({"title": title, "width": 210, "height": 210, "layer": [
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
        ]})
    description = (
        f"Each item's metric value against the {aggregate} human answer on the {ctx.scale} scale "
        f"rescaled to 0–1, one panel per metric: points above the dashed diagonal are items the "
        f"metric rates higher than the humans, points below lower. The three largest gaps per "
        f"metric are red and named.")
    if thinned:
        description += (
            f" With more than {MAX_SCATTER_POINTS} items a panel draws an evenly spaced sample of "
            f"at most {MAX_SCATTER_POINTS} of them plus the largest gaps ({thinned} points left "
            f"out in all); every item's gap is in the item-gaps export.")
    return _chart("gaps-scatter", "gaps", f"Metric vs human per item ({ctx.scale} scale)",
                  description, rows, concat=panels, columns=4)


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


# --- noise ----------------------------------------------------------------------------------

_PARTS = ("disagreed (hard)", "agreed by chance (upper bound)", "agreed (easy)",
          "agreed (not split)")


def _noise(ctx: _Context) -> Chart | None:
    records = ctx.records("noise")
    if not records:
        return None
    max_gamma = ctx.setting("noise_max_gamma", 0.05)
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


# --- one annotator ----------------------------------------------------------------------------

def annotator_timing_chart(name: str, seconds: Iterable[float | None], *,
                           floor_s: float | None = None,
                           pooled_median_s: float | None = None) -> Chart | None:
    """Return the histogram of one annotator's active times (the per-annotator page).

    ``seconds``: the active time of each of their answered presentations (None = not measured,
    left out); ``floor_s``: the *too fast* rule's fixed floor (a red dashed line);
    ``pooled_median_s``: the median of every annotator's answers (a grey line).  No chart when
    no time was measured.  Bins are on a log₁₀ scale of seconds: a 0.2 s clicker and a 40 s
    reader both show.
    """
    rows = [{"kind": "answer", "seconds": float(s), "log10_s": math.log10(max(float(s), 0.01))}
            for s in seconds if _num(s) is not None]
    if not rows:
        return None
    ticks = [-1.0, math.log10(0.3), 0.0, math.log10(3), 1.0, math.log10(30), 2.0,
             math.log10(300), 3.0]
    x = {"field": "log10_s", "type": "quantitative", "bin": {"step": 0.1},
         "title": "active time per answer (seconds, log scale)",
         # label the log₁₀ ticks in seconds: 0.1 s, 0.3 s, 1 s, 3 s, …
         "axis": {"values": ticks, "labelExpr": "format(pow(10, datum.value), '~g') + ' s'"}}
    layers: list[dict[str, Any]] = [{
        "transform": [_equal("kind", "answer")],  # the times, not the lines
        "mark": {"type": "bar", "color": BLUE},
        "encoding": {"x": x, "y": {"aggregate": "count", "type": "quantitative",
                                   "title": "answers"},
                     "tooltip": [{"aggregate": "count", "type": "quantitative",
                                  "title": "answers"}]}}]
    marks = []
    for value, label, colour, dash in ((floor_s, "too-fast floor", RED, [5, 4]),
                                       (pooled_median_s, "median of everyone", GREY, [2, 2])):
        if _num(value) is not None and value > 0:
            marks.append({"kind": "line", "line": label, "log10_s": math.log10(value),
                          "seconds": value})
            layers.append({
                "transform": [{"filter": {"field": "line", "equal": label}}],
                "mark": {"type": "rule", "color": colour, "strokeDash": dash, "strokeWidth": 2},
                "encoding": {"x": {"field": "log10_s", "type": "quantitative"},
                             "tooltip": [_tip("line", "line"),
                                         _qtip("seconds", "seconds", ".2f")]}})
    fast = sum(1 for r in rows if floor_s is not None and r["seconds"] < floor_s)
    description = (f"How long {name} spent on each item shown ({len(rows)} timed, repeats of "
                   f"duplicates included; the first revision's active time, hidden-tab time "
                   f"excluded), binned on a log scale." + (f" The red dashed line is the too-fast floor ({_fmt(floor_s)} s):"
                                f" {fast} answer{'s' if fast != 1 else ''} fall left of it."
                                if _num(floor_s) is not None else "")
                   + (f" The grey line is the median of everyone's answers "
                      f"({_fmt(pooled_median_s)} s)." if _num(pooled_median_s) is not None
                      else ""))
    title = f"{name}: time per answer"
    return _chart("annotator-timing", "timing", title, description, rows + marks,
                  width="container", height=160, layer=layers)
