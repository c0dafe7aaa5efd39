"""The quality charts: active time per answer (the study's and one annotator's), the filtering
heuristics per annotator and the metric–human correlation after filtering (docs/charts.md).
Pure: no Django."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from core.rules import rule_tests
from core.settings import RULES

from ..dashboard import rule_name, rule_set_name
from .vega import (
    BLUE,
    DARK,
    GREY,
    NA,
    RED,
    Chart,
    _chart,
    _Context,
    _equal,
    _fmt,
    _int,
    _invalid,
    _num,
    _ordered,
    _qtip,
    _reason,
    _signed,
    _symmetric,
    _tip,
    _valid,
)

# What each heuristic's value is, and the test that flags (core.rules, the one table).
RULE_TESTS = rule_tests("heuristics")



# --- timing ---------------------------------------------------------------------------------

_QUANTILES = ("min_s", "p05_s", "q1_s", "median_s", "q3_s", "p95_s", "max_s")


def _timing_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One annotator's quantiles (or the pooled ones, of "all"), null with a reason when none
    was recorded."""
    name = str(record.get("annotator"))
    row: dict[str, Any] = {"annotator": name,
                           "kind": "pooled" if name == "all" else "annotator",
                           "n": _int(record.get("n"))}
    for q in _QUANTILES:
        row[q] = _num(record.get(q))
    row["reason"] = _reason(record, "no recorded time") if row["median_s"] is None else ""
    return row


def _log_scale(people: list[dict[str, Any]], pooled: Mapping[str, Any] | None) -> bool:
    """A log scale when every time drawn is positive (else a symmetric log one)."""
    plotted = [r[q] for r in people for q in _QUANTILES if r[q] is not None]
    if pooled:
        plotted.append(pooled["median_s"])
    return bool(plotted) and min(plotted) > 0


def _timing(ctx: _Context) -> Chart | None:
    records = ctx.records("timing")
    if not records:
        return None
    rows = [_timing_row(r) for r in records]
    people = [r for r in rows if r["kind"] == "annotator"]
    if not people:
        return None
    pooled = next((r for r in rows if r["kind"] == "pooled" and r["median_s"] is not None), None)
    log = _log_scale(people, pooled)
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
    # The change shown is absolute (r after − r of the baseline): the record's relative change
    # divides by the baseline, which near zero turns a small move into −504 %.
    baseline = {(str(r.get("metric")), measure): _num(r.get(measure))
                for r in records if not r.get("rules") for measure in ("pearson", "spearman")}
    for r in records:
        rules = [str(x) for x in r.get("rules") or []]
        combo = rule_set_name(rules)  # the name the dashboard's table gives the same row
        metric = str(r.get("metric"))
        combo_order.append(combo)
        metric_order.append(metric)
        for measure in ("pearson", "spearman"):
            value, base = _num(r.get(measure)), baseline.get((metric, measure))
            change = None if value is None or base is None else value - base
            if not rules:
                label = _fmt(value)
            else:
                label = _signed(change) if change is not None else NA
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
               _qtip("change", "change from the baseline (r after − r before)", "+.3f"),
               _tip("n_items", "items", kind="quantitative"), _tip("reason", "why")]
    used = sorted({str(x) for r in records for x in r.get("rules") or []},
                  key=lambda x: _rule_number(x, []))
    legend = ", ".join(rule_name(rule) for rule in used)
    description = (
        "Solomon et al. (2021), table 3: correlation of each metric with the per-item mean human "
        "label (Pearson left, Spearman right): the first row is the baseline correlation, every "
        "other row the change of the correlation (after − before, in correlation points) when "
        "the annotators flagged by that combination of rules are removed (blue: the metric "
        "agrees better with the remaining humans, red: worse). "
        f"Rules: {legend or 'none'}.")
    layers = [
        {"transform": [_valid("change")],
         "mark": {"type": "rect"},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "change", "type": "quantitative",
                                "title": "change of r",
                                "legend": {"format": "+.2f"},
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
