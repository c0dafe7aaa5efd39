"""Sampled trust coefficients carry their Monte-Carlo error; the sampled engine's cost estimate
decides how many subsets fit in the time allowed (issue 23, point 20)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats.trust import (
    MIN_SAMPLES,
    sampled_seconds,
    samples_within,
    trust_coefficients,
)


def graded(k: int = 12, n: int = 40, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """k annotators of growing noise around a seeded truth, interval values, 10 % missing."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, 1, n)
    r = np.round(truth + rng.normal(0, 1, (k, n)) * np.linspace(0.2, 2.5, k)[:, None], 2)
    r[rng.random((k, n)) < 0.1] = np.nan
    return r, np.unique(r[~np.isnan(r)])


def test_the_monte_carlo_error_is_the_spread_of_the_estimate_over_seeds():
    """The reported standard error matches the seed-to-seed standard deviation of the sampled
    coefficients (within a factor 1.6 for every annotator), and the estimates centre on the
    exact coefficients (their mean over 40 seeds within 4 standard errors of the mean)."""
    r, dom = graded()
    exact = np.array(trust_coefficients(r, level="interval", domain=dom, max_exact=12).coefficients)
    estimates, errors = [], []
    for seed in range(40):
        s = trust_coefficients(r, level="interval", domain=dom, max_exact=2, n_samples=2000,
                               rng=np.random.default_rng(seed))
        assert s.method == "sampled" and s.mc_error is not None
        estimates.append(s.coefficients)
        errors.append([np.nan if e is None else e for e in s.mc_error])
    est, err = np.array(estimates, float), np.array(errors)
    spread, reported = est.std(axis=0, ddof=1), np.nanmean(err, axis=0)
    assert np.all(reported < 1.6 * spread) and np.all(spread < 1.6 * reported)
    assert np.all(np.abs(est.mean(axis=0) - exact) < 4 * spread / np.sqrt(40) + 0.01)


def test_more_subsets_give_a_smaller_error_and_the_exact_engine_none():
    r, dom = graded()
    small = trust_coefficients(r, level="interval", domain=dom, max_exact=2, n_samples=1000)
    large = trust_coefficients(r, level="interval", domain=dom, max_exact=2, n_samples=16000)
    assert max(e for e in large.mc_error if e) < 0.5 * max(e for e in small.mc_error if e)
    top = int(np.argmax(large.coefficients))
    assert large.mc_error[top] == 0.0  # the largest is 1 by definition
    assert trust_coefficients(r, level="interval", domain=dom, max_exact=12).mc_error is None


def test_too_few_draws_leave_the_error_unknown():
    r, dom = graded()
    tiny = trust_coefficients(r, level="interval", domain=dom, max_exact=2, n_samples=3)
    assert tiny.mc_error == (None,) * 12


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 5000), items=st.integers(1, 100_000), values=st.integers(2, 100),
       budget=st.floats(0.01, 3600), wanted=st.integers(1, 10_000_000))
def test_the_samples_chosen_fit_the_budget_and_never_exceed_the_ask(k, items, values, budget,
                                                                     wanted):
    n = samples_within(budget, k=k, n_items=items, n_values=values, wanted=wanted)
    assert 0 <= n <= wanted
    assert sampled_seconds(k=k, n_items=items, n_values=values, n_samples=n) <= budget + 1e-9
    if n < wanted:  # one more subset would not fit
        assert sampled_seconds(k=k, n_items=items, n_values=values, n_samples=n + 1) > budget


@pytest.mark.parametrize("k", [70, 500])
def test_the_default_ask_at_70_and_500_annotators_of_100_items_fits_a_minute(k):
    """The bench's case (100 items, 8 values): the default 20 000 subsets fit the default 60 s."""
    assert samples_within(60.0, k=k, n_items=100, n_values=8, wanted=20_000) == 20_000
    assert samples_within(60.0, k=k, n_items=100, n_values=8, wanted=20_000) >= MIN_SAMPLES
