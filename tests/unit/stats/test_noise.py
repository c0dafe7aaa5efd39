"""Noise model of the agreed subset (Beigman Klebanov and Beigman 2009; docs/statistics/noise.md).

The paper's worked examples are test vectors, minding its printed slips (found by recomputing
them): "γ = 13.8 %" is 125/900 = 13.9 % (the 125 is right); the 3-to-2 kappa "0.52" computes as
0.592; "7.7 %" for 850 agreements computes as 64/850 = 7.5 % at 95 %.
"""

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import nbinom

from core.stats._types import LongRatings
from core.stats.noise import (
    chance_difference,
    max_disagreements,
    noise_level,
    noise_model,
    siegel_castellan_kappa,
)

# --------------------------------------------------------------------------- crowds


def two_annotator_crowd(n=1000, agreed=900):
    """§3.1: two annotators, categories equiprobable in agreed and disagreed items."""
    dense = np.zeros((2, n))
    dense[:, : agreed // 2] = 1.0  # half the agreed items are category 1
    dis = np.arange(agreed, n)
    dense[0, dis] = (dis - agreed) % 2
    dense[1, dis] = 1 - dense[0, dis]
    return LongRatings.from_dense(dense)


def five_annotator_crowd(agreed, splits):
    """§3.2: five annotators; ``splits`` lists (minority size, number of items).

    Disagreed items come in mirrored pairs (same minority, opposite majority category), so
    every annotator puts exactly half of their disagreed items in each category.
    """
    rows = []
    for i in range(agreed):
        rows.append([i % 2] * 5)
    for minority_size, count in splits:
        minorities = list(combinations(range(5), minority_size))
        for t in range(count):
            majority = t % 2
            minority = minorities[(t // 2) % len(minorities)]
            rows.append([1 - majority if j in minority else majority for j in range(5)])
    return LongRatings.from_dense(np.array(rows, dtype=float).T)


def posterior_t0(n, d, p, confidence=0.95):
    """Independent t0: the number of coin-flip agreements k = h − d is negative binomial.

    C(h, d) p^(h−d) = C(d + k, k) p^k ∝ NB(k; r = d + 1, success 1 − p), truncated at n − d.
    """
    dist = nbinom(d + 1, 1 - p)
    total = dist.cdf(n - d)
    for k in range(n - d + 1):
        if (total - dist.cdf(k)) / total < 1 - confidence:
            return d + k
    return n


# ------------------------------------------------------------------ the paper's worked examples


def test_it_reproduces_the_two_annotator_noise_level_of_section_3_1():
    level = noise_level(n=1000, d=100, p=0.5, confidence=0.95)
    assert level.t0 - level.d == 125  # "up to 125 agreements are due to coin-flipping"
    assert level.gamma == pytest.approx(125 / 900)  # printed "13.8 %" (a slip for 13.9 %)
    assert round(level.gamma, 3) == 0.139


def test_it_reproduces_the_poesio_vieira_noise_level_of_section_3_1():
    # n = 992, d = 121, p = 0.47 "yields γ = 15 %".
    assert round(noise_level(n=992, d=121, p=0.47).gamma, 2) == 0.15


def test_it_tolerates_only_33_disagreements_in_section_3_1():
    assert max_disagreements(n=1000, p=0.5, confidence=0.95, max_gamma=0.05) == 33
    # "corresponding to κ = 0.93": 967 agreed of 1 000, categories equiprobable.
    counts = np.array([[2, 0]] * 484 + [[0, 2]] * 483 + [[1, 1]] * 33)
    assert round(siegel_castellan_kappa(counts), 2) == 0.93


def test_it_reproduces_the_kappa_of_section_3_1():
    counts = np.array([[2, 0]] * 450 + [[0, 2]] * 450 + [[1, 1]] * 100)
    assert siegel_castellan_kappa(counts) == pytest.approx(0.8)


def test_it_reproduces_the_five_annotator_kappas_of_section_3_2():
    four_to_one = noise_model(five_annotator_crowd(660, [(1, 340)]))
    three_to_two = noise_model(five_annotator_crowd(660, [(2, 340)]))
    assert round(four_to_one.kappa, 2) == 0.73
    assert three_to_two.kappa == pytest.approx(0.592)  # printed "0.52" (a slip)
    # "twice as many 3-to-2 cases than 4-to-1 … about κ = 0.637" (scaled ×3 to whole items).
    mixed = noise_model(five_annotator_crowd(1980, [(2, 680), (1, 340)]))
    assert round(mixed.kappa, 3) == 0.637


def test_it_reproduces_the_five_annotator_noise_level_of_section_3_2():
    result = noise_model(five_annotator_crowd(660, [(1, 340)]))
    assert result.p == pytest.approx(0.0625)  # 2 × 0.5^5
    assert (result.n_items, result.agreed, result.disagreed) == (1000, 660, 340)
    # "the 660 agreed items make a gold standard within the noise rate of γ = 5 %"
    assert result.t0 - result.disagreed == 31
    assert result.gamma == pytest.approx(31 / 660)
    assert result.gamma <= 0.05


def test_it_reproduces_the_third_annotator_of_section_5_3():
    # Three annotators: p = 0.25; 850 agreed of 1 000. Printed "7.7 %" computes as 64/850.
    level = noise_level(n=1000, d=150, p=0.25, confidence=0.95)
    assert level.t0 - 150 == 64
    assert level.gamma == pytest.approx(64 / 850)


def test_it_reproduces_the_chance_difference_of_section_4_1():
    cd = chance_difference(hard_agreed=125)
    assert cd.sigma == pytest.approx(math.sqrt(62.5))
    assert math.floor(cd.chebyshev) == 35  # "a difference of up to 35 'correct' answers"
    assert round(math.floor(cd.chebyshev) / 900, 3) == 0.039  # "(3.9 % of the gold standard)"
    assert cd.normal == pytest.approx(2 * math.sqrt(62.5))  # footnote 9


def test_it_runs_the_whole_model_on_the_crowd_of_section_3_1():
    result = noise_model(two_annotator_crowd(), scale="raw")
    assert result.p == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.8)
    assert (result.t0, result.max_disagreements) == (225, 33)
    assert result.gamma == pytest.approx(125 / 900)
    assert result.chance_difference.hard_agreed == 125
    assert result.chance_difference.chebyshev == pytest.approx(4.5 * math.sqrt(62.5))
    assert result.reason is None


# --------------------------------------------------------------------------- exactness


@pytest.mark.parametrize(
    ("n", "d", "p"),
    [(30, 0, 0.5), (30, 5, 0.5), (30, 29, 0.3), (200, 40, 0.25), (1000, 100, 0.5), (500, 10, 0.9)],
)
def test_it_matches_the_negative_binomial_posterior(n, d, p):
    assert noise_level(n=n, d=d, p=p).t0 == posterior_t0(n, d, p)


def test_it_matches_the_negative_binomial_posterior_at_100000_items():
    level = noise_level(n=100_000, d=20_000, p=0.3)
    dist = nbinom(20_001, 0.7)
    k = level.t0 - 20_000
    assert dist.sf(k) < 0.05 <= dist.sf(k - 1)
    assert 0 < level.gamma < 1


def test_it_sums_equation_1_directly_on_a_small_case():
    n, d, p = 12, 3, 0.4
    w = {h: math.comb(h, d) * p ** (h - d) for h in range(d, n + 1)}
    z = sum(w.values())
    t0 = next(t for t in range(d, n + 1) if sum(w[h] for h in range(t + 1, n + 1)) / z < 0.05)
    assert noise_level(n=n, d=d, p=p).t0 == t0


def test_it_finds_the_same_max_disagreements_as_a_linear_scan():
    for n, p in [(60, 0.5), (150, 0.25), (400, 0.0625)]:
        ok = [d for d in range(n) if noise_level(n=n, d=d, p=p).gamma <= 0.05]
        assert max_disagreements(n=n, p=p) == (max(ok) if ok else None)
        assert ok == list(range(len(ok)))  # γ grows with d, so the binary search is sound


def test_it_returns_no_max_disagreements_when_even_zero_disagreements_are_too_noisy():
    # 20 items, p = 0.5: with no disagreement up to 4 hard agreements remain plausible.
    assert noise_level(n=20, d=0, p=0.5).gamma == pytest.approx(4 / 20)
    assert max_disagreements(n=20, p=0.5) is None


def test_it_gives_zero_noise_when_hard_items_can_never_agree():
    level = noise_level(n=100, d=10, p=0.0)
    assert (level.t0, level.gamma) == (10, 0.0)


# --------------------------------------------------------------------------- generalisations


def test_it_computes_p_with_per_annotator_shares_and_per_item_raters():
    # Annotators 0, 1, 2; categories a = 0, b = 1.
    # Disagreed: item 0 (A0: a, A1: b); item 1 (A1: a, A2: b); item 2 (A0: a, A2: b);
    # item 3 (A0: b, A1: a, A2: a). Agreed: item 4 (all a), item 5 (A0, A1: b).
    nan = np.nan
    dense = np.array(
        [
            [0, nan, 0, 1, 0, 1],
            [1, 0, nan, 0, 0, 1],
            [nan, 1, 1, 0, 0, nan],
        ]
    )
    q0 = (2 / 3, 1 / 3)  # A0 on disagreed items: a, a, b
    q1 = (2 / 3, 1 / 3)  # A1: b, a, a
    q2 = (1 / 3, 2 / 3)  # A2: b, b, a

    def p2(qa, qb):
        return qa[0] * qb[0] + qa[1] * qb[1]

    p3 = q0[0] * q1[0] * q2[0] + q0[1] * q1[1] * q2[1]
    expected = (p2(q0, q1) + p2(q1, q2) + p2(q0, q2) + p3 + p3 + p2(q0, q1)) / 6
    result = noise_model(dense)
    assert (result.n_items, result.agreed, result.disagreed) == (6, 2, 4)
    assert result.p == pytest.approx(expected)
    assert result.pooled_annotators == ()


def test_it_uses_per_item_rater_counts_in_kappa():
    # Item 0: 3 raters (2 a, 1 b) → P_A = 1/3; item 1: 2 raters agree → 1.
    counts = np.array([[2, 1], [0, 2]])
    pa = (1 / 3 + 1) / 2
    pc = np.array([2, 3]) / 5
    pe = float(pc @ pc)
    assert siegel_castellan_kappa(counts) == pytest.approx((pa - pe) / (1 - pe))


def test_it_pools_the_shares_of_annotators_without_disagreed_items():
    nan = np.nan
    # Disagreed items 0, 1: A0 says 0 twice, A1 says 1 twice → q0 = (1, 0), q1 = (0, 1).
    # Agreed item 2 by A0 and A2; A2 never disagreed → pooled share (1/2, 1/2).
    dense = np.array([[0, 0, 0], [1, 1, nan], [nan, nan, 0]])
    result = noise_model(dense)
    assert result.pooled_annotators == (2,)
    # p_0 = p_1 = 1·0 + 0·1 = 0; p_2 = 1·½ + 0·½ = ½.
    assert result.p == pytest.approx(1 / 6)


def test_it_leaves_out_items_with_a_single_answer():
    nan = np.nan
    dense = np.array([[0, 1, 0, 1], [0, 0, nan, nan]])
    result = noise_model(dense)
    assert (result.n_items, result.agreed, result.disagreed) == (2, 1, 1)


def test_it_returns_none_with_a_reason_without_disagreements():
    result = noise_model(np.array([[0, 1, 1], [0, 1, 1]]))
    assert (result.agreed, result.disagreed, result.kappa) == (3, 0, pytest.approx(1.0))
    assert result.p is None and result.gamma is None and result.max_disagreements is None
    assert "cannot be estimated" in result.reason
    assert result.to_record()["chance_difference"] == {"chebyshev": None, "normal": None}


def test_it_returns_none_for_gamma_when_no_item_is_agreed():
    result = noise_model(np.array([[0, 1], [1, 0]]))
    assert result.gamma is None and result.chance_difference is None
    assert "no agreed item" in result.reason


def test_it_returns_none_with_a_reason_without_pairable_items():
    result = noise_model(np.array([[0.0, np.nan], [np.nan, 1.0]]))
    assert result.n_items == 0 and result.kappa is None
    assert "at least 2 answers" in result.reason


def test_it_returns_the_record_shape_of_product_md():
    rec = noise_model(two_annotator_crowd(), scale="reduced").to_record()
    assert list(rec) == [
        "scale", "n_items", "agreed", "disagreed", "p", "kappa", "confidence", "t0", "gamma",
        "max_disagreements", "chance_difference",
    ]  # fmt: skip
    assert rec["scale"] == "reduced" and rec["confidence"] == 0.95
    assert set(rec["chance_difference"]) == {"chebyshev", "normal"}


@pytest.mark.parametrize(
    "kwargs",
    [{"n": 0, "d": 0, "p": 0.5}, {"n": 10, "d": 11, "p": 0.5}, {"n": 10, "d": 1, "p": 1.5},
     {"n": 10, "d": 1, "p": 0.5, "confidence": 1.0}],
)  # fmt: skip
def test_it_rejects_malformed_noise_level_arguments(kwargs):
    with pytest.raises(ValueError):
        noise_level(**kwargs)


def test_it_rejects_a_rater_minimum_below_two():
    with pytest.raises(ValueError, match="min_raters"):
        noise_model(np.array([[0, 1]]), min_raters=1)


# --------------------------------------------------------------------------- invariants


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan]), min_size=6, max_size=6),
        min_size=3,
        max_size=4,
    ),
    st.randoms(use_true_random=False),
)
def test_it_is_unchanged_by_permuting_annotators_and_items(rows, rnd):
    dense = np.array(rows)
    a = list(range(dense.shape[0]))
    i = list(range(dense.shape[1]))
    rnd.shuffle(a)
    rnd.shuffle(i)
    before = noise_model(dense)
    after = noise_model(dense[np.ix_(a, i)])
    for field in ("n_items", "agreed", "disagreed", "t0", "max_disagreements"):
        assert getattr(before, field) == getattr(after, field)
    for field in ("p", "kappa", "gamma"):
        x, y = getattr(before, field), getattr(after, field)
        assert (x is None and y is None) or x == pytest.approx(y)
