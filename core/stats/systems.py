"""Which system is better: system scores with bootstrap intervals and rank intervals, paired
tests of every two systems, and WMT-style significance clusters (no Django).

The input is one aggregate per item (the mean of its answers on one scale, `item_means`), the
item's system and its source (the input it answers), as index arrays (``-1`` = none).  Items of
one source across systems form a block; a system's score is the mean of its items' aggregates.

- `system_scores`: each system's mean and median, a percentile bootstrap interval of the mean
  (Efron and Tibshirani 1993) that resamples *sources* (the blocks, so that a source drawn
  twice brings every system's output of it twice; optionally sources and annotators, a two-way
  bootstrap), and each system's rank with the interval of its rank over the same resamples.
- `paired_tests`: a paired test of every two systems on the sources both answered: the
  sign-flip permutation test of the mean difference (exact up to ``permutations`` sign vectors,
  else Monte-Carlo) or Wilcoxon's signed-rank test, corrected for multiple comparisons (Holm
  1979, Bonferroni, or none), with the effect size (mean difference and Cohen's d_z).
- `significance_clusters`: systems ordered by mean; a new cluster begins where a system is
  significantly worse than every system above it.

docs/statistics/systems.md gives every formula, default and choice.

>>> agg = np.array([4.0, 3.0, 5.0, 3.5, 4.5, 2.0])
>>> system = np.array([0, 1, 0, 1, 0, 1]); source = np.array([0, 0, 1, 1, 2, 2])
>>> s = system_scores(system, source, agg, n_systems=2, n_boot=200, rng=np.random.default_rng(0))
>>> [round(float(m), 3) for m in s.mean], [int(r) for r in s.rank]
([4.5, 2.833], [1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt
from scipy import sparse, stats

from core.stats._types import BoolArray, FloatArray, IntArray
from core.stats.systems_choices import (  # noqa: F401  (re-exported: the settings' choices)
    CORRECTIONS,
    RESAMPLINGS,
    TESTS,
    Correction,
    Resampling,
    TestName,
)

# Resamples × answers per block of the two-way bootstrap: bounds its memory.
_BLOCK_CELLS = 4_000_000
# The relative tolerance of "at least as extreme" in the permutation test (scipy's, so that
# sums computed in another order still count as ties).
_RTOL = 1e-14


# --------------------------------------------------------------------------- inputs


def item_means(item: npt.ArrayLike, value: npt.ArrayLike, n_items: int) -> FloatArray:
    """Return each item's mean answer (nan: no answer); blanks (nan values) are left out.

    Example: ``item_means([0, 0, 1], [2, 4, nan], 3)`` → ``[3, nan, nan]``.
    """
    item = np.asarray(item, dtype=np.int64)
    value = np.asarray(value, dtype=float)
    ok = ~np.isnan(value)
    total = np.bincount(item[ok], weights=value[ok], minlength=n_items)
    count = np.bincount(item[ok], minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def blocks(source: npt.ArrayLike) -> tuple[IntArray, int]:
    """Return each item's resampling block and the number of blocks: its source, or a block
    of its own for an item without one (``-1``), numbered after the sources.

    Example: ``blocks([1, -1, 0, -1])`` → ``([1, 2, 0, 3], 4)``.
    """
    src = np.asarray(source, dtype=np.int64)
    n_sources = int(src.max()) + 1 if src.size and src.max() >= 0 else 0
    out = src.copy()
    lone = src < 0
    out[lone] = n_sources + np.arange(int(lone.sum()))
    return out, n_sources + int(lone.sum())


def cell_means(system: IntArray, block: IntArray, agg: FloatArray, n_systems: int,
               n_blocks: int) -> tuple[FloatArray, FloatArray]:
    """Return the sums and counts of defined item aggregates per (block, system)."""
    ok = (system >= 0) & ~np.isnan(agg)
    cell = block[ok] * n_systems + system[ok]
    size = n_blocks * n_systems
    sums = np.bincount(cell, weights=agg[ok], minlength=size).astype(float)
    counts = np.bincount(cell, minlength=size).astype(float)
    return sums.reshape(n_blocks, n_systems), counts.reshape(n_blocks, n_systems)


# --------------------------------------------------------------------------- scores


@dataclass(frozen=True)
class SystemScores:
    """Hold each system's score, interval, rank and rank interval (index = system).

    ``boot`` is the (resamples × systems) matrix of resampled means (nan: the system drew no
    rated item), ``counts`` the (resamples × blocks) times each block was drawn, which the
    meta-evaluation reuses so that metric and humans see the same resamples.  ``reason[k]``
    says why system k's numbers are missing (``None``: all there).
    """

    sources: IntArray
    items: IntArray
    mean: FloatArray
    mean_low: FloatArray
    mean_high: FloatArray
    median: FloatArray
    rank: FloatArray
    rank_low: FloatArray
    rank_high: FloatArray
    boot: FloatArray
    counts: FloatArray
    resampling: str
    reason: list[str | None]


def _ranks(means: FloatArray) -> FloatArray:
    """Return 1 + the number of systems with a strictly higher mean, per row (nan stays nan)."""
    m = np.atleast_2d(means)
    higher = (m[:, None, :] > m[:, :, None]).sum(axis=2) + 1.0
    out = np.where(np.isnan(m), np.nan, higher)
    return out if means.ndim == 2 else out[0]


def system_scores(
    system: npt.ArrayLike,
    source: npt.ArrayLike,
    agg: npt.ArrayLike,
    *,
    n_systems: int,
    n_boot: int = 1000,
    confidence: float = 0.95,
    rng: np.random.Generator,
    resampling: Resampling = "sources",
    answers: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike] | None = None,
) -> SystemScores:
    """Return each system's mean and median of its item aggregates, a percentile bootstrap
    interval of the mean, its rank and the interval of its rank.

    ``system``, ``source``: per item, indices (``-1`` = none; items without a system are left
    out, an item without a source is a block of its own); ``agg``: per item, its aggregate (nan =
    not rated).  Each resample draws the blocks (sources) with replacement, ``n_boot`` times from
    ``rng``; a system's resampled mean is the mean of its items' aggregates, each item counted as
    many times as its source was drawn: ``mean*_k = Σ_s c_s S_sk / Σ_s c_s N_sk`` with ``S``, ``N``
    the sums and counts of aggregates per source and system.  With ``resampling =
    "sources_and_annotators"`` each resample also draws the annotators with replacement, and the
    item aggregates are recomputed with each answer weighted by its annotator's draws
    (``answers`` = (item, annotator, value) long arrays, required then).  The interval holds the
    ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles of the resampled means (linear);
    a rank is 1 + the number of systems with a strictly higher mean (higher = better; ties share
    the better rank), and its interval is the lower ``(1 − confidence)/2`` and higher
    ``(1 + confidence)/2`` quantile of the resampled ranks (whole ranks).

    Example: in the module docstring, system 0's items (4, 5, 4.5) and system 1's (3, 3.5, 2).
    """
    system = np.asarray(system, dtype=np.int64)
    agg = np.asarray(agg, dtype=float)
    if system.shape != agg.shape or np.asarray(source).shape != agg.shape:
        raise ValueError("system, source and agg must have one value per item")
    if resampling not in RESAMPLINGS:
        raise ValueError(f"resampling must be one of {', '.join(RESAMPLINGS)}, not {resampling!r}")
    if resampling == "sources_and_annotators" and answers is None:
        raise ValueError("two-way resampling needs the answers (item, annotator, value)")
    if n_boot < 1 or not 0.0 < confidence < 1.0:
        raise ValueError("n_boot must be ≥ 1 and confidence in (0, 1)")
    block, n_blocks = blocks(source)
    sums, counts = cell_means(system, block, agg, n_systems, n_blocks)
    has = counts > 0
    n_sources = has.sum(axis=0).astype(np.int64)
    n_items = counts.sum(axis=0).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums.sum(axis=0) / counts.sum(axis=0)
    median = np.full(n_systems, np.nan)
    rated = (system >= 0) & ~np.isnan(agg)
    order = np.argsort(system[rated], kind="stable")
    values, groups = agg[rated][order], system[rated][order]
    bounds = np.searchsorted(groups, np.arange(n_systems + 1))
    for k in range(n_systems):
        if bounds[k + 1] > bounds[k]:
            median[k] = float(np.median(values[bounds[k]:bounds[k + 1]]))
    c = _resample_counts(rng, n_boot, n_blocks)
    if resampling == "sources":
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (c @ sums) / (c @ counts)
    else:
        assert answers is not None
        boot = _two_way(system, block, c, answers, n_systems, rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.full(n_systems, np.nan), np.full(n_systems, np.nan)
    rank_low, rank_high = np.full(n_systems, np.nan), np.full(n_systems, np.nan)
    ranks = _ranks(boot)
    reason: list[str | None] = [None] * n_systems
    for k in range(n_systems):
        if n_items[k] == 0:
            reason[k] = "no rated item"
            continue
        if n_sources[k] < 2:
            reason[k] = "one source only: no interval"
            continue
        b = boot[:, k][~np.isnan(boot[:, k])]
        r = ranks[:, k][~np.isnan(ranks[:, k])]
        low[k], high[k] = np.quantile(b, [tail, 1.0 - tail])
        rank_low[k] = np.quantile(r, tail, method="lower")
        rank_high[k] = np.quantile(r, 1.0 - tail, method="higher")
    return SystemScores(n_sources, n_items, mean, low, high, median, _ranks(mean), rank_low,
                        rank_high, boot, c, resampling, reason)


def _resample_counts(rng: np.random.Generator, n_boot: int, n: int) -> FloatArray:
    """Return how many times each of ``n`` units is drawn in each of ``n_boot`` resamples of
    ``n`` draws with replacement (resamples × units), a block of resamples at a time."""
    out = np.zeros((n_boot, n))
    if n == 0:
        return out
    step = max(1, _BLOCK_CELLS // n)
    for lo in range(0, n_boot, step):
        hi = min(n_boot, lo + step)
        draws = rng.integers(0, n, size=(hi - lo, n))
        flat = (np.arange(hi - lo)[:, None] * n + draws).ravel()
        out[lo:hi] = np.bincount(flat, minlength=(hi - lo) * n).reshape(hi - lo, n)
    return out


def _two_way(system: IntArray, block: IntArray, c: FloatArray,
             answers: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike], n_systems: int,
             rng: np.random.Generator) -> FloatArray:
    """Resampled system means when the annotators are drawn too (weights of their answers)."""
    item = np.asarray(answers[0], dtype=np.int64)
    annotator = np.asarray(answers[1], dtype=np.int64)
    value = np.asarray(answers[2], dtype=float)
    keep = ~np.isnan(value) & (system[item] >= 0)
    item, annotator, value = item[keep], annotator[keep], value[keep]
    n_items, n_boot = system.size, c.shape[0]
    names, annotator = np.unique(annotator, return_inverse=True)
    n_ann = names.size
    w = _resample_counts(rng, n_boot, n_ann)
    # answer → item (sum over answers) and item → system (sum over items) as sparse matrices.
    to_item = sparse.csr_matrix((np.ones(item.size), (item, np.arange(item.size))),
                                shape=(n_items, item.size))
    in_system = system >= 0
    to_system = sparse.csr_matrix(
        (np.ones(int(in_system.sum())), (np.flatnonzero(in_system), system[in_system])),
        shape=(n_items, n_systems))
    out = np.empty((n_boot, n_systems))
    step = max(1, _BLOCK_CELLS // max(item.size, 1))
    for lo in range(0, n_boot, step):
        hi = min(n_boot, lo + step)
        weights = w[lo:hi][:, annotator]  # resamples × answers
        num = (to_item @ (weights * value).T).T
        den = (to_item @ weights.T).T
        with np.errstate(invalid="ignore", divide="ignore"):
            agg_b = num / den
        defined = den > 0
        source_w = c[lo:hi][:, block]  # resamples × items: draws of the item's source
        top = (to_system.T @ np.where(defined, agg_b * source_w, 0.0).T).T
        bottom = (to_system.T @ np.where(defined, source_w, 0.0).T).T
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:hi] = top / bottom
    return out


# --------------------------------------------------------------------------- paired tests


@dataclass(frozen=True)
class SignFlip:
    """Hold the sign-flip permutation test of the mean of each column's differences.

    ``p_greater``: H1 mean > 0; ``p_less``: H1 mean < 0; ``p_two_sided`` = min(1, 2 min of
    the two), as `scipy.stats.permutation_test` defines it; ``exact`` whether every sign vector
    was enumerated.
    """

    n: IntArray
    statistic: FloatArray
    p_greater: FloatArray
    p_less: FloatArray
    p_two_sided: FloatArray
    exact: BoolArray


def sign_flip_test(differences: npt.ArrayLike, *, permutations: int = 10_000,
                   rng: np.random.Generator, cells: FloatArray | None = None,
                   pairs: Sequence[tuple[int, int]] | None = None) -> SignFlip:
    """Return the paired permutation (sign-flip) test of the mean difference, per column.

    ``differences`` is (n_blocks × columns), nan where a column has no difference for a block;
    the statistic is the mean of a column's defined differences.  Under H0 each difference is as
    likely to have either sign; a column with n differences and 2ⁿ ≤ ``permutations`` is tested
    exactly (all 2ⁿ sign vectors, the identity among them: p = #{T* ≥ t}/2ⁿ), the others
    Monte-Carlo on ``permutations`` random sign vectors shared by every column (p = (1 + #{T* ≥
    t})/(1 + permutations), never 0).  A column with no difference has nan p-values.

    When the columns are the differences a − b of ``pairs`` of the systems of ``cells`` (blocks ×
    systems, `pair_differences`), a pair whose two systems have values on the same blocks gets
    its Monte-Carlo null as (ε·m_a − ε·m_b)/n: one product per system rather than per pair, 7
    times fewer for 15 systems (the same numbers up to rounding).

    Example: differences (1, 2, 3): 8 sign vectors, one mean ≥ 2 → p_greater = 1/8.
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    if permutations < 1:
        raise ValueError("permutations must be ≥ 1")
    defined = ~np.isnan(d)
    n = defined.sum(axis=0).astype(np.int64)
    filled = np.where(defined, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = filled.sum(axis=0) / n
    cols = d.shape[1]
    ge, le = np.zeros(cols), np.zeros(cols)
    exact = (n > 0) & (n <= 62) & (2.0 ** np.minimum(n, 62) <= permutations)
    for j in np.flatnonzero(exact):
        x = d[defined[:, j], j]
        m = int(n[j])
        bits = (np.arange(2 ** m)[:, None] >> np.arange(m)) & 1
        null = ((1 - 2 * bits) @ x) / m
        tol = abs(t[j]) * _RTOL
        ge[j] = np.count_nonzero(null >= t[j] - tol) / 2 ** m
        le[j] = np.count_nonzero(null <= t[j] + tol) / 2 ** m
    mc = np.flatnonzero(~exact & (n > 0))
    if mc.size:
        count_ge, count_le = _monte_carlo(filled, t, n, mc, permutations, rng, cells, pairs)
        ge[mc] = (count_ge + 1.0) / (permutations + 1.0)
        le[mc] = (count_le + 1.0) / (permutations + 1.0)
    none = n == 0
    ge[none] = le[none] = np.nan
    two = np.minimum(1.0, 2.0 * np.minimum(ge, le))
    return SignFlip(n, t, ge, le, two, exact)


def _signs(rng: np.random.Generator, rows: int, n: int) -> FloatArray:
    """Return (rows × n) random signs ±1, eight from each random byte."""
    raw = rng.integers(0, 256, size=(rows, -(-n // 8)), dtype=np.uint8)
    signs = np.unpackbits(raw, axis=1, count=n).astype(float)
    signs *= 2.0
    signs -= 1.0
    return signs


def _monte_carlo(filled: FloatArray, t: FloatArray, n: IntArray, mc: IntArray,
                 permutations: int, rng: np.random.Generator, cells: FloatArray | None,
                 pairs: Sequence[tuple[int, int]] | None) -> tuple[FloatArray, FloatArray]:
    """Count, per column of ``mc``, the random sign vectors whose mean is ≥ and ≤ the observed."""
    fast = np.zeros(mc.size, bool)
    if cells is not None and pairs is not None:
        defined = ~np.isnan(cells)
        fast = np.array([np.array_equal(defined[:, pairs[j][0]], defined[:, pairs[j][1]])
                         for j in mc], dtype=bool)
    systems = sorted({k for j in mc[fast] for k in pairs[j]}) if fast.any() and pairs else []
    column = {k: c for c, k in enumerate(systems)}
    a = np.array([column[pairs[j][0]] for j in mc[fast]], dtype=np.int64) if systems and pairs \
        else np.zeros(0, np.int64)
    b = np.array([column[pairs[j][1]] for j in mc[fast]], dtype=np.int64) if systems and pairs \
        else np.zeros(0, np.int64)
    per_system = np.nan_to_num(cells[:, systems]) if systems and cells is not None \
        else np.zeros((filled.shape[0], 0))
    slow = filled[:, mc[~fast]]
    nm = n[mc].astype(float)
    tol = np.abs(t[mc]) * _RTOL
    count_ge, count_le = np.zeros(mc.size), np.zeros(mc.size)
    null = np.empty((0, mc.size))
    step = max(1, _BLOCK_CELLS // max(filled.shape[0], 1))
    for lo in range(0, permutations, step):
        hi = min(permutations, lo + step)
        signs = _signs(rng, hi - lo, filled.shape[0])
        if null.shape[0] != hi - lo:
            null = np.empty((hi - lo, mc.size))
        if systems:
            sums = signs @ per_system
            null[:, fast] = sums[:, a] - sums[:, b]
        if slow.shape[1]:
            null[:, ~fast] = signs @ slow
        null /= nm
        count_ge += (null >= t[mc] - tol).sum(axis=0)
        count_le += (null <= t[mc] + tol).sum(axis=0)
    return count_ge, count_le


def adjust(p: npt.ArrayLike, correction: Correction) -> FloatArray:
    """Return p-values adjusted for multiple comparisons over the defined ones (nan stays nan).

    Holm (1979): with the m defined p-values sorted, p_(i) becomes max_{j ≤ i} min(1, (m − j + 1)
    p_(j)); Bonferroni: min(1, m p); none: unchanged.
    Example: ``adjust([0.01, 0.04, 0.03], "holm")`` → ``[0.03, 0.06, 0.06]``.
    """
    p = np.asarray(p, dtype=float)
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    out = p.copy()
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if correction == "none" or m == 0:
        return out
    if correction == "bonferroni":
        out[ok] = np.minimum(1.0, m * p[ok])
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


@dataclass(frozen=True)
class PairTest:
    """Hold the paired test of systems a and b (a < b) on their shared sources.

    ``mean_difference`` = mean over shared sources of (a's − b's mean aggregate on the source);
    ``effect_size`` = Cohen's d_z (mean difference / sample sd of the differences);
    ``statistic``: the mean difference (permutation) or Wilcoxon's W; ``p_greater`` the
    one-sided p of "a better than b" and ``p_less`` of "b better than a" (the permutation test's,
    whatever ``test``: soft pairwise accuracy compares them).
    """

    a: int
    b: int
    sources: int
    mean_difference: float | None
    effect_size: float | None
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    significant: bool
    p_greater: float | None
    p_less: float | None
    reason: str | None


def source_cells(system: npt.ArrayLike, source: npt.ArrayLike, agg: npt.ArrayLike,
                 n_systems: int, n_sources: int) -> FloatArray:
    """Return the (sources × systems) matrix of each system's mean aggregate on each source
    (nan: the system has no rated item of that source); items without a source are left out."""
    system = np.asarray(system, dtype=np.int64)
    source = np.asarray(source, dtype=np.int64)
    agg = np.asarray(agg, dtype=float)
    keep = source >= 0
    sums, counts = cell_means(system[keep], source[keep], agg[keep], n_systems, n_sources)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def pair_differences(cells: FloatArray) -> tuple[list[tuple[int, int]], FloatArray]:
    """Return every pair (a, b), a < b, and the (sources × pairs) differences a − b (nan: not
    shared)."""
    k = cells.shape[1]
    pairs = list(combinations(range(k), 2))
    if not pairs:
        return pairs, np.zeros((cells.shape[0], 0))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return pairs, cells[:, a] - cells[:, b]


def paired_tests(cells: FloatArray, *, test: TestName = "permutation",
                 correction: Correction = "holm", alpha: float = 0.05,
                 permutations: int = 10_000, rng: np.random.Generator) -> list[PairTest]:
    """Test every two systems on their shared sources; adjust the p-values over all pairs.

    ``cells``: `source_cells`.  For a pair (a, b) the differences d_s = cell_sa − cell_sb over the
    n sources where both are defined enter the test: `sign_flip_test` (two-sided) by default,
    or ``scipy.stats.wilcoxon`` (two-sided, zero differences dropped, its default exact/normal
    choice).  Fewer than 2 shared sources leave the pair untested (reason).  The defined
    p-values are adjusted together (`adjust`); a pair is significant when its adjusted p is
    below ``alpha``.
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, not {test!r}")
    pairs, d = pair_differences(cells)
    n = (~np.isnan(d)).sum(axis=0)
    testable = n >= 2
    flip = sign_flip_test(np.where(testable, d, np.nan), permutations=permutations, rng=rng,
                          cells=cells, pairs=pairs)
    p = np.full(len(pairs), np.nan)
    statistic = np.full(len(pairs), np.nan)
    reasons: list[str | None] = [None] * len(pairs)
    for j in range(len(pairs)):
        if not testable[j]:
            reasons[j] = f"fewer than 2 shared sources ({int(n[j])})"
            continue
        x = d[~np.isnan(d[:, j]), j]
        if test == "permutation":
            p[j], statistic[j] = flip.p_two_sided[j], flip.statistic[j]
        elif not np.any(x != 0):
            reasons[j] = "every difference is zero: Wilcoxon's test is undefined"
        else:
            w = stats.wilcoxon(x)
            p[j], statistic[j] = float(w.pvalue), float(w.statistic)
    adjusted = adjust(p, correction)
    out = []
    for j, (a, b) in enumerate(pairs):
        x = d[~np.isnan(d[:, j]), j]
        mean_diff = float(x.mean()) if x.size else None
        effect: float | None = None
        reason = reasons[j]
        if x.size >= 2:
            sd = float(x.std(ddof=1))
            if sd > 0:
                effect = float(x.mean()) / sd
            elif reason is None:
                reason = "the differences do not vary: no effect size"
        ok = not np.isnan(adjusted[j])
        out.append(PairTest(
            a, b, int(n[j]), mean_diff, effect,
            float(statistic[j]) if not np.isnan(statistic[j]) else None,
            float(p[j]) if not np.isnan(p[j]) else None,
            float(adjusted[j]) if ok else None,
            bool(ok and adjusted[j] < alpha),
            float(flip.p_greater[j]) if testable[j] else None,
            float(flip.p_less[j]) if testable[j] else None,
            reason))
    return out


# --------------------------------------------------------------------------- clusters


def significance_clusters(means: npt.ArrayLike, better: npt.ArrayLike) -> list[int]:
    """Return each system's cluster (1 = top), systems ordered by mean (highest first).

    ``better[i, j]`` is true when system i is significantly better than system j.  Walking down
    the systems ordered by mean (ties: by index), a new cluster begins at a system that every
    system above it is significantly better than (the rule WMT's findings state).  Systems
    without a mean get cluster 0 (none).

    Example: means (4, 3, 2, 1), A and B significantly better than C and D, nothing else → C
    starts cluster 2 and D (not worse than C) stays in it: [1, 1, 2, 2].
    """
    m = np.asarray(means, dtype=float)
    sig = np.asarray(better, dtype=bool)
    defined = np.flatnonzero(~np.isnan(m))
    order = defined[np.lexsort((defined, -m[defined]))]
    out = [0] * m.size
    cluster = 0
    for pos, k in enumerate(order):
        above = order[:pos]
        if pos == 0 or bool(np.all(sig[above, k])):
            cluster += 1
        out[int(k)] = cluster
    return out
