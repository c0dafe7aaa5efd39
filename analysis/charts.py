"""Vega-Lite chart specs built from a results document (`concord.results/1`). Pure: no Django.

`build_charts(doc)` returns one `Chart` per non-empty section; each spec is a complete Vega-Lite v6
spec with its data inline, and `chart_data(chart)` returns those inline values for download.
See docs/charts.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SECTIONS = ("trust", "duplicates", "timing", "heuristics", "gaps", "weights", "noise", "alpha")
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


@dataclass(frozen=True)
class Chart:
    name: str  # slug, unique, used in file names and DOM ids
    section: str  # one of SECTIONS
    title: str
    description: str  # one or two plain sentences: what is drawn and how to read it
    spec: dict  # a complete Vega-Lite v6 spec with inline data


def build_charts(doc: dict, *, scale: str = "raw", level: str | None = None) -> list[Chart]:
    """Return the charts of a results document for one scale (level: the alpha chart's filter)."""
    return []  # filled in by the next commit


def chart_data(chart: Chart) -> list[dict[str, Any]]:
    """Return the rows drawn by a chart (its inline data values)."""
    values = chart.spec.get("data", {}).get("values")
    return [dict(v) for v in values] if isinstance(values, list) else []
