"""The dashboard's shortcuts for a crowd study (issue 26, point 5) read the same as the long way:
the chart pruning by an index of the rows, the question's view not filtered twice, the flagged
annotators read once. Pure: no database."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.charts import build_charts
from analysis.charts.vega import _holds, _prune
from analysis.dashboard import flagged_annotators, shown_annotators
from core.results import question_view
from tests.unit.test_charts import document, two_questions


def _draws_nothing_every_row(layer: dict[str, Any], rows: list[dict]) -> bool:
    """The pruning as it was: every row against every filter."""
    if "data" in layer:
        return False
    filters = []
    for step in layer.get("transform", []):
        if "filter" not in step:
            return False
        filters.append(step["filter"])
    results = [[_holds(f, row) for f in filters] for row in rows]
    if any(r is None for result in results for r in result):
        return False
    return not any(all(result) for result in results)


def _prune_every_row(node: Any, rows: list[dict]) -> None:
    if not isinstance(node, dict):
        return
    layers = node.get("layer")
    if isinstance(layers, list):
        kept = [layer for layer in layers if not _draws_nothing_every_row(layer, rows)]
        node["layer"] = kept or layers[:1]
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in node.get(key) or []:
            _prune_every_row(child, rows)
    _prune_every_row(node.get("spec"), rows)


VALUES = st.one_of(st.none(), st.booleans(), st.sampled_from(["a", "b", ""]),
                   st.integers(-1, 1), st.floats(allow_nan=True, allow_infinity=False),
                   st.lists(st.integers(0, 1), max_size=1))
ROWS = st.lists(st.fixed_dictionaries({}, optional={"m": VALUES, "x": VALUES, "y": VALUES}),
                max_size=12)
PREDICATES = st.one_of(
    st.builds(lambda f, v: {"field": f, "equal": v}, st.sampled_from("mxy"),
              st.one_of(st.none(), st.booleans(), st.sampled_from(["a", "b"]), st.integers(-1, 1))),
    st.builds(lambda f: {"field": f, "valid": True}, st.sampled_from("mxy")),
    st.builds(lambda f: {"not": {"field": f, "valid": True}}, st.sampled_from("mxy")),
    st.just({"field": "m", "oneOf": ["a"]}),  # not evaluated here
)
LAYERS = st.lists(st.one_of(
    st.builds(lambda fs: {"transform": [{"filter": f} for f in fs], "mark": "point"},
              st.lists(PREDICATES, max_size=3)),
    st.just({"transform": [{"fold": ["x"]}], "mark": "bar"}),
    st.just({"data": {"values": []}, "mark": "rule"}),
), max_size=4)


@settings(max_examples=300, deadline=None)
@given(rows=ROWS, panels=st.lists(LAYERS, min_size=1, max_size=3))
def test_pruning_by_the_rows_index_keeps_the_layers_every_row_keeps(rows, panels):
    spec = {"data": {"values": rows}, "concat": [{"layer": layers} for layers in panels]}
    fast, slow = copy.deepcopy(spec), copy.deepcopy(spec)
    _prune(fast, rows)
    _prune_every_row(slow, rows)
    assert fast == slow


def test_the_charts_of_a_view_are_the_charts_of_the_document():
    doc = two_questions(document())
    for question in ("rating", "fluency"):
        view = question_view(doc, question)
        for scale in ("raw", "reduced"):
            assert (build_charts(view, question=question, scale=scale, viewed=True)
                    == build_charts(doc, question=question, scale=scale))


def test_the_annotators_shown_are_the_same_given_the_flagged_ones():
    doc = document()
    names = [f"A{n}" for n in range(1, 301)]
    doc["annotators"] = names
    doc["heuristics"] = [*doc["heuristics"],
                         {"annotator": "A250", "rule": "low_variance", "flagged": True}]
    flagged = flagged_annotators(doc)
    assert "A250" in flagged
    for limit in (1, 5, 100):
        shown = shown_annotators(doc, limit=limit, flagged=flagged)
        assert shown == shown_annotators(doc, limit=limit)
        assert shown is not None and shown[0] in flagged and len(shown) == limit
