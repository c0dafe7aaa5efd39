"""The statistics of LLM judges (core.stats.judges): the alternative annotator test worked by
hand, against scipy and against a loop written from the paper's definitions; the alphas against
the krippendorff package; correlations against scipy; properties with hypothesis."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from core.stats._types import LongRatings
from core.stats.alpha import domain_codes
from core.stats.judges import (
    alignment,
    alt_metric,
    alt_test,
    annotator_pair_alphas,
    first_position,
    judge_annotator_alphas,
    judge_correlations,
    majority_match,
    replaced_alphas,
)

# The worked case: three annotators answer six items on two categories; the judge answers all.
#
#   item   A1 A2 A3   judge
#   i1      1  1  1     1
#   i2      1  1  2     1
#   i3      2  1  2     2
#   i4      1  2  2     2
#   i5      2  2  1     2
#   i6      1  2  1     2
WORKED = np.array([[1, 1, 2, 1, 2, 1],
                   [1, 1, 1, 2, 2, 2],
                   [1, 2, 2, 2, 1, 1]], dtype=float)
WORKED_JUDGE = np.array([1, 1, 2, 2, 2, 2], dtype=float)


def worked() -> LongRatings:
    return LongRatings.from_dense(WORKED)


def test_it_aligns_the_worked_case_by_hand():
    # Leaving A1 out, the remaining annotators are A2 and A3; accuracy is the share of them who
    # gave the same answer:
    #   i1 {1,1}: judge 1 → 1,   A1 1 → 1     W^f = 1, W^h = 1
    #   i2 {1,2}: judge 1 → ½,   A1 1 → ½     1, 1
    #   i3 {1,2}: judge 2 → ½,   A1 2 → ½     1, 1
    #   i4 {2,2}: judge 2 → 1,   A1 1 → 0     1, 0
    #   i5 {2,1}: judge 2 → ½,   A1 2 → ½     1, 1
    #   i6 {2,1}: judge 2 → ½,   A1 1 → ½     1, 1
    # Leaving A3 out (remaining A1, A2): i2 {1,1} judge 1 → 1, A3 2 → 0; i5 {2,2} judge 2 → 1,
    # A3 1 → 0; every other item a tie.
    a = alignment(worked(), WORKED_JUDGE, metric="accuracy")
    first = a.annotator == 0
    assert a.judge_score[first].tolist() == [1, 0.5, 0.5, 1, 0.5, 0.5]
    assert a.human_score[first].tolist() == [1, 0.5, 0.5, 0, 0.5, 0.5]
    assert a.judge_wins[first].all()
    assert a.human_wins[first].tolist() == [True, True, True, False, True, True]
    third = a.annotator == 2
    assert a.human_wins[third].tolist() == [True, False, True, True, False, True]


def test_it_tests_the_worked_case_by_hand():
    # ρ^f_j = 1 for every annotator (the judge is never worse); ρ^h = 5/6, 5/6, 4/6.
    # A1 and A2: d = W^h − W^f = (0, 0, 0, −1, 0, 0): mean −1/6, variance (1 − 1/6)/5 = 1/6,
    #   t = (−1/6 − 0.2) / sqrt(1/6 / 6) = −0.36667 / 0.16667 = −2.2, p = P(T_5 ≤ −2.2) = 0.03955.
    # A3: d = (0, −1, 0, 0, −1, 0): mean −1/3, variance (2 − 4/6)/5 = 4/15,
    #   t = (−1/3 − 0.2) / sqrt(4/15 / 6) = −0.53333 / 0.21082 = −2.5298, p = 0.02627.
    # Benjamini–Yekutieli, m = 3, H_3 = 1 + 1/2 + 1/3 = 11/6: the sorted p (0.02627, 0.03955,
    #   0.03955) become min over k ≥ i of m H_3 p_(k) / k: the last is 3 · 11/6 · 0.03955 / 3 =
    #   0.07250, and the smaller ones (0.10875, 0.14447) take it: every adjusted p is 0.07250.
    # At q = 0.05 nothing is rejected: ω = 0/3, the judge fails although ρ = 1 (six items are
    # too few); at q = 0.10 all three are rejected: ω = 1, it passes.
    result = alt_test(worked(), WORKED_JUDGE, metric="accuracy", min_items=2)
    rows = {r.annotator: r for r in result.per_annotator}
    assert [rows[j].rho_judge for j in range(3)] == [1.0, 1.0, 1.0]
    assert [rows[j].rho_human for j in range(3)] == pytest.approx([5 / 6, 5 / 6, 4 / 6])
    assert rows[0].t == pytest.approx(-2.2) and rows[1].t == pytest.approx(-2.2)
    assert rows[2].t == pytest.approx(-(1 / 3 + 0.2) / np.sqrt(4 / 15 / 6))
    assert rows[0].p == pytest.approx(0.0395469, abs=1e-6)
    assert rows[2].p == pytest.approx(0.0262707, abs=1e-6)
    assert [rows[j].p_adjusted for j in range(3)] == pytest.approx([0.0725027] * 3, abs=1e-6)
    assert result.annotators == 3 and result.winning_rate == 0.0 and result.rho == 1.0
    assert result.passed is False and result.reason == ""
    looser = alt_test(worked(), WORKED_JUDGE, metric="accuracy", min_items=2, q=0.10)
    assert looser.winning_rate == 1.0 and looser.passed is True


def test_it_gives_scipys_paired_test_and_by_adjustment():
    rng = np.random.default_rng(3)
    dense = rng.integers(1, 4, size=(4, 50)).astype(float)
    dense[rng.random(dense.shape) < 0.2] = np.nan
    judge = rng.integers(1, 4, size=50).astype(float)
    ratings = LongRatings.from_dense(dense)
    result = alt_test(ratings, judge, metric="accuracy", epsilon=0.15, min_items=10)
    a = alignment(ratings, judge, metric="accuracy")
    ps = []
    for row in result.per_annotator:
        mine = a.annotator == row.annotator
        wf, wh = a.judge_wins[mine].astype(float), a.human_wins[mine].astype(float)
        one = stats.ttest_1samp(wh - wf, 0.15, alternative="less")
        paired = stats.ttest_rel(wf + 0.15, wh, alternative="greater")
        assert row.p == pytest.approx(one.pvalue, rel=1e-10)
        assert row.p == pytest.approx(paired.pvalue, rel=1e-10)
        assert row.t == pytest.approx(one.statistic, rel=1e-10)
        ps.append(one.pvalue)
    adjusted = stats.false_discovery_control(ps, method="by")
    assert [r.p_adjusted for r in result.per_annotator] == pytest.approx(list(adjusted))


def reference_alt_test(dense: np.ndarray, judge: np.ndarray, *, metric: str, epsilon: float,
                       q: float, min_items: int) -> tuple[float, float, list[float]]:
    """The test written from Calderon et al. 2025's definitions, one item at a time."""
    ps, rhos = [], []
    for j in range(dense.shape[0]):
        wf, wh = [], []
        for i in range(dense.shape[1]):
            others = [dense[k, i] for k in range(dense.shape[0])
                      if k != j and not np.isnan(dense[k, i])]
            if np.isnan(dense[j, i]) or np.isnan(judge[i]) or not others:
                continue

            def score(x: float, others: list[float] = others) -> float:
                if metric == "accuracy":
                    return float(np.mean([x == o for o in others]))
                return -float(np.sqrt(np.mean([(x - o) ** 2 for o in others])))

            sf, sh = score(judge[i]), score(dense[j, i])
            wf.append(sf >= sh)
            wh.append(sh >= sf)
        if len(wf) < min_items:
            continue
        d = np.array(wh, float) - np.array(wf, float)
        ps.append(float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue))
        rhos.append(float(np.mean(wf)))
    adjusted = stats.false_discovery_control(np.nan_to_num(ps, nan=1.0), method="by")
    return float(np.mean(adjusted <= q)), float(np.mean(rhos)), list(adjusted)


@pytest.mark.parametrize("metric", ["accuracy", "negative_distance"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_equals_the_test_written_item_by_item(metric, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 80)
    dense = np.clip(truth + rng.integers(-1, 2, size=(5, 80)), 1, 5).astype(float)
    dense[rng.random(dense.shape) < 0.3] = np.nan
    judge = np.clip(truth + rng.integers(-1, 2, 80), 1, 5).astype(float)
    judge[rng.random(80) < 0.1] = np.nan
    result = alt_test(LongRatings.from_dense(dense), judge, metric=metric, min_items=20)
    omega, rho, adjusted = reference_alt_test(dense, judge, metric=metric, epsilon=0.2, q=0.05,
                                              min_items=20)
    assert result.winning_rate == pytest.approx(omega)
    assert result.rho == pytest.approx(rho)
    assert [r.p_adjusted for r in result.per_annotator if r.won is not None] == \
        pytest.approx(adjusted)


def test_it_scores_distance_by_the_root_mean_square():
    # One item rated 1, 3, 5; the judge says 3. Leaving out 1: remaining {3, 5}, judge
    # −sqrt((0 + 4)/2) = −√2, the annotator −sqrt((4 + 16)/2) = −√10. Leaving out 3: remaining
    # {1, 5}: judge and annotator both −2, a tie (both indicators 1).
    ratings = LongRatings(item=np.zeros(3, np.int64), annotator=np.arange(3),
                          value=np.array([1.0, 3.0, 5.0]), n_items=1, n_annotators=3)
    a = alignment(ratings, np.array([3.0]), metric="negative_distance")
    assert a.judge_score == pytest.approx([-np.sqrt(2), -2, -np.sqrt(2)])
    assert a.human_score == pytest.approx([-np.sqrt(10), -2, -np.sqrt(10)])
    assert a.judge_wins.tolist() == [True, True, True]
    assert a.human_wins.tolist() == [False, True, False]


def test_it_keeps_ties_exact_on_decimal_scales():
    # 0.1 + 0.2 is not 0.3 in binary: the sums must not turn this tie into a win.
    ratings = LongRatings(item=np.zeros(3, np.int64), annotator=np.arange(3),
                          value=np.array([0.1, 0.3, 0.5]), n_items=1, n_annotators=3)
    a = alignment(ratings, np.array([0.3]), metric="negative_distance")
    assert a.judge_wins[1] and a.human_wins[1]


def test_it_says_why_with_too_few_annotators_or_items():
    two = LongRatings.from_dense(WORKED[:2])
    result = alt_test(two, WORKED_JUDGE, metric="accuracy", min_items=2)
    assert result.passed is None and "at least 3 annotators" in result.reason
    assert result.annotators == 2 and result.winning_rate is not None
    few = alt_test(worked(), WORKED_JUDGE, metric="accuracy")
    assert few.passed is None and few.annotators == 0 and few.winning_rate is None
    assert all("fewer than 30" in r.reason and r.won is None for r in few.per_annotator)
    none = alt_test(worked(), np.full(6, np.nan), metric="accuracy")
    assert none.passed is None and "no item answered by the judge" in none.reason


def test_it_refuses_bad_parameters():
    with pytest.raises(ValueError, match="epsilon"):
        alt_test(worked(), WORKED_JUDGE, metric="accuracy", epsilon=1.5)
    with pytest.raises(ValueError, match="metric"):
        alt_test(worked(), WORKED_JUDGE, metric="f1")
    with pytest.raises(ValueError, match="one value per item"):
        alt_test(worked(), WORKED_JUDGE[:3], metric="accuracy")
    assert alt_metric("nominal") == "accuracy" and alt_metric("ordinal") == "negative_distance"


# --------------------------------------------------------------------------------------------
# Properties


def study(seed: int, n_annotators: int = 4, n_items: int = 60, noisy: int | None = None,
          good: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Annotators who give the true category (1–5) with probability ``good``, else a random
    one; annotator ``noisy`` answers at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_items)
    dense = np.where(rng.random((n_annotators, n_items)) < good, truth,
                     rng.integers(1, 6, (n_annotators, n_items))).astype(float)
    if noisy is not None:
        dense[noisy] = rng.integers(1, 6, n_items)
    return dense, truth.astype(float)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 3), st.sampled_from(["accuracy",
                                                                   "negative_distance"]))
def test_a_judge_that_copies_an_annotator_ties_them(seed, copied, metric):
    dense, _ = study(seed)
    dense[np.random.default_rng(seed).random(dense.shape) < 0.2] = np.nan
    judge = dense[copied].copy()
    result = alt_test(LongRatings.from_dense(dense), judge, metric=metric, min_items=5)
    row = next(r for r in result.per_annotator if r.annotator == copied)
    assert row.rho_judge == row.rho_human == 1.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_the_leave_one_out_majority_wins_against_a_noisy_annotator(seed):
    dense, _ = study(seed, noisy=3)
    good = dense[:3]
    # The majority of the three others (the annotators left when the noisy one is left out);
    # a three-way split takes the first annotator's answer.
    counts = np.stack([(good == v).sum(axis=0) for v in range(1, 6)])
    judge = np.where(counts.max(axis=0) >= 2, counts.argmax(axis=0) + 1.0, good[0])
    result = alt_test(LongRatings.from_dense(dense), judge, metric="accuracy")
    noisy = next(r for r in result.per_annotator if r.annotator == 3)
    assert noisy.rho_judge == 1.0 and noisy.won is True


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["accuracy", "negative_distance"]))
def test_a_random_judge_loses(seed, metric):
    dense, _ = study(seed)
    judge = np.random.default_rng(seed + 1).integers(1, 6, dense.shape[1]).astype(float)
    result = alt_test(LongRatings.from_dense(dense), judge, metric=metric)
    assert result.passed is False and result.winning_rate == 0.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.permutations(range(4)),
       st.sampled_from(["nominal", "ordinal", "interval"]))
def test_results_do_not_depend_on_the_annotators_order(seed, order, level):
    dense, truth = study(seed, good=0.7)
    dense[np.random.default_rng(seed).random(dense.shape) < 0.2] = np.nan
    judge = np.clip(truth + np.random.default_rng(seed).integers(-1, 2, truth.size), 1, 5)
    order = list(order)
    a = LongRatings.from_dense(dense)
    b = LongRatings.from_dense(dense[order])
    metric = alt_metric(level)
    ra, rb = (alt_test(x, judge, metric=metric, min_items=10) for x in (a, b))
    assert ra.winning_rate == rb.winning_rate and ra.rho == pytest.approx(rb.rho)
    by_a = {r.annotator: r for r in ra.per_annotator}
    for r in rb.per_annotator:
        assert by_a[order[r.annotator]].p_adjusted == pytest.approx(r.p_adjusted, nan_ok=True)
    domain = [1, 2, 3, 4, 5]
    ja, jb = (judge_annotator_alphas(x, judge, level=level, domain=domain)[0] for x in (a, b))
    np.testing.assert_allclose(ja[order], jb)
    ga, gb = (replaced_alphas(x, judge, level=level, domain=domain) for x in (a, b))
    np.testing.assert_allclose(ga[order], gb)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_of_the_judge_with_an_annotator_is_symmetric(seed, level):
    dense, truth = study(seed, n_annotators=1, good=0.6)
    judge = np.clip(truth + np.random.default_rng(seed).integers(-1, 2, truth.size), 1, 5)
    dense[0, :5] = np.nan
    forward = judge_annotator_alphas(LongRatings.from_dense(dense), judge, level=level,
                                     domain=[1, 2, 3, 4, 5])[0][0]
    swapped = np.where(np.isnan(dense[0]), np.nan, judge)
    backward = judge_annotator_alphas(LongRatings.from_dense(swapped[None, :]),
                                      np.where(np.isnan(dense[0]), np.nan, dense[0]),
                                      level=level, domain=[1, 2, 3, 4, 5])[0][0]
    assert forward == pytest.approx(backward)


# --------------------------------------------------------------------------------------------
# Alphas against the krippendorff package


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_the_alphas_equal_the_krippendorff_package(level):
    rng = np.random.default_rng(11)
    domain = [1, 2, 3, 4, 5]
    dense = rng.integers(1, 6, size=(5, 40)).astype(float)
    dense[rng.random(dense.shape) < 0.3] = np.nan
    judge = rng.integers(1, 6, size=40).astype(float)
    judge[:4] = np.nan
    ratings = LongRatings.from_dense(dense)

    def package(data: np.ndarray) -> float:
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                        value_domain=domain))

    with_judge, items = judge_annotator_alphas(ratings, judge, level=level, domain=domain)
    for a in range(5):
        assert with_judge[a] == pytest.approx(package(np.vstack([dense[a], judge])))
        assert items[a] == np.count_nonzero(~np.isnan(dense[a]) & ~np.isnan(judge))
    found = annotator_pair_alphas(ratings, level=level, domain=domain)
    assert found is not None
    pairs, alphas, shared = found
    assert len(pairs) == 10
    for (a, b), value, n in zip(pairs, alphas, shared, strict=True):
        assert value == pytest.approx(package(dense[[a, b]]))
        assert n == np.count_nonzero(~np.isnan(dense[a]) & ~np.isnan(dense[b]))
    replaced = replaced_alphas(ratings, judge, level=level, domain=domain)
    for a in range(5):
        data = dense.copy()
        data[a] = np.where(np.isnan(dense[a]), np.nan, judge)
        assert replaced[a] == pytest.approx(package(data))
    # The human answers' codes given once for several judges: the same numbers, bit for bit.
    codes = domain_codes(ratings.value, domain)
    given = judge_annotator_alphas(ratings, judge, level=level, domain=domain, codes=codes)
    np.testing.assert_array_equal(given[0], with_judge)
    np.testing.assert_array_equal(given[1], items)
    np.testing.assert_array_equal(
        replaced_alphas(ratings, judge, level=level, domain=domain, codes=codes), replaced)


def test_replacing_an_annotator_by_their_copy_leaves_alpha_unchanged():
    dense, _ = study(5, good=0.7)
    ratings = LongRatings.from_dense(dense)
    replaced = replaced_alphas(ratings, dense[2], level="ordinal", domain=[1, 2, 3, 4, 5])
    whole = krippendorff.alpha(reliability_data=dense, level_of_measurement="ordinal",
                               value_domain=[1, 2, 3, 4, 5])
    assert replaced[2] == pytest.approx(whole)


# --------------------------------------------------------------------------------------------
# Correlations and shares


def test_the_correlations_are_scipys_with_a_seeded_interval():
    rng = np.random.default_rng(4)
    human = rng.integers(1, 6, size=(300, 3)).mean(axis=1)
    judge = np.clip(np.rint(human + rng.normal(0, 0.8, 300)), 1, 5)
    judge[:5] = np.nan
    c = judge_correlations(judge, human, rng=np.random.default_rng(0), n_boot=400)
    keep = ~np.isnan(judge)
    assert c.items == 295 and c.interval == "bootstrap"
    assert c.pearson.value == pytest.approx(stats.pearsonr(judge[keep], human[keep])[0])
    assert c.spearman.value == pytest.approx(stats.spearmanr(judge[keep], human[keep])[0])
    assert c.kendall.value == pytest.approx(stats.kendalltau(judge[keep], human[keep])[0])
    for ci in (c.pearson, c.spearman, c.kendall):
        assert ci.low is not None and ci.high is not None and ci.low < ci.value < ci.high
    again = judge_correlations(judge, human, rng=np.random.default_rng(0), n_boot=400)
    assert again == c


def test_the_bootstrap_tables_give_scipys_correlations():
    # The bootstrap computes each resample's correlations on its table of distinct pairs: one
    # draw that keeps every item once must give scipy's three numbers.
    from core.stats.judges import _table_stats

    rng = np.random.default_rng(8)
    x = rng.integers(1, 6, 120).astype(float)
    y = np.round(x + rng.normal(0, 1, 120), 1)
    xv, xi = np.unique(x, return_inverse=True)
    yv, yi = np.unique(y, return_inverse=True)
    table = np.bincount(xi * yv.size + yi, minlength=xv.size * yv.size).astype(float)
    p, s, k = _table_stats(table.reshape(1, xv.size, yv.size), xv, yv)
    assert p[0] == pytest.approx(stats.pearsonr(x, y)[0])
    assert s[0] == pytest.approx(stats.spearmanr(x, y)[0])
    assert k[0] == pytest.approx(stats.kendalltau(x, y)[0])


def test_many_distinct_pairs_take_fisher_intervals():
    rng = np.random.default_rng(2)
    human = rng.normal(size=500)
    judge = human + rng.normal(size=500)
    c = judge_correlations(judge, human, rng=np.random.default_rng(0))
    assert c.interval == "fisher_z"
    z = stats.norm.ppf(0.975)
    r = c.pearson.value
    assert c.pearson.low == pytest.approx(np.tanh(np.arctanh(r) - z / np.sqrt(497)))


def test_correlations_say_why_they_are_missing():
    assert "fewer than 3" in judge_correlations([1.0, 2.0], [1.0, 2.0],
                                                rng=np.random.default_rng(0)).reason
    flat = judge_correlations([2.0] * 5, [1, 2, 3, 4, 5], rng=np.random.default_rng(0))
    assert flat.pearson.value is None and "judge give every item" in flat.reason


def test_it_matches_the_human_majority():
    # Items: (1, 1, 2) majority 1; (3, 4) no majority; (2, 2) majority 2; (5,) one answer.
    ratings = LongRatings(item=np.array([0, 0, 0, 1, 1, 2, 2, 3]),
                          annotator=np.array([0, 1, 2, 0, 1, 0, 1, 0]),
                          value=np.array([1, 1, 2, 3, 4, 2, 2, 5], dtype=float),
                          n_items=4, n_annotators=3)
    share = majority_match(ratings, np.array([1.0, 3.0, 1.0, 5.0]))
    assert (share.k, share.n, share.value) == (1, 2, 0.5)
    exact = stats.binomtest(1, 2).proportion_ci(method="exact")
    assert (share.low, share.high) == pytest.approx((exact.low, exact.high))


def test_it_measures_the_first_position():
    chose = [True] * 8 + [False] * 2 + [True]
    decided = [True] * 10 + [False]
    share = first_position(chose, decided, [0.5] * 11)
    assert (share.k, share.n, share.value) == (8, 10, 0.8)
    assert share.p == pytest.approx(stats.binomtest(8, 10, 0.5).pvalue)
