"""Trust coefficients of annotators (Borovikova et al. 2022, Algorithm 1).

Pure numpy, no Django.  ``ratings`` is a dense ``(k annotators, n_items)`` float array as the
``krippendorff`` package takes it (``np.nan`` = not rated); annotator ``a`` is row ``a``.

Algorithm (docs/statistics/trust.md): Krippendorff's alpha at the analysis level for every
subset of at least two annotators (the full set included), sorted ascending (stable), then

- ``paper`` (the printed pseudocode): ``coef = 1, score = 0``; for each subset in that order, if
  ``alpha > score`` then ``coef += 1`` and ``score = alpha``; every member adds ``coef × alpha``;
  subsets whose alpha is undefined are skipped.  In sorted order this is
  ``coef = 1 + #{distinct positive alphas ≤ alpha}`` (1 for alpha ≤ 0), computed vectorised.
- ``notebook`` (the authors' published code): ``coef`` = dense rank of the alpha among all subsets
  (from 1); an undefined alpha counts as 1.0; every member adds ``coef × alpha``.

Each annotator's sum is divided by the largest sum (``None`` + reason if that is ≤ 0); an annotator
is an outlier iff their coefficient is ≤ 0.5.  Alphas are compared (sorted, ranked, tested for
``alpha > score``) after rounding to 12 decimals, so that alphas that are equal in exact arithmetic
but computed along different floating-point paths tie; the unrounded alpha is what is accumulated.

Exact for ``k ≤ max_exact`` (default 20: 1 048 555 subsets, enumerated in increasing bit-mask order,
see ``core.stats._subsets``).  Beyond, a seeded Monte Carlo estimate (``method="sampled"``):
``n_samples`` subsets drawn uniformly among all subsets of size ≥ 2 (uniform bit masks, those with
fewer than two members rejected and redrawn, with replacement), ranks / running ``coef`` taken
within the sample, and each annotator's sum divided by the number of draws that contain them
(exhaustively every annotator is in the same number of subsets, so this only fixes the scale).
Each sampled coefficient carries its Monte-Carlo standard error (``mc_error``, batch means over
``MC_BATCHES`` batches of the draws). ``sampled_seconds`` estimates the sampled engine's cost and
``samples_within`` how many subsets fit a time allowed (the analysis setting ``trust_budget_s``).

Distributed exact mode: ``plan_chunks(k, n)`` → ranges of subset indices; ``trust_chunk`` computes
the alphas of one range (a Celery task needs only ``ratings, level, domain, start, stop``);
``trust_merge`` checks the ranges tile ``[0, 2^k - k - 1)`` and finalises.  Chunks carry the
per-subset alphas and every alpha is computed in the same aligned block whatever the chunking,
so the merged result equals ``trust_coefficients`` bit for bit.

Worked example (3 annotators A1–A3, 4 items, nominal; see the doctest): the subsets {A1,A2},
{A1,A3}, {A2,A3}, {A1,A2,A3} have alphas 1, 6/11, 2/3, 3/4.  ``paper`` meets them in the order
6/11, 2/3, 3/4, 1 with coef 2, 3, 4, 5, so A1 = 5·1 + 2·6/11 + 4·3/4 = 9.091, A2 = 5 + 3·2/3 + 3 = 10,
A3 = 12/11 + 2 + 3 = 6.091, and the coefficients are 0.909, 1.0, 0.609 (no outlier).

>>> r = np.array([[1, 2, 3, np.nan], [1, 2, 3, 3], [1, 2, 2, 3.0]])
>>> res = trust_coefficients(r, level="nominal", domain=[1, 2, 3])
>>> [round(c, 3) for c in res.coefficients], res.outliers, res.method, res.n_subsets
([0.909, 1.0, 0.609], (), 'exact', 4)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from core.stats._subsets import (
    alphas_for_members,
    enumerate_masks,
    enumerated_alphas,
    n_subsets,
    prepare,
    subset_alphas,
)
from core.stats._types import BoolArray, Domain, FloatArray

__all__ = [
    "TrustPartial",
    "TrustResult",
    "fingerprint",
    "n_subsets",
    "plan_chunks",
    "sampled_seconds",
    "samples_within",
    "subset_alphas",
    "trust_chunk",
    "trust_coefficients",
    "trust_merge",
]

Variant = Literal["paper", "notebook"]
# The two readings of Algorithm 1: the one list, offered by core.settings as the trust variants.
VARIANTS = ("paper", "notebook")
OUTLIER_THRESHOLD = 0.5
TIE_DECIMALS = 12
# 2^24 subsets is already ~16 s of alphas and 128 MB of them; beyond, sample.
MAX_EXACT_LIMIT = 24
# The sampled engine's cost: seconds per (drawn subset × item × value × (annotators + 200)).
# ``python -m bench.trust_sampled`` measured 1–6e-10 on the shared 2-core development machine,
# idle and busy (docs/statistics/trust.md); the estimate takes 4e-10 with the offset 200, within
# about ±50 % of what was measured there. Values count at least 4: a two-valued scale costs per
# item as well. An estimate, not a guarantee: the machine's load moves the real time.
SAMPLED_SECONDS_PER_UNIT = 4e-10
SAMPLED_ANNOTATOR_OFFSET = 200
# Fewer subsets than this give Monte-Carlo errors too large to be worth reporting.
MIN_SAMPLES = 1_000
# The Monte-Carlo error is estimated from this many batches of the draws (batch means).
MC_BATCHES = 20


@dataclass(frozen=True)
class TrustResult:
    """Trust coefficients per annotator (row order of ``ratings``), ``None`` with ``reason``."""

    coefficients: tuple[float | None, ...]
    outliers: tuple[int, ...]  # row indices with coefficient ≤ 0.5
    method: Literal["exact", "sampled"]
    n_subsets: int  # subsets enumerated (exact) or drawn (sampled)
    variant: str
    level: str
    reason: str | None = None
    n_undefined: int = 0  # subsets whose alpha is undefined
    # Sampled only: each coefficient's Monte-Carlo standard error (batch means), None if unknown.
    mc_error: tuple[float | None, ...] | None = None


def sampled_seconds(*, k: int, n_items: int, n_values: int, n_samples: int) -> float:
    """Estimate the seconds the sampled engine takes (pessimistic; see ``SAMPLED_SECONDS_PER_UNIT``).

    >>> round(sampled_seconds(k=70, n_items=100, n_values=8, n_samples=20_000), 2)
    1.73
    """
    return (SAMPLED_SECONDS_PER_UNIT * n_samples * n_items * max(n_values, 4)
            * (k + SAMPLED_ANNOTATOR_OFFSET))


def samples_within(budget_s: float, *, k: int, n_items: int, n_values: int, wanted: int) -> int:
    """Return how many subsets (at most ``wanted``) the sampled engine draws within ``budget_s``.

    >>> samples_within(60, k=70, n_items=100, n_values=8, wanted=20_000)
    20000
    >>> samples_within(0.5, k=70, n_items=100, n_values=8, wanted=20_000)
    5787
    """
    per = sampled_seconds(k=k, n_items=max(n_items, 1), n_values=n_values, n_samples=1)
    return int(min(wanted, budget_s // per))


@dataclass(frozen=True)
class TrustPartial:
    """Alphas of the subsets ``start..stop-1`` (enumeration order) of one chunk; nan = undefined."""

    k: int
    level: str
    start: int
    stop: int
    alphas: FloatArray  # length stop - start
    fingerprint: str  # of ratings, domain and level, so merge refuses mixed inputs


def fingerprint(ratings: npt.ArrayLike, domain: Domain, level: str) -> str:
    """Return the SHA-256 hex digest of ``ratings`` (shape and values, nan included), ``domain``
    and ``level``: equal digests mean a chunk's alphas were computed on exactly these inputs.

    >>> fingerprint(np.array([[1.0, np.nan]]), [1, 2], "nominal") == fingerprint(
    ...     np.array([[1, np.nan]]), (1.0, 2.0), "nominal")
    True
    """
    data = np.ascontiguousarray(np.asarray(ratings, dtype=float))
    digest = hashlib.sha256()
    digest.update(repr((data.shape, level)).encode())
    digest.update(np.where(np.isnan(data), np.inf, data).tobytes())
    digest.update(np.ascontiguousarray(np.asarray(domain, dtype=float)).tobytes())
    return digest.hexdigest()


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")


# The stubs type integer ranks times floats as any floating dtype; at run time this is float64.
def _weights(alphas: FloatArray, variant: str) -> npt.NDArray[np.floating[Any]]:
    """Return coef × alpha per subset (0 where the subset is skipped), ranks within ``alphas``.

    Alphas are compared at ``TIE_DECIMALS`` decimals, and an alpha that rounds to 0 there weighs
    exactly 0: two ways of summing the same coincidences differ in the last bits, so an alpha that
    is 0 in exact arithmetic can come out as ±1e-16. Weighted as it is, that noise decides the
    sign of the largest sum: when every alpha is 0 (one item rated 1, 2, 2, 3 by four annotators)
    the coefficients would be 1.0 for everyone instead of undefined. Other alphas weigh as they
    are (rounding them would move coefficients whose largest sum is small).
    """
    keys = np.round(alphas, TIE_DECIMALS)
    alphas = np.where(keys == 0, 0.0, alphas)
    if variant == "notebook":
        values = np.where(np.isnan(alphas), 1.0, alphas)
        _, dense = np.unique(np.where(np.isnan(keys), 1.0, keys), return_inverse=True)
        return (dense + 1.0) * values
    valid = ~np.isnan(keys)
    positive = np.unique(keys[valid & (keys > 0)])
    # coef increments once per distinct positive alpha met so far (score starts at 0).
    coef = 1.0 + np.searchsorted(positive, np.where(valid, keys, 0.0), side="right")
    return np.where(valid, coef * np.where(valid, alphas, 0.0), 0.0)


def _result(
    sums: FloatArray,
    *,
    method: Literal["exact", "sampled"],
    n_total: int,
    variant: str,
    level: str,
    n_undefined: int,
) -> TrustResult:
    top = float(np.max(sums)) if len(sums) else 0.0
    if not top > 0:
        return TrustResult(
            coefficients=(None,) * len(sums),
            outliers=(),
            method=method,
            n_subsets=n_total,
            variant=variant,
            level=level,
            reason="the largest accumulated score is not positive (every alpha undefined or ≤ 0)",
            n_undefined=n_undefined,
        )
    coefficients = tuple(float(s / top) for s in sums)
    outliers = tuple(a for a, c in enumerate(coefficients) if c <= OUTLIER_THRESHOLD)
    return TrustResult(coefficients, outliers, method, n_total, variant, level, None, n_undefined)


def _finalise_exact(alphas: FloatArray, k: int, variant: str, level: str) -> TrustResult:
    w = _weights(alphas, variant)
    masks = enumerate_masks(k)
    sums = np.array(
        [w[((masks >> np.uint64(a)) & np.uint64(1)).astype(bool)].sum() for a in range(k)]
    )
    return _result(
        sums,
        method="exact",
        n_total=alphas.size,
        variant=variant,
        level=level,
        n_undefined=int(np.isnan(alphas).sum()),
    )


def _too_few(
    k: int, variant: str, level: str, method: Literal["exact", "sampled"] = "exact"
) -> TrustResult:
    return TrustResult(
        (None,) * k,
        (),
        method,
        0,
        variant,
        level,
        "fewer than two annotators",
        0,
    )


def trust_coefficients(
    ratings: npt.ArrayLike,
    *,
    level: str,
    domain: Domain,
    variant: Variant = "paper",
    max_exact: int = 20,
    n_samples: int = 20_000,
    rng: np.random.Generator | None = None,
) -> TrustResult:
    """Compute the trust coefficient of every annotator (Borovikova et al. 2022, Algorithm 1).

    ``ratings``: (k × items), nan = missing; ``domain``: the scale's full value domain (as passed
    to ``krippendorff.alpha``); ``level``: nominal/ordinal/interval/ratio.  Exhaustive for
    ``k ≤ max_exact``; otherwise ``n_samples`` uniformly drawn subsets (``rng`` defaults to
    ``np.random.default_rng(0)``, so results are reproducible) and ``method="sampled"``.
    """
    _check_variant(variant)
    if not 2 <= max_exact <= MAX_EXACT_LIMIT:
        raise ValueError(f"max_exact must be between 2 and {MAX_EXACT_LIMIT}, not {max_exact}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be positive, not {n_samples}")
    prep = prepare(ratings, level=level, domain=domain)
    k = prep.k
    if k < 2:
        return _too_few(k, variant, level)
    if k <= max_exact:
        alphas = enumerated_alphas(prep, 0, n_subsets(k))
        return _finalise_exact(alphas, k, variant, level)
    rng = np.random.default_rng(0) if rng is None else rng
    members = _draw_subsets(rng, k, n_samples)
    alphas = alphas_for_members(prep, members)
    w = _weights(alphas, variant)
    sums = w @ members.astype(float)
    counts = members.sum(axis=0)
    means = np.divide(sums, counts, out=np.zeros(k), where=counts > 0)
    result = _result(
        means,
        method="sampled",
        n_total=n_samples,
        variant=variant,
        level=level,
        n_undefined=int(np.isnan(alphas).sum()),
    )
    if result.reason is not None:
        return result
    return replace(result, mc_error=_mc_error(w, members, int(np.argmax(means))))


def _mc_error(w: npt.NDArray[np.floating[Any]], members: BoolArray,
              top: int) -> tuple[float | None, ...]:
    """Return each coefficient's Monte-Carlo standard error by batch means.

    The draws (independent, in order) are cut into ``MC_BATCHES`` equal batches. In each, every
    annotator's mean weight over the batch's draws that contain them is divided by the mean of
    the annotator with the largest overall sum (``top``), as the estimate divides by it; the
    standard error is the standard deviation of these batch ratios over √(number of batches).
    The weights keep the ranks taken within the whole sample. ``top``'s coefficient is 1 by
    definition, so its error is 0; an annotator absent from a batch leaves that batch out, and
    fewer than two usable batches give ``None``.
    """
    n, k = int(members.shape[0]), int(members.shape[1])
    batches = min(MC_BATCHES, n // 2)
    if batches < 2:
        return (None,) * k
    size = n // batches
    ratios = np.full((batches, k), np.nan)
    for b in range(batches):
        sel = members[b * size:(b + 1) * size]
        wb = w[b * size:(b + 1) * size]
        cnt = sel.sum(axis=0)
        mean = np.divide(wb @ sel.astype(float), cnt, out=np.full(k, np.nan), where=cnt > 0)
        if cnt[top] > 0 and mean[top] > 0:
            ratios[b] = mean / mean[top]
    out: list[float | None] = []
    for a in range(k):
        col = ratios[:, a][~np.isnan(ratios[:, a])]
        out.append(float(np.std(col, ddof=1) / np.sqrt(col.size)) if col.size >= 2 else None)
    return tuple(out)


def _draw_subsets(rng: np.random.Generator, k: int, n: int) -> BoolArray:
    """Draw ``n`` uniform subsets of size ≥ 2 as an (n × k) boolean membership matrix."""
    batches, have = [], 0
    while have < n:
        draw = rng.integers(0, 2, size=(n - have + 16, k), dtype=np.uint8).astype(bool)
        draw = draw[draw.sum(axis=1) >= 2]
        batches.append(draw)
        have += draw.shape[0]
    return np.concatenate(batches)[:n]


def plan_chunks(k: int, n_chunks: int) -> list[tuple[int, int]]:
    """Split the ``2^k - k - 1`` subsets into ``n_chunks`` contiguous ``(start, stop)`` ranges."""
    if n_chunks < 1:
        raise ValueError(f"n_chunks must be positive, not {n_chunks}")
    total = n_subsets(k)
    edges = [total * j // n_chunks for j in range(n_chunks + 1)]
    return [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:], strict=True) if hi > lo]


def trust_chunk(
    ratings: npt.ArrayLike, *, level: str, domain: Domain, start: int, stop: int
) -> TrustPartial:
    """Compute the alphas of subsets ``start..stop-1`` (a chunk of the exhaustive computation)."""
    prep = prepare(ratings, level=level, domain=domain)
    alphas = enumerated_alphas(prep, start, stop)
    return TrustPartial(prep.k, level, start, stop, alphas, fingerprint(ratings, domain, level))


def trust_merge(partials: Iterable[TrustPartial], *, variant: Variant, k: int) -> TrustResult:
    """Combine chunk results covering every subset into the exact trust coefficients."""
    _check_variant(variant)
    parts = sorted(partials, key=lambda p: p.start)
    if k < 2:
        return _too_few(k, variant, parts[0].level if parts else "")
    if not parts:
        raise ValueError("no partial results to merge")
    if {p.k for p in parts} != {k} or len({(p.fingerprint, p.level) for p in parts}) != 1:
        raise ValueError("partial results come from different ratings, levels or k")
    position = 0
    for p in parts:
        if p.start != position or p.alphas.size != p.stop - p.start:
            raise ValueError(f"partial results leave a gap or overlap at subset {position}")
        position = p.stop
    if position != n_subsets(k):
        raise ValueError(f"partial results stop at subset {position} of {n_subsets(k)}")
    alphas = np.concatenate([p.alphas for p in parts])
    return _finalise_exact(alphas, k, variant, parts[0].level)
