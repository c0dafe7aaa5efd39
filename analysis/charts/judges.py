"""The judges charts: an LLM judge's answers against the people's aggregate, item by item
(docs/charts.md). Pure: no Django.

Each reads one record of the results document's ``judges`` section (docs/results.md, "Judges"):
its ``plot``, at most 400 ``[judge's answer, human aggregate]`` pairs the analysis sampled with
its seed. A scale question draws a scatter with the diagonal where the two agree (the judge's
answers jittered nowhere: equal answers stack, and the tooltip counts them); a comparative
question draws, for each choice the judge made, the people's aggregate choice value as points.
A record without points gives no chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .vega import BLUE, GREY, Chart, _chart, _num, _qtip, _slug, _tip

# The records' plot is capped by the analysis (core.results.judges.JUDGE_PLOT_POINTS); a
# malformed document is capped here too, so a chart never carries more.
PLOT_POINTS = 400


def judge_records(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return the document's ``judges`` records that name a judge, a question and a scale."""
    rows = doc.get("judges")
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, Mapping) and all(
        isinstance(r.get(k), str) for k in ("judge", "question", "scale"))]


def chart_name(record: Mapping[str, Any]) -> str:
    """The chart's name (its DOM id and file name): unique per judge, question and scale."""
    return (f"judge-{_slug(str(record.get('judge')))}-{_slug(str(record.get('question')))}"
            f"-{_slug(str(record.get('scale')))}")


def _points(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    plot = record.get("plot")
    if not isinstance(plot, list):
        return []
    counts: dict[tuple[float, float], int] = {}
    for pair in plot[:PLOT_POINTS]:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            continue
        judge, humans = _num(pair[0]), _num(pair[1])
        if judge is None or humans is None:
            continue
        counts[(float(judge), float(humans))] = counts.get((float(judge), float(humans)), 0) + 1
    return [{"judge": j, "humans": h, "items": n} for (j, h), n in counts.items()]


def judge_chart(record: Mapping[str, Any]) -> Chart | None:
    """The judge's answers (x) against the people's aggregate of the same items (y)."""
    rows = _points(record)
    if not rows:
        return None
    judge, question, scale = (str(record.get(k)) for k in ("judge", "question", "scale"))
    # A fixed size, not the container's: the chart sits in a <details> that may be closed
    # when the page draws it (a closed one measures 0 wide), and 300 px fits a phone.
    comparative = record.get("kind") not in (None, "scale")
    low = min(min(r["judge"], r["humans"]) for r in rows)
    high = max(max(r["judge"], r["humans"]) for r in rows)
    domain = [low, high] if high > low else [low - 1, high + 1]
    x = {"field": "judge", "type": "quantitative", "scale": {"domain": domain, "nice": False, "zero": False},
         "title": f"{judge}'s {'choice value' if comparative else 'answer'}"}
    y = {"field": "humans", "type": "quantitative", "scale": {"domain": domain, "nice": False, "zero": False},
         "title": "the people's " + ("mean choice value" if comparative else "mean answer")}
    tooltip = [_qtip("judge", "judge"), _qtip("humans", "people (mean)"),
               _tip("items", "items", kind="quantitative")]
    layers = [
        # where the judge and the people agree: a reference line, no data of its own
        {"data": {"values": [{"judge": domain[0], "humans": domain[0]},
                             {"judge": domain[1], "humans": domain[1]}]},
         "mark": {"type": "line", "color": GREY, "strokeDash": [4, 4], "aria": False},
         "encoding": {"x": {"field": "judge", "type": "quantitative"},
                      "y": {"field": "humans", "type": "quantitative"}}},
        {"mark": {"type": "circle", "color": BLUE, "opacity": 0.6},
         "encoding": {"x": x, "y": y,
                      "size": {"field": "items", "type": "quantitative", "title": "items",
                               "scale": {"range": [30, 300]}, "legend": None},
                      "tooltip": tooltip}},
    ]
    n = sum(r["items"] for r in rows)
    description = (
        f"{judge} on question {question} ({scale}): each point is the judge's answer to an item "
        f"(across) and the people's mean answer to it (up), for {n} items"
        + (" sampled by the analysis" if n >= PLOT_POINTS else "")
        + "; a larger point stands for several items. On the dashed diagonal the judge says "
          "what the people say on average.")
    if comparative:
        description = (
            f"{judge} on question {question}: each point is the judge's choice on a comparison "
            f"as its value (across: 0 the comparison's first output, 1 its second, ½ a tie) and "
            f"the mean of "
            f"the people's choices on it (up), for {n} comparisons; a larger point stands for "
            f"several. A judge that chose as the people do lies near the dashed diagonal.")
    return _chart(chart_name(record), "judges", f"{judge}: {question} ({scale}) against the people",
                  description, rows, width=300, height=260, layer=layers)


def judge_charts(doc: Mapping[str, Any]) -> list[Chart]:
    """Every judges chart of the document: one per judge, question and scale with points."""
    return [c for r in judge_records(doc) if (c := judge_chart(r)) is not None]
