"""Bootstrap intervals of metric-human correlations and Williams' test (Williams 1959)."""

import doctest

import numpy as np
import pytest
from scipy import stats

import core.stats.correlation_uncertainty
from core.stats import _bootstrap_compiled
from core.stats.correlation_uncertainty import (
    _Pair,
    _resample,
    bootstrap_correlation,
    bootstrap_correlations,
    compare_metrics,
    williams_test,
)
from core.stats.correlations import filtering_correlations, item_means

nan = np.nan


# --------------------------------------------------------------------------- Williams' test


def test_it_reproduces_howells_worked_example():
    """Howell, Statistical Methods for Psychology, 6th ed., p. 262, via Weaver's SPSS syntax.

    r12 = .80, r13 = .72, r23 = .89, n = 26. By hand: |R| = 1 − .64 − .5184 − .7921 +
    2 × .8 × .72 × .89 = .07478; t = .08 × √(25 × 1.89) / √(2 × .07478 × 25/23 +
    (1.52² / 4) × .11³) = .08 × 6.8739 / .40415 = 1.361, df 23; published: t = 1.361, p = .187.
    """
    res = williams_test(r12=0.80, r13=0.72, r23=0.89, n=26)
    assert res.t == pytest.approx(1.361, abs=5e-4)
    assert res.df == 23
    assert res.p_two_sided == pytest.approx(0.187, abs=5e-4)
    assert res.p_one_sided == pytest.approx(res.p_two_sided / 2)


def test_it_reproduces_steigers_first_numerical_example():
    """Steiger 1980: N = 103, r12 = .50, r13 = .40, r23 = .10 (masculinity and femininity at
    time 1 against verbal ability). By hand: |R| = .62; t = .10 × √112.2 / √(1.2648 + .14762)
    = 1.05924 / 1.18845 = 0.8913 with 100 df; two-sided p = .375 (no difference)."""
    res = williams_test(r12=0.50, r13=0.40, r23=0.10, n=103)
    assert res.t == pytest.approx(0.8913, abs=1e-4)
    assert res.df == 100
    assert res.p_two_sided == pytest.approx(0.375, abs=1e-3)


def independent_williams(r12, r13, r23, n):
    """Write the statistic from the correlation matrix's determinant (numpy) and scipy's t."""
    det = np.linalg.det(np.array([[1, r12, r13], [r12, 1, r23], [r13, r23, 1.0]]))
    se2 = 2 * det * (n - 1) / (n - 3) + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3
    t = (r12 - r13) / np.sqrt(se2 / ((n - 1) * (1 + r23)))
    return t, 2 * stats.t.cdf(-abs(t), n - 3)


@pytest.mark.parametrize(
    ("r12", "r13", "r23", "n"),
    [(0.6, 0.3, 0.5, 50), (0.2, 0.7, 0.4, 30), (-0.3, 0.1, 0.2, 200), (0.9, 0.85, 0.95, 1000)],
)
def test_it_equals_an_independent_implementation(r12, r13, r23, n):
    res = williams_test(r12=r12, r13=r13, r23=r23, n=n)
    t, p = independent_williams(r12, r13, r23, n)
    assert res.t == pytest.approx(t, rel=1e-10)
    assert res.p_two_sided == pytest.approx(p, rel=1e-9)


def test_it_is_antisymmetric_in_the_two_metrics():
    ab = williams_test(r12=0.6, r13=0.4, r23=0.3, n=40)
    ba = williams_test(r12=0.4, r13=0.6, r23=0.3, n=40)
    assert ab.t == pytest.approx(-ba.t)
    assert ab.p_one_sided + ba.p_one_sided == pytest.approx(1.0)


def simulate(rho12, rho13, rho23, n, reps, seed):
    cov = np.array([[1, rho12, rho13], [rho12, 1, rho23], [rho13, rho23, 1.0]])
    data = np.random.default_rng(seed).multivariate_normal(np.zeros(3), cov, size=(reps, n))
    c = data - data.mean(axis=1, keepdims=True)
    s = np.einsum("rni,rnj->rij", c, c)
    r = s / np.sqrt(np.einsum("rii->ri", s)[:, :, None] * np.einsum("rjj->rj", s)[:, None, :])
    return [williams_test(r12=a, r13=b, r23=d, n=n).p_two_sided
            for a, b, d in zip(r[:, 0, 1], r[:, 0, 2], r[:, 1, 2], strict=True)]


def test_it_rejects_a_true_null_hypothesis_at_the_nominal_rate():
    # 4000 data sets with rho12 = rho13: the rejection rate at 0.05 has a Monte Carlo sd of 0.0034.
    p = np.array(simulate(0.5, 0.5, 0.6, 40, 4000, seed=11))
    assert 0.04 <= np.mean(p < 0.05) <= 0.06


def test_it_detects_a_real_difference():
    p = np.array(simulate(0.7, 0.4, 0.5, 100, 500, seed=12))
    assert np.mean(p < 0.05) > 0.9


def test_it_cannot_test_fewer_than_four_items_or_identical_metrics():
    assert williams_test(r12=0.5, r13=0.4, r23=0.1, n=3).reason == "fewer than 4 items (3)"
    same = williams_test(r12=0.5, r13=0.5, r23=1.0, n=50)
    assert same.t is None and "perfectly correlated" in same.reason


def test_it_rejects_correlations_that_no_data_set_can_have():
    with pytest.raises(ValueError, match="not the correlations of one data set"):
        williams_test(r12=0.9, r13=-0.9, r23=0.9, n=50)
    with pytest.raises(ValueError, match="r23"):
        williams_test(r12=0.5, r13=0.5, r23=1.5, n=50)


# --------------------------------------------------------------------------- compare_metrics


def crowd(seed, n=200, noise_a=0.3, noise_b=1.5):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    return human, {"a": human + rng.normal(0, noise_a, n), "b": human + rng.normal(0, noise_b, n)}


def test_it_says_which_metric_agrees_better():
    human, metrics = crowd(1)
    (cmp,) = compare_metrics(human, metrics)
    assert (cmp.metric_a, cmp.metric_b, cmp.verdict) == ("a", "b", "a_better")
    assert cmp.r_a > cmp.r_b and cmp.p_two_sided < 0.05 and cmp.n_items == 200
    (rev,) = compare_metrics(human, {"b": metrics["b"], "a": metrics["a"]})
    assert rev.verdict == "b_better" and rev.t == pytest.approx(-cmp.t)


def test_it_says_when_the_data_cannot_tell():
    human, metrics = crowd(2, n=30, noise_a=1.0, noise_b=1.0)
    (cmp,) = compare_metrics(human, metrics)
    assert cmp.p_two_sided >= 0.05 and cmp.verdict == "cannot_tell"
    assert cmp.to_record()["verdict"] == "cannot_tell"


def test_it_uses_only_the_items_where_everything_is_defined_and_ranks_for_spearman():
    human, metrics = crowd(3, n=50)
    metrics["a"][:5] = nan
    human[-3:] = nan
    (cmp,) = compare_metrics(human, metrics, method="spearman")
    ok = slice(5, 47)
    assert cmp.n_items == 42
    assert cmp.r_a == pytest.approx(stats.spearmanr(metrics["a"][ok], human[ok]).statistic)
    assert cmp.r_ab == pytest.approx(stats.spearmanr(metrics["a"][ok], metrics["b"][ok]).statistic)


def test_it_compares_every_pair_once():
    human, metrics = crowd(4)
    metrics["c"] = -metrics["a"]
    pairs = [(c.metric_a, c.metric_b) for c in compare_metrics(human, metrics)]
    assert pairs == [("a", "b"), ("a", "c"), ("b", "c")]


def test_it_cannot_compare_with_a_constant_metric():
    human, metrics = crowd(5, n=20)
    metrics["b"] = np.ones(20)
    (cmp,) = compare_metrics(human, metrics)
    assert cmp.verdict == "cannot_tell" and cmp.t is None and "constant" in cmp.reason


# --------------------------------------------------------------------------- bootstrap


def naive_bootstrap(x, y, rng, n_resamples):
    idx = rng.integers(0, x.size, size=(n_resamples, x.size))
    pearson = np.array([stats.pearsonr(x[i], y[i]).statistic for i in idx])
    spearman = np.array([stats.spearmanr(x[i], y[i]).statistic for i in idx])
    return pearson, spearman


def test_it_takes_the_percentiles_of_scipys_resampled_correlations():
    rng = np.random.default_rng(6)
    x = rng.normal(size=40)
    y = np.round(x + rng.normal(size=40), 1)  # ties, so Spearman's average ranks matter
    got = bootstrap_correlation(x, y, rng=np.random.default_rng(7), n_resamples=300)
    pearson, spearman = naive_bootstrap(x, y, np.random.default_rng(7), 300)
    assert got.pearson == pytest.approx(stats.pearsonr(x, y).statistic)
    assert got.spearman == pytest.approx(stats.spearmanr(x, y).statistic)
    assert [got.pearson_low, got.pearson_high] == pytest.approx(
        list(np.quantile(pearson, [0.025, 0.975])), abs=1e-12)
    assert [got.spearman_low, got.spearman_high] == pytest.approx(
        list(np.quantile(spearman, [0.025, 0.975])), abs=1e-12)
    assert got.n_undefined == 0 and got.n_items == 40


@pytest.mark.skipif(not _bootstrap_compiled.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("n", [3, 40, 2500])
def test_its_compiled_engine_gives_scipys_resampled_correlations_too(n):
    rng = np.random.default_rng(n)
    x = np.round(rng.normal(size=n), 1)  # ties on both sides
    y = np.round(x + rng.normal(size=n), 1)
    got = bootstrap_correlation(x, y, rng=np.random.default_rng(7), n_resamples=120,
                                engine="compiled")
    pearson, spearman = naive_bootstrap(x, y, np.random.default_rng(7), 120)
    defined = ~np.isnan(pearson)
    assert got.n_undefined == int((~defined).sum())
    if got.pearson_low is None:  # n = 3: most resamples are constant on a side
        assert got.n_undefined * 2 > 120
        return
    assert [got.pearson_low, got.pearson_high] == pytest.approx(
        list(np.quantile(pearson[defined], [0.025, 0.975])), abs=1e-12)
    assert [got.spearman_low, got.spearman_high] == pytest.approx(
        list(np.quantile(spearman[defined], [0.025, 0.975])), abs=1e-12)


@pytest.mark.skipif(not _bootstrap_compiled.AVAILABLE, reason="numba is not installed")
def test_its_engines_agree_on_every_resample_of_many_items():
    rng = np.random.default_rng(3)
    x = rng.random(5000)
    y = np.round(x * 4 + rng.normal(size=5000), 0)  # a few distinct human means
    pairs = {engine: _Pair.of(x, y) for engine in ("numpy", "compiled")}
    for engine, pair in pairs.items():
        _resample([pair], rng=np.random.default_rng(1), n_resamples=50, engine=engine)
    np.testing.assert_allclose(pairs["compiled"].pearson, pairs["numpy"].pearson, atol=1e-12)
    np.testing.assert_allclose(pairs["compiled"].spearman, pairs["numpy"].spearman, atol=1e-12)


@pytest.mark.parametrize("engine", ["numpy", "compiled"] if _bootstrap_compiled.AVAILABLE
                         else ["numpy"])
def test_its_batch_gives_each_pair_the_interval_of_a_fresh_generator_of_the_seed(engine):
    rng = np.random.default_rng(11)
    human = np.round(rng.normal(size=60), 1)
    other = human.copy()
    other[5] = nan  # 59 items: drawn apart from the others
    metrics = [human + rng.normal(size=60) for _ in range(3)]
    pairs = [(metrics[0], human), (metrics[1], human), (metrics[2], other),
             (metrics[0], other), ([1, 2, 3, 4], [2, 2, 2, 2])]
    batch = bootstrap_correlations(pairs, seed=4, n_resamples=150, engine=engine)
    alone = [bootstrap_correlation(x, y, rng=np.random.default_rng(4), n_resamples=150,
                                   engine=engine) for x, y in pairs]
    assert batch == alone  # bit for bit


@pytest.mark.parametrize("engine", ["numpy", "compiled"] if _bootstrap_compiled.AVAILABLE
                         else ["numpy"])
@pytest.mark.parametrize("budget_pairs", [1, 2, 3])
def test_batches_within_a_memory_budget_give_the_same_intervals(monkeypatch, engine,
                                                                budget_pairs):
    """A crowd study's hundreds of pairs are resampled a few at a time (`_BATCH_BYTES`): the
    batches, however small, give every pair the interval it has alone, in the input's order."""
    import core.stats.correlation_uncertainty as module

    rng = np.random.default_rng(12)
    human, other = rng.normal(size=50), rng.normal(size=50)
    other[5] = nan  # a side of another size, in the same batch as the first
    metrics = [human + rng.normal(size=50) for _ in range(3)]
    pairs = [(metrics[0], human), (metrics[1], other), (metrics[2], human),
             (metrics[0], other), (metrics[1], human)]
    unbatched = bootstrap_correlations(pairs, seed=5, n_resamples=120, engine=engine)
    monkeypatch.setattr(module, "_BATCH_BYTES", 50 * module._PAIR_BYTES * budget_pairs)
    assert [len(b) for b in module._batches(pairs)] == \
        {1: [1] * 5, 2: [2, 2, 1], 3: [3, 2]}[budget_pairs]
    assert module._batches(pairs)[0][:2] == ([0, 2] if budget_pairs > 1 else [0])  # by side
    assert bootstrap_correlations(pairs, seed=5, n_resamples=120, engine=engine) == unbatched


def test_its_interval_covers_the_true_correlation_about_95_percent_of_the_time():
    rng = np.random.default_rng(8)
    cov = [[1, 0.5], [0.5, 1]]
    hits = 0
    for _ in range(300):
        x, y = rng.multivariate_normal([0, 0], cov, size=60).T
        res = bootstrap_correlation(x, y, rng=rng, n_resamples=400)
        hits += res.pearson_low <= 0.5 <= res.pearson_high
    # The percentile interval undercovers slightly at n = 60; 300 trials have a sd of 0.013.
    assert 0.88 <= hits / 300 <= 0.99


def test_it_is_reproducible_with_the_same_seed_and_drops_missing_pairs():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=30), rng.normal(size=30)
    x[3], y[7] = nan, nan
    a = bootstrap_correlation(x, y, rng=np.random.default_rng(1), n_resamples=200)
    b = bootstrap_correlation(x, y, rng=np.random.default_rng(1), n_resamples=200)
    assert a == b and a.n_items == 28
    assert a.pearson_low < a.pearson < a.pearson_high
    rec = a.to_record()
    assert rec["pearson_ci"] == [a.pearson_low, a.pearson_high] and rec["confidence"] == 0.95


def test_it_reports_an_undefined_correlation_without_an_interval():
    res = bootstrap_correlation([1, 2, 3, 4], [2, 2, 2, 2], rng=np.random.default_rng(0))
    assert res.pearson is None and res.pearson_low is None and "constant" in res.reason
    few = bootstrap_correlation([1, 2], [3, 4], rng=np.random.default_rng(0))
    assert few.spearman is None and "fewer than 3" in few.reason


def test_it_leaves_out_resamples_where_a_side_is_constant():
    # Three items: a resample repeating one item (or two equal ones) is constant on a side.
    res = bootstrap_correlation([1, 2, 3], [1, 3, 2], rng=np.random.default_rng(2),
                                n_resamples=500)
    assert 0 < res.n_undefined < 250
    assert res.pearson_low is not None


def test_it_gives_the_interval_of_a_filtering_correlation_record():
    rng = np.random.default_rng(10)
    dense = np.clip(np.rint(rng.normal(3, 1, (6, 40))), 1, 5)
    metric = dense.mean(axis=0) + rng.normal(0, 0.3, 40)
    result = filtering_correlations(dense, metrics={"m": metric}, flagged={"slow": [2]})
    record = result.records[1]  # the slow rule: annotator 2 removed
    means = item_means(dense, removed=record.removed)
    res = bootstrap_correlation(metric, means, rng=np.random.default_rng(0), n_resamples=100)
    assert res.pearson == pytest.approx(record.pearson) and res.n_items == record.n_items


def test_item_means_follow_the_min_ratings_rule():
    dense = np.array([[1.0, 4.0], [2.0, nan]])
    assert item_means(dense).tolist()[0] == 1.5 and np.isnan(item_means(dense)[1])
    assert item_means(dense, min_ratings=1, removed=[0]).tolist()[0] == 2.0


def test_it_passes_its_doctest():
    assert doctest.testmod(core.stats.correlation_uncertainty).failed == 0
