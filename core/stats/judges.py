"""LLM judges beside human annotators: may a judge replace an annotator, and how does it differ.

Pure numpy/scipy, no Django. docs/statistics/judges.md writes every number out.

- `alt_test`: the alternative annotator test (Calderon, Reichart and Dror 2025). For each
  annotator j left out, on every item i that j, the judge and at least one other annotator
  answered, the alignment of the judge's answer f_i and of j's answer h_ij with the remaining
  annotators H_i[-j]: accuracy (the share of them giving the same answer) for nominal answers,
  the negative root-mean-square distance to them otherwise. The indicators W^f_ij = [S(f) >= S(h_j)]
  and W^h_ij = [S(h_j) >= S(f)] give rho^f_j and rho^h_j (their means over j's items); a one-sided
  paired t-test of H0: rho^f_j <= rho^h_j - epsilon (the differences d_i = W^h - W^f against
  epsilon), Benjamini and Yekutieli (2001) across the annotators at level q, the winning rate
  omega (the share of annotators whose H0 is rejected), the decision omega >= 0.5 and the average
  advantage probability rho (the mean of rho^f_j). The authors' public code
  (github.com/nitaytech/AltTest, `alt_test_example.ipynb`) was read to check each definition.
- `judge_annotator_alphas`, `annotator_pair_alphas`, `replaced_alphas`: Krippendorff's (2011)
  alpha of the judge with each annotator, of every two annotators, and of all annotators with
  the judge replacing each one in turn, all from coincidence matrices built at once (no loop
  over items or annotators).
- `judge_correlations`: Pearson, Spearman and Kendall's tau-b of the judge's answers with the
  human aggregate per item, with percentile bootstrap intervals (Efron and Tibshirani 1993)
  drawn as multinomial tables of the distinct (judge, human) pairs.
- `majority_match`, `first_position`: the share of human majority choices the judge matches and
  the share of first-shown choices, with Clopper and Pearson (1934) intervals.

>>> r = LongRatings(item=np.array([0, 0, 0]), annotator=np.array([0, 1, 2]),
...                 value=np.array([1.0, 1.0, 2.0]), n_items=1, n_annotators=3)
>>> a = alignment(r, np.array([1.0]), metric="accuracy")
>>> a.judge_score.tolist(), a.human_score.tolist()
([0.5, 0.5, 1.0], [0.5, 0.5, 0.0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse, stats

from core.stats._types import BoolArray, Domain, FloatArray, IntArray, LongRatings
from core.stats.alpha import alpha_from_coincidences, domain_codes

__all__ = [
    "ALT_METRICS", "DEFAULT_EPSILON", "DEFAULT_Q", "MIN_ANNOTATORS", "MIN_ITEMS", "Alignment",
    "AltAnnotator", "AltTestResult", "CorrelationCI", "Correlations", "Proportion",
    "alignment", "alt_metric", "alt_test", "annotator_pair_alphas", "first_position",
    "judge_annotator_alphas", "judge_correlations", "majority_match", "replaced_alphas",
]

ALT_METRICS = ("accuracy", "negative_distance")
# Calderon et al. 2025: epsilon = 0.2 for expert annotators (0.15 skilled, 0.1 crowd workers), the
# FDR level q = 0.05; at least 30 items per annotator for the t-test's normality (their code's
# `min_instances_per_human`) and at least three annotators (their FAQ: with two, the test only
# asks which of the two the judge is closer to).
DEFAULT_EPSILON = 0.2
DEFAULT_Q = 0.05
MIN_ITEMS = 30
MIN_ANNOTATORS = 3
# Two sums of squares closer than this (relative) are a tie: the negative distances are computed
# from per-item sums, whose rounding must not turn an exact tie into a win.
_TIE_RTOL = 1e-9
# Cells (rows x V x V, or resamples x table cells) per vectorised block, to bound memory.
_BLOCK_CELLS = 4_000_000
# Annotator pairs are built per item; above this many (item, pair) rows the pairwise alphas are
# not computed (a study where hundreds of people rate every item).
PAIR_ROWS_LIMIT = 5_000_000
# The correlations' bootstrap draws tables of the distinct (judge, human) pairs; above this many
# cells (a fine scale and many distinct human means) the intervals are Fisher-z ones instead.
TABLE_LIMIT = 20_000


def alt_metric(level: str) -> str:
    """Return the alignment metric of a level: ``accuracy`` for nominal, else the negative
    root-mean-square distance (``negative_distance``), as Calderon et al. 2025 score
    classification and rating tasks."""
    return "accuracy" if level == "nominal" else "negative_distance"


# --------------------------------------------------------------------------------------------
# The alternative annotator test


@dataclass(frozen=True)
class Alignment:
    """The alignment of the judge and of each annotator with the remaining annotators, one
    entry per eligible answer (an item the annotator, the judge and another annotator answered).

    ``rows`` index the ratings' rows; ``judge_score`` is S(f, x_i, j), ``human_score``
    S(h_j, x_i, j); ``judge_wins`` W^f (S(f) >= S(h_j)), ``human_wins`` W^h (S(h_j) >= S(f)).
    """

    rows: IntArray
    annotator: IntArray
    item: IntArray
    judge_score: FloatArray
    human_score: FloatArray
    judge_wins: BoolArray
    human_wins: BoolArray


def _check_metric(metric: str) -> None:
    if metric not in ALT_METRICS:
        raise ValueError(f"metric must be one of {', '.join(ALT_METRICS)}, not {metric!r}")


def _judge_array(judge: npt.ArrayLike, n_items: int) -> FloatArray:
    f = np.asarray(judge, dtype=np.float64)
    if f.shape != (n_items,):
        raise ValueError(f"judge must hold one value per item ({n_items}), got shape {f.shape}")
    if np.isinf(f).any():
        raise ValueError("judge values must be finite (np.nan = not answered)")
    return f


def alignment(ratings: LongRatings, judge: npt.ArrayLike, *, metric: str) -> Alignment:
    """Return the per-answer alignments of the judge and of the annotator who gave the answer.

    ``judge``: one value per item of ``ratings`` (np.nan = the judge did not answer). For an
    answer h_ij with n_i answers on item i, the remaining annotators are the other n_i − 1:
    accuracy S(x) = #{k ≠ j: h_ik = x} / (n_i − 1); negative distance S(x) = −sqrt(Σ_{k≠j}
    (x − h_ik)² / (n_i − 1)) (the authors' ``neg_rmse``; with one remaining annotator, minus the
    absolute difference). Computed from per-item counts and sums, so linear in the answers.
    Example: the module docstring (answers 1, 1, 2; judge 1).
    """
    _check_metric(metric)
    f = _judge_array(judge, ratings.n_items)
    value = ratings.value
    answered = ~np.isnan(value)
    n_i = np.bincount(ratings.item[answered], minlength=ratings.n_items)
    fi = f[ratings.item]
    ok = answered & ~np.isnan(fi) & (n_i[ratings.item] >= 2)
    rows = np.flatnonzero(ok)
    item, v, fv = ratings.item[rows], value[rows], fi[rows]
    rest = (n_i[item] - 1).astype(np.float64)
    if metric == "accuracy":
        domain, codes = np.unique(np.concatenate([value[answered], f[~np.isnan(f)]]),
                                  return_inverse=True)
        size = max(1, domain.size)
        human_codes = codes[: int(answered.sum())]
        counts = np.bincount(ratings.item[answered] * size + human_codes,
                             minlength=ratings.n_items * size).reshape(ratings.n_items, size)
        code_v = np.searchsorted(domain, v)
        code_f = np.searchsorted(domain, fv)
        agree_f = counts[item, code_f] - (code_v == code_f)  # integers: ties are exact
        agree_h = counts[item, code_v] - 1
        judge_score, human_score = agree_f / rest, agree_h / rest
        judge_wins, human_wins = agree_f >= agree_h, agree_h >= agree_f
    else:
        s1 = np.bincount(ratings.item[answered], weights=value[answered], minlength=ratings.n_items)
        s2 = np.bincount(ratings.item[answered], weights=value[answered] ** 2,
                         minlength=ratings.n_items)
        r1, r2 = s1[item] - v, s2[item] - v * v  # the remaining annotators' sums
        ss_f = np.maximum(r2 - 2.0 * fv * r1 + rest * fv * fv, 0.0)
        ss_h = np.maximum(r2 - 2.0 * v * r1 + rest * v * v, 0.0)
        tol = _TIE_RTOL * (1.0 + np.abs(r2) + rest * np.maximum(fv * fv, v * v))
        tie = np.abs(ss_f - ss_h) <= tol
        judge_score, human_score = -np.sqrt(ss_f / rest), -np.sqrt(ss_h / rest)
        judge_wins, human_wins = tie | (ss_f < ss_h), tie | (ss_h < ss_f)
        # A tie within rounding is the same score on both sides.
        human_score = np.where(tie, judge_score, human_score)
    return Alignment(rows.astype(np.int64), ratings.annotator[rows].astype(np.int64),
                     item.astype(np.int64), np.asarray(judge_score, dtype=np.float64),
                     np.asarray(human_score, dtype=np.float64), np.asarray(judge_wins, bool),
                     np.asarray(human_wins, bool))


@dataclass(frozen=True)
class AltAnnotator:
    """One left-out annotator of the test: ``items`` the items compared, ``rho_judge`` ρ^f_j,
    ``rho_human`` ρ^h_j, ``t``/``p`` the one-sided test, ``p_adjusted`` the BY-adjusted p,
    ``won`` whether H0 was rejected (``None`` with ``reason`` when not tested)."""

    annotator: int
    items: int
    rho_judge: float | None
    rho_human: float | None
    t: float | None
    p: float | None
    p_adjusted: float | None
    won: bool | None
    reason: str


@dataclass(frozen=True)
class AltTestResult:
    """The alternative annotator test of one judge: ``annotators`` (m) those tested,
    ``winning_rate`` ω, ``rho`` the average advantage probability, ``passed`` ω ≥ 0.5 (``None``
    with ``reason`` when the study does not meet the test's requirements)."""

    epsilon: float
    q: float
    metric: str
    annotators: int
    winning_rate: float | None
    rho: float | None
    passed: bool | None
    reason: str
    per_annotator: tuple[AltAnnotator, ...]


def _one_sided_p(n: IntArray, total: FloatArray, squares: FloatArray, epsilon: float
                 ) -> tuple[FloatArray, FloatArray]:
    """t and p of H0: mean(d) >= epsilon against mean(d) < epsilon per group, from the count,
    sum and sum of squares of d (scipy's ``ttest_1samp(d, epsilon, alternative="less")``,
    including its infinite t for a constant sample and nan for a constant sample at epsilon)."""
    nf = n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / nf
        var = np.maximum(squares - total * mean, 0.0) / (nf - 1.0)
        diff = mean - epsilon
        t = diff / np.sqrt(var / nf)
    # d takes the values -1, 0 and 1, so its sums are exact: a zero variance is exactly zero.
    constant = var == 0
    t = np.where(constant, np.where(diff < 0, -np.inf, np.where(diff > 0, np.inf, np.nan)), t)
    p = stats.t.cdf(t, np.maximum(nf - 1.0, 1.0))
    return np.asarray(t, dtype=np.float64), np.asarray(p, dtype=np.float64)


def alt_test(ratings: LongRatings, judge: npt.ArrayLike, *, metric: str,
             epsilon: float = DEFAULT_EPSILON, q: float = DEFAULT_Q,
             min_items: int = MIN_ITEMS, min_annotators: int = MIN_ANNOTATORS) -> AltTestResult:
    """Run the alternative annotator test (Calderon, Reichart and Dror 2025) of one judge.

    For each annotator j with at least ``min_items`` eligible answers (see `alignment`):
    d_i = W^h_ij − W^f_ij, t = (mean(d) − ε) / (sd(d) / sqrt(n_j)) with n_j − 1 degrees of
    freedom, p = P(T ≤ t) — H0: ρ^f_j ≤ ρ^h_j − ε, i.e. the judge is worse than j by at least
    ε. The m p-values are adjusted by Benjamini and Yekutieli (2001) (a p that is nan — every
    d equal to ε — counts as 1); the judge wins against j when the adjusted p ≤ q. ω = wins / m,
    ρ = mean ρ^f_j over the m annotators, and the judge passes when ω ≥ 0.5. Fewer than
    ``min_annotators`` tested annotators: ω and ρ are still given (over those tested, ``None``
    when none) but ``passed`` is ``None`` with the reason.

    Example: with 3 annotators, 40 items each, a judge that gives each item's majority answer
    wins against all three (see the tests for a worked case).
    """
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must lie in [0, 1), got {epsilon}")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie in (0, 1), got {q}")
    if min_items < 2 or min_annotators < 1:
        raise ValueError("min_items must be at least 2 and min_annotators at least 1")
    a = alignment(ratings, judge, metric=metric)
    n_ann = ratings.n_annotators
    wf = a.judge_wins.astype(np.float64)
    d = a.human_wins.astype(np.float64) - wf
    n = np.bincount(a.annotator, minlength=n_ann)
    sum_f = np.bincount(a.annotator, weights=wf, minlength=n_ann)
    sum_h = np.bincount(a.annotator, weights=a.human_wins.astype(np.float64), minlength=n_ann)
    sum_d: FloatArray = np.bincount(a.annotator, weights=d, minlength=n_ann).astype(np.float64)
    sum_d2: FloatArray = np.bincount(a.annotator, weights=d * d, minlength=n_ann
                                     ).astype(np.float64)
    t, p = _one_sided_p(n, sum_d, sum_d2, epsilon)
    present = np.flatnonzero(np.bincount(ratings.annotator[~np.isnan(ratings.value)],
                                         minlength=n_ann) > 0)
    tested = present[n[present] >= min_items]
    adjusted = np.full(n_ann, np.nan)
    if tested.size:
        p_used = np.where(np.isnan(p[tested]), 1.0, p[tested])
        adjusted[tested] = stats.false_discovery_control(p_used, method="by")
    won = np.zeros(n_ann, bool)
    won[tested] = adjusted[tested] <= q
    rows = []
    for j in present:
        rho_f = float(sum_f[j] / n[j]) if n[j] else None
        rho_h = float(sum_h[j] / n[j]) if n[j] else None
        if n[j] < min_items:
            reason = (f"{int(n[j])} items compared, fewer than {min_items}: not tested"
                      if n[j] else "no item the judge and another annotator also answered")
            rows.append(AltAnnotator(int(j), int(n[j]), rho_f, rho_h, None, None, None, None,
                                     reason))
            continue
        rows.append(AltAnnotator(int(j), int(n[j]), rho_f, rho_h,
                                 None if np.isnan(t[j]) else float(t[j]),
                                 None if np.isnan(p[j]) else float(p[j]),
                                 float(adjusted[j]), bool(won[j]), ""))
    m = int(tested.size)
    omega = float(won[tested].mean()) if m else None
    rho = float(np.mean(sum_f[tested] / n[tested])) if m else None
    if not a.rows.size:
        reason = "no item answered by the judge and by at least two annotators"
    elif m < min_annotators:
        reason = (f"the test needs at least {min_annotators} annotators with at least "
                  f"{min_items} items each that the judge and another annotator also answered "
                  f"(Calderon et al. 2025); {m} {'has' if m == 1 else 'have'} so many")
    else:
        reason = ""
    passed = None if reason or omega is None else bool(omega >= 0.5)
    return AltTestResult(float(epsilon), float(q), metric, m, omega, rho, passed, reason,
                         tuple(rows))


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha with the judge as one more annotator


def _codes(values: npt.ArrayLike, domain: Domain) -> IntArray:
    return domain_codes(values, domain)


def _two_coder_coincidences(group: IntArray, code_a: IntArray, code_b: IntArray,
                            n_groups: int, size: int) -> FloatArray:
    """Coincidence matrices (n_groups, V, V) of two coders per item: each row (an item both
    coded) adds 1 to o[a, b] and 1 to o[b, a] (m_u = 2, so 1 / (m_u − 1) = 1)."""
    cells = size * size
    flat = np.bincount(group * cells + code_a * size + code_b, minlength=n_groups * cells)
    flat = flat + np.bincount(group * cells + code_b * size + code_a, minlength=n_groups * cells)
    return flat.reshape(n_groups, size, size).astype(np.float64)


def _batched_alpha(o: FloatArray, level: str, domain: Domain) -> FloatArray:
    out = np.full(o.shape[0], np.nan)
    step = max(1, _BLOCK_CELLS // max(1, o.shape[1] * o.shape[2]))
    for lo in range(0, o.shape[0], step):
        out[lo:lo + step] = alpha_from_coincidences(o[lo:lo + step], level=level, domain=domain)
    return out


def judge_annotator_alphas(ratings: LongRatings, judge: npt.ArrayLike, *, level: str,
                           domain: Domain, codes: IntArray | None = None
                           ) -> tuple[FloatArray, IntArray]:
    """Return alpha(judge, annotator) for every annotator (nan: undefined) and the items each
    pair shares: two-coder reliability data, equal to ``krippendorff.alpha`` of the two rows.
    ``codes``: ``domain_codes(ratings.value, domain)`` when already known (several judges of
    one scale share them).

    Example: an annotator whose answers the judge copies on items with two values has alpha 1.
    """
    f = _judge_array(judge, ratings.n_items)
    size = len(domain)
    fi = f[ratings.item]
    both = ~np.isnan(ratings.value) & ~np.isnan(fi)
    group = ratings.annotator[both]
    human = _codes(ratings.value[both], domain) if codes is None else codes[both]
    o = _two_coder_coincidences(group, human, _codes(fi[both], domain), ratings.n_annotators,
                                size)
    items = np.bincount(group, minlength=ratings.n_annotators).astype(np.int64)
    return _batched_alpha(o, level, domain), items


def annotator_pair_alphas(ratings: LongRatings, *, level: str, domain: Domain
                          ) -> tuple[IntArray, FloatArray, IntArray] | None:
    """Return every two annotators who share an item: their indices (pairs × 2, a < b), alpha
    (nan: undefined) and the items they share; ``None`` when the (item, pair) rows exceed
    ``PAIR_ROWS_LIMIT``.

    The pairs are built item by item without a loop over items: the answers sorted by item, the
    answer at position r is paired with the one at r + k for every k below the largest number of
    answers an item has. Example: two annotators with the same answers on two values → alpha 1.
    """
    answered = ~np.isnan(ratings.value)
    item, ann = ratings.item[answered], ratings.annotator[answered]
    codes = _codes(ratings.value[answered], domain)
    order = np.lexsort((ann, item))
    item, ann, codes = item[order], ann[order], codes[order]
    per_item = np.bincount(item, minlength=ratings.n_items)
    if int(np.sum(per_item * (per_item - 1) // 2)) > PAIR_ROWS_LIMIT:
        return None
    widest = int(per_item.max()) if per_item.size else 0
    firsts, seconds = [], []
    for k in range(1, widest):
        same = item[k:] == item[:-k]
        firsts.append(np.flatnonzero(same))
        seconds.append(np.flatnonzero(same) + k)
    first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    second = np.concatenate(seconds) if seconds else np.zeros(0, np.int64)
    a, b = ann[first], ann[second]  # a < b: sorted by annotator within each item
    n_ann = max(1, ratings.n_annotators)
    keys, pair = np.unique(a * n_ann + b, return_inverse=True)
    pair = pair.reshape(-1)
    size = len(domain)
    o = _two_coder_coincidences(pair, codes[first], codes[second], keys.size, size)
    pairs = np.column_stack([keys // n_ann, keys % n_ann]).astype(np.int64)
    items = np.bincount(pair, minlength=keys.size).astype(np.int64)
    return pairs.reshape(-1, 2), _batched_alpha(o, level, domain), items


def _patterns(counts: FloatArray) -> tuple[FloatArray, IntArray]:
    """The distinct rows of ``counts`` (whole numbers) and each row's index among them, as
    ``np.unique(counts, axis=0, return_inverse=True)`` — by one integer per row when the
    counts fit in 62 bits (much faster than sorting rows)."""
    size = counts.shape[1]
    base = int(counts.max()) + 1 if counts.size else 1
    if size * math.log2(max(base, 2)) > 62:
        patterns, inverse = np.unique(counts, axis=0, return_inverse=True)
        return patterns, inverse.reshape(-1).astype(np.int64)
    powers = base ** np.arange(size, dtype=np.int64)
    code = counts.astype(np.int64) @ powers
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return counts[first], inverse.reshape(-1).astype(np.int64)


def replaced_alphas(ratings: LongRatings, judge: npt.ArrayLike, *, level: str,
                    domain: Domain, codes: IntArray | None = None) -> FloatArray:
    """Return, for each annotator a, alpha of all the annotators with the judge in a's place:
    a's answers replaced by the judge's on the same items (dropped where the judge gave none).

    The coincidence matrix of the replaced data is the study's plus, for each of a's answers,
    the change of its item's contribution ((c c^T − diag c) / (m − 1), Krippendorff 2011) when
    a's value is swapped for the judge's; the changes are summed per annotator by one sparse
    product. Equals ``krippendorff.alpha`` of the replaced dense data (tests). nan: undefined.
    ``codes``: as `judge_annotator_alphas` takes them.
    """
    f = _judge_array(judge, ratings.n_items)
    size = len(domain)
    answered = ~np.isnan(ratings.value)
    item, ann = ratings.item[answered], ratings.annotator[answered]
    code = _codes(ratings.value[answered], domain) if codes is None else codes[answered]
    counts = np.bincount(item * size + code, minlength=ratings.n_items * size
                         ).reshape(ratings.n_items, size).astype(np.float64)
    total = counts.sum(axis=1)
    weight = np.divide(1.0, total - 1.0, out=np.zeros_like(total), where=total >= 2)
    base = (counts * weight[:, None]).T @ counts
    base[np.diag_indices(size)] -= (counts * weight[:, None]).sum(axis=0)
    f_code = np.full(ratings.n_items, -1, dtype=np.int64)
    has = ~np.isnan(f)
    f_code[has] = _codes(f[has], domain)
    # An answer's change depends only on its item's value counts, its value and the judge's:
    # items share few count patterns, so the changes are computed once per distinct (pattern,
    # value, judge's value) and summed per annotator by one sparse product.
    patterns, pattern_of = _patterns(counts)
    key = (pattern_of.reshape(-1)[item] * size + code) * (size + 1) + f_code[item] + 1
    keys, key_of = np.unique(key, return_inverse=True)
    eye = np.eye(size)
    diagonal = np.arange(size)

    def contribution(counts_: FloatArray) -> FloatArray:
        m = counts_.sum(axis=1)
        w = np.divide(1.0, m - 1.0, out=np.zeros_like(m), where=m >= 2)
        outer = counts_[:, :, None] * counts_[:, None, :]
        outer[:, diagonal, diagonal] -= counts_
        return np.asarray(outer * w[:, None, None], dtype=np.float64)

    group = sparse.csc_matrix((np.ones(item.size), (ann, key_of.reshape(-1))),
                              shape=(ratings.n_annotators, keys.size))
    deltas = np.zeros((ratings.n_annotators, size * size))
    step = max(1, _BLOCK_CELLS // (size * size))
    for lo in range(0, keys.size, step):
        block = keys[lo:lo + step]
        c = patterns[block // ((size + 1) * size)]
        cv = (block // (size + 1)) % size
        fc = block % (size + 1) - 1
        new = c - eye[cv] + np.where(fc[:, None] >= 0, eye[np.maximum(fc, 0)], 0.0)
        change = (contribution(new) - contribution(c)).reshape(-1, size * size)
        deltas += np.asarray(group[:, lo:lo + step] @ change)
    o = base[None, :, :] + deltas.reshape(-1, size, size)
    return _batched_alpha(o, level, domain)


# --------------------------------------------------------------------------------------------
# Correlations with the human aggregate


@dataclass(frozen=True)
class CorrelationCI:
    """One correlation and its interval (``None`` when undefined)."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Correlations:
    """Pearson, Spearman and Kendall's tau-b with their intervals, over ``items`` pairs;
    ``interval`` says how the intervals were drawn (``bootstrap`` or ``fisher_z``), ``reason``
    why nothing was computed ("" when computed)."""

    pearson: CorrelationCI
    spearman: CorrelationCI
    kendall: CorrelationCI
    items: int
    interval: str
    reason: str


_NONE = CorrelationCI(None, None, None)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _table_stats(counts: FloatArray, xv: FloatArray, yv: FloatArray
                 ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Pearson, Spearman and Kendall's tau-b of each table of ``counts`` (B, K, L): row k has
    x = xv[k], column l has y = yv[l] (both ascending); nan where a side is constant."""
    n = counts.sum(axis=(1, 2))
    rows, cols = counts.sum(axis=2), counts.sum(axis=1)

    def pearson(x: FloatArray, y: FloatArray) -> FloatArray:
        # x: (B, K) or (K,), y: (B, L) or (L,) — weighted by the table.
        xb = np.broadcast_to(x, rows.shape)
        yb = np.broadcast_to(y, cols.shape)
        mx = (rows * xb).sum(axis=1) / n
        my = (cols * yb).sum(axis=1) / n
        dx, dy = xb - mx[:, None], yb - my[:, None]
        sxy = np.einsum("bk,bkl,bl->b", dx, counts, dy)
        sxx, syy = (rows * dx * dx).sum(axis=1), (cols * dy * dy).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = sxy / np.sqrt(sxx * syy)
        return np.where((sxx > 1e-12 * n) & (syy > 1e-12 * n), np.clip(r, -1.0, 1.0), np.nan)

    def ranks(m: FloatArray) -> FloatArray:
        before = np.cumsum(m, axis=1) - m
        return before + (m + 1.0) / 2.0

    r_p = pearson(xv, yv)
    r_s = pearson(ranks(rows), ranks(cols))
    # Kendall's tau-b: concordant minus discordant pairs from suffix sums of the table.
    below_right = np.cumsum(np.cumsum(counts[:, ::-1, ::-1], axis=1), axis=2)[:, ::-1, ::-1]
    concordant_after = np.zeros_like(counts)
    concordant_after[:, :-1, :-1] = below_right[:, 1:, 1:]
    below_left = np.cumsum(np.cumsum(counts[:, ::-1, :], axis=1), axis=2)[:, ::-1, :]
    discordant_after = np.zeros_like(counts)
    discordant_after[:, :-1, 1:] = below_left[:, 1:, :-1]
    s = (counts * (concordant_after - discordant_after)).sum(axis=(1, 2))
    n0 = n * (n - 1.0) / 2.0
    t_x = (rows * (rows - 1.0) / 2.0).sum(axis=1)
    t_y = (cols * (cols - 1.0) / 2.0).sum(axis=1)
    den = np.sqrt((n0 - t_x) * (n0 - t_y))
    with np.errstate(invalid="ignore", divide="ignore"):
        r_k = np.where(den > 0, s / np.where(den > 0, den, 1.0), np.nan)
    return r_p, r_s, np.clip(r_k, -1.0, 1.0)


def _fisher(value: float, n: int, variance: float, confidence: float) -> CorrelationCI:
    """A Fisher z interval: tanh(atanh(r) ± z sqrt(variance))."""
    if not math.isfinite(value):
        return _NONE
    if abs(value) >= 1.0:
        return CorrelationCI(value, value, value)
    z = float(stats.norm.ppf((1.0 + confidence) / 2.0))
    centre, half = math.atanh(value), z * math.sqrt(variance)
    return CorrelationCI(value, math.tanh(centre - half), math.tanh(centre + half))


def judge_correlations(judge: npt.ArrayLike, human: npt.ArrayLike, *, rng: np.random.Generator,
                       n_boot: int = 1000, confidence: float = 0.95) -> Correlations:
    """Return Pearson, Spearman and Kendall's tau-b (scipy's) of the judge's answers with the
    human aggregate over the items both have, with percentile bootstrap intervals.

    Resampling n items with replacement gives each distinct (judge, human) pair a count drawn
    from Multinomial(n, its share): the bootstrap draws those tables (``rng.multinomial``) and
    computes each correlation on the table (Spearman on the resample's own average ranks, as
    `core.stats.correlation_uncertainty.bootstrap_correlation`), so its cost does not grow with
    the items. Above ``TABLE_LIMIT`` cells the intervals are Fisher z intervals instead: Pearson
    variance 1/(n − 3), Spearman (1 + r²/2)/(n − 3) (Bonett and Wright 2000), Kendall
    0.437/(n − 4) (Fieller, Hartley and Pearson 1957). Undefined (fewer than 3 pairs, a constant
    side): every value ``None`` with the reason. Example: see the tests (scipy equality).
    """
    if n_boot < 1 or not 0.0 < confidence < 1.0:
        raise ValueError("n_boot must be at least 1 and confidence in (0, 1)")
    x, y = np.asarray(judge, dtype=np.float64), np.asarray(human, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("judge and human must be 1-D arrays of the same length")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n < 3:
        return Correlations(_NONE, _NONE, _NONE, n, "", f"fewer than 3 items ({n})")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        side = "judge" if np.ptp(x) == 0 else "humans"
        return Correlations(_NONE, _NONE, _NONE, n, "",
                            f"the {side} give every item the same answer")
    point = (float(stats.pearsonr(x, y).statistic), float(stats.spearmanr(x, y).statistic),
             float(stats.kendalltau(x, y).statistic))
    xv, xi = np.unique(x, return_inverse=True)
    yv, yi = np.unique(y, return_inverse=True)
    k, l_ = xv.size, yv.size
    if k * l_ > TABLE_LIMIT:
        return Correlations(_fisher(point[0], n, 1.0 / (n - 3), confidence),
                            _fisher(point[1], n, (1.0 + point[1] ** 2 / 2.0) / (n - 3),
                                    confidence),
                            _fisher(point[2], n, 0.437 / (n - 4) if n > 4 else math.inf,
                                    confidence), n, "fisher_z", "")
    table = np.bincount(xi.reshape(-1) * l_ + yi.reshape(-1), minlength=k * l_
                        ).astype(np.float64)
    step = max(1, _BLOCK_CELLS // (k * l_))
    draws: list[list[FloatArray]] = [[], [], []]
    for lo in range(0, n_boot, step):
        rows = min(step, n_boot - lo)
        counts = rng.multinomial(n, table / n, size=rows).astype(np.float64)
        for out, r in zip(draws, _table_stats(counts.reshape(rows, k, l_), xv, yv),
                          strict=True):
            out.append(r)
    tail = (1.0 - confidence) / 2.0
    found = []
    for value, parts in zip(point, draws, strict=True):
        r = np.concatenate(parts)
        r = r[~np.isnan(r)]
        if r.size * 2 < n_boot:
            found.append(CorrelationCI(_finite(value), None, None))
            continue
        low, high = np.quantile(r, [tail, 1.0 - tail])
        found.append(CorrelationCI(_finite(value), float(low), float(high)))
    return Correlations(found[0], found[1], found[2], n, "bootstrap", "")


# --------------------------------------------------------------------------------------------
# Shares with binomial intervals


@dataclass(frozen=True)
class Proportion:
    """k of n with its Clopper–Pearson interval and the two-sided binomial p against
    ``chance`` (``None`` when not tested)."""

    value: float | None
    low: float | None
    high: float | None
    k: int
    n: int
    p: float | None


def _proportion(k: int, n: int, chance: float | None, confidence: float) -> Proportion:
    if n == 0:
        return Proportion(None, None, None, 0, 0, None)
    test = stats.binomtest(k, n, 0.5 if chance is None else chance)
    ci = test.proportion_ci(confidence_level=confidence, method="exact")
    return Proportion(k / n, float(ci.low), float(ci.high), k, n,
                      None if chance is None else float(test.pvalue))


def majority_match(ratings: LongRatings, judge: npt.ArrayLike, *, confidence: float = 0.95
                   ) -> Proportion:
    """Return the share of items with a human majority (at least two answers, one value more
    frequent than every other) on which the judge gives that value, with its interval.

    Example: answers (1, 1, 2) and (3, 4) with judge 1 and 3: one item has a majority, matched:
    1 of 1.
    """
    f = _judge_array(judge, ratings.n_items)
    answered = ~np.isnan(ratings.value)
    domain, codes = np.unique(ratings.value[answered], return_inverse=True)
    size = max(1, domain.size)
    counts = np.bincount(ratings.item[answered] * size + codes.reshape(-1),
                         minlength=ratings.n_items * size).reshape(ratings.n_items, size)
    top = counts.max(axis=1) if size else np.zeros(ratings.n_items, np.int64)
    unique_top = (counts == top[:, None]).sum(axis=1) == 1
    majority = unique_top & (counts.sum(axis=1) >= 2) & ~np.isnan(f)
    best = domain[np.argmax(counts, axis=1)] if domain.size else np.zeros(ratings.n_items)
    n = int(majority.sum())
    k = int(np.count_nonzero(best[majority] == f[majority]))
    return _proportion(k, n, None, confidence)


def first_position(chose_first: npt.ArrayLike, decided: npt.ArrayLike, chance: npt.ArrayLike,
                   *, confidence: float = 0.95) -> Proportion:
    """Return the share of decided judgments that chose the first-shown output, its interval,
    and the two-sided binomial p against the mean chance (1 / outputs shown).

    A pairwise tie, or a ranking whose first place is shared, decides nothing about the first
    position. Example: 8 of 10 decided pairwise judgments chose the first: share 0.8, p ≈ 0.11.
    """
    first = np.asarray(chose_first, dtype=bool)
    dec = np.asarray(decided, dtype=bool)
    ch = np.asarray(chance, dtype=np.float64)
    n = int(dec.sum())
    k = int((first & dec).sum())
    return _proportion(k, n, float(ch[dec].mean()) if n else None, confidence)
