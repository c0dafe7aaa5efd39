"""The systems analysis: scores, paired tests, clusters, the mixed model and the metric
meta-evaluation, each against a reference (scipy, statsmodels, a hand-computed case)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.regression.mixed_linear_model import MixedLMParams
from statsmodels.stats.multitest import multipletests

from core.stats.systems import (
    adjust,
    item_means,
    paired_tests,
    sign_flip_test,
    significance_clusters,
    source_cells,
    system_scores,
)
from core.stats.systems_meta import (
    item_correlations,
    one_sided_matrix,
    pairwise_accuracy,
    pairwise_permutation_p,
    row_correlations,
    soft_pairwise_accuracy,
    system_correlations,
    williams_system,
)
from core.stats.systems_mixed import mixed_model


def planted(n_systems: int = 4, n_sources: int = 30, n_annotators: int = 3, seed: int = 0,
            effects: tuple[float, ...] | None = None) -> dict[str, np.ndarray]:
    """Every annotator rates every system's output of every source: one item per (source,
    system), answers long."""
    rng = np.random.default_rng(seed)
    effects = effects or tuple(np.linspace(1.0, 0.0, n_systems))
    item_system = np.tile(np.arange(n_systems), n_sources)
    item_source = np.repeat(np.arange(n_sources), n_systems)
    n_items = item_system.size
    item = np.repeat(np.arange(n_items), n_annotators)
    annotator = np.tile(np.arange(n_annotators), n_items)
    source_effect = rng.normal(0, 0.7, n_sources)
    annotator_effect = rng.normal(0, 0.5, n_annotators)
    value = (np.asarray(effects)[item_system[item]] + source_effect[item_source[item]]
             + annotator_effect[annotator] + rng.normal(0, 1, item.size))
    return {"system": item_system, "source": item_source, "item": item, "annotator": annotator,
            "value": value, "agg": item_means(item, value, n_items)}


# --------------------------------------------------------------------------- paired tests


def test_it_matches_scipys_exact_permutation_test():
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.3, 1, 10), rng.normal(0, 1, 10)
    ours = sign_flip_test(x - y, permutations=10_000, rng=rng)
    assert bool(ours.exact[0])
    for alternative, mine in (("greater", ours.p_greater), ("less", ours.p_less),
                              ("two-sided", ours.p_two_sided)):
        ref = stats.permutation_test((x, y), lambda a, b, axis: np.mean(a - b, axis=axis),
                                     permutation_type="samples", n_resamples=np.inf,
                                     alternative=alternative, vectorized=True)
        assert mine[0] == pytest.approx(ref.pvalue, abs=1e-12)


def test_it_approximates_the_exact_p_value_by_monte_carlo():
    rng = np.random.default_rng(4)
    d = rng.normal(0.25, 1, 16)
    exact = sign_flip_test(d, permutations=2 ** 16, rng=rng)
    sampled = sign_flip_test(d, permutations=20_000, rng=np.random.default_rng(0))
    assert bool(exact.exact[0]) and not bool(sampled.exact[0])
    assert sampled.p_two_sided[0] == pytest.approx(exact.p_two_sided[0], abs=0.01)


def test_it_matches_scipys_wilcoxon_on_every_pair():
    data = planted(n_systems=3, n_sources=12)
    cells = source_cells(data["system"], data["source"], data["agg"], 3, 12)
    tests = paired_tests(cells, test="wilcoxon", correction="none",
                         rng=np.random.default_rng(0))
    for t in tests:
        ref = stats.wilcoxon(cells[:, t.a] - cells[:, t.b])
        assert t.p_value == pytest.approx(ref.pvalue) and t.statistic == pytest.approx(
            ref.statistic)


def test_it_adjusts_like_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.005])
    ok = ~np.isnan(p)
    for ours, theirs in (("holm", "holm"), ("bonferroni", "bonferroni")):
        got = adjust(p, ours)  # type: ignore[arg-type]
        assert np.allclose(got[ok], multipletests(p[ok], method=theirs)[1])
        assert np.isnan(got[4])
    assert np.array_equal(adjust(p, "none"), p, equal_nan=True)


def test_it_gives_the_effect_size_and_mean_difference():
    cells = np.array([[3.0, 1.0], [4.0, 3.0], [5.0, 2.0]])  # differences 2, 1, 3
    (t,) = paired_tests(cells, rng=np.random.default_rng(0))
    assert t.mean_difference == pytest.approx(2.0)
    assert t.effect_size == pytest.approx(2.0 / 1.0)  # sd of (2, 1, 3) is 1
    assert t.sources == 3 and t.p_value == pytest.approx(2 * 1 / 8)  # exact, 8 sign vectors


def test_it_says_why_a_pair_is_not_tested():
    cells = np.array([[3.0, np.nan], [4.0, 2.0], [np.nan, 1.0]])
    (t,) = paired_tests(cells, rng=np.random.default_rng(0))
    assert t.p_value is None and not t.significant
    assert t.reason == "fewer than 2 shared sources (1)"


# --------------------------------------------------------------------------- clusters


def test_it_finds_the_known_clusters():
    means = [4.0, 3.0, 2.0, 1.0]
    better = np.zeros((4, 4), bool)
    better[[0, 1, 0, 1], [2, 2, 3, 3]] = True  # A, B ≫ C, D; C not ≫ D
    assert significance_clusters(means, better) == [1, 1, 2, 2]
    better[2, 3] = True  # now D is worse than everything above it
    assert significance_clusters(means, better) == [1, 1, 2, 3]


def test_it_does_not_split_a_cluster_on_one_significant_neighbour():
    better = np.zeros((3, 3), bool)
    better[1, 2] = True  # B ≫ C, but A (above both) not ≫ C
    assert significance_clusters([3.0, 2.0, 1.0], better) == [1, 1, 1]


# --------------------------------------------------------------------------- scores


def test_it_recovers_the_planted_order_with_intervals():
    data = planted(n_systems=4, n_sources=40, effects=(2.0, 1.0, 0.0, 0.0))
    s = system_scores(data["system"], data["source"], data["agg"], n_systems=4, n_boot=500,
                      rng=np.random.default_rng(0))
    assert list(s.rank[:2]) == [1, 2]
    assert all(s.mean_low[k] < s.mean[k] < s.mean_high[k] for k in range(4))
    assert s.rank_low[0] == 1 and s.rank_high[3] == 4
    assert list(s.sources) == [40] * 4 and list(s.items) == [40] * 4


def test_it_resamples_sources_and_annotators_when_asked():
    data = planted(n_systems=3, n_sources=20)
    one = system_scores(data["system"], data["source"], data["agg"], n_systems=3, n_boot=300,
                        rng=np.random.default_rng(1))
    two = system_scores(data["system"], data["source"], data["agg"], n_systems=3, n_boot=300,
                        rng=np.random.default_rng(1), resampling="sources_and_annotators",
                        answers=(data["item"], data["annotator"], data["value"]))
    assert np.allclose(one.mean, two.mean)
    # Drawing the annotators too adds their variation: wider intervals on average.
    assert np.mean(two.mean_high - two.mean_low) > np.mean(one.mean_high - one.mean_low)


def test_two_way_resampling_with_every_annotator_drawn_once_is_the_one_way():
    data = planted(n_systems=3, n_sources=10, n_annotators=1)
    one = system_scores(data["system"], data["source"], data["agg"], n_systems=3, n_boot=50,
                        rng=np.random.default_rng(2))
    two = system_scores(data["system"], data["source"], data["agg"], n_systems=3, n_boot=50,
                        rng=np.random.default_rng(2), resampling="sources_and_annotators",
                        answers=(data["item"], data["annotator"], data["value"]))
    assert np.allclose(one.boot, two.boot)


def test_it_says_why_a_system_has_no_interval():
    s = system_scores([0, 0, 1], [0, 1, 0], [3.0, 4.0, 2.0], n_systems=3, n_boot=20,
                      rng=np.random.default_rng(0))
    assert s.reason == [None, "one source only: no interval", "no rated item"]
    assert math.isnan(s.mean_low[1]) and math.isnan(s.mean[2])


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(4)), st.integers(0, 10_000))
def test_relabelling_the_systems_permutes_the_results(perm, seed):
    data = planted(n_systems=4, n_sources=8, seed=seed)
    relabel = np.asarray(perm)
    a = system_scores(data["system"], data["source"], data["agg"], n_systems=4, n_boot=50,
                      rng=np.random.default_rng(0))
    b = system_scores(relabel[data["system"]], data["source"], data["agg"], n_systems=4,
                      n_boot=50, rng=np.random.default_rng(0))
    for field in ("mean", "mean_low", "mean_high", "median", "rank", "rank_low", "rank_high"):
        assert np.allclose(getattr(b, field)[relabel], getattr(a, field), equal_nan=True)
    ca = source_cells(data["system"], data["source"], data["agg"], 4, 8)
    cb = source_cells(relabel[data["system"]], data["source"], data["agg"], 4, 8)
    ta = {(t.a, t.b): t for t in paired_tests(ca, rng=np.random.default_rng(0))}
    tb = {(t.a, t.b): t for t in paired_tests(cb, rng=np.random.default_rng(0))}
    for (i, j), t in ta.items():
        u = tb[tuple(sorted((int(relabel[i]), int(relabel[j]))))]
        sign = 1.0 if relabel[i] < relabel[j] else -1.0
        assert u.mean_difference == pytest.approx(sign * t.mean_difference)
        assert u.p_value == pytest.approx(t.p_value)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3), st.floats(-2.0, 2.0), st.integers(0, 10_000))
def test_adding_a_constant_to_one_system_moves_only_its_mean(k, shift, seed):
    data = planted(n_systems=4, n_sources=8, seed=seed)
    agg2 = data["agg"] + np.where(data["system"] == k, shift, 0.0)
    a = system_scores(data["system"], data["source"], data["agg"], n_systems=4, n_boot=50,
                      rng=np.random.default_rng(0))
    b = system_scores(data["system"], data["source"], agg2, n_systems=4, n_boot=50,
                      rng=np.random.default_rng(0))
    others = np.arange(4) != k
    assert np.allclose(b.mean[others], a.mean[others])
    assert b.mean[k] == pytest.approx(a.mean[k] + shift)
    ta = paired_tests(source_cells(data["system"], data["source"], data["agg"], 4, 8),
                      rng=np.random.default_rng(0))
    tb = paired_tests(source_cells(data["system"], data["source"], agg2, 4, 8),
                      rng=np.random.default_rng(0))
    for t, u in zip(ta, tb, strict=True):
        moved = shift if t.a == k else -shift if t.b == k else 0.0
        assert u.mean_difference == pytest.approx(t.mean_difference + moved, abs=1e-9)


# --------------------------------------------------------------------------- mixed model


def _statsmodels_fit(frame: pd.DataFrame):
    frame = frame.assign(group=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return smf.mixedlm("rating ~ 0 + C(system)", frame, groups="group", re_formula="0",
                           vc_formula={"source": "0 + C(source)",
                                       "annotator": "0 + C(annotator)"}
                           ).fit(reml=True, method="lbfgs", factr=1e1, pgtol=1e-12,
                                 maxiter=5000)


def test_the_mixed_model_matches_statsmodels():
    data = planted(n_systems=4, n_sources=25, n_annotators=8, seed=5)
    keep = np.random.default_rng(5).random(data["item"].size) > 0.3  # unbalanced
    item = data["item"][keep]
    frame = pd.DataFrame({"rating": data["value"][keep], "system": data["system"][item],
                          "source": data["source"][item], "annotator": data["annotator"][keep]})
    ref = _statsmodels_fit(frame)
    ours = mixed_model(frame.rating, frame.system, frame.source, frame.annotator, n_systems=4)
    assert ours.converged and ref.converged
    assert np.allclose(ours.effects, ref.fe_params.to_numpy(), atol=1e-6)
    names = ref.model.exog_vc.names
    assert ours.variances["residual"] == pytest.approx(ref.scale, abs=1e-6)
    # The restricted likelihood is flat along the variance components: statsmodels' own
    # optimisers (lbfgs, nm, powell, cg) disagree in their fifth decimal.  Ours agree to 1e-4
    # and reach a likelihood at least as high, by statsmodels' own likelihood function.
    for name in ("source", "annotator"):
        assert ours.variances[name] == pytest.approx(ref.vcomp[names.index(name)], abs=1e-4)
    vc = np.array([ours.variances[n] / ours.variances["residual"] for n in names])
    at_ours = ref.model.loglike(MixedLMParams.from_components(
        fe_params=ours.effects, cov_re=np.zeros((0, 0)), vcomp=vc), profile_fe=False)
    assert at_ours >= ref.llf - 1e-9
    assert np.allclose(ours.std_errors, ref.bse_fe.to_numpy(), rtol=1e-3)
    assert sum(ours.shares.values()) == pytest.approx(1.0)


def test_the_mixed_model_leaves_out_a_factor_with_one_level():
    data = planted(n_systems=3, n_sources=10, n_annotators=1)
    ours = mixed_model(data["value"], data["system"][data["item"]],
                       data["source"][data["item"]], data["annotator"], n_systems=3)
    assert math.isnan(ours.variances["annotator"])
    assert ours.reasons["annotator"] == "one annotator only: its variance is not identifiable"
    assert ours.variances["source"] > 0


def test_the_mixed_model_says_why_it_fits_nothing():
    ours = mixed_model([1.0, 2.0], [0, 0], [0, 1], [0, 0], n_systems=2)
    assert ours.reason == "fewer than 2 systems with answers" and not ours.converged


# --------------------------------------------------------------------------- meta-evaluation


def test_pairwise_accuracy_and_soft_pairwise_accuracy_by_hand():
    assert pairwise_accuracy([3.0, 2.0, 1.0], [0.9, 0.3, 0.5]) == pytest.approx(2 / 3)
    pairs = [(0, 1), (0, 2), (1, 2)]
    p_h = one_sided_matrix(3, pairs, np.array([0.01, 0.02, 0.5]), np.array([0.99, 0.98, 0.5]))
    p_m = one_sided_matrix(3, pairs, np.array([0.03, 0.32, 0.9]), np.array([0.97, 0.68, 0.1]))
    # 1 − mean(|0.01 − 0.03|, |0.02 − 0.32|, |0.5 − 0.9|) = 1 − 0.72/3
    assert soft_pairwise_accuracy(p_h, p_m) == pytest.approx(1 - 0.72 / 3)
    assert p_h[1, 0] == 0.99 and p_m[2, 1] == 0.1


def test_the_permutation_p_of_pairwise_accuracy_is_exact_for_few_systems():
    # Three systems: 6 relabellings; only the identity orders the metric as the humans (PA = 1).
    p_pa, p_spa = pairwise_permutation_p(np.array([3.0, 2.0, 1.0]), np.array([0.9, 0.5, 0.1]),
                                         permutations=100, rng=np.random.default_rng(0))
    assert p_pa == pytest.approx(1 / 6) and p_spa is None


def test_the_permutation_p_of_spa_counts_relabellings_at_least_as_good():
    pairs = [(0, 1), (0, 2), (1, 2)]
    g = one_sided_matrix(3, pairs, np.array([0.01, 0.01, 0.01]), np.array([0.99, 0.99, 0.99]))
    _, p_spa = pairwise_permutation_p(np.array([3.0, 2.0, 1.0]), np.array([3.0, 2.0, 1.0]),
                                      p_human=g, p_metric=g, permutations=100,
                                      rng=np.random.default_rng(0))
    assert p_spa == pytest.approx(1 / 6)


def test_system_correlations_match_scipy_and_bracket_the_value():
    rng = np.random.default_rng(0)
    h = np.array([0.1, 0.5, 0.4, 0.9, 0.7, 0.2])
    m = h + rng.normal(0, 0.1, 6)
    boot_h = h + rng.normal(0, 0.05, (400, 6))
    out = {v.statistic: v for v in system_correlations(h, m, boot_human=boot_h)}
    assert out["pearson"].value == pytest.approx(stats.pearsonr(h, m).statistic)
    assert out["spearman"].value == pytest.approx(stats.spearmanr(h, m).statistic)
    assert out["kendall"].value == pytest.approx(stats.kendalltau(h, m).statistic)
    assert out["kendall"].p_value == pytest.approx(stats.kendalltau(h, m).pvalue)
    assert out["pearson"].low <= out["pearson"].value <= out["pearson"].high
    assert out["pearson"].n == 6


def test_row_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (20, 7)).astype(float)
    y = rng.integers(0, 4, (20, 7)).astype(float)
    for name, ref in (("kendall", stats.kendalltau), ("spearman", stats.spearmanr),
                      ("pearson", stats.pearsonr)):
        got = row_correlations(x, y, name)
        want = np.array([ref(a, b).statistic for a, b in zip(x, y, strict=True)])
        assert np.allclose(got, want, equal_nan=True)


def test_item_correlations_grouped_average_the_groups():
    h = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 5.0])
    m = np.array([1.0, 2.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    groups = np.array([0, 0, 0, 1, 1, 1, 2])  # group 2 has one item: left out
    out = {v.statistic: v for v in item_correlations(h, m, groups)}
    assert out["pearson"].value == pytest.approx(
        (stats.pearsonr(h[:3], m[:3]).statistic + -1.0) / 2)
    assert out["kendall"].value == pytest.approx(0.0) and out["kendall"].n == 2
    flat = {v.statistic: v for v in item_correlations(h, m)}
    assert flat["pearson"].value == pytest.approx(stats.pearsonr(h, m).statistic)


def test_williams_at_the_system_level_favours_the_closer_metric():
    rng = np.random.default_rng(2)
    h = np.linspace(0, 1, 15)
    t, p, n, reason = williams_system(h, h + rng.normal(0, 0.02, 15), h + rng.normal(0, 0.4, 15))
    assert n == 15 and reason is None and t > 0 and p < 0.05
    assert williams_system(h[:3], h[:3], h[:3])[3] == "fewer than 4 systems with both metrics (3)"


def test_spa_uses_one_sided_paired_permutation_p_values_as_scipy_computes_them():
    # Thompson et al. 2024: p(i, j) is the one-sided p of "i better than j" from a paired
    # permutation test on the segments (here sources) both systems share.
    rng = np.random.default_rng(8)
    human = rng.normal(np.array([0.6, 0.4, 0.1, 0.0]), 1.0, (9, 4))
    metric = human + rng.normal(0, 0.8, (9, 4))

    def ours(cells):
        from core.stats.systems import pair_differences
        pairs, d = pair_differences(cells)
        flip = sign_flip_test(d, permutations=10_000, rng=np.random.default_rng(0))
        return one_sided_matrix(4, pairs, flip.p_greater, flip.p_less)

    def scipys(cells):
        g = np.full((4, 4), np.nan)
        for i in range(4):
            for j in range(4):
                if i != j:
                    g[i, j] = stats.permutation_test(
                        (cells[:, i], cells[:, j]),
                        lambda a, b, axis: np.mean(a - b, axis=axis),
                        permutation_type="samples", n_resamples=np.inf,
                        alternative="greater", vectorized=True).pvalue
        return g

    p_h, p_m = ours(human), ours(metric)
    assert np.allclose(p_h, scipys(human), equal_nan=True)
    i, j = np.triu_indices(4, 1)
    want = 1.0 - np.mean(np.abs(scipys(human)[i, j] - scipys(metric)[i, j]))
    assert soft_pairwise_accuracy(p_h, p_m) == pytest.approx(want)


def test_the_per_system_monte_carlo_equals_the_per_pair_one():
    from core.stats.systems import pair_differences
    rng = np.random.default_rng(9)
    cells = rng.normal(0, 1, (40, 5)) + np.array([0.3, 0.2, 0.1, 0.0, 0.0])
    cells[[3, 7], 4] = np.nan  # system 4 misses two sources: its pairs go the per-pair way
    pairs, d = pair_differences(cells)
    generic = sign_flip_test(d, permutations=3000, rng=np.random.default_rng(1))
    fast = sign_flip_test(d, permutations=3000, rng=np.random.default_rng(1), cells=cells,
                          pairs=pairs)
    assert np.allclose(fast.p_greater, generic.p_greater)
    assert np.allclose(fast.p_two_sided, generic.p_two_sided)
    assert [int(v) for v in fast.n] == [38 if 4 in p else 40 for p in pairs]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2), st.floats(-2.0, 2.0), st.integers(0, 10_000))
def test_adding_a_constant_to_one_system_moves_only_its_mixed_model_effect(k, shift, seed):
    # REML sees only residuals from the fixed effects, so y + c·1[system k] changes β_k by c and
    # nothing else (even unbalanced).
    data = planted(n_systems=3, n_sources=10, seed=seed)
    keep = np.random.default_rng(seed).random(data["item"].size) > 0.2
    item = data["item"][keep]
    system, source = data["system"][item], data["source"][item]
    value = data["value"][keep]
    a = mixed_model(value, system, source, data["annotator"][keep], n_systems=3)
    b = mixed_model(value + np.where(system == k, shift, 0.0), system, source,
                    data["annotator"][keep], n_systems=3)
    moved = np.where(np.arange(3) == k, shift, 0.0)
    assert np.allclose(b.effects, a.effects + moved, atol=1e-6)
    for name in ("source", "annotator", "residual"):
        assert b.variances[name] == pytest.approx(a.variances[name], abs=1e-6)
