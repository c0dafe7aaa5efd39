"""The exhaustive trust engine compiled with numba: every subset's alpha from exact counts.

Pure numpy + numba, no Django.  Same contract as ``core.stats._subsets.enumerated_alphas`` (the
numpy engine, which stays the reference and the fallback when numba is not installed): the
alphas of subsets ``start..stop-1`` in the documented enumeration order (increasing bit mask,
masks with at least two members), ``nan`` where alpha is undefined.

How: the masks of the range are walked in increasing order, keeping the per-item value counts
``n[i, c]`` and pairable counts ``m[i]`` of the current subset.  Going from one mask to the next
flips the trailing ones and one zero (two flips on average, like a binary counter), and each flip
adds or removes one annotator's ratings: integer updates, so the counts are exact whatever the
path.  Each subset's alpha is then computed afresh from those counts, with the formulas of
``core.stats._subsets`` (Krippendorff 2011, §C–D) and sums in a fixed order over items and values,
so an alpha depends only on its subset: a chunk computes the same bits as the whole range, and the
distributed trust merge equals the single-process result bit for bit.

Per subset that is O(items × values) additions and no allocation, against the numpy engine's
batched matrix products: measured ~5× faster at k = 12–20 (``python -m bench.trust``,
docs/benchmarks.md).  The first call in a process compiles the kernel (about a second; numba
caches the machine code beside this file when it can write there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from core.stats._types import FloatArray

try:  # numba is optional: without it the numpy engine computes the same alphas
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None
# Level codes for the kernel (a compiled function takes numbers, not strings).
_LEVEL_CODES = {"nominal": 0, "ordinal": 1, "interval": 2, "ratio": 3}


def _flip(n: Any, m: Any, nv: Any, codes: Any, a: int, step: int, n_items: int,
          n_val: int) -> None:
    # Add (step 1) or remove (-1) annotator a's ratings, keeping nv[c] = Σ_i [m_i ≥ 2] n[i, c]:
    # an item becoming pairable (m 1 → 2) brings all its counts, one ceasing to be takes them.
    for i in range(n_items):
        c = codes[a, i]
        if c >= 0:
            before = m[i]
            n[c, i] += step
            m[i] += step
            if before >= 2 and m[i] >= 2:
                nv[c] += step
            elif m[i] >= 2:  # 1 → 2
                for e in range(n_val):
                    nv[e] += n[e, i]
            elif before >= 2:  # 2 → 1
                for e in range(n_val):
                    nv[e] -= n[e, i]
                nv[c] += step  # (step is -1) the removed rating was counted in nv too


def _alpha(n: Any, m: Any, values: Any, distance: Any, level: int, n_items: int, n_val: int,
           nv: Any, r: Any, s1: Any, s2: Any, inverse: Any) -> float:
    distinct = 0
    total = 0.0
    for c in range(n_val):
        if nv[c] > 0:
            distinct += 1
        total += nv[c]
    if distinct < 2:
        return np.nan
    d_o = 0.0
    d_e = 0.0
    if level == 1 or level == 2:  # ordinal (twice the mid-ranks) or interval (the values)
        below = 0.0
        for c in range(n_val):
            r[c] = 2.0 * below + nv[c] if level == 1 else values[c]
            below += nv[c]
        # s1_i = Σ_c n_ic r_c and s2_i = Σ_c n_ic r_c², value by value over all items: the inner
        # loops run along contiguous memory without a dependency between items (vectorised).
        for i in range(n_items):
            s1[i] = 0.0
            s2[i] = 0.0
        for c in range(n_val):
            rc = r[c]
            rc2 = rc * rc
            row = n[c]
            for i in range(n_items):
                s1[i] += row[i] * rc
                s2[i] += row[i] * rc2
        for i in range(n_items):
            mi = m[i]
            if mi >= 2:
                d_o += (mi * s2[i] - s1[i] * s1[i]) * inverse[mi]
        a1 = 0.0
        a2 = 0.0
        for c in range(n_val):
            a1 += nv[c] * r[c]
            a2 += nv[c] * r[c] * r[c]
        d_e = total * a2 - a1 * a1
    else:  # nominal and ratio: q_i = n_iᵀ d n_i with a fixed distance
        for i in range(n_items):
            mi = m[i]
            if mi >= 2:
                q = 0.0
                if level == 0:  # d = 1 - δ: q = m² - Σ n²
                    q = float(mi) * mi
                    for c in range(n_val):
                        q -= n[c, i] * n[c, i]
                else:
                    for c in range(n_val):
                        if n[c, i] > 0:
                            for e in range(n_val):
                                q += n[c, i] * distance[c, e] * n[e, i]
                d_o += q * inverse[mi]
        for c in range(n_val):
            for e in range(n_val):
                d_e += nv[c] * distance[c, e] * nv[e]
    return 1.0 - (total - 1.0) * d_o / d_e


def _walk(codes: Any, values: Any, distance: Any, level: int, lo: int, hi: int,
          out: Any) -> None:
    k, n_items = codes.shape
    n_val = values.shape[0]
    n = np.zeros((n_val, n_items))  # integer-valued floats: exact, no conversion per use
    m = np.zeros(n_items, dtype=np.int64)
    nv = np.zeros(n_val)
    r = np.zeros(n_val)
    s1 = np.zeros(n_items)
    s2 = np.zeros(n_items)
    inverse = np.zeros(k + 1)  # 1/(m - 1) for m ≥ 2
    for count in range(2, k + 1):
        inverse[count] = 1.0 / (count - 1.0)
    members = 0
    for a in range(k):
        if (lo >> a) & 1:
            _flip(n, m, nv, codes, a, 1, n_items, n_val)
            members += 1
    j = 0
    mask = lo
    while True:
        if members >= 2:
            out[j] = _alpha(n, m, values, distance, level, n_items, n_val, nv, r, s1, s2,
                            inverse)
            j += 1
        if mask == hi:
            break
        following = mask + 1
        changed = mask ^ following
        a = 0
        while changed:
            if changed & 1:
                if (following >> a) & 1:
                    _flip(n, m, nv, codes, a, 1, n_items, n_val)
                    members += 1
                else:
                    _flip(n, m, nv, codes, a, -1, n_items, n_val)
                    members -= 1
            changed >>= 1
            a += 1
        mask = following


if numba is not None:
    _flip = numba.njit(cache=True, nogil=True)(_flip)
    _alpha = numba.njit(cache=True, nogil=True)(_alpha)
    _walk = numba.njit(cache=True, nogil=True)(_walk)


def codes_of(onehot: FloatArray) -> npt.NDArray[np.int32]:
    """The (k, items) value codes of a one-hot (k, items, values) array, -1 where not rated."""
    if onehot.shape[-1] == 0:  # nothing rated at all
        return np.full(onehot.shape[:-1], -1, dtype=np.int32)
    rated = onehot.any(axis=-1)
    codes: npt.NDArray[np.int32] = np.where(rated, onehot.argmax(axis=-1), -1).astype(np.int32)
    return codes


def walk_alphas(onehot: FloatArray, values: FloatArray, distance: FloatArray, level: str,
                lo: int, hi: int, count: int) -> FloatArray:
    """Alphas of the ``count`` subsets with at least two members among masks ``lo..hi``."""
    out = np.full(count, np.nan)
    _walk(codes_of(onehot), np.ascontiguousarray(values, dtype=float),
          np.ascontiguousarray(distance, dtype=float), _LEVEL_CODES[level], lo, hi, out)
    return out
