"""Comparative judgments: Bradley–Terry and Plackett–Luce against choix, Davidson against an
independent likelihood maximised by scipy, hand cases for counts and circular triads, the
best–worst design's balance, split-half reliability on planted and random studies, and property
tests (reversal reverses, renaming renames)."""

from __future__ import annotations

import math
from itertools import combinations

import choix
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from core.stats.comparisons import (
    NOT_CONNECTED,
    TIES_NOT_MODELLED,
    bootstrap_pairwise,
    bootstrap_rankings,
    bradley_terry,
    bws_counts,
    bws_design,
    bws_to_pairwise,
    circular_triads,
    pair_design,
    pairwise_counts,
    plackett_luce,
    position_bias,
    split_half_bws,
    split_half_pairwise,
    win_probability,
)

# A hand-made, strongly connected data set: (winner, loser) over 5 outputs.
PAIRS = [(0, 1), (0, 1), (1, 0), (0, 2), (2, 0), (0, 3), (0, 4), (1, 2), (1, 2), (2, 1),
         (1, 3), (3, 1), (1, 4), (2, 3), (3, 2), (3, 2), (2, 4), (4, 2), (3, 4), (4, 3),
         (4, 0), (4, 1), (3, 0)]
RANKINGS = [[0, 1, 2, 3], [1, 0, 3], [2, 0, 1, 4, 3], [3, 4], [0, 2, 4], [4, 1, 0],
            [1, 2], [2, 3, 0, 1], [0, 4, 2, 1, 3], [3, 0], [4, 3, 2]]
TIES = [(0, 1), (2, 3), (1, 2), (0, 4), (3, 4), (1, 3)]


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


def test_bradley_terry_matches_choix():
    w, lo = arrays(PAIRS)
    fit = bradley_terry(w, lo, n_outputs=5)
    assert fit.reason is None and fit.tie_parameter is None
    ilsr = centred(choix.ilsr_pairwise(5, PAIRS, alpha=0.0, tol=1e-14, max_iter=10_000))
    opt = centred(choix.opt_pairwise(5, PAIRS, alpha=0.0, tol=1e-12))
    np.testing.assert_allclose(fit.log_strength, ilsr, atol=1e-6)
    np.testing.assert_allclose(fit.log_strength, opt, atol=1e-6)
    assert abs(fit.log_strength.mean()) < 1e-12


def test_plackett_luce_matches_choix():
    fit = plackett_luce(RANKINGS, n_outputs=5)
    assert fit.reason is None
    reference = centred(choix.ilsr_rankings(5, RANKINGS, alpha=0.0, tol=1e-14, max_iter=10_000))
    np.testing.assert_allclose(fit.log_strength, reference, atol=1e-6)


def test_plackett_luce_of_pairs_is_bradley_terry():
    w, lo = arrays(PAIRS)
    pl = plackett_luce([list(p) for p in PAIRS], n_outputs=5)
    np.testing.assert_allclose(pl.log_strength, bradley_terry(w, lo, n_outputs=5).log_strength,
                               atol=1e-8)


def davidson_reference(pairs, ties, n):
    """Davidson 1970's likelihood written per judgment, maximised by scipy (θ_0 fixed at 0)."""

    def negative(params):
        theta = np.concatenate([[0.0], params[:n - 1]])
        nu = math.exp(params[-1])
        total = 0.0
        for i, j in pairs:
            pi, pj = math.exp(theta[i]), math.exp(theta[j])
            total += math.log(pi / (pi + pj + nu * math.sqrt(pi * pj)))
        for i, j in ties:
            pi, pj = math.exp(theta[i]), math.exp(theta[j])
            tie = nu * math.sqrt(pi * pj)
            total += math.log(tie / (pi + pj + tie))
        return -total

    result = optimize.minimize(negative, np.zeros(n), method="BFGS",
                               options={"gtol": 1e-11, "maxiter": 10_000})
    theta = np.concatenate([[0.0], result.x[:n - 1]])
    return centred(theta), math.exp(result.x[-1]), -result.fun, negative


def test_davidson_matches_an_independent_implementation():
    w, lo = arrays(PAIRS + TIES)
    tie = np.array([False] * len(PAIRS) + [True] * len(TIES))
    fit = bradley_terry(w, lo, tie, n_outputs=5)
    theta, nu, ll, negative = davidson_reference(PAIRS, TIES, 5)
    assert fit.tie_parameter is not None
    np.testing.assert_allclose(fit.log_strength, theta, atol=1e-6)
    assert fit.tie_parameter == pytest.approx(nu, abs=1e-6)
    assert fit.log_likelihood == pytest.approx(ll, abs=1e-8)
    # our optimum is at least as good under the independent likelihood
    ours = np.concatenate([fit.log_strength[1:] - fit.log_strength[0],
                           [math.log(fit.tie_parameter)]])
    assert negative(ours) <= -ll + 1e-9
    # the probabilities of the three outcomes of a pair sum to one
    p = fit.win_probability()
    pi, pj = np.exp(fit.log_strength[0]), np.exp(fit.log_strength[1])
    tie01 = fit.tie_parameter * math.sqrt(pi * pj) / (pi + pj + fit.tie_parameter
                                                      * math.sqrt(pi * pj))
    assert p[0, 1] + p[1, 0] + tie01 == pytest.approx(1.0)


def test_without_davidson_a_tie_is_half_a_win_each():
    w, lo = arrays(PAIRS + TIES)
    tie = np.array([False] * len(PAIRS) + [True] * len(TIES))
    fit = bradley_terry(w, lo, tie, n_outputs=5, davidson=False)
    doubled = [p for p in PAIRS for _ in range(2)] + TIES + [(j, i) for i, j in TIES]
    reference = centred(choix.ilsr_pairwise(5, doubled, alpha=0.0, tol=1e-14, max_iter=10_000))
    np.testing.assert_allclose(fit.log_strength, reference, atol=1e-6)
    assert fit.tie_parameter is None


def test_an_output_that_never_wins_is_regularised_and_says_so():
    w, lo = arrays([(0, 1), (1, 0), (0, 2), (1, 2), (0, 1)])
    fit = bradley_terry(w, lo, n_outputs=3)
    assert fit.reason == NOT_CONNECTED
    assert np.all(np.isfinite(fit.log_strength))
    assert int(np.argmin(fit.log_strength)) == 2
    ranked = plackett_luce([[0, 1, 2], [1, 0, 2]], n_outputs=3)
    assert ranked.reason == NOT_CONNECTED and int(np.argmin(ranked.log_strength)) == 2
    # the likelihood reported is the data's alone: here below the unregularised supremum, 0
    assert fit.log_likelihood < 0
    assert fit.log_likelihood == pytest.approx(
        sum(math.log(1 / (1 + math.exp(fit.log_strength[lo_] - fit.log_strength[w_])))
            for w_, lo_ in zip(w, lo, strict=True)), abs=1e-9)
    with pytest.raises(ValueError):
        plackett_luce([[0, -1]], n_outputs=3)


def test_ties_need_decided_judgments_that_connect_the_outputs():
    # decided 0 > 1 > 2 do not connect; the tie 2 = 0 closes the circle for Bradley–Terry
    pairs = [(0, 1), (1, 2), (0, 1), (1, 2)]
    ties = [(2, 0), (2, 0)]
    w, lo = arrays(pairs + ties)
    fit = bradley_terry(w, lo, [False] * 4 + [True] * 2, n_outputs=3)
    assert fit.reason == TIES_NOT_MODELLED and fit.tie_parameter is None
    doubled = [p for p in pairs for _ in range(2)] + ties + [(j, i) for i, j in ties]
    reference = centred(choix.ilsr_pairwise(3, doubled, alpha=0.0, tol=1e-14, max_iter=10_000))
    np.testing.assert_allclose(fit.log_strength, reference, atol=1e-6)


def test_counts_by_hand():
    counts = pairwise_counts([0, 0, 1, 2], [1, 2, 2, 0], [False, False, False, True],
                             n_outputs=3)
    assert counts.wins.tolist() == [2, 1, 0]
    assert counts.losses.tolist() == [0, 1, 2]
    assert counts.ties.tolist() == [1, 0, 1]
    np.testing.assert_allclose(counts.win_rate, [2.5 / 3, 0.5, 0.5 / 3])
    assert np.isnan(pairwise_counts([0], [1], n_outputs=3).win_rate[2])


def test_best_worst_counts_by_hand():
    tuples = np.array([[0, 1, 2, 3], [0, 1, 4, -1], [2, 3, 4, 0]])
    scores = bws_counts(tuples, best=[0, 1, 0], worst=[3, 4, 4], n_outputs=5)
    assert scores.appearances.tolist() == [3, 2, 2, 2, 2]
    np.testing.assert_allclose(scores.score, [2 / 3, 0.5, 0.0, -0.5, -1.0])
    winner, loser = bws_to_pairwise(tuples[:1], [0], [3], n_outputs=5)
    assert sorted(zip(winner.tolist(), loser.tolist(), strict=True)) == [(0, 1), (0, 2), (0, 3), (1, 3),
                                                           (2, 3)]
    with pytest.raises(ValueError):
        bws_counts(tuples, best=[4, 1, 0], worst=[3, 4, 4], n_outputs=5)


def test_circular_triads_by_hand():
    # annotator 0: A>B, B>C, C>A (one circular triad); annotator 1: A>B, B>C, A>C (none);
    # annotator 2 ties a pair: no triangle is decided.
    winner = [0, 1, 2, 0, 1, 0, 0, 1, 2]
    loser = [1, 2, 0, 1, 2, 2, 1, 2, 0]
    tie = [False] * 6 + [False, False, True]
    annotator = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    triads = circular_triads(winner, loser, tie, annotator, n_outputs=3, n_annotators=3)
    assert triads.circular.tolist() == [1, 0, 0]
    assert triads.triangles.tolist() == [1, 1, 0]
    np.testing.assert_allclose(triads.expected, [0.25, 0.25, 0.0])


def test_circular_triads_of_a_complete_tournament_follow_kendalls_formula():
    rng = np.random.default_rng(3)
    n = 9
    pairs = list(combinations(range(n), 2))
    flip = rng.random(len(pairs)) < 0.5
    winner = [j if f else i for (i, j), f in zip(pairs, flip, strict=True)]
    loser = [i if f else j for (i, j), f in zip(pairs, flip, strict=True)]
    triads = circular_triads(winner, loser, None, [0] * len(pairs), n_outputs=n, n_annotators=1)
    scores = np.bincount(winner, minlength=n)
    kendall = math.comb(n, 3) - sum(math.comb(int(s), 2) for s in scores)
    assert triads.circular[0] == kendall
    # a random annotator: a quarter of the C(n, 3) triangles
    assert triads.expected[0] == pytest.approx(math.comb(n, 3) / 4)


def test_position_bias_is_the_binomial_test():
    left = np.array([True] * 70 + [False] * 30 + [True] * 5)
    tie = np.array([False] * 100 + [True] * 5)
    bias = position_bias(left, tie)
    assert (bias.left, bias.decided, bias.share_left) == (70, 100, 0.7)
    assert bias.p_value == pytest.approx(2 * stats.binom.sf(69, 100, 0.5), rel=1e-9)
    assert position_bias(left[:0]).decided == 0


@pytest.mark.parametrize("n", [8, 13, 30, 60, 200])
def test_best_worst_design_is_balanced(n):
    design = bws_design(n, rng=np.random.default_rng(n))
    assert design.shape == (2 * n, 4)
    assert all(len(set(row)) == 4 for row in design.tolist())
    counts = np.bincount(design.ravel(), minlength=n)
    assert counts.min() == counts.max() == 8  # 2N tuples of 4: every output in 8
    together = np.zeros((n, n), int)
    for row in design:
        together[np.ix_(row, row)] += 1
    np.fill_diagonal(together, 0)
    if n >= 200:
        assert together.max() == 1  # no pair twice when there is room
    elif n >= 60:
        assert together.max() <= 2 and (together > 1).sum() / 2 <= 5
    # seeded
    assert np.array_equal(design, bws_design(n, rng=np.random.default_rng(n)))


def test_best_worst_design_with_a_remainder_stays_within_one():
    design = bws_design(10, n_tuples=7, size=3, rng=np.random.default_rng(0))
    counts = np.bincount(design.ravel(), minlength=10)
    assert counts.sum() == 21 and counts.max() - counts.min() <= 1


def test_pair_design_covers_every_pair_with_balanced_sides():
    design = pair_design(6, per_pair=4, rng=np.random.default_rng(0))
    assert design.shape == (15 * 4, 2)
    left_first = {}
    for a, b in design.tolist():
        key = (min(a, b), max(a, b))
        left_first[key] = left_first.get(key, 0) + (a < b)
    assert set(left_first) == set(combinations(range(6), 2))
    assert set(left_first.values()) == {2}


def planted(n_outputs, n_annotators, per_annotator, spread, rng):
    theta = np.linspace(spread, -spread, n_outputs)
    i = rng.integers(0, n_outputs, n_annotators * per_annotator)
    j = (i + rng.integers(1, n_outputs, i.size)) % n_outputs
    wins = rng.random(i.size) < 1 / (1 + np.exp(theta[j] - theta[i]))
    return (np.where(wins, i, j), np.where(wins, j, i),
            np.repeat(np.arange(n_annotators), per_annotator))


def test_split_half_is_high_on_a_planted_study_and_near_zero_on_coin_flips():
    rng = np.random.default_rng(7)
    w, lo, ann = planted(20, 20, 300, 2.0, rng)
    high = split_half_pairwise(w, lo, None, ann, n_outputs=20, rng=np.random.default_rng(1))
    assert high.reliability > 0.95 and high.splits == 100 and high.sd < 0.05
    w, lo, ann = planted(20, 20, 300, 0.0, rng)
    noise = split_half_pairwise(w, lo, None, ann, n_outputs=20, rng=np.random.default_rng(1))
    assert abs(noise.reliability) < 0.25 and noise.low < 0 < noise.high
    one = split_half_pairwise(w[:5], lo[:5], None, np.zeros(5), n_outputs=20,
                              rng=np.random.default_rng(1))
    assert one.reason == "fewer_than_two_annotators"


def test_split_half_of_best_worst_on_a_planted_study():
    rng = np.random.default_rng(11)
    n = 24
    quality = np.linspace(2, -2, n)
    design = np.concatenate([bws_design(n, rng=rng) for _ in range(6)])
    best, worst = [], []
    for row in design:
        noisy = quality[row] + rng.gumbel(size=4)
        best.append(row[np.argmax(noisy)])
        worst.append(row[np.argmin(noisy)])
    annotator = np.arange(design.shape[0]) % 12
    result = split_half_bws(design, best, worst, annotator, n_outputs=n,
                            rng=np.random.default_rng(0))
    assert result.reliability > 0.9


def test_bootstrap_is_seeded_and_its_intervals_hold_the_estimate():
    rng = np.random.default_rng(5)
    w, lo, _ = planted(6, 5, 100, 1.0, rng)
    tie = rng.random(w.size) < 0.1
    one = bootstrap_pairwise(w, lo, tie, n_outputs=6, n_resamples=200,
                             rng=np.random.default_rng(9))
    two = bootstrap_pairwise(w, lo, tie, n_outputs=6, n_resamples=200,
                             rng=np.random.default_rng(9))
    np.testing.assert_array_equal(one.low, two.low)
    assert one.fit.tie_parameter is not None
    assert np.all(one.low <= one.fit.log_strength) and np.all(one.fit.log_strength <= one.high)
    assert np.all(one.rank_low <= one.rank) and np.all(one.rank <= one.rank_high)
    assert one.rank.tolist() == sorted(one.rank.tolist())  # planted order, strongest first
    assert one.n_resamples == 200 and one.regularised_resamples == 0
    plain = bootstrap_pairwise(w, lo, None, n_outputs=6, n_resamples=50,
                               rng=np.random.default_rng(9))
    p = plain.win_probability
    np.testing.assert_allclose((p + p.T)[~np.eye(6, dtype=bool)], 1.0)


def test_bootstrap_of_rankings():
    scores = bootstrap_rankings(RANKINGS, n_outputs=5, n_resamples=100,
                                rng=np.random.default_rng(0))
    np.testing.assert_allclose(scores.fit.log_strength,
                               plackett_luce(RANKINGS, n_outputs=5).log_strength, atol=1e-9)
    assert np.all(scores.low <= scores.high) and scores.n_resamples == 100


judgments = st.lists(
    st.tuples(st.integers(0, 4), st.integers(1, 4), st.booleans()), min_size=1, max_size=40,
).map(lambda rows: [(a, (a + d) % 5, t) for a, d, t in rows])


@settings(max_examples=40, deadline=None)
@given(judgments)
def test_reversing_every_judgment_reverses_the_order(rows):
    w = np.array([r[0] for r in rows])
    lo = np.array([r[1] for r in rows])
    tie = np.array([r[2] for r in rows])
    fit = bradley_terry(w, lo, tie, n_outputs=5)
    back = bradley_terry(lo, w, tie, n_outputs=5)
    assert fit.iterations < 50 and np.all(np.abs(fit.log_strength) < 30)
    np.testing.assert_allclose(back.log_strength, -fit.log_strength, atol=1e-6)
    assert back.tie_parameter == pytest.approx(fit.tie_parameter, abs=1e-6) \
        if fit.tie_parameter is not None else back.tie_parameter is None
    counts, reverse = (pairwise_counts(w, lo, tie, n_outputs=5),
                       pairwise_counts(lo, w, tie, n_outputs=5))
    np.testing.assert_allclose(np.nan_to_num(reverse.win_rate, nan=0.5),
                               1 - np.nan_to_num(counts.win_rate, nan=0.5))


@settings(max_examples=40, deadline=None)
@given(judgments, st.permutations(range(5)))
def test_renaming_outputs_renames_the_results(rows, perm):
    rename = np.array(perm)
    w = np.array([r[0] for r in rows])
    lo = np.array([r[1] for r in rows])
    tie = np.array([r[2] for r in rows])
    fit = bradley_terry(w, lo, tie, n_outputs=5)
    renamed = bradley_terry(rename[w], rename[lo], tie, n_outputs=5)
    np.testing.assert_allclose(renamed.log_strength[rename], fit.log_strength, atol=1e-6)
    rankings = [[int(a), int(b)] for a, b in zip(w, lo, strict=True)]
    pl = plackett_luce(rankings, n_outputs=5)
    pl_renamed = plackett_luce([[int(rename[x]) for x in r] for r in rankings], n_outputs=5)
    np.testing.assert_allclose(pl_renamed.log_strength[rename], pl.log_strength, atol=1e-6)


def test_win_probability_without_ties_is_logistic():
    p = win_probability(np.array([0.5, -0.5]))
    assert p[0, 1] == pytest.approx(1 / (1 + math.exp(-1)))
    assert np.isnan(p[0, 0])
