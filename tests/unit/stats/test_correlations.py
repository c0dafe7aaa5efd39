"""Metric–human correlations before and after filtering (Solomon et al. 2021, tables 1–4)."""

import warnings
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from core.stats._types import LongRatings
from core.stats.correlations import correlate, filtering_correlations, style_correlations
from core.stats.heuristics import RULES, annotator_styles, low_variance_annotators

nan = np.nan


def reference(dense, metric, removed, min_ratings=2):
    """Read docs/statistics/heuristics.md naively, on dense arrays, with scipy as the oracle."""
    kept = np.delete(dense, list(removed), axis=0)
    counts = (~np.isnan(kept)).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an all-blank column
        mean = np.nanmean(kept, axis=0)
    sel = (counts >= min_ratings) & np.isfinite(metric)
    x, y = metric[sel], mean[sel]
    if sel.sum() < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None, int(sel.sum())
    return stats.pearsonr(x, y)[0], stats.spearmanr(x, y)[0], int(sel.sum())


def random_crowd(seed, n_annotators=12, n_items=80, per_item=3):
    rng = np.random.default_rng(seed)
    dense = np.full((n_annotators, n_items), nan)
    truth = rng.integers(1, 6, n_items)
    for i in range(n_items):
        raters = rng.choice(n_annotators, per_item, replace=False)
        dense[raters, i] = np.clip(truth[i] + rng.integers(-1, 2, per_item), 1, 5)
    metrics = {
        "smooth": np.clip((truth - 1) / 4 + rng.normal(0, 0.2, n_items), 0, 1),
        "tied": np.round((truth - 1) / 4 + rng.normal(0, 0.3, n_items), 1),
    }
    flags = {rule: sorted(rng.choice(n_annotators, 2, replace=False).tolist()) for rule in RULES}
    return dense, metrics, flags


# --------------------------------------------------------------------------- correlate


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 1))),
        min_size=3,
        max_size=40,
    )
)
def test_it_matches_scipy_pearson_and_spearman_with_ties(pairs):
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs])
    got = correlate(x, y)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert got.pearson is None and got.spearman is None and "constant" in got.reason
        return
    assert got.pearson == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert got.spearman == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)


def test_it_correlates_a_hand_worked_example():
    got = correlate([1, 2, 3, 4], [1, 3, 2, 4])
    assert (got.pearson, got.spearman, got.n_items) == (pytest.approx(0.8), pytest.approx(0.8), 4)


def test_it_returns_none_with_fewer_than_three_items():
    got = correlate([1, 2, nan], [2, 1, 3])
    assert got.pearson is None and got.n_items == 2 and "fewer than 3" in got.reason


# --------------------------------------------------------------------------- filtering


def test_it_reproduces_the_docstring_example():
    dense = np.array([[1, 2, 3, 5.0], [2, 3, 4, 5.0], [nan, nan, nan, 1.0]])
    result = filtering_correlations(
        dense, metrics={"m": np.array([0.1, 0.2, 0.3, 0.9])}, flagged={"slow": [2]}
    )
    base, slow = result.records
    assert base.rules == () and base.removed == () and base.pearson == pytest.approx(0.7510, abs=1e-4)
    assert slow.rules == ("slow",) and slow.removed == (2,)
    assert slow.pearson == pytest.approx(0.9396, abs=1e-4)
    assert slow.pearson_change == pytest.approx(slow.pearson / base.pearson - 1)
    assert (slow.spearman, slow.spearman_change) == (1.0, 0.0)
    assert (base.pearson_change, base.spearman_change) == (0.0, 0.0)


def test_it_produces_the_baseline_and_all_31_combinations_per_metric():
    dense, metrics, flags = random_crowd(1)
    result = filtering_correlations(dense, metrics=metrics, flagged=flags)
    assert len(result.records) == 32 * 2
    rule_sets = list(dict.fromkeys(r.rules for r in result.records))
    expected = [()] + [c for k in range(1, 6) for c in combinations(RULES, k)]
    assert rule_sets == [tuple(sorted(c)) for c in expected]
    for rec in result.records:
        assert rec.rules == tuple(sorted(rec.rules))
        assert set(rec.removed) == set().union(*(set(flags[r]) for r in rec.rules))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_matches_a_scipy_reference_for_every_combination(seed):
    dense, metrics, flags = random_crowd(seed)
    result = filtering_correlations(LongRatings.from_dense(dense), metrics=metrics, flagged=flags)
    base = {r.metric: r for r in result.records if r.rules == ()}
    for rec in result.records:
        pearson, spearman, n = reference(dense, metrics[rec.metric], rec.removed)
        assert rec.n_items == n
        assert rec.pearson == pytest.approx(pearson, abs=1e-12)
        assert rec.spearman == pytest.approx(spearman, abs=1e-12)
        assert rec.pearson_change == pytest.approx(pearson / base[rec.metric].pearson - 1, abs=1e-12)


def test_it_only_uses_items_keeping_two_ratings_after_removal():
    # Item 3 has ratings from annotators 0 and 2 only; removing 2 drops it.
    dense = np.array(
        [[1, 2, 3, 5, 4.0], [1, 3, 3, nan, 5.0], [2, nan, 4, 5, nan]]
    )
    metric = np.array([0.1, 0.4, 0.5, 0.9, 0.8])
    result = filtering_correlations(dense, metrics={"m": metric}, flagged={"slow": [2]})
    assert [r.n_items for r in result.records] == [5, 4]


def test_it_skips_items_without_a_metric_value():
    dense, metrics, flags = random_crowd(4)
    metrics["smooth"][:10] = nan
    rec = filtering_correlations(dense, metrics={"smooth": metrics["smooth"]}, flagged={}).records[0]
    assert rec.n_items == reference(dense, metrics["smooth"], ())[2] <= 70


def test_it_returns_none_with_reasons_for_a_constant_metric():
    dense, _, flags = random_crowd(5)
    result = filtering_correlations(dense, metrics={"flat": np.full(80, 0.5)}, flagged=flags)
    for rec in result.records:
        assert rec.pearson is None and rec.pearson_change is None and "constant metric" in rec.reason


def test_it_returns_none_for_a_change_against_an_undefined_baseline():
    # Annotators 2 and 3 mirror 0 and 1, so every baseline mean is 3: constant.
    dense = np.array([[1, 2, 4, 5.0], [1, 2, 4, 5.0], [5, 4, 2, 1.0], [5, 4, 2, 1.0]])
    result = filtering_correlations(
        dense, metrics={"m": np.array([0.1, 0.2, 0.3, 0.4])}, flagged={"high_random": [2, 3]}
    )
    base, after = result.records
    assert base.pearson is None and "constant human mean" in base.reason
    assert after.pearson == pytest.approx(stats.pearsonr([1, 2, 4, 5], [0.1, 0.2, 0.3, 0.4])[0])
    assert after.pearson_change is None and "baseline undefined" in after.reason


def test_it_accepts_heuristic_results_as_flags():
    dense, metrics, _ = random_crowd(6)
    dense[0] = np.where(np.isnan(dense[0]), nan, 3.0)
    lv = low_variance_annotators(dense)
    result = filtering_correlations(dense, metrics=metrics, flagged={"low_variance": lv})
    assert result.records[-1].removed == lv.flagged and 0 in lv.flagged


def test_it_returns_the_record_shape_of_product_md():
    dense, metrics, flags = random_crowd(7)
    rec = filtering_correlations(dense, metrics=metrics, flagged=flags).records[5].to_record()
    assert list(rec) == [
        "rules", "removed", "metric", "pearson", "spearman", "pearson_change", "spearman_change",
        "n_items",
    ]  # fmt: skip
    assert isinstance(rec["rules"], list) and isinstance(rec["removed"], list)


def test_it_rejects_a_metric_of_the_wrong_length():
    with pytest.raises(ValueError, match="one value per item"):
        filtering_correlations(np.ones((2, 3)), metrics={"m": [0.1, 0.2]}, flagged={})


def test_it_rejects_a_flag_outside_the_annotators():
    with pytest.raises(ValueError, match="outside"):
        filtering_correlations(np.ones((2, 3)), metrics={"m": [0.1, 0.2, 0.3]}, flagged={"slow": [5]})


# --------------------------------------------------------------------------- invariants


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.floats(0, 1))
def test_it_is_unchanged_by_adding_an_item_with_a_single_rating(seed, label, metric_value):
    dense, metrics, flags = random_crowd(seed, n_items=30)
    before = filtering_correlations(dense, metrics=metrics, flagged=flags)
    extra = np.full((dense.shape[0], 1), nan)
    extra[seed % dense.shape[0], 0] = label
    grown = {k: np.append(v, metric_value) for k, v in metrics.items()}
    after = filtering_correlations(np.hstack([dense, extra]), metrics=grown, flagged=flags)
    assert before.records == after.records


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_it_is_unchanged_by_permuting_annotators_and_items(seed, rnd):
    dense, metrics, flags = random_crowd(seed, n_items=30)
    a = list(range(dense.shape[0]))
    i = list(range(dense.shape[1]))
    rnd.shuffle(a)
    rnd.shuffle(i)
    new_of = {old: new for new, old in enumerate(a)}
    before = filtering_correlations(dense, metrics=metrics, flagged=flags)
    after = filtering_correlations(
        dense[np.ix_(a, i)],
        metrics={k: v[i] for k, v in metrics.items()},
        flagged={r: [new_of[j] for j in js] for r, js in flags.items()},
    )
    for x, y in zip(before.records, after.records, strict=True):
        assert (x.rules, x.metric, x.n_items) == (y.rules, y.metric, y.n_items)
        assert sorted(new_of[j] for j in x.removed) == list(y.removed)
        for field in ("pearson", "spearman", "pearson_change", "spearman_change"):
            u, v = getattr(x, field), getattr(y, field)
            assert (u is None and v is None) or u == pytest.approx(v, abs=1e-12)


# --------------------------------------------------------------------------- styles (table 2)


def test_it_correlates_radical_and_centrist_annotators_separately():
    dense = np.array(
        [
            [1, 1, 5, 5, 5.0],  # radical
            [1, 2, 5, 5, 5.0],  # radical
            [2, 2, 4, 4, 3.0],  # centrist
            [2, 4, 2, 4, 4.0],  # centrist
        ]
    )
    metric = np.array([0.0, 0.2, 0.7, 0.8, 1.0])
    styles = annotator_styles(dense)
    recs = style_correlations(
        dense, metrics={"m": metric}, styles=styles, flagged={"slow": [3]}
    )
    by = {(r.style, r.filtered): r for r in recs}
    rad = reference(dense[[0, 1]], metric, ())
    cen = reference(dense[[2, 3]], metric, ())
    assert by[("radical", False)].annotators == (0, 1)
    assert by[("radical", False)].pearson == pytest.approx(rad[0])
    assert by[("centrist", False)].spearman == pytest.approx(cen[1])
    assert by[("radical", True)].pearson == pytest.approx(rad[0])  # nobody radical was flagged
    # Filtering leaves one centrist: no item keeps 2 ratings.
    assert by[("centrist", True)].pearson is None and by[("centrist", True)].n_items == 0
