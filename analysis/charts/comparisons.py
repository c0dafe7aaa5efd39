"""The comparisons charts: each system's (or output's) strength with its interval, and the
win-probability heatmap between them (docs/charts.md). Pure: no Django.

Both read the sections ``comparison_scores`` and ``comparison_win_probabilities`` of a results
document (docs/results.md) for one comparative question, at the level the dashboard shows: the
systems when the outputs have systems, else the outputs (`comparison_level`). A document without
these sections (a run before the comparisons analysis, a study without a comparative question)
gives no chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .vega import (
    BLUE,
    DARK,
    GREY,
    Chart,
    _chart,
    _fmt,
    _int,
    _invalid,
    _num,
    _qtip,
    _slug,
    _text,
    _tip,
    _valid,
)

COMPARISON_SECTIONS = ("comparison_scores", "comparison_win_probabilities",
                       "comparison_reliability", "comparison_consistency",
                       "comparison_correlations")
LEVELS = ("system", "output")
MODEL_LABELS = {"bradley_terry": "Bradley–Terry", "davidson": "Davidson",
                "plackett_luce": "Plackett–Luce"}
# The analysis names why a number is missing by a code (core/results/comparisons.py); the page
# says it in words. An unknown code reads with its underscores as spaces.
REASONS = {
    "not_strongly_connected": "not every output is compared, directly or through others, "
                              "with every other (as when outputs are only compared with outputs "
                              "of their own source): strengths of different groups are not "
                              "comparable",
    "groups_never_compared": "some outputs are never compared, directly or through others, "
                             "with the rest (as the outputs of different sources): no strength "
                             "is fitted for them; the systems are compared instead",
    "no_finite_estimate": "no finite estimate (an output that always wins or always loses)",
    "decided_judgments_not_connected": "the decided judgments (ties aside) do not connect "
                                       "every output: the ties are not modelled",
    "not_compared": "never compared",
    "fewer_than_two_compared": "fewer than two were compared",
    "too_many_to_fit": "too many to fit a model (the counting scores are given)",
    "fewer_than_two_annotators": "fewer than two annotators",
    "a_single_choice": "every judgment made the same choice",
    "alpha_undefined": "α is undefined on these judgments",
    "no_comparison_judged_twice": "no comparison was judged by two annotators",
    "no_split_with_a_correlation": "no split of the annotators gave two halves to correlate",
    "no_triangle_of_decided_pairs": "no three outputs with all three pairs decided",
    "no_decided_judgment": "no judgment that picks one output",
}
# A heatmap cell's text turns white on its darkest colours.
STRONG = 0.2


def reason_text(reason: Any) -> str:
    """A reason as the page says it: the analysis' codes in words (each part of a "; "-joined
    list), a sentence as it is."""
    if not isinstance(reason, str) or not reason:
        return ""
    return "; ".join(REASONS.get(part.strip(), part.strip().replace("_", " "))
                     for part in reason.split(";") if part.strip())


def comparison_records(doc: Mapping[str, Any], section: str, *, question: str | None = None,
                       **match: Any) -> list[Mapping[str, Any]]:
    """Return the records of one comparisons section (of ``question`` when given); a missing or
    malformed section reads as empty, a record without a question key is skipped."""
    rows = doc.get(section)
    if not isinstance(rows, list):
        return []
    out = []
    for r in rows:
        if not isinstance(r, Mapping) or not isinstance(r.get("question"), str):
            continue
        if question is not None and r.get("question") != question:
            continue
        if all(r.get(k) == v for k, v in match.items()):
            out.append(r)
    return out


def comparison_questions(doc: Mapping[str, Any]) -> list[str]:
    """The comparative questions with scores, in the order of the document's
    ``comparison_questions`` (else its ``questions``), then as met."""
    found = list(dict.fromkeys(str(r.get("question"))
                               for r in comparison_records(doc, "comparison_scores")))
    order: list[str] = []
    for name in ("comparison_questions", "questions"):
        entries = doc.get(name)
        if isinstance(entries, list):
            order += [str(e.get("key")) for e in entries if isinstance(e, Mapping)]
    known = [k for k in order if k in found]
    return known + [k for k in found if k not in known]


def comparison_level(doc: Mapping[str, Any], question: str) -> str | None:
    """The level the section shows first: "system" when the question has system records, else
    "output"; None when it has no score at all."""
    levels = {r.get("level") for r in comparison_records(doc, "comparison_scores",
                                                          question=question)}
    return next((level for level in LEVELS if level in levels), None)


def ranked(records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Best first: by rank, then by strength (highest first), then by counting score, then by
    name; a record without a rank last."""
    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        rank, strength, score = _num(r.get("rank")), _num(r.get("strength")), _num(r.get("score"))
        return (rank is None, rank or 0, strength is None, -(strength or 0.0), score is None,
                -(score or 0.0), str(r.get("name")))
    return sorted(records, key=key)


def model_label(records: Sequence[Mapping[str, Any]]) -> str:
    """The model the strengths come from, as the page names it ("Bradley–Terry")."""
    model = next((_text(r.get("model")) for r in records if _text(r.get("model"))), None)
    return MODEL_LABELS.get(model or "", model or "Bradley–Terry")


def _what(level: str) -> str:
    return "system" if level == "system" else "output"


def _model(doc: Mapping[str, Any], question: str, level: str) -> str:
    return next((str(r.get("model")) for r in comparison_records(
        doc, "comparison_scores", question=question, level=level) if r.get("model")), "")


def strengths_chart(doc: Mapping[str, Any], question: str) -> Chart | None:
    """Each system's (output's) strength, a dot, with its bootstrap interval, a whisker, best
    first."""
    level = comparison_level(doc, question)
    if level is None:
        return None
    records = ranked(comparison_records(doc, "comparison_scores", question=question, level=level))
    rows = []
    for r in records:
        strength = _num(r.get("strength"))
        rows.append({"name": str(r.get("name")), "strength": strength,
                     "strength_low": _num(r.get("strength_low")),
                     "strength_high": _num(r.get("strength_high")),
                     "rank": _int(r.get("rank")), "rank_low": _int(r.get("rank_low")),
                     "rank_high": _int(r.get("rank_high")), "score": _num(r.get("score")),
                     "wins": _int(r.get("wins")), "losses": _int(r.get("losses")),
                     "ties": _int(r.get("ties")), "judgments": _int(r.get("judgments")),
                     "label": _fmt(strength),
                     "reason": reason_text(r.get("reason"))
                     or ("not estimated" if strength is None else "")})
    what = _what(level)
    model = model_label(records)
    y = {"field": "name", "type": "nominal", "sort": [row["name"] for row in rows],
         "title": None, "axis": {"labelLimit": 160}}
    x = {"type": "quantitative", "title": f"log-strength ({model}), 95 % interval",
         "scale": {"zero": False}}
    tooltip = [_tip("name", what), _qtip("strength", "strength"),
               _qtip("strength_low", "interval low"), _qtip("strength_high", "interval high"),
               _tip("rank", kind="quantitative"),
               _tip("rank_low", "rank interval low", kind="quantitative"),
               _tip("rank_high", "rank interval high", kind="quantitative"),
               _qtip("score", "counting score"), _tip("wins", kind="quantitative"),
               _tip("losses", kind="quantitative"), _tip("ties", kind="quantitative"),
               _tip("judgments", kind="quantitative")]
    layers = [
        # the average (0), a reference line: no data, so no name for a screen reader
        {"mark": {"type": "rule", "color": GREY, "strokeDash": [3, 3], "aria": False},
         "encoding": {"x": {"datum": 0, "type": "quantitative"}}},
        {"transform": [_valid("strength_low"), _valid("strength_high")],
         "mark": {"type": "rule", "strokeWidth": 2, "color": BLUE},
         "encoding": {"y": y, "x": {"field": "strength_low", **x},
                      "x2": {"field": "strength_high"}, "tooltip": tooltip}},
        {"transform": [_valid("strength")],
         "mark": {"type": "point", "filled": True, "size": 80, "color": BLUE},
         "encoding": {"y": y, "x": {"field": "strength", **x}, "tooltip": tooltip}},
        {"transform": [_invalid("strength")],
         "mark": {"type": "text", "align": "left", "baseline": "middle", "color": GREY,
                  "fontStyle": "italic"},
         "encoding": {"y": y, "x": {"value": 3}, "text": {"value": "n/a"},
                      "tooltip": [_tip("name", what), _tip("reason", "why")]}},
    ]
    description = (
        f"Each {what}'s strength on question {question}: its log-strength from the "
        f"{model} model (a point; 0 is the average {what}) with its 95 % bootstrap interval "
        f"over the judgments (a line), best first. Two {what}s whose lines overlap much may "
        f"well be equally good.")
    return _chart(f"comparison-strengths-{_slug(question)}", "comparisons",
                  f"{question}: strengths of the {what}s", description, rows,
                  width="container", height={"step": 26}, layer=layers)


def win_chart(doc: Mapping[str, Any], question: str) -> Chart | None:
    """The heatmap of P(row beats column) between the systems (outputs), in rank order."""
    level = comparison_level(doc, question)
    if level is None:
        return None
    records = comparison_records(doc, "comparison_win_probabilities", question=question,
                                 level=level)
    if not records:
        return None
    order = [str(r.get("name")) for r in ranked(comparison_records(
        doc, "comparison_scores", question=question, level=level))]
    rows = []
    for r in records:
        a, b = str(r.get("a")), str(r.get("b"))
        if a == b:
            continue
        p = _num(r.get("probability"))
        rows.append({"row": a, "column": b, "probability": p,
                     "label": _fmt(p) if p is not None else "n/a",
                     "strong": p is not None and (p <= STRONG or p >= 1 - STRONG),
                     "reason": reason_text(r.get("reason"))
                     or ("not estimated" if p is None else "")})
    if not rows:
        return None
    order += [n for n in dict.fromkeys([*(r["row"] for r in rows), *(r["column"] for r in rows)])
              if n not in order]
    what = _what(level)
    x = {"field": "column", "type": "nominal", "sort": order, "title": "against",
         "axis": {"orient": "top", "labelAngle": -40, "labelLimit": 120}}
    y = {"field": "row", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelLimit": 120}}
    tooltip = [_tip("row", what), _tip("column", "against"),
               _qtip("probability", "probability the row wins", ".3f"), _tip("reason", "note")]
    layers = [
        {"transform": [_valid("probability")],
         "mark": {"type": "rect", "stroke": "white", "strokeWidth": 1},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "probability", "type": "quantitative",
                                "title": "P(row wins)",
                                "scale": {"domain": [0, 1], "domainMid": 0.5,
                                          "scheme": "redblue"},
                                "legend": {"orient": "bottom", "direction": "horizontal",
                                           "gradientLength": 160}}}},
        {"mark": {"type": "text", "fontSize": 10, "baseline": "middle"},
         "encoding": {"x": x, "y": y, "text": {"field": "label"}, "tooltip": tooltip,
                      "color": {"condition": {"test": {"field": "strong", "equal": True},
                                              "value": "white"}, "value": DARK}}},
    ]
    description = (
        f"Question {question}: the probability that the row {what} is preferred to the column "
        f"{what}, from the fitted strengths (Bradley and Terry 1952). Blue: the row usually "
        f"wins; red: it usually loses; white: a coin toss."
        + (" With ties allowed (Davidson 1970), a pair's two probabilities leave the rest "
           "to a tie." if _model(doc, question, level) == "davidson" else ""))
    return _chart(f"comparison-wins-{_slug(question)}", "comparisons",
                  f"{question}: who beats whom", description, rows,
                  width={"step": 46}, height={"step": 26}, layer=layers)


def comparison_charts(doc: Mapping[str, Any]) -> list[Chart]:
    """Every comparisons chart of the document: per comparative question, its strengths and
    its win probabilities."""
    charts: list[Chart] = []
    for question in comparison_questions(doc):
        for chart in (strengths_chart(doc, question), win_chart(doc, question)):
            if chart is not None:
                charts.append(chart)
    return charts
