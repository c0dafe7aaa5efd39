"""Annotation noise model: how many agreed items may be coin-flip agreements on hard items.

Source: Beigman Klebanov and Beigman 2009, *From Annotator Agreement to Noise Models*,
Computational Linguistics 35(4), with Concord's per-item generalisations (docs/statistics/noise.md).

The model (§2): each item is easy (every annotator gives the same label) or hard (each
annotator independently draws a label from their own distribution q_j). Observed
disagreements are hard; some hard items surface as agreements. With n items, d observed
disagreements and p = P(all raters agree | hard), the posterior of the number h of hard items
under a uniform prior on h ∈ {0..n} (footnote 5) is P(h | d) ∝ C(h, d) p^(h−d), h = d..n.
X is that number of hard items (the number of "coin-flips"); equation (1) gives
P(X > t | d); t0 is the smallest integer t with P(X > t | d) < 1 − confidence, and the noise
level of the agreed subset is at most γ = (t0 − d) / (n − d) with that confidence.

Generalisations (docs/statistics/noise.md): items need at least 2 answers and may have different
raters; q_jc = share of annotator j's disagreed items that j put in category c (§3.1 footnote 3);
p_i = Σ_c Π_{j ∈ raters(i)} q_jc and p = mean p_i (the paper's p when all items share raters); the
kappa is Siegel & Castellan's (equation 2) with a per-item rater count k_i.

All posterior sums are in log space (``gammaln``, ``logaddexp``): exact for n = 100 000 in
a few milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from scipy.special import gammaln

from core.stats.heuristics import Ratings, as_long_ratings, rated_rows


@dataclass(frozen=True)
class NoiseLevel:
    """Hold t0 and γ for n items with d disagreements (§2, equation 1)."""

    n: int
    d: int
    p: float
    confidence: float
    t0: int  # always computed (t = n always qualifies), even when gamma is None
    gamma: float | None
    reason: str | None = None


@dataclass(frozen=True)
class ChanceDifference:
    """Hold the difference in correct answers two systems may show by chance (§4.1)."""

    hard_agreed: int
    sigma: float
    chebyshev: float
    normal: float
    chebyshev_k: float
    normal_k: float


@dataclass(frozen=True)
class NoiseResult:
    """Hold the noise model of one scale and its parameters (``noise`` in docs/results.md)."""

    scale: str
    n_items: int
    agreed: int
    disagreed: int
    p: float | None
    kappa: float | None
    confidence: float
    t0: int | None
    gamma: float | None
    max_gamma: float
    max_disagreements: int | None
    chance_difference: ChanceDifference | None
    min_raters: int
    pooled_annotators: tuple[int, ...]
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {scale, n_items, agreed, disagreed, p, kappa, confidence, t0, gamma,
        max_disagreements, chance_difference {chebyshev, normal}[, reason]}."""
        cd = self.chance_difference
        rec: dict[str, object] = {
            "scale": self.scale,
            "n_items": self.n_items,
            "agreed": self.agreed,
            "disagreed": self.disagreed,
            "p": self.p,
            "kappa": self.kappa,
            "confidence": self.confidence,
            "t0": self.t0,
            "gamma": self.gamma,
            "max_disagreements": self.max_disagreements,
            "chance_difference": {
                "chebyshev": cd.chebyshev if cd else None,
                "normal": cd.normal if cd else None,
            },
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


class _Parameters(TypedDict):
    # The parameters every NoiseResult repeats, whichever way the model ends.
    scale: str
    confidence: float
    max_gamma: float
    min_raters: int


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def _t0(n: int, d: int, p: float, confidence: float) -> int:
    h = np.arange(d, n + 1, dtype=float)
    k = h - d
    # log C(h, d) + (h − d) log p; 0^0 = 1 keeps h = d alive when p = 0.
    logw = gammaln(h + 1) - gammaln(d + 1) - gammaln(k + 1)
    if p > 0:
        logw = logw + k * math.log(p)
    else:
        logw = np.where(k == 0, logw, -np.inf)
    # tail[m] = log Σ_{h ≥ d + m} w_h; P(X > t) = exp(tail[t − d + 1] − tail[0]).
    tail = np.logaddexp.accumulate(logw[::-1])[::-1]
    log_cut = math.log1p(-confidence)
    below = np.flatnonzero(tail[1:] - tail[0] < log_cut)
    # t = n always qualifies (P(X > n) = 0), hence the fallback.
    return d + int(below[0]) if below.size else n


def noise_level(*, n: int, d: int, p: float, confidence: float = 0.95) -> NoiseLevel:
    """Return t0 and the noise level γ of the agreed subset (§2, equation 1).

    n items, d of them disagreed, p = probability that the raters agree on a hard item;
    uniform prior over the number of hard items. t0 = smallest t with P(X > t | d) <
    1 − confidence; γ = (t0 − d) / (n − d), ``None`` + reason when no item is agreed.

    Example (§3.1): ``noise_level(n=1000, d=100, p=0.5)`` → t0 = 225, so up to 125
    agreements may be coin-flips and γ = 125/900 = 13.9 % (printed "13.8 %").
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 <= d <= n:
        raise ValueError(f"d must lie in 0..n ({n}), got {d}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p}")
    _check_confidence(confidence)
    t0 = _t0(n, d, p, confidence)
    if d == n:
        return NoiseLevel(n, d, p, confidence, t0, None, "no agreed item")
    return NoiseLevel(n, d, p, confidence, t0, (t0 - d) / (n - d))


def max_disagreements(
    *, n: int, p: float, confidence: float = 0.95, max_gamma: float = 0.05
) -> int | None:
    """Return the largest number d of disagreements that keeps γ ≤ ``max_gamma`` (§3.1).

    p is held fixed (the paper's "reverse question"). γ grows with d, so a binary search over
    d ∈ 0..n−1 finds the boundary (checked against a linear scan in the tests). ``None`` when
    even d = 0 gives γ > max_gamma (too few items for that noise level).

    Example (§3.1): ``max_disagreements(n=1000, p=0.5)`` → 33 ("only 33
    disagreements, corresponding to κ = 0.93").
    """
    if not 0.0 < max_gamma < 1.0:
        raise ValueError(f"max_gamma must lie strictly between 0 and 1, got {max_gamma}")

    def ok(d: int) -> bool:
        g = noise_level(n=n, d=d, p=p, confidence=confidence).gamma
        return g is not None and g <= max_gamma

    if not ok(0):
        return None
    lo, hi = 0, n - 1  # ok(lo) holds; find the last d with ok(d)
    if ok(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def chance_difference(
    *, hard_agreed: int, chebyshev_k: float = 4.5, normal_k: float = 2.0
) -> ChanceDifference:
    """Return how many more "correct" answers one system may get than another by chance alone.

    Beigman Klebanov and Beigman 2009, §4.1: on R = ``hard_agreed`` coin-flip items the difference S
    is a sum of R variables −1, 0, 1 with probabilities 1/4, 1/2, 1/4, so σ = √(R/2); by Chebyshev
    (1/k² ≤ 0.05) |S| ≤ 4.5σ with 95 % probability, and for large R the normal approximation gives
    2σ (footnote 9).

    Example (§4.1): R = 125 → σ = 7.91, Chebyshev 35.6 ("a difference of up to 35
    'correct' answers"), normal 15.8.
    """
    if hard_agreed < 0:
        raise ValueError(f"hard_agreed must be >= 0, got {hard_agreed}")
    sigma = math.sqrt(hard_agreed / 2.0)
    return ChanceDifference(
        hard_agreed=int(hard_agreed),
        sigma=sigma,
        chebyshev=chebyshev_k * sigma,
        normal=normal_k * sigma,
        chebyshev_k=chebyshev_k,
        normal_k=normal_k,
    )


def siegel_castellan_kappa(counts: object) -> float | None:
    """Return Siegel & Castellan's kappa from an (items × categories) matrix of rater counts.

    Beigman Klebanov and Beigman 2009, equation (2), with a per-item number of raters
    k_i = Σ_c a_ic ≥ 2: P_A = mean_i Σ_c C(a_ic, 2) / C(k_i, 2); p_c = Σ_i a_ic / Σ_i k_i;
    P_E = Σ_c p_c²; κ = (P_A − P_E) / (1 − P_E). ``None`` when P_E = 1 (a single category) or no
    items.

    Example (§3.1): 1 000 items, two raters, 900 agreed, categories equiprobable →
    P_A = 0.9, P_E = 0.5, κ = 0.8.
    """
    a = np.asarray(counts, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"counts must be 2-D (items × categories), got shape {a.shape}")
    if a.shape[0] == 0:
        return None
    k = a.sum(axis=1)
    if np.any(k < 2):
        raise ValueError("every item needs at least 2 raters for kappa")
    pa = float(np.mean((a * (a - 1)).sum(axis=1) / (k * (k - 1))))
    pc = a.sum(axis=0) / k.sum()
    pe = float(np.dot(pc, pc))
    if pe >= 1.0:
        return None
    return (pa - pe) / (1.0 - pe)


def noise_model(
    ratings: Ratings,
    *,
    scale: str = "raw",
    min_raters: int = 2,
    confidence: float = 0.95,
    max_gamma: float = 0.05,
    chebyshev_k: float = 4.5,
    normal_k: float = 2.0,
) -> NoiseResult:
    """Estimate the noise level of one scale's agreed items (Beigman Klebanov and Beigman 2009).

    Ratings of one scale or reduction (`LongRatings` or dense; values are categories). Items with at
    least ``min_raters`` (2) answers enter; an item is agreed when all its raters chose the same
    category. q_jc = share of annotator j's disagreed items j put in category c (annotators without
    a disagreed item use the pooled share over all disagreed ratings, listed in
    ``pooled_annotators``); p = mean_i Σ_c Π_{j ∈ raters(i)} q_jc; κ (Siegel & Castellan); t0 and γ
    at ``confidence`` (`noise_level`); the largest number of disagreements keeping γ ≤ ``max_gamma``
    (`max_disagreements`, same n and p); the chance difference on the R = t0 − d hard agreed items
    (`chance_difference`). Without disagreements p cannot be estimated: p, t0, γ and the rest are
    ``None`` + reason.

    Example (§3.1): two annotators, 1 000 items, 900 agreed, the 100 disagreements split evenly
    → p = 0.5, κ = 0.8, t0 = 225, γ = 0.139, max_disagreements = 33, chance difference 35.6
    (Chebyshev) and 15.8 (normal).
    """
    _check_confidence(confidence)
    if min_raters < 2:
        raise ValueError(f"min_raters must be >= 2, got {min_raters}")
    data = as_long_ratings(ratings)
    ok = rated_rows(data)
    it, an, val = data.item[ok], data.annotator[ok], data.value[ok]
    n_items, n_annotators = data.n_items, data.n_annotators
    per_item = np.bincount(it, minlength=n_items)
    keep = per_item[it] >= min_raters
    it, an, val = it[keep], an[keep], val[keep]
    items, it = np.unique(it, return_inverse=True)
    n = int(items.size)
    common: _Parameters = {
        "scale": scale,
        "confidence": confidence,
        "max_gamma": max_gamma,
        "min_raters": min_raters,
    }
    if n == 0:
        return NoiseResult(
            n_items=0, agreed=0, disagreed=0, p=None, kappa=None, t0=None, gamma=None,
            max_disagreements=None, chance_difference=None, pooled_annotators=(),
            reason=f"no item with at least {min_raters} answers", **common,
        )  # fmt: skip
    cats, cat = np.unique(val, return_inverse=True)
    m = int(cats.size)
    counts = np.bincount(it * m + cat, minlength=n * m).reshape(n, m)
    k = counts.sum(axis=1)
    agreed_item = counts.max(axis=1) == k
    d = int((~agreed_item).sum())
    kappa = siegel_castellan_kappa(counts)
    reasons = [] if kappa is not None else ["kappa: a single category among the answers"]
    if d == 0:
        reasons.append("no disagreed item: chance agreement p cannot be estimated")
        return NoiseResult(
            n_items=n, agreed=n, disagreed=0, p=None, kappa=kappa, t0=None, gamma=None,
            max_disagreements=None, chance_difference=None, pooled_annotators=(),
            reason="; ".join(reasons), **common,
        )  # fmt: skip
    dis = ~agreed_item[it]
    qc = np.bincount(an[dis] * m + cat[dis], minlength=n_annotators * m).reshape(n_annotators, m)
    tot = qc.sum(axis=1)
    pooled = qc.sum(axis=0) / qc.sum()
    no_dis = tot == 0
    q = np.where(no_dis[:, None], pooled[None, :], qc / np.maximum(tot, 1)[:, None])
    used = np.zeros(n_annotators, dtype=bool)
    used[an] = True
    pooled_annotators = tuple(int(j) for j in np.flatnonzero(no_dis & used))
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    # Σ_j log q_jc per item and category; exp then sum over categories gives p_i.
    log_prod = np.stack(
        [np.bincount(it, weights=logq[an, c], minlength=n) for c in range(m)], axis=1
    )
    p = float(np.mean(np.exp(log_prod).sum(axis=1)))
    p = min(max(p, 0.0), 1.0)
    level = noise_level(n=n, d=d, p=p, confidence=confidence)
    if level.gamma is None:
        reasons.append("no agreed item: the agreed subset is empty")
        cd = None
    else:
        cd = chance_difference(
            hard_agreed=int(level.t0 - d), chebyshev_k=chebyshev_k, normal_k=normal_k
        )
    md = max_disagreements(n=n, p=p, confidence=confidence, max_gamma=max_gamma)
    if md is None:
        reasons.append(f"even without disagreements γ > {max_gamma} for {n} items")
    return NoiseResult(
        n_items=n,
        agreed=n - d,
        disagreed=d,
        p=p,
        kappa=kappa,
        t0=level.t0,
        gamma=level.gamma,
        max_disagreements=md,
        chance_difference=cd,
        pooled_annotators=pooled_annotators,
        reason="; ".join(reasons) if reasons else None,
        **common,
    )
