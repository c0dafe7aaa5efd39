"""Trust coefficients (Borovikova et al. 2022, Algorithm 1) and the batched subset-alpha engine.

References are ``krippendorff.alpha`` called once per subset and literal transcriptions of the
printed pseudocode (``paper``) and of the authors' notebook as docs/statistics/trust.md describes it
(``notebook``).
"""

import itertools
import math
import warnings
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from core.stats import _subsets, _subsets_compiled
from core.stats.trust import (
    TIE_DECIMALS,
    plan_chunks,
    subset_alphas,
    trust_chunk,
    trust_coefficients,
    trust_merge,
)

LEVELS = ("nominal", "ordinal", "interval", "ratio")
TOL = 1e-9


def kripp(data, level, domain):
    """Return krippendorff.alpha, or nan where it is undefined (raises, 0/0, negative ratio)."""
    if level == "ratio" and min(domain) < 0:
        return math.nan
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(krippendorff.alpha(data, value_domain=domain, level_of_measurement=level))
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def literal_alphas(ratings, level, domain):
    """Return {combination: alpha} for every subset of ≥ 2 annotators (Algorithm 1, lines 1–6)."""
    k = ratings.shape[0]
    alphas = {}
    for n in range(2, k + 1):
        for comb in itertools.combinations(range(k), n):
            alphas[comb] = kripp(ratings[list(comb)], level, domain)
    return alphas


def key(alpha):
    # The one documented deviation from a bare float comparison: ties within 1e-12.
    return round(alpha, TIE_DECIMALS)


def literal_paper(ratings, level, domain):
    """Transcribe Algorithm 1 as printed; undefined alphas are skipped."""
    alphas = literal_alphas(ratings, level, domain)
    defined = [(comb, a) for comb, a in alphas.items() if not math.isnan(a)]
    defined = sorted(defined, key=lambda item: key(item[1]))  # SORT alphas BY alphas.values
    coefs = defaultdict(float)
    coef = 1
    score = 0
    for annotators_comb, alpha in defined:
        if score < key(alpha):
            coef = coef + 1
            score = key(alpha)
        for annotator in annotators_comb:
            coefs[annotator] = coefs[annotator] + coef * alpha
    top = max(coefs[a] for a in range(ratings.shape[0]))
    return [coefs[a] / top for a in range(ratings.shape[0])] if top > 0 else None


def literal_notebook(ratings, level, domain):
    """Transcribe the notebook: coef = dense rank from 1 among all subsets, undefined = 1.0."""
    alphas = literal_alphas(ratings, level, domain)
    values = {comb: (1.0 if math.isnan(a) else a) for comb, a in alphas.items()}
    distinct = sorted({key(v) for v in values.values()})
    rank = {v: position + 1 for position, v in enumerate(distinct)}
    sums = defaultdict(float)
    for comb, alpha in values.items():
        for annotator in comb:
            sums[annotator] += rank[key(alpha)] * alpha
    top = max(sums[a] for a in range(ratings.shape[0]))
    return [sums[a] / top for a in range(ratings.shape[0])] if top > 0 else None


@st.composite
def rating_matrices(draw, max_k=5, max_items=8):
    """Small ratings with missing values, a domain of 2–6 values (sometimes negative/uneven)."""
    domain = draw(
        st.sampled_from(
            [[0, 1], [1, 2, 3], [0, 1, 2, 3, 4, 5], [-1, 0, 1], [1, 2, 4, 8, 9], [0, 2, 3, 7]]
        )
    )
    k = draw(st.integers(2, max_k))
    n_items = draw(st.integers(1, max_items))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.sampled_from(domain)),
            min_size=k * n_items,
            max_size=k * n_items,
        )
    )
    ratings = np.array([np.nan if c is None else c for c in cells], dtype=float)
    return ratings.reshape(k, n_items), domain


def random_ratings(rng, k, n_items, n_values=5, missing=0.2, noise=None):
    truth = rng.integers(0, n_values, n_items)
    noise = np.linspace(0.3, 2.5, k) if noise is None else noise
    data = np.clip(
        np.rint(truth + rng.normal(0, 1, (k, n_items)) * noise[:, None]), 0, n_values - 1
    )
    data[rng.random((k, n_items)) < missing] = np.nan
    return data


def all_masks(k):
    return _subsets.enumerate_masks(k)


def reference_alphas(ratings, level, domain, masks):
    k = ratings.shape[0]
    members = _subsets.masks_to_members(masks, k)
    return np.array([kripp(ratings[row], level, domain) for row in members])


def assert_alphas_equal(got, want):
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    defined = ~np.isnan(want)
    assert np.max(np.abs(got[defined] - want[defined]), initial=0.0) <= TOL


# --- the engine ---------------------------------------------------------------------------------


ENGINES = ["numpy", "compiled"] if _subsets_compiled.AVAILABLE else ["numpy"]


def test_numba_is_installed_so_the_compiled_engine_is_the_default():
    # requirements.txt pins numba: a missing one would silently fall back to the slower engine.
    assert _subsets_compiled.AVAILABLE and _subsets.default_engine() == "compiled"


@settings(max_examples=60, deadline=None)
@given(data=rating_matrices(), level=st.sampled_from(LEVELS))
def test_it_matches_krippendorff_for_every_subset_exhaustively(data, level):
    ratings, domain = data
    k = ratings.shape[0]
    masks = all_masks(k)
    want = reference_alphas(ratings, level, domain, masks)
    prep = _subsets.prepare(ratings, level=level, domain=domain)
    for engine in ENGINES:
        got = _subsets.enumerated_alphas(prep, 0, masks.size, engine=engine)
        assert_alphas_equal(got, want)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_engine_equals_the_numpy_engine_and_its_chunks_merge_bit_for_bit(level,
                                                                                        seed):
    if not _subsets_compiled.AVAILABLE:
        pytest.fail("numba is a requirement")
    rng = np.random.default_rng(seed)
    k = 11
    ratings = random_ratings(rng, k=k, n_items=40, n_values=6, missing=0.3)
    domain = [0, 1, 2, 3, 4, 5, 6.5] if level != "nominal" else list(range(7))
    if level == "interval":
        ratings = np.where(ratings == 5, 6.5, ratings)  # a value that is not a whole number
    prep = _subsets.prepare(ratings, level=level, domain=domain)
    total = _subsets.n_subsets(k)
    compiled = _subsets.enumerated_alphas(prep, 0, total, engine="compiled")
    numpy_ = _subsets.enumerated_alphas(prep, 0, total, engine="numpy")
    assert np.array_equal(np.isnan(compiled), np.isnan(numpy_))
    assert np.nanmax(np.abs(compiled - numpy_)) <= 1e-12
    cuts = sorted({0, total, *rng.integers(0, total, 6).tolist()})
    pieces = [_subsets.enumerated_alphas(prep, lo, hi, engine="compiled")
              for lo, hi in itertools.pairwise(cuts)]
    assert np.array_equal(np.concatenate(pieces), compiled, equal_nan=True)


def test_an_unknown_engine_is_refused():
    prep = _subsets.prepare(np.array([[1.0, 2.0], [1.0, 2.0]]), level="nominal", domain=[1, 2])
    with pytest.raises(ValueError, match="engine must be one of"):
        _subsets.enumerated_alphas(prep, 0, 1, engine="fortran")


@settings(max_examples=60, deadline=None)
@given(data=rating_matrices(), level=st.sampled_from(LEVELS), seed=st.integers(0, 2**16))
def test_it_matches_krippendorff_for_arbitrary_masks(data, level, seed):
    ratings, domain = data
    k = ratings.shape[0]
    masks = np.random.default_rng(seed).integers(1, 2**k, 10).astype(np.uint32)
    got = subset_alphas(ratings, level=level, domain=domain, masks=masks)
    assert_alphas_equal(got, reference_alphas(ratings, level, domain, masks))


@pytest.mark.parametrize("level", LEVELS)
def test_it_matches_krippendorff_across_many_blocks(level, monkeypatch):
    # Tiny blocks force the numpy engine's tiling and low/high split through many boundaries.
    monkeypatch.setattr(_subsets, "_BLOCK_SUBSETS", 16)
    monkeypatch.setattr(_subsets, "default_engine", lambda: "numpy")
    ratings = random_ratings(np.random.default_rng(7), k=9, n_items=30, n_values=6)
    domain = list(range(8))  # two domain values never used
    got = trust_chunk(ratings, level=level, domain=domain, start=0, stop=2**9 - 10).alphas
    assert_alphas_equal(got, reference_alphas(ratings, level, domain, all_masks(9)))


def test_it_marks_subsets_without_pairable_items_undefined():
    ratings = np.array([[1, 2, np.nan, np.nan], [1, 2, 3, 1], [np.nan, np.nan, 3, 2.0]])
    got = subset_alphas(ratings, level="nominal", domain=[1, 2, 3], masks=[0b011, 0b101, 0b110])
    assert got[0] == 1.0 and math.isnan(got[1]) and abs(got[2] - 0.4) < TOL


def test_it_marks_subsets_with_a_single_pairable_value_undefined():
    ratings = np.array([[2, 2, 1], [2, 2, np.nan], [2, 2, np.nan]])
    got = subset_alphas(ratings, level="ordinal", domain=[1, 2, 3], masks=[0b011, 0b111])
    assert np.isnan(got).all()


def test_it_marks_ratio_alpha_with_negative_codes_undefined():
    ratings = np.array([[-1, 0, 1, 1], [-1, 0, 1, 0.0]])
    got = subset_alphas(ratings, level="ratio", domain=[-1, 0, 1], masks=[0b11])
    assert math.isnan(got[0])


def test_it_rejects_values_outside_the_domain():
    with pytest.raises(ValueError, match="outside the domain"):
        subset_alphas(np.array([[1, 2], [1, 5.0]]), level="ordinal", domain=[1, 2, 3], masks=[3])


def test_it_computes_ordinal_distances_as_squared_mid_rank_differences():
    # krippendorff's ordinal metric vs (r_c - r_c')², zero counts (values 1 and 4) included.
    n_v = np.array([3.0, 0.0, 5.0, 2.0, 0.0, 4.0])
    idx = np.arange(n_v.size)
    theirs = krippendorff.krippendorff._ordinal_metric(
        idx[:, None], idx[None, :], idx[:, None], idx[None, :], n_v
    )
    r = np.cumsum(n_v) - n_v + n_v / 2
    assert np.array_equal(theirs, (r[:, None] - r[None, :]) ** 2)


def test_it_enumerates_subsets_in_increasing_mask_order():
    assert all_masks(3).tolist() == [0b011, 0b101, 0b110, 0b111]
    assert all_masks(4)[4:8].tolist() == [0b1001, 0b1010, 0b1011, 0b1100]
    assert len(all_masks(10)) == 2**10 - 11
    assert [_subsets.mask_at(j, 10) for j in (0, 500, 1012)] == [
        int(all_masks(10)[j]) for j in (0, 500, 1012)
    ]


# --- the two variants against literal references ----------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=rating_matrices(max_k=5, max_items=6), level=st.sampled_from(LEVELS))
# Every alpha is 0 in exact arithmetic (one item): rounding noise must not make coefficients.
@example(data=(np.array([[1.0], [2.0], [2.0], [3.0]]), [1, 2, 3]), level="ordinal")
def test_it_reproduces_the_printed_pseudocode(data, level):
    ratings, domain = data
    want = literal_paper(ratings, level, domain)
    got = trust_coefficients(ratings, level=level, domain=domain, variant="paper")
    if want is None:
        assert set(got.coefficients) == {None} and got.reason
    else:
        assert np.allclose(got.coefficients, want, atol=TOL, rtol=0)


@settings(max_examples=40, deadline=None)
@given(data=rating_matrices(max_k=5, max_items=6), level=st.sampled_from(LEVELS))
@example(data=(np.array([[np.nan, np.nan, np.nan, 2, 1, np.nan], [np.nan, np.nan, 3, 3, 2, 2],
                         [np.nan, np.nan, 1, 1, np.nan, 1.0]]), [1, 2, 3]), level="ordinal")
def test_it_reproduces_the_notebook_description(data, level):
    ratings, domain = data
    want = literal_notebook(ratings, level, domain)
    got = trust_coefficients(ratings, level=level, domain=domain, variant="notebook")
    if want is None:
        assert set(got.coefficients) == {None} and got.reason
    else:
        assert np.allclose(got.coefficients, want, atol=TOL, rtol=0)


@pytest.mark.parametrize("variant", ["paper", "notebook"])
@pytest.mark.parametrize("seed", range(3))
def test_it_reproduces_the_literal_references_on_realistic_data(variant, seed):
    ratings = random_ratings(np.random.default_rng(seed), k=7, n_items=25, n_values=8)
    literal = literal_paper if variant == "paper" else literal_notebook
    want = literal(ratings, "ordinal", list(range(8)))
    got = trust_coefficients(ratings, level="ordinal", domain=range(8), variant=variant)
    assert np.allclose(got.coefficients, want, atol=TOL, rtol=0)


# --- hand-worked cases and invariants -----------------------------------------------------------

THREE = np.array([[1, 2, 3, np.nan], [1, 2, 3, 3], [1, 2, 2, 3.0]])  # alphas 1, 6/11, 2/3, 3/4


def test_it_computes_the_hand_worked_paper_case():
    # Order 6/11, 2/3, 3/4, 1 → coef 2, 3, 4, 5; A1 = 100/11, A2 = 10, A3 = 67/11.
    got = trust_coefficients(THREE, level="nominal", domain=[1, 2, 3], variant="paper")
    assert np.allclose(got.coefficients, [10 / 11, 1.0, 67 / 110], atol=1e-12)
    assert got.outliers == () and got.method == "exact" and got.n_subsets == 4


def test_it_computes_the_hand_worked_notebook_case():
    # Dense ranks 6/11 → 1, 2/3 → 2, 3/4 → 3, 1 → 4; A1 = 299/44, A2 = 91/12, A3 = 545/132.
    got = trust_coefficients(THREE, level="nominal", domain=[1, 2, 3], variant="notebook")
    assert np.allclose(got.coefficients, [3588 / 4004, 1.0, 6540 / 12012], atol=1e-12)


GAPPY = np.array([[1, 2, np.nan, np.nan], [1, 2, 3, 1], [np.nan, np.nan, 3, 2.0]])
# {A1,A2} = 1, {A1,A3} undefined, {A2,A3} = 0.4, {A1,A2,A3} = 2/3


def test_it_skips_undefined_subsets_and_flags_the_outlier_in_the_paper_variant():
    # coef 2, 3, 4 for 0.4, 2/3, 1: A1 = 6, A2 = 6.8, A3 = 2.8.
    got = trust_coefficients(GAPPY, level="nominal", domain=[1, 2, 3], variant="paper")
    assert np.allclose(got.coefficients, [6 / 6.8, 1.0, 2.8 / 6.8], atol=1e-12)
    assert got.outliers == (2,) and got.n_undefined == 1


def test_it_counts_undefined_subsets_as_one_in_the_notebook_variant():
    # Values 1, 1 (undefined), 0.4, 2/3 → ranks 3, 3, 1, 2: A1 = 22/3, A2 = A3 = 71/15.
    got = trust_coefficients(GAPPY, level="nominal", domain=[1, 2, 3], variant="notebook")
    assert np.allclose(got.coefficients, [1.0, 213 / 330, 213 / 330], atol=1e-12)
    assert got.outliers == ()


@settings(max_examples=30, deadline=None)
@given(
    data=rating_matrices(max_k=5, max_items=6),
    variant=st.sampled_from(["paper", "notebook"]),
    seed=st.integers(0, 2**16),
)
def test_it_permutes_coefficients_with_the_annotators(data, variant, seed):
    ratings, domain = data
    perm = np.random.default_rng(seed).permutation(ratings.shape[0])
    base = trust_coefficients(ratings, level="ordinal", domain=domain, variant=variant)
    moved = trust_coefficients(ratings[perm], level="ordinal", domain=domain, variant=variant)
    if base.coefficients[0] is None:
        assert set(moved.coefficients) == {None}
    else:
        assert np.allclose(moved.coefficients, np.array(base.coefficients)[perm], atol=TOL)


@settings(max_examples=30, deadline=None)
@given(data=rating_matrices(max_k=5, max_items=6), variant=st.sampled_from(["paper", "notebook"]))
def test_it_scales_the_largest_coefficient_to_one(data, variant):
    ratings, domain = data
    got = trust_coefficients(ratings, level="interval", domain=domain, variant=variant)
    if got.coefficients[0] is not None:
        assert max(got.coefficients) == 1.0
        assert got.outliers == tuple(a for a, c in enumerate(got.coefficients) if c <= 0.5)


@pytest.mark.parametrize("variant", ["paper", "notebook"])
def test_it_returns_none_with_a_reason_when_the_maximum_is_not_positive(variant):
    opposed = np.array([[1, 2, 1, 2], [2, 1, 2, 1.0]])  # alpha < 0
    got = trust_coefficients(opposed, level="nominal", domain=[1, 2], variant=variant)
    assert got.coefficients == (None, None) and got.outliers == () and got.reason


def test_it_returns_none_with_a_reason_when_every_alpha_is_undefined():
    apart = np.array([[1, np.nan], [np.nan, 2.0]])
    got = trust_coefficients(apart, level="nominal", domain=[1, 2], variant="paper")
    assert got.coefficients == (None, None) and got.n_undefined == 1 and got.reason


def test_it_returns_a_reason_for_a_single_annotator():
    got = trust_coefficients(np.array([[1, 2, 3.0]]), level="ordinal", domain=[1, 2, 3])
    assert got.coefficients == (None,) and got.reason == "fewer than two annotators"


# --- distributed chunks -------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["paper", "notebook"])
def test_it_merges_chunks_to_exactly_the_single_process_result(variant, monkeypatch):
    monkeypatch.setattr(_subsets, "_BLOCK_SUBSETS", 64)
    ratings = random_ratings(np.random.default_rng(3), k=11, n_items=40, n_values=8)
    kwargs = {"level": "ordinal", "domain": range(8)}
    single = trust_coefficients(ratings, variant=variant, **kwargs)
    whole = trust_chunk(ratings, start=0, stop=2**11 - 12, **kwargs).alphas
    for n_chunks in (1, 2, 3, 7, 50):
        parts = [
            trust_chunk(ratings, start=a, stop=b, **kwargs) for a, b in plan_chunks(11, n_chunks)
        ]
        assert np.array_equal(np.concatenate([p.alphas for p in parts]), whole, equal_nan=True)
        merged = trust_merge(list(reversed(parts)), variant=variant, k=11)
        assert merged == single


def test_it_plans_contiguous_chunks_covering_every_subset():
    chunks = plan_chunks(20, 7)
    assert chunks[0][0] == 0 and chunks[-1][1] == 2**20 - 21
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))


def test_it_refuses_to_merge_chunks_with_a_gap():
    ratings = random_ratings(np.random.default_rng(1), k=5, n_items=10)
    parts = [
        trust_chunk(ratings, level="ordinal", domain=range(5), start=a, stop=b)
        for a, b in [(0, 10), (11, 26)]
    ]
    with pytest.raises(ValueError, match="gap"):
        trust_merge(parts, variant="paper", k=5)


def test_it_refuses_to_merge_chunks_of_different_ratings():
    rng = np.random.default_rng(1)
    one, two = random_ratings(rng, k=5, n_items=10), random_ratings(rng, k=5, n_items=10)
    parts = [
        trust_chunk(one, level="ordinal", domain=range(5), start=0, stop=10),
        trust_chunk(two, level="ordinal", domain=range(5), start=10, stop=26),
    ]
    with pytest.raises(ValueError, match="different"):
        trust_merge(parts, variant="paper", k=5)


# --- Monte Carlo beyond max_exact ---------------------------------------------------------------


def test_it_switches_to_sampling_beyond_max_exact_and_labels_it():
    ratings = random_ratings(np.random.default_rng(2), k=7, n_items=30, n_values=8)
    got = trust_coefficients(ratings, level="ordinal", domain=range(8), max_exact=6, n_samples=500)
    assert got.method == "sampled" and got.n_subsets == 500
    assert max(got.coefficients) == 1.0
    again = trust_coefficients(
        ratings,
        level="ordinal",
        domain=range(8),
        max_exact=6,
        n_samples=500,
        rng=np.random.default_rng(0),
    )
    assert again == got  # the default generator is seeded


def test_it_samples_only_subsets_of_at_least_two_annotators_uniformly():
    from core.stats.trust import _draw_subsets

    members = _draw_subsets(np.random.default_rng(0), 3, 40_000)
    assert members.sum(axis=1).min() >= 2
    masks = (members * (1 << np.arange(3))).sum(axis=1)
    counts = np.bincount(masks, minlength=8)[[3, 5, 6, 7]]
    assert np.allclose(counts / 40_000, 0.25, atol=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["paper", "notebook"])
def test_it_ranks_annotators_like_the_exact_computation_when_sampling(variant):
    rng = np.random.default_rng(20)
    ratings = random_ratings(
        rng, k=20, n_items=127, n_values=8, missing=0.1, noise=np.linspace(0.3, 3.0, 20)
    )
    kwargs = {"level": "ordinal", "domain": range(8), "variant": variant}
    exact = trust_coefficients(ratings, **kwargs)
    assert exact.method == "exact" and exact.n_subsets == 2**20 - 21
    good = 0
    for seed in range(20):
        sampled = trust_coefficients(
            ratings, max_exact=19, rng=np.random.default_rng(seed), **kwargs
        )
        assert sampled.method == "sampled" and sampled.n_subsets == 20_000
        good += spearmanr(exact.coefficients, sampled.coefficients).statistic >= 0.99
    assert good >= 19
