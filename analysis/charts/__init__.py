"""Vega-Lite chart specs built from a results document (`concord.results/2`). Pure: no Django.

`build_charts(doc, question=..., scale=..., level=...)` returns one `Chart` per non-empty section
of the document, as it reads for one question (`core.results.question_view`); each spec is a complete Vega-Lite v6 spec whose data are inline (`{"values": [...]}`),
and `chart_data(chart)` returns those rows (flat: strings, numbers, booleans, nulls) for the
"download data" links. A number the document gives as null is never drawn as a number: the row
keeps it as null with the record's `reason`, and the chart says "n/a" (or leaves the mark out and
says why). The specs use field predicates rather than expression strings wherever they can, and
the page renders them with the expression interpreter (strict CSP). See docs/charts.md.

The package: `vega` (the `Chart` record and the helpers every spec shares), `agreement` (trust,
alpha, duplicates, noise), `quality` (timing, heuristics, correlations, one annotator's times) and
`metrics` (metric–human gaps, error weights), `systems` (system means, pairwise tests) and
`comparisons` (strengths with intervals, win probabilities), `judges` (an LLM judge's answers
against the people's); this module puts them together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.results import GAP_SAMPLE, question_keys, question_view
from core.settings import LEVELS, RULES

from .agreement import _alpha, _duplicates, _noise, _trust
from .comparisons import comparison_charts
from .judges import judge_charts
from .metrics import MAX_SCATTER_POINTS, _gaps_mean, _gaps_scatter, _weights
from .quality import RULE_TESTS, _correlations, _heuristics, _timing, annotator_timing_chart
from .systems import _means as _system_means
from .systems import _tests as _system_tests
from .vega import NA, SECTIONS, VEGA_LITE_SCHEMA, Chart, _Context, _mapping, _text

__all__ = [
    "GAP_SAMPLE", "LEVELS", "MAX_SCATTER_POINTS", "NA", "RULES", "RULE_TESTS", "SECTIONS",
    "VEGA_LITE_SCHEMA", "Chart", "annotator_timing_chart", "build_charts", "chart_data",
]


def build_charts(doc: dict, *, question: str | None = None, scale: str = "raw",
                 level: str | None = None, viewed: bool = False) -> list[Chart]:
    """Return the charts of a results document for one question and one scale.

    `question` selects the question (a key of the document's `questions`; None or an unknown key:
    the first); timing does not depend on it, and in a document of several questions every other
    chart's title starts with the question's key. `scale` selects the records of the scale-dependent sections (trust, alpha, duplicates, gaps,
    weights); heuristics, correlations, timing and noise (one row per scale) do not depend on it.
    `level` is the analysis level: it picks the trust record and is marked in the alpha chart;
    None means the run's (`settings.level`). Sections that are empty (or have no record for the
    scale) give no chart. ``viewed``: ``doc`` is already `question_view(doc, question)` (the
    dashboard's), so it is not filtered again (a crowd study's records are read once).
    """
    doc = doc if isinstance(doc, Mapping) else {}
    whole = doc  # the comparisons charts are every comparative question's, titled by its key
    several = len(question_keys(doc)) > 1
    if not viewed:
        doc = question_view(doc, question)
    settings = _mapping(doc.get("settings"))
    run_level = _text(settings.get("level")) or "ordinal"
    ctx = _Context(doc=doc, settings=settings, scale=str(scale), level=level or run_level)
    charts: list[Chart] = []
    for builder in (_trust, _alpha, _duplicates, _timing, _heuristics, _correlations,
                    _gaps_scatter, _gaps_mean, _weights, _noise, _system_means, _system_tests):
        chart = builder(ctx)
        if chart is not None:
            if several and chart.section != "timing":  # time is the study's, not a question's
                chart = _titled(chart, f"{doc.get('question')}: {chart.title}")
            charts.append(chart)
    charts.extend(comparison_charts(whole))
    charts.extend(judge_charts(whole))
    return charts


def _titled(chart: Chart, title: str) -> Chart:
    spec = {**chart.spec, "title": {**_mapping(chart.spec.get("title")), "text": title}}
    return replace(chart, title=title, spec=spec)


def chart_data(chart: Chart) -> list[dict[str, Any]]:
    """Return the rows drawn by a chart (its top-level inline data values), as copies."""
    data = chart.spec.get("data")
    values = data.get("values") if isinstance(data, Mapping) else None
    return [dict(v) for v in values] if isinstance(values, list) else []
