"""Krippendorff's alpha through the coincidence matrix, dense or long format, with a bootstrap CI.

Reference: K. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", Annenberg School
for Communication, University of Pennsylvania (sections C and E). With ``o`` the coincidence
matrix of pairable values, ``n_c = sum_k o_ck`` and ``n = sum_c n_c``::

    alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck

(the diagonal of every difference function ``d`` is zero). This is what the ``krippendorff``
package computes; ``alpha`` equals ``krippendorff.alpha(reliability_data=ratings,
level_of_measurement=level, value_domain=domain)`` to 1e-9 wherever the latter is defined, and
returns ``None`` with a reason where it is not (the package returns NaN or raises there).

Everything goes through value counts per item, shape ``(n_items, V)`` with ``V = len(domain)``,
so long-format data never needs a dense annotator x item matrix. The helpers broadcast over
leading batch dimensions, for batched alphas (e.g. subsets of annotators).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from core.stats._types import Domain, FloatArray, IntArray, LongRatings
from core.stats.scales import LEVELS

__all__ = [
    "AlphaResult",
    "LongRatings",
    "alpha",
    "alpha_from_coincidences",
    "alpha_from_value_counts",
    "alpha_levels_with_ci",
    "alpha_long",
    "alpha_with_ci",
    "bootstrap_alphas",
    "bootstrap_coincidences",
    "bootstrap_ci",
    "coincidence_matrix",
    "distance_matrix",
    "domain_codes",
    "item_coincidences",
    "value_counts",
    "value_counts_long",
]

REASON_NO_PAIRABLE = "no pairable item: no item has answers from at least two annotators"
REASON_SINGLE_VALUE = (
    "a single value among the pairable values: expected disagreement is zero, alpha is 0/0"
)
REASON_RATIO_NEGATIVE = "ratio level is undefined where codes are negative"
REASON_NO_EXPECTED = "expected disagreement is zero"


@dataclass(frozen=True)
class AlphaResult:
    """Hold one alpha: ``value`` is ``None`` exactly when ``reason`` says why.

    ``n_items`` counts pairable items (at least two answers), ``n_pairable_values`` the answers
    on them (Krippendorff's ``n``), ``ci95`` the bootstrap interval when one was computed.
    """

    value: float | None
    reason: str | None
    n_items: int
    n_pairable_values: int
    ci95: tuple[float, float] | None
    level: str


# --------------------------------------------------------------------------------------------
# Validation and value codes


def _check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    return level


def _domain_array(domain: Domain) -> FloatArray:
    array = np.asarray(list(domain), dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("domain must be a non-empty sequence of values")
    if not np.all(np.isfinite(array)):
        raise ValueError("domain values must be finite")
    if np.unique(array).size != array.size:
        raise ValueError("domain lists a value twice")
    return array


def domain_codes(values: npt.ArrayLike, domain: Domain) -> IntArray:
    """Return the position of each value in ``domain`` (-1 for ``np.nan``), same shape.

    The domain is used in the order given (scale order; ordinal distances depend on it). A value
    outside the domain raises ``ValueError`` naming it. Example: ``domain_codes(np.array([5.0,
    np.nan, 1.0]), [1, 3, 5])`` gives ``array([ 2, -1,  0])``.
    """
    dom = _domain_array(domain)
    array = np.asarray(values, dtype=np.float64)
    codes = np.full(array.shape, -1, dtype=np.int64)
    present = ~np.isnan(array)
    observed = array[present]
    order = np.argsort(dom, kind="stable")
    ordered = dom[order]
    pos = np.clip(np.searchsorted(ordered, observed), 0, ordered.size - 1)
    known = ordered[pos] == observed
    if not known.all():
        bad = sorted(set(observed[~known].tolist()))
        shown = ", ".join(f"{v:g}" for v in bad[:10])
        raise ValueError(f"value(s) {shown} outside the scale's domain {dom.tolist()}")
    codes[present] = order[pos]
    return codes


def _dense_array(ratings: npt.ArrayLike) -> FloatArray:
    dense = np.asarray(ratings, dtype=np.float64)
    if dense.ndim != 2:
        raise ValueError(f"ratings must be 2-D (n_annotators, n_items), got shape {dense.shape}")
    return dense


def value_counts(ratings: npt.ArrayLike, domain: Domain) -> IntArray:
    """Count, per item, how many annotators gave each domain value: shape ``(n_items, V)``.

    ``ratings`` is dense ``(n_annotators, n_items)`` with ``np.nan`` = not rated (Krippendorff
    2011's reliability data). Example: ``value_counts(np.array([[1, 2], [1, np.nan]]), [1, 2])``
    gives ``array([[2, 0], [0, 1]])``.
    """
    dense = _dense_array(ratings)
    n_values = len(_domain_array(domain))
    codes = domain_codes(dense, domain)
    n_items = dense.shape[1]
    rated = codes >= 0
    item = np.broadcast_to(np.arange(n_items), dense.shape)[rated]
    flat = np.bincount(item * n_values + codes[rated], minlength=n_items * n_values)
    return flat.reshape(n_items, n_values)


def value_counts_long(data: LongRatings, domain: Domain) -> IntArray:
    """Count, per item, the answers of each domain value from long-format data: ``(n_items, V)``.

    Rows with a blank value are ignored. Same result as ``value_counts(data.to_dense(), domain)``
    without the dense matrix. Example: items ``[0, 0, 1]`` with values ``[3, 3, 4]`` on domain
    ``[3, 4]`` give ``array([[2, 0], [0, 1]])``.
    """
    n_values = len(_domain_array(domain))
    codes = domain_codes(data.value, domain)
    rated = codes >= 0
    flat = np.bincount(
        data.item[rated] * n_values + codes[rated], minlength=data.n_items * n_values
    )
    return flat.reshape(data.n_items, n_values)


# --------------------------------------------------------------------------------------------
# Coincidences, distances, alpha


def _pair_weights(counts: FloatArray) -> FloatArray:
    # 1 / (m_u - 1) for pairable units (m_u >= 2), 0 otherwise (Krippendorff 2011, section C).
    m: FloatArray = counts.sum(axis=-1)
    return np.divide(1.0, m - 1.0, out=np.zeros(m.shape), where=m >= 2)


def coincidence_matrix(counts: npt.ArrayLike) -> FloatArray:
    """Build the coincidence matrix ``o`` from value counts per item: ``(..., N, V) -> (..., V, V)``.

    ``o_ck = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)`` over items with ``m_u >= 2`` answers
    (Krippendorff 2011, section C); items with one answer contribute nothing. Leading dimensions
    are batch dimensions. Example: one item rated (1, 1, 2) on domain [1, 2] has counts
    ``[[2, 1]]`` and ``o = [[1, 1], [1, 0]]``.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim < 2:
        raise ValueError(f"counts must have shape (..., n_items, V), got {c.shape}")
    weighted = c * _pair_weights(c)[..., np.newaxis]
    o = np.swapaxes(weighted, -1, -2) @ c
    diagonal = np.arange(c.shape[-1])
    o[..., diagonal, diagonal] -= weighted.sum(axis=-2)
    return o


def item_coincidences(counts: npt.ArrayLike) -> FloatArray:
    """Return each item's contribution to ``o``: ``(N, V) -> (N, V, V)`` (sums to ``o``).

    Used by the bootstrap, which resamples items. Example: counts ``[[2, 1], [1, 0]]`` give
    ``[[[1, 1], [1, 0]], [[0, 0], [0, 0]]]``.
    """
    c = np.asarray(counts, dtype=np.float64)
    w = _pair_weights(c)
    per_item = c[:, :, np.newaxis] * c[:, np.newaxis, :]
    diagonal = np.arange(c.shape[-1])
    per_item[:, diagonal, diagonal] -= c
    return per_item * w[:, np.newaxis, np.newaxis]


def distance_matrix(level: str, domain: Domain, n_v: npt.ArrayLike | None = None) -> FloatArray:
    """Return the squared differences ``d_ck`` between domain values: ``(..., V, V)``.

    Krippendorff 2011, section E: nominal ``[c != k]``; ordinal ``(sum_{g=c..k} n_g - (n_c +
    n_k)/2)^2`` over the domain's order (needs ``n_v``, the pairable value frequencies, shape
    ``(..., V)``; leading dimensions broadcast); interval ``(c - k)^2``; ratio ``((c - k)/(c +
    k))^2`` (0 when ``c + k = 0``, as the ``krippendorff`` package does). Example:
    ``distance_matrix("interval", [1, 2, 4])[0, 2] == 9``.
    """
    _check_level(level)
    dom = _domain_array(domain)
    size = dom.size
    if level == "nominal":
        return 1.0 - np.eye(size)
    if level == "interval":
        return (dom[:, np.newaxis] - dom[np.newaxis, :]) ** 2
    if level == "ratio":
        total = dom[:, np.newaxis] + dom[np.newaxis, :]
        diff = dom[:, np.newaxis] - dom[np.newaxis, :]
        return np.divide(diff, total, out=np.zeros((size, size)), where=total != 0) ** 2
    if n_v is None:
        raise ValueError("ordinal distances need the pairable value frequencies n_v")
    n = np.asarray(n_v, dtype=np.float64)
    if n.shape[-1] != size:
        raise ValueError(f"n_v has {n.shape[-1]} values, the domain {size}")
    inclusive = np.cumsum(n, axis=-1)
    exclusive = inclusive - n
    index = np.arange(size)
    low = np.minimum(index[:, np.newaxis], index[np.newaxis, :])
    high = np.maximum(index[:, np.newaxis], index[np.newaxis, :])
    between = inclusive[..., high] - exclusive[..., low]
    return (between - (n[..., low] + n[..., high]) / 2.0) ** 2


def alpha_from_coincidences(o: npt.ArrayLike, *, level: str, domain: Domain) -> FloatArray:
    """Compute alpha from coincidence matrices ``(..., V, V)``; NaN where undefined.

    Low-level and batched: returns a float array of shape ``o.shape[:-2]`` and uses NaN for
    "undefined" (no pairable value, or zero expected disagreement). Public results never carry
    NaN: use ``alpha`` / ``alpha_long``, or turn NaN into ``None`` + a reason yourself. The
    ratio-with-negative-codes rule is not applied here. Formula: module docstring. Example:
    ``alpha_from_coincidences(np.array([[6., 4.], [4., 6.]]), level="nominal", domain=[0, 1])``
    is ``1 - 19 * 8 / 200 = 0.24``.
    """
    matrix = np.asarray(o, dtype=np.float64)
    n_v = matrix.sum(axis=-1)
    n = n_v.sum(axis=-1)
    d = distance_matrix(level, domain, n_v if level == "ordinal" else None)
    observed = (matrix * d).sum(axis=(-2, -1))
    expected = np.einsum("...c,...ck,...k->...", n_v, np.broadcast_to(d, matrix.shape), n_v)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 1.0 - (n - 1.0) * observed / expected
    return np.where(expected > 0, value, np.nan)


def _result(counts: np.ndarray, level: str, domain: Domain) -> AlphaResult:
    m = counts.sum(axis=1)
    pairable = m >= 2
    n_items = int(pairable.sum())
    n_pairable = int(m[pairable].sum())

    def undefined(reason: str) -> AlphaResult:
        return AlphaResult(None, reason, n_items, n_pairable, None, level)

    dom = _domain_array(domain)
    if level == "ratio" and (dom < 0).any():
        return undefined(REASON_RATIO_NEGATIVE)
    if n_items == 0:
        return undefined(REASON_NO_PAIRABLE)
    if np.count_nonzero(counts[pairable].sum(axis=0)) < 2:
        return undefined(REASON_SINGLE_VALUE)
    value = alpha_from_coincidences(coincidence_matrix(counts), level=level, domain=dom)
    if np.isnan(value):
        return undefined(REASON_NO_EXPECTED)
    return AlphaResult(float(value), None, n_items, n_pairable, None, level)


def alpha_from_value_counts(counts: npt.ArrayLike, *, level: str, domain: Domain) -> AlphaResult:
    """Compute alpha from value counts per item ``(n_items, V)`` (see ``value_counts``).

    Same rules and undefined cases as ``alpha``. Example: counts ``[[2, 0], [0, 2], [1, 1]]`` on
    domain ``[0, 1]`` at the nominal level give alpha = 1 - 5 * 1 / 9 = 0.444...
    """
    _check_level(level)
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] != len(_domain_array(domain)):
        raise ValueError(f"counts must have shape (n_items, {len(domain)}), got {c.shape}")
    return _result(c, level, domain)


def alpha(ratings: npt.ArrayLike, *, level: str, domain: Domain) -> AlphaResult:
    """Compute Krippendorff's alpha of dense ratings ``(n_annotators, n_items)``, NaN = not rated.

    Krippendorff 2011; equals ``krippendorff.alpha(reliability_data=ratings,
    level_of_measurement=level, value_domain=domain)`` to 1e-9 wherever that is defined. Pass the
    scale's full ``domain`` (in scale order) and the ``level`` explicitly. Undefined, so ``value``
    is ``None`` with a ``reason``: no pairable item; a single value among the pairable values;
    ratio level on a domain with negative codes. Malformed input (not 2-D, a value outside the
    domain, an unknown level) raises ``ValueError``.

    Example (Krippendorff 2011, section A, two observers, binary)::

        >>> alpha(np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
        ...                 [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]), level="nominal", domain=[0, 1]).value
        0.095238...
    """
    _check_level(level)
    return _result(value_counts(ratings, domain), level, domain)


def alpha_long(data: LongRatings, *, level: str, domain: Domain) -> AlphaResult:
    """Compute Krippendorff's alpha of long-format ratings without a dense matrix.

    Same number and undefined cases as ``alpha(data.to_dense(), ...)``; cost is linear in the
    number of ratings plus ``n_items * V^2`` (value counts per item, then the coincidence matrix).
    Example: ``alpha_long(LongRatings.from_dense(r), level="ordinal", domain=d)`` equals
    ``alpha(r, level="ordinal", domain=d)``.
    """
    _check_level(level)
    if not isinstance(data, LongRatings):
        raise ValueError("data must be a LongRatings")
    return _result(value_counts_long(data, domain), level, domain)


# --------------------------------------------------------------------------------------------
# Bootstrap over items

# Resample at most this many (resample x item) weights at once, to bound memory on large data.
_BOOT_CHUNK_CELLS = 2_000_000


def bootstrap_alphas(
    counts: npt.ArrayLike,
    *,
    level: str,
    domain: Domain,
    rng: np.random.Generator,
    n_boot: int = 1000,
) -> FloatArray:
    """Return ``n_boot`` bootstrap alphas (NaN where a resample is undefined).

    Pairable items are drawn with replacement, as many as there are; each resample's coincidence
    matrix is the weighted sum of the per-item contributions (``item_coincidences``), so the
    whole bootstrap is a few matrix products. Example: ``bootstrap_alphas(value_counts(r, d),
    level="ordinal", domain=d, rng=np.random.default_rng(0), n_boot=10).shape == (10,)``.
    """
    _check_level(level)
    o = bootstrap_coincidences(counts, rng=rng, n_boot=n_boot)
    if o is None:
        return np.full(n_boot, np.nan)
    return alpha_from_coincidences(o, level=level, domain=domain)


def bootstrap_coincidences(counts: npt.ArrayLike, *, rng: np.random.Generator,
                           n_boot: int = 1000) -> FloatArray | None:
    """Return the coincidence matrices of ``n_boot`` item resamples, ``(n_boot, V, V)``, or
    ``None`` when no item is pairable.

    What `bootstrap_alphas` computes before the level enters: the resamples depend only on the
    pairable items and ``rng``, so the alphas of every level can be read off one call (the
    results builder does, each level's interval resampling with the same seed). Example:
    ``bootstrap_coincidences([[2, 0], [1, 1]], rng=np.random.default_rng(0), n_boot=3).shape ==
    (3, 2, 2)``.
    """
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    c = np.asarray(counts)
    c = c[c.sum(axis=1) >= 2]
    n_items, size = c.shape
    if n_items == 0:
        return None
    # Items with the same value counts contribute the same coincidences (ten ratings on five
    # values make at most 1 001 patterns, whatever the number of items): a resample's matrix is
    # the patterns' contributions weighted by how many drawn items have each pattern.
    patterns, pattern_of = np.unique(c, axis=0, return_inverse=True)
    pattern_of = pattern_of.reshape(-1).astype(np.int32)  # 4 bytes an item: cache-friendlier
    n_patterns = patterns.shape[0]
    contributions = item_coincidences(patterns).reshape(n_patterns, size * size)
    chunk = max(1, _BOOT_CHUNK_CELLS // n_items)
    out = np.empty((n_boot, size, size))
    for start in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - start)
        drawn = pattern_of[rng.integers(0, n_items, size=(rows, n_items))]
        offsets = (np.arange(rows) * n_patterns)[:, np.newaxis]
        weights = np.bincount((drawn + offsets).ravel(), minlength=rows * n_patterns)
        out[start : start + rows] = (weights.reshape(rows, n_patterns) @ contributions
                                     ).reshape(rows, size, size)
    return out


def _counts_of(data: npt.ArrayLike | LongRatings, domain: Domain) -> IntArray:
    if isinstance(data, LongRatings):
        return value_counts_long(data, domain)
    return value_counts(data, domain)


def _percentile_ci(
    counts: IntArray,
    level: str,
    domain: Domain,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> tuple[float, float] | None:
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    alphas = bootstrap_alphas(counts, level=level, domain=domain, rng=rng, n_boot=n_boot)
    return _percentiles(alphas, n_boot, confidence)


def _percentiles(alphas: FloatArray, n_boot: int, confidence: float
                 ) -> tuple[float, float] | None:
    """The interval of the defined resampled alphas; None when fewer than half are defined."""
    defined = alphas[~np.isnan(alphas)]
    if defined.size * 2 < n_boot:
        return None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    data: npt.ArrayLike | LongRatings,
    *,
    level: str,
    domain: Domain,
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Return the percentile bootstrap interval of alpha over items, or ``None``.

    Resamples the pairable items with replacement ``n_boot`` times (seeded by ``rng``) and takes
    the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (linear interpolation) of
    the defined resampled alphas. Resamples whose alpha is undefined (e.g. all drawn items
    unanimous on one value) are dropped. ``None`` when alpha itself is undefined or when fewer
    than half of the resamples are defined (the interval would mean little). Example:
    ``bootstrap_ci(r, level="ordinal", domain=range(8), rng=np.random.default_rng(1))``.
    """
    _check_level(level)
    counts = _counts_of(data, domain)
    if _result(counts, level, domain).value is None:
        return None
    return _percentile_ci(counts, level, domain, rng, n_boot, confidence)


def alpha_with_ci(
    data: npt.ArrayLike | LongRatings,
    *,
    level: str,
    domain: Domain,
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> AlphaResult:
    """Compute alpha (dense or long) with its bootstrap interval in ``ci95``.

    Same interval as ``bootstrap_ci`` with the same ``rng`` state; ``ci95`` is ``None`` whenever
    that returns ``None``. Example: ``alpha_with_ci(r, level="nominal", domain=[0, 1],
    rng=np.random.default_rng(7)).ci95``.
    """
    _check_level(level)
    counts = _counts_of(data, domain)
    result = _result(counts, level, domain)
    if result.value is None:
        return result
    ci = _percentile_ci(counts, level, domain, rng, n_boot, confidence)
    return AlphaResult(result.value, None, result.n_items, result.n_pairable_values, ci, level)


def alpha_levels_with_ci(
    data: npt.ArrayLike | LongRatings,
    *,
    levels: Sequence[str],
    domain: Domain,
    seed: int,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> dict[str, AlphaResult]:
    """Compute alpha with its bootstrap interval at each of ``levels``, resampling once.

    Equals ``{level: alpha_with_ci(data, level=level, domain=domain,
    rng=np.random.default_rng(seed), n_boot=n_boot, confidence=confidence)}`` bit for bit: every
    level's interval draws the same resamples from a fresh generator of ``seed``, so their
    coincidence matrices (`bootstrap_coincidences`) are computed once and each level reads its
    alphas off them. Example: ``alpha_levels_with_ci(r, levels=["nominal", "ordinal"],
    domain=range(8), seed=0)["ordinal"].ci95``.
    """
    for level in levels:
        _check_level(level)
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    counts = _counts_of(data, domain)
    drawn: list[FloatArray | None] = []  # computed once, when a level first needs it
    out: dict[str, AlphaResult] = {}
    for level in levels:
        result = _result(counts, level, domain)
        if result.value is None:
            out[level] = result
            continue
        if not drawn:
            drawn.append(bootstrap_coincidences(counts, rng=np.random.default_rng(seed),
                                                n_boot=n_boot))
        o = drawn[0]
        alphas = (np.full(n_boot, np.nan) if o is None
                  else alpha_from_coincidences(o, level=level, domain=domain))
        ci = _percentiles(alphas, n_boot, confidence)
        out[level] = AlphaResult(result.value, None, result.n_items, result.n_pairable_values,
                                 ci, level)
    return out
