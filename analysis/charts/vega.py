"""The Vega-Lite plumbing every chart shares: the `Chart` record, the reading of a results document
(`_Context` and the null-safe `_num`, `_int`, `_text`), number labels, the spec skeleton with its
field predicates and tooltips, and the pruning of layers that would draw nothing. Pure: no Django.

The names with an underscore are the package's own: the chart modules import them, nothing else.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SECTIONS = ("trust", "duplicates", "timing", "heuristics", "gaps", "weights", "noise", "alpha",
            "systems", "comparisons", "judges")
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"

BLUE, RED, GREY, LIGHT, DARK = "#4c78a8", "#d6404e", "#9a9a9a", "#eef1f4", "#333333"
NA = "n/a"


@dataclass(frozen=True)
class Chart:
    name: str  # slug, unique, used in file names and DOM ids
    section: str  # one of SECTIONS
    title: str
    description: str  # one or two plain sentences: what is drawn and how to read it
    spec: dict  # a complete Vega-Lite v6 spec with inline data



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
        wanted = tuple(match.items())
        out = []
        for r in rows:  # a crowd study's sections hold thousands: no generator per record
            if type(r) is dict or isinstance(r, Mapping):
                for k, v in wanted:
                    if not r.get(k) == v:
                        break
                else:
                    out.append(r)
        return out

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


def _signed(value: float | None, digits: int = 2) -> str:
    """A change with its sign ("+0.05", "-0.12"; "0.00" when it rounds to zero); n/a for null.
    ASCII minus, as every label, so a copied number pastes as a number."""
    if value is None:
        return NA
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


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


def _draws_nothing(layer: Mapping[str, Any], rows: list[dict],
                   index: dict[str, dict[Any, list[dict]] | None] | None = None) -> bool:
    """True when the layer's filters leave none of the inline rows (so it would draw nothing).

    ``index``: the rows by the value of each field an ``equal`` filter tests, built as needed
    and shared by the layers of one spec, so that a filter on one metric of a scatter reads
    that metric's rows rather than every panel's."""
    if "data" in layer:
        return False
    filters = []
    for step in layer.get("transform", []):
        if "filter" not in step:
            return False  # fold, lookup...: not evaluated here
        filters.append(step["filter"])
    if not rows:
        return True
    # Whether a predicate can be evaluated depends on its shape, never on the row: decided once,
    # then only the rows that can pass are read, until the first one every filter keeps.
    if any(_holds(f, rows[0]) is None for f in filters):
        return False
    candidates = rows
    if index is not None:
        for f in filters:
            if "equal" in f and "not" not in f and "valid" not in f:
                candidates = _rows_equal(rows, index, f["field"], f["equal"])
                break
    return not any(all(_holds(f, row) for f in filters) for row in candidates)


def _rows_equal(rows: list[dict], index: dict[str, dict[Any, list[dict]] | None], field: str,
                value: Any) -> list[dict]:
    """The rows whose ``field`` equals ``value`` (all the rows when a value is not hashable)."""
    if field not in index:
        grouped: dict[Any, list[dict]] = {}
        try:
            for row in rows:
                grouped.setdefault(row.get(field), []).append(row)
            index[field] = grouped
        except TypeError:
            index[field] = None
    by = index[field]
    if by is None:
        return rows
    try:
        return by.get(value, [])
    except TypeError:
        return rows


def _prune(node: Any, rows: list[dict],
           index: dict[str, dict[Any, list[dict]] | None] | None = None) -> None:
    """Drop the layers that would draw nothing: Vega warns on the extent of an empty field."""
    if not isinstance(node, dict):
        return
    index = {} if index is None else index
    layers = node.get("layer")
    if isinstance(layers, list):
        kept = [layer for layer in layers if not _draws_nothing(layer, rows, index)]
        node["layer"] = kept or layers[:1]
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in node.get(key) or []:
            _prune(child, rows, index)
    _prune(node.get("spec"), rows, index)


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
