"""Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").

The ``krippendorff`` package is the oracle: ours must equal it to 1e-9 wherever it is defined,
and say why (``None`` + reason) wherever it raises or returns NaN.
"""

import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats._types import LongRatings
from core.stats.alpha import (
    REASON_NO_PAIRABLE,
    REASON_RATIO_NEGATIVE,
    REASON_SINGLE_VALUE,
    alpha,
    alpha_from_coincidences,
    alpha_from_value_counts,
    alpha_levels_with_ci,
    alpha_long,
    alpha_with_ci,
    bootstrap_ci,
    coincidence_matrix,
    distance_matrix,
    item_coincidences,
    value_counts,
)
from core.stats.scales import LEVELS, PRESETS, reduce_values

nan = np.nan

# Krippendorff (2011), section E: 4 observers, 12 units, values 1..5, missing data.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)
# Krippendorff (2011), section A: binary data, two observers, no missing data.
BINARY_TWO_OBSERVERS = np.array(
    [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]], dtype=float
)


def reference(ratings, level, domain):
    """Return the package's alpha, or None where it raises or gives a non-finite number."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            value = krippendorff.alpha(
                reliability_data=ratings, level_of_measurement=level, value_domain=list(domain)
            )
        except ValueError:
            return None
    return float(value) if np.isfinite(value) else None


@st.composite
def studies(draw, min_annotators=1):
    """Draw (ratings, domain): random shape, ascending domain, random answers and blanks."""
    domain = sorted(
        draw(
            st.sets(
                st.integers(-3, 12).map(float) | st.sampled_from([0.5, 2.25, 7.75]),
                min_size=1,
                max_size=7,
            )
        )
    )
    n_annotators = draw(st.integers(min_annotators, 6))
    n_items = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    missing = draw(st.sampled_from([0.0, 0.2, 0.5, 0.8]))
    rng = np.random.default_rng(seed)
    ratings = rng.choice(np.array(domain), size=(n_annotators, n_items))
    ratings[rng.random(ratings.shape) < missing] = nan
    return ratings, domain


@settings(max_examples=300, deadline=None)
@given(study=studies(), level=st.sampled_from(LEVELS))
def test_it_equals_the_krippendorff_package_on_random_data_at_every_level(study, level):
    ratings, domain = study
    ours = alpha(ratings, level=level, domain=domain)
    if level == "ratio" and min(domain) < 0:
        assert ours.value is None and ours.reason == REASON_RATIO_NEGATIVE
        return
    expected = reference(ratings, level, domain)
    if expected is None:
        assert ours.value is None and ours.reason
    else:
        assert ours.reason is None
        assert ours.value == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_it_reproduces_krippendorffs_published_reliability_data_example(level, published):
    result = alpha(KRIPPENDORFF_2011, level=level, domain=[1, 2, 3, 4, 5])
    assert round(result.value, 3) == published
    assert result.value == pytest.approx(
        reference(KRIPPENDORFF_2011, level, range(1, 6)), abs=1e-12
    )
    assert (result.n_items, result.n_pairable_values) == (11, 40)


def test_it_reproduces_krippendorffs_binary_two_observer_example():
    result = alpha(BINARY_TWO_OBSERVERS, level="nominal", domain=[0, 1])
    assert round(result.value, 3) == 0.095


def test_it_builds_the_published_coincidence_matrix():
    # Krippendorff (2011), section E, the coincidence matrix of the 4 x 12 example.
    o = coincidence_matrix(value_counts(KRIPPENDORFF_2011, [1, 2, 3, 4, 5]))
    expected = np.array(
        [
            [7, 4 / 3, 1 / 3, 1 / 3, 0],
            [4 / 3, 10, 4 / 3, 1 / 3, 0],
            [1 / 3, 4 / 3, 8, 1 / 3, 0],
            [1 / 3, 1 / 3, 1 / 3, 4, 0],
            [0, 0, 0, 0, 3],
        ]
    )
    np.testing.assert_allclose(o, expected, atol=1e-12)
    # The published marginals n_c and n.
    np.testing.assert_allclose(o.sum(axis=0), [9, 13, 10, 5, 3])
    assert o.sum() == pytest.approx(40)


def test_it_builds_the_coincidences_of_one_item_by_hand():
    # One item rated (1, 1, 2): ordered pairs (1,1) x2, (1,2) x2, (2,1) x2, each / (m - 1) = 2.
    np.testing.assert_allclose(coincidence_matrix(np.array([[2, 1]])), [[1, 1], [1, 0]])


def test_it_computes_ordinal_distances_from_pairable_frequencies():
    d = distance_matrix("ordinal", [1, 2, 3], np.array([2.0, 3.0, 5.0]))
    # (sum of n_g from c to k - (n_c + n_k) / 2) ** 2
    np.testing.assert_allclose(d, [[0, 6.25, 42.25], [6.25, 0, 16], [42.25, 16, 0]])


def test_it_computes_ratio_distances_with_zero_at_the_origin():
    d = distance_matrix("ratio", [0, 1, 3])
    np.testing.assert_allclose(d, [[0, 1, 1], [1, 0, 0.25], [1, 0.25, 0]])


def test_it_computes_alpha_from_coincidences_in_batches():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 3, size=(4, 9, 5))
    batched = alpha_from_coincidences(coincidence_matrix(counts), level="ordinal", domain=range(5))
    one_by_one = [
        alpha_from_value_counts(c, level="ordinal", domain=range(5)).value for c in counts
    ]
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-12)


def test_it_sums_item_coincidences_to_the_coincidence_matrix():
    counts = value_counts(KRIPPENDORFF_2011, range(1, 6))
    np.testing.assert_allclose(item_coincidences(counts).sum(axis=0), coincidence_matrix(counts))


@settings(max_examples=200, deadline=None)
@given(study=studies(), level=st.sampled_from(LEVELS))
def test_it_gives_the_dense_alpha_from_long_format_data(study, level):
    ratings, domain = study
    dense = alpha(ratings, level=level, domain=domain)
    long = alpha_long(LongRatings.from_dense(ratings), level=level, domain=domain)
    assert (long.reason, long.n_items, long.n_pairable_values) == (
        dense.reason,
        dense.n_items,
        dense.n_pairable_values,
    )
    if dense.value is not None:
        assert long.value == pytest.approx(dense.value, rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(study=studies(), level=st.sampled_from(LEVELS), seed=st.integers(0, 2**32 - 1))
def test_it_does_not_depend_on_the_order_of_annotators_or_items(study, level, seed):
    ratings, domain = study
    rng = np.random.default_rng(seed)
    shuffled = ratings[rng.permutation(ratings.shape[0])][:, rng.permutation(ratings.shape[1])]
    before = alpha(ratings, level=level, domain=domain)
    after = alpha(shuffled, level=level, domain=domain)
    assert after.reason == before.reason
    if before.value is not None:
        assert after.value == pytest.approx(before.value, rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(study=studies(), level=st.sampled_from(LEVELS), data=st.data())
def test_it_ignores_an_item_rated_by_a_single_annotator(study, level, data):
    ratings, domain = study
    lone = np.full((ratings.shape[0], 1), nan)
    lone[data.draw(st.integers(0, ratings.shape[0] - 1)), 0] = data.draw(st.sampled_from(domain))
    before = alpha(ratings, level=level, domain=domain)
    after = alpha(np.hstack([ratings, lone]), level=level, domain=domain)
    assert (after.reason, after.n_items) == (before.reason, before.n_items)
    if before.value is not None:
        assert after.value == pytest.approx(before.value, rel=1e-12, abs=1e-12)


def test_it_gives_one_for_perfect_agreement_on_two_values():
    result = alpha(np.array([[1, 2, 1], [1, 2, 1]]), level="interval", domain=[1, 2, 3])
    assert result.value == pytest.approx(1.0)


def test_it_returns_none_when_no_item_is_pairable():
    result = alpha(np.array([[1, nan], [nan, 2]]), level="nominal", domain=[1, 2])
    assert (result.value, result.reason, result.n_items) == (None, REASON_NO_PAIRABLE, 0)


def test_it_returns_none_when_all_pairable_values_are_the_same():
    # The lone 2 is not pairable, so the pairable values are all 1: alpha is 0/0.
    result = alpha(np.array([[1, 1, 2], [1, 1, nan]]), level="ordinal", domain=[1, 2])
    assert (result.value, result.reason, result.n_items) == (None, REASON_SINGLE_VALUE, 2)


def test_it_returns_none_for_the_ratio_level_on_negative_codes():
    similarity = np.array([[-1, 0, 1, 1], [-1, 1, 1, 0]], dtype=float)
    result = alpha(similarity, level="ratio", domain=(-1, 0, 1))
    assert (result.value, result.reason) == (None, REASON_RATIO_NEGATIVE)


def test_it_rejects_a_value_outside_the_domain():
    with pytest.raises(ValueError, match="outside the scale's domain"):
        alpha(np.array([[1, 8], [1, 2]]), level="nominal", domain=range(8))


def test_it_rejects_an_unknown_level():
    with pytest.raises(ValueError, match="level must be one of"):
        alpha(KRIPPENDORFF_2011, level="circular", domain=range(1, 6))


def test_it_rejects_ratings_that_are_not_a_matrix():
    with pytest.raises(ValueError, match="2-D"):
        alpha(np.array([1.0, 2.0]), level="nominal", domain=[1, 2])


@pytest.mark.parametrize("reduction", ["reduced", "gravity", "importance"])
def test_it_computes_alpha_on_a_reduction_like_the_package(reduction):
    rng = np.random.default_rng(11)
    raw = rng.integers(0, 8, size=(12, 40)).astype(float)
    raw[rng.random(raw.shape) < 0.3] = nan
    mapping = PRESETS["likert-0-7-coref"]["reductions"][reduction]
    codes = reduce_values(raw, mapping)
    domain = sorted(set(mapping.values()))
    for level in LEVELS:
        ours = alpha(codes, level=level, domain=domain)
        assert ours.value == pytest.approx(reference(codes, level, domain), rel=1e-9, abs=1e-9)


def test_it_uses_values_absent_from_the_data_only_through_the_domain():
    # An unused domain value has n_v = 0: it adds nothing to ordinal distances between used ones.
    ratings = np.array([[1, 2, 2, 1], [1, 2, 1, 1]], dtype=float)
    narrow = alpha(ratings, level="ordinal", domain=[1, 2])
    wide = alpha(ratings, level="ordinal", domain=[0, 1, 2, 3])
    assert wide.value == pytest.approx(narrow.value)


def random_study(seed, n_annotators=20, n_items=127):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 8, size=n_items)
    noise = rng.integers(-1, 2, size=(n_annotators, n_items))
    ratings = np.clip(truth + noise, 0, 7).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = nan
    return ratings


def test_it_reproduces_the_bootstrap_with_the_same_seed():
    ratings = random_study(1)
    first = bootstrap_ci(ratings, level="ordinal", domain=range(8), rng=np.random.default_rng(5))
    again = bootstrap_ci(ratings, level="ordinal", domain=range(8), rng=np.random.default_rng(5))
    assert first == again


def test_it_matches_a_bootstrap_loop_over_the_package():
    ratings = random_study(2, n_annotators=5, n_items=30)
    n_boot = 200
    ours = bootstrap_ci(
        ratings, level="interval", domain=range(8), rng=np.random.default_rng(9), n_boot=n_boot
    )
    # The same draws, one krippendorff.alpha call per resample of the pairable items.
    pairable = ratings[:, (~np.isnan(ratings)).sum(axis=0) >= 2]
    draws = np.random.default_rng(9).integers(
        0, pairable.shape[1], size=(n_boot, pairable.shape[1])
    )
    loop = [reference(pairable[:, d], "interval", range(8)) for d in draws]
    expected = np.quantile([v for v in loop if v is not None], [0.025, 0.975])
    np.testing.assert_allclose(ours, expected, rtol=1e-9)


def test_it_brackets_alpha_with_its_bootstrap_interval():
    result = alpha_with_ci(
        random_study(3), level="ordinal", domain=range(8), rng=np.random.default_rng(0)
    )
    low, high = result.ci95
    assert low < result.value < high


def test_it_bootstraps_long_format_data_like_dense_data():
    ratings = random_study(4)
    dense = alpha_with_ci(ratings, level="nominal", domain=range(8), rng=np.random.default_rng(2))
    long = alpha_with_ci(
        LongRatings.from_dense(ratings),
        level="nominal",
        domain=range(8),
        rng=np.random.default_rng(2),
    )
    assert long.ci95 == pytest.approx(dense.ci95, rel=1e-12)
    assert long.value == pytest.approx(dense.value, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(study=studies(), seed=st.integers(0, 2**16), n_boot=st.integers(1, 60))
def test_it_gives_every_level_the_interval_alpha_with_ci_gives_with_the_same_seed(study, seed,
                                                                                  n_boot):
    ratings, domain = study
    levels = [level for level in LEVELS if not (level == "ratio" and min(domain) < 0)]
    shared = alpha_levels_with_ci(ratings, levels=levels, domain=domain, seed=seed,
                                  n_boot=n_boot)
    for level in levels:
        alone = alpha_with_ci(ratings, level=level, domain=domain,
                              rng=np.random.default_rng(seed), n_boot=n_boot)
        assert shared[level] == alone  # bit for bit: the same resamples, read per level


def test_it_gives_no_interval_when_alpha_is_undefined():
    ratings = np.array([[1, 1, 1], [1, 1, 1]], dtype=float)
    result = alpha_with_ci(ratings, level="nominal", domain=[0, 1], rng=np.random.default_rng(0))
    assert (result.value, result.ci95, result.reason) == (None, None, REASON_SINGLE_VALUE)
    assert (
        bootstrap_ci(ratings, level="nominal", domain=[0, 1], rng=np.random.default_rng(0)) is None
    )


def test_it_rejects_a_confidence_outside_the_unit_interval():
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(
            random_study(5),
            level="ordinal",
            domain=range(8),
            rng=np.random.default_rng(0),
            confidence=95,
        )


def test_it_rejects_repeated_item_annotator_pairs_in_long_format():
    with pytest.raises(ValueError, match="more than once"):
        LongRatings(
            item=np.array([0, 0]),
            annotator=np.array([1, 1]),
            value=np.array([1.0, 2.0]),
            n_items=1,
            n_annotators=2,
        )


def test_it_round_trips_dense_ratings_through_long_format():
    long = LongRatings.from_dense(KRIPPENDORFF_2011)
    assert long.item.size == 41
    np.testing.assert_array_equal(long.to_dense(), KRIPPENDORFF_2011)


def test_it_rejects_long_format_indices_out_of_range():
    with pytest.raises(ValueError, match="annotator indices"):
        LongRatings(
            item=np.array([0]),
            annotator=np.array([2]),
            value=np.array([1.0]),
            n_items=1,
            n_annotators=2,
        )


def test_it_rejects_long_format_arrays_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        LongRatings(
            item=np.array([0, 1]),
            annotator=np.array([0]),
            value=np.array([1.0]),
            n_items=2,
            n_annotators=1,
        )


def test_it_accepts_whole_float_indices_in_long_format():
    data = LongRatings(
        item=np.array([0.0, 0.0]),
        annotator=np.array([0.0, 1.0]),
        value=np.array([1.0, 2.0]),
        n_items=1,
        n_annotators=2,
    )
    assert data.item.dtype == np.int64
