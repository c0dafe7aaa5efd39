"""Metric vs human gaps on a [0, 1] scale (Borovikova et al. 2022, §4 and table 2)."""

import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats.gaps import human_aggregate, metric_gaps
from core.stats.scales import PRESETS, Scale, reduce_values, rescale01

nan = np.nan
RAW = PRESETS["likert-0-7-coref"]["values"]


def test_it_reproduces_the_docstring_example():
    dense = np.array([[7, 0.0], [7, 7.0]])
    result = metric_gaps(dense, metrics={"MUC_F1": [0.8, 0.9]}, domain=RAW, aggregates=("mean",))
    (summary,) = result.metric_gaps
    assert summary.mean_signed_gap == pytest.approx(0.1)
    assert summary.mean_abs_gap == pytest.approx(0.3)
    assert summary.n_items == 2 and summary.items == "all" and summary.aggregate == "mean"
    assert [g.gap for g in result.item_gaps] == pytest.approx([-0.2, 0.4])
    assert [g.human for g in result.item_gaps] == pytest.approx([1.0, 0.5])


def test_it_averages_tied_modes():
    dense = np.array([[2, 1, 4.0], [2, 3, 4.0], [5, nan, 6.0]])
    assert human_aggregate(dense, aggregate="mode") == pytest.approx([2.0, 2.0, 4.0])
    assert human_aggregate(dense, aggregate="mean") == pytest.approx([3.0, 2.0, 14 / 3])


def test_it_gives_no_aggregate_for_an_item_nobody_rated():
    dense = np.array([[1, nan], [2, nan]])
    for aggregate in ("mean", "mode"):
        out = human_aggregate(dense, aggregate=aggregate)
        assert out[0] == 1.5 and np.isnan(out[1])


def test_it_rescales_by_the_scale_domain_not_the_observed_values():
    # Observed answers span 3..5 only; the 0–7 domain still maps 5 to 5/7.
    dense = np.array([[3, 5.0], [3, 5.0]])
    result = metric_gaps(dense, metrics={"m": [0.0, 1.0]}, domain=RAW, aggregates=("mode",))
    assert [g.human for g in result.item_gaps] == pytest.approx([3 / 7, 5 / 7])


def test_it_rescales_a_reduction_by_its_own_domain():
    gravity = PRESETS["likert-0-7-coref"]["reductions"]["gravity"]
    dense = reduce_values(np.array([[0, 4, 7.0], [1, 5, 7.0]]), gravity)
    domain = Scale.from_preset("likert-0-7-coref", "gravity").domain
    result = metric_gaps(
        dense, metrics={"m": [0.0, 0.5, 1.0]}, domain=domain, scale="gravity", aggregates=("mean",)
    )
    assert [g.human for g in result.item_gaps] == pytest.approx([0.0, 0.5, 1.0])
    assert result.metric_gaps[0].mean_abs_gap == 0.0 and result.metric_gaps[0].scale == "gravity"


def test_it_reports_simple_items_separately():
    dense = np.array([[7, 0, 7.0], [7, 0, 0.0]])
    result = metric_gaps(
        dense, metrics={"m": [1.0, 0.5, 0.5]}, domain=RAW, aggregates=("mean",),
        simple=np.array([True, True, False]),
    )  # fmt: skip
    by = {g.items: g for g in result.metric_gaps}
    assert by["all"].n_items == 3 and by["all"].mean_signed_gap == pytest.approx(1 / 6)
    assert by["simple"].n_items == 2 and by["simple"].mean_signed_gap == pytest.approx(0.25)
    assert by["simple"].mean_abs_gap == pytest.approx(0.25)


def test_it_refuses_a_metric_outside_0_1_with_a_reason():
    dense = np.array([[7, 0.0], [7, 7.0]])
    result = metric_gaps(dense, metrics={"raw_count": [3.0, 0.5], "ok": [1.0, 0.5]}, domain=RAW)
    bad = [g for g in result.metric_gaps if g.metric == "raw_count"]
    assert len(bad) == 2 and all(g.mean_abs_gap is None and "outside [0, 1]" in g.reason for g in bad)
    assert {g.metric for g in result.item_gaps} == {"ok"}
    assert "reason" in bad[0].to_record()


def test_it_skips_items_without_a_metric_value_or_an_answer():
    dense = np.array([[7, 0, nan], [7, 7, nan]])
    result = metric_gaps(dense, metrics={"m": [nan, 0.5, 0.2]}, domain=RAW, aggregates=("mean",))
    assert result.metric_gaps[0].n_items == 1
    assert [g.item for g in result.item_gaps] == [1]


def test_it_returns_none_when_no_item_has_both_values():
    dense = np.array([[7, nan], [7, nan]])
    result = metric_gaps(dense, metrics={"m": [nan, 0.5]}, domain=RAW, aggregates=("mean",))
    assert result.metric_gaps[0].mean_abs_gap is None and "no item" in result.metric_gaps[0].reason


def test_it_returns_the_record_shapes_of_product_md():
    result = metric_gaps(np.array([[7.0], [0.0]]), metrics={"m": [0.5]}, domain=RAW)
    assert list(result.metric_gaps[0].to_record()) == [
        "scale", "aggregate", "items", "metric", "mean_abs_gap", "mean_signed_gap", "n_items",
    ]  # fmt: skip
    assert list(result.item_gaps[0].to_record()) == [
        "item", "scale", "aggregate", "metric", "human", "metric_value", "gap",
    ]  # fmt: skip
    assert result.params["aggregates"] == ["mean", "mode"]


def test_it_rejects_an_unknown_aggregate():
    with pytest.raises(ValueError, match="aggregate"):
        metric_gaps(np.array([[1.0]]), metrics={}, domain=RAW, aggregates=("median",))


def test_it_rejects_a_metric_of_the_wrong_length():
    with pytest.raises(ValueError, match="one value per item"):
        metric_gaps(np.array([[1.0, 2.0]]), metrics={"m": [0.5]}, domain=RAW)


answers = st.lists(
    st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, nan]), min_size=6, max_size=6),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(answers)
def test_it_matches_a_multimode_oracle(rows):
    dense = np.array(rows)
    got = human_aggregate(dense, aggregate="mode")
    for i in range(dense.shape[1]):
        col = [v for v in dense[:, i] if not np.isnan(v)]
        if col:
            assert got[i] == pytest.approx(np.mean(statistics.multimode(col)))
        else:
            assert np.isnan(got[i])


@settings(max_examples=60, deadline=None)
@given(answers, st.sampled_from(["mean", "mode"]))
def test_it_gives_zero_gaps_for_a_metric_equal_to_the_human_aggregate(rows, aggregate):
    dense = np.array(rows)
    metric = rescale01(human_aggregate(dense, aggregate=aggregate), RAW)
    result = metric_gaps(dense, metrics={"m": metric}, domain=RAW, aggregates=(aggregate,))
    summary = result.metric_gaps[0]
    if summary.n_items:
        assert summary.mean_abs_gap == 0.0 and summary.mean_signed_gap == 0.0
    assert all(g.gap == 0.0 for g in result.item_gaps)


@settings(max_examples=40, deadline=None)
@given(answers, st.randoms(use_true_random=False))
def test_it_is_unchanged_by_permuting_annotators(rows, rnd):
    dense = np.array(rows)
    order = list(range(dense.shape[0]))
    rnd.shuffle(order)
    metric = np.linspace(0, 1, dense.shape[1])
    a = metric_gaps(dense, metrics={"m": metric}, domain=RAW)
    b = metric_gaps(dense[order], metrics={"m": metric}, domain=RAW)
    for x, y in zip(a.metric_gaps, b.metric_gaps, strict=True):
        assert (x.metric, x.items, x.aggregate, x.n_items) == (y.metric, y.items, y.aggregate, y.n_items)
        assert (x.mean_abs_gap, x.mean_signed_gap) == pytest.approx((y.mean_abs_gap, y.mean_signed_gap))
    assert [g.gap for g in a.item_gaps] == pytest.approx([g.gap for g in b.item_gaps])
