"""Batched Krippendorff's alpha over many annotator subsets (the engine behind trust coefficients).

Pure numpy, no Django. Ratings are a dense ``(k, n_items)`` float array as the ``krippendorff``
package takes them (``np.nan`` = not rated); a subset of annotators is a bit mask (bit ``a`` set =
annotator ``a`` is in the subset).

Every alpha is the one ``krippendorff.alpha(ratings[members], value_domain=domain,
level_of_measurement=level)`` returns (to ~1e-12), or ``nan`` where that alpha is undefined (no
pairable item, a single distinct value among the pairable values, or ``ratio`` with negative codes).

Derivation (Krippendorff 2011, "Computing Krippendorff's alpha-reliability", §C–D): for a subset s,
item i and value c let ``n[s,i,c]`` be the number of members rating i with c, ``m[s,i] = Σ_c n``
and ``u[s,i] = 1/(m-1)`` if ``m ≥ 2`` (pairable) else 0. With ``d`` the level's distance matrix
(zero diagonal)::

    D_o = Σ_i u_i · n_iᵀ d n_i          (= Σ o∘d, o the coincidence matrix)
    n_v = Σ_i [m_i ≥ 2] n_i             (pooled pairable value counts, N = Σ n_v)
    D_e = n_vᵀ d n_v / (N - 1)          (= Σ e∘d)
    alpha = 1 - (N - 1) · D_o / (n_vᵀ d n_v)

``interval``: ``d = (v_c - v_c')²`` so ``n_iᵀ d n_i = 2 (m s2 - s1²)`` with ``s1 = Σ_c n v``,
``s2 = Σ_c n v²``, which are linear in membership.  ``ordinal``: krippendorff's ordinal distance
``(Σ_{g=c..c'} n_v,g - (n_v,c + n_v,c')/2)²`` equals ``(r_c - r_c')²`` with the mid-ranks
``r_c = Σ_{g<c} n_v,g + n_v,c / 2`` of the subset's own pooled pairable counts, so ordinal alpha
is interval alpha on the values ``r`` (values with zero count contribute nothing either way).
``nominal``/``ratio``: ``n_iᵀ d n_i`` with a fixed ``d``.

The exhaustive engine splits the annotators into a low half (bits ``0..L-1``) and a high half;
counts of a subset are ``n_low[l] + n_high[h]``, so every bilinear term becomes a small batched
matrix product.  All matrix products are on integer-valued float64 (exact, hence independent of
BLAS blocking); the fractional weights ``u`` only meet elementwise operations and row sums.
Subsets are computed in fixed, aligned blocks of masks, so an alpha never depends on which chunk
it was requested in (distributed chunks merge to the single-process result bit for bit).

Enumeration order: the subsets of ``k`` annotators with at least two members, in increasing order
of their bit mask (``0b11, 0b101, 0b110, 0b111, 0b1001, …``); subset index ``j`` is the ``j``-th
such mask.  ``n_subsets(k) = 2**k - k - 1``.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from core.stats._types import BoolArray, Domain, FloatArray
from core.stats.scales import LEVELS

# Subsets per block of the exhaustive engine (measured best): large enough to amortise numpy call
# overhead, small enough that the reused workspace stays cache-friendly and cheap to first-touch.
_BLOCK_SUBSETS = 1024
# Workspaces up to this size stay allocated (per thread) for the next call of the same shape.
_CACHED_WORKSPACE_BYTES = 16 * 2**20
_CACHE = threading.local()
# Peak memory guard for the generic engine's (subsets × items × values) count tensor.
_GENERIC_CHUNK_ELEMENTS = 2_000_000


def _openblas() -> tuple[Callable[[], int], Callable[[int], object]] | None:
    # numpy's wheel bundles OpenBLAS as numpy.libs/libscipy_openblas64_*.so; CDLL on the same path
    # returns the already-loaded library.  Anything unexpected → None (the guard becomes a no-op).
    try:
        paths = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*"))
        lib = ctypes.CDLL(paths[0])
        return lib.scipy_openblas_get_num_threads64_, lib.scipy_openblas_set_num_threads64_
    except (IndexError, OSError, AttributeError):
        return None


_OPENBLAS = _openblas()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block's many small matrix products on one BLAS thread, then restore the setting.

    The products are too small to gain from OpenBLAS threads, and on a busy machine its spinning
    worker threads made the exhaustive k = 20 run 2–10× slower (measured).  This is what
    ``threadpoolctl`` does, in the few lines we need; it affects the whole process meanwhile.
    """
    if _OPENBLAS is None:
        yield
        return
    get, set_ = _OPENBLAS
    before = get()
    set_(1)
    try:
        yield
    finally:
        set_(before)


def n_subsets(k: int) -> int:
    """Return the number of subsets of ``k`` annotators with at least two members."""
    return (1 << k) - k - 1 if k >= 2 else 0


def _index_of_mask(mask: int) -> int:
    # Masks below `mask` that are excluded: 0 and the powers of two smaller than it.
    return mask - 1 - (mask - 1).bit_length()


def mask_at(index: int, k: int) -> int:
    """Return the bit mask of subset ``index`` in the documented enumeration order."""
    if not 0 <= index < n_subsets(k):
        raise ValueError(f"subset index {index} out of range for k={k}")
    mask = index + 2
    while mask.bit_count() < 2 or _index_of_mask(mask) < index:
        mask += 1
    return mask


def enumerate_masks(k: int, start: int = 0, stop: int | None = None) -> npt.NDArray[np.uint64]:
    """Return the bit masks (uint64) of subsets ``start..stop-1`` in enumeration order."""
    total = n_subsets(k)
    stop = total if stop is None else stop
    if not 0 <= start <= stop <= total:
        raise ValueError(f"subset range [{start}, {stop}) out of [0, {total}) for k={k}")
    if start == stop:
        return np.zeros(0, dtype=np.uint64)
    lo, hi = mask_at(start, k), mask_at(stop - 1, k)
    masks = np.arange(lo, hi + 1, dtype=np.uint64)
    return masks[np.bitwise_count(masks) >= 2]


@dataclass(frozen=True)
class Prepared:
    """Ratings validated and one-hot encoded on the observed values of the domain."""

    k: int
    n_items: int
    level: str
    onehot: FloatArray  # (k, n_items, V) float64, V = observed domain values in domain order
    values: FloatArray  # (V,) the observed domain values
    distance: FloatArray  # (V, V) fixed distance matrix (unused for ordinal)
    undefined_reason: str | None  # set when every subset's alpha is undefined


def prepare(ratings: npt.ArrayLike, *, level: str, domain: Domain) -> Prepared:
    """Validate ``ratings`` (k × items, nan = missing) against ``domain`` and encode them."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise ValueError(
            f"ratings must be a 2-D (annotators × items) array, got shape {data.shape}"
        )
    dom = np.asarray(domain, dtype=float)
    if dom.ndim != 1 or dom.size == 0 or np.isnan(dom).any():
        raise ValueError("domain must be a non-empty 1-D sequence of numbers")
    if np.unique(dom).size != dom.size:
        raise ValueError("domain values must be distinct")
    if level != "nominal" and np.any(np.diff(dom) <= 0):
        raise ValueError(f"domain must be in increasing order for the {level} level")
    present = ~np.isnan(data)
    order = np.argsort(dom, kind="stable")
    pos = np.searchsorted(dom[order], data[present]).clip(0, dom.size - 1)
    codes = order[pos]
    bad = dom[codes] != data[present]
    if bad.any():
        raise ValueError(
            f"ratings contain values outside the domain: {sorted(set(data[present][bad]))[:5]}"
        )
    observed = np.unique(codes)
    remap = np.full(dom.size, -1)
    remap[observed] = np.arange(observed.size)
    k, n_items = data.shape
    onehot = np.zeros((k, n_items, observed.size))
    rows, cols = np.nonzero(present)
    onehot[rows, cols, remap[codes]] = 1.0
    values = dom[observed]
    reason = None
    if dom.size <= 1:
        reason = "the value domain has a single value"
    elif level == "ratio" and (dom < 0).any():
        reason = "ratio alpha is undefined for negative codes"
    return Prepared(k, n_items, level, onehot, values, _distance(level, values), reason)


def _distance(level: str, values: FloatArray) -> FloatArray:
    a, b = values[:, None], values[None, :]
    if level == "nominal":
        different: FloatArray = (a != b).astype(float)
        return different
    if level == "ratio":
        total = a + b
        return (
            np.divide(a - b, total, out=np.zeros(np.broadcast(a, b).shape), where=total != 0) ** 2
        )
    return (a - b) ** 2  # interval (ordinal distances depend on the subset, see module doc)


def _finish(n_v: FloatArray, d_o: FloatArray, d_e: FloatArray) -> FloatArray:
    """Return alpha = 1 - (N-1)·D_o/D_e, nan where fewer than two distinct pairable values."""
    defined = np.count_nonzero(n_v > 0, axis=-1) >= 2
    total = n_v.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (total - 1.0) * d_o / d_e
    return np.where(defined, out, np.nan)


def _weights(m: FloatArray, k: int) -> tuple[FloatArray, FloatArray]:
    # Lookup tables on the integer counts m: pairable indicator p and u = 1/(m-1).
    idx = m.astype(np.intp)
    p_tab = (np.arange(k + 1) >= 2).astype(float)
    with np.errstate(divide="ignore"):
        u_tab = np.where(p_tab > 0, 1.0 / (np.arange(k + 1) - 1.0), 0.0)
    return p_tab[idx], u_tab[idx]


def _mid_ranks2(n_v: FloatArray) -> FloatArray:
    # Twice the mid-ranks: 2·Σ_{g<c} n_g + n_c (integer-valued, exact in float64).
    return 2.0 * (np.cumsum(n_v, axis=-1) - n_v) + n_v


# --- generic engine: arbitrary subsets given as a membership matrix ---------------------------


def alphas_for_members(prep: Prepared, members: npt.ArrayLike) -> FloatArray:
    """Return alpha for each row of ``members`` (n_subsets × k booleans); nan where undefined."""
    members = np.asarray(members, dtype=bool)
    out = np.full(members.shape[0], np.nan)
    if prep.undefined_reason is not None or members.shape[0] == 0:
        return out
    n_val = prep.values.size
    flat = prep.onehot.reshape(prep.k, -1)
    step = max(1, _GENERIC_CHUNK_ELEMENTS // max(1, prep.n_items * n_val))
    for lo in range(0, members.shape[0], step):
        sel = members[lo : lo + step].astype(float)
        counts = (sel @ flat).reshape(sel.shape[0], prep.n_items, n_val)
        m = counts.sum(axis=-1)
        p, u = _weights(m, prep.k)
        n_v = np.einsum("si,sic->sc", p, counts)
        if prep.level in ("ordinal", "interval"):
            if prep.level == "ordinal":
                r = _mid_ranks2(n_v)
            else:
                r = np.broadcast_to(prep.values, n_v.shape)
            s1 = np.einsum("sic,sc->si", counts, r)
            s2 = np.einsum("sic,sc->si", counts, r * r)
            d_o = (u * (m * s2 - s1 * s1)).sum(axis=-1)
            total = n_v.sum(axis=-1)
            d_e = total * (n_v * r * r).sum(axis=-1) - (n_v * r).sum(axis=-1) ** 2
        else:
            q = np.einsum("sic,sic->si", counts @ prep.distance, counts)
            d_o = (u * q).sum(axis=-1)
            d_e = np.einsum("sc,sc->s", n_v @ prep.distance, n_v)
        out[lo : lo + step] = _finish(n_v, d_o, d_e)
    return out


def masks_to_members(masks: npt.ArrayLike, k: int) -> BoolArray:
    """Return the (n × k) boolean membership matrix of integer bit masks."""
    masks = np.asarray(masks, dtype=np.uint64)
    return ((masks[:, None] >> np.arange(k, dtype=np.uint64)) & np.uint64(1)).astype(bool)


def subset_alphas(
    ratings: npt.ArrayLike, *, level: str, domain: Domain, masks: npt.ArrayLike
) -> FloatArray:
    """Return Krippendorff's alpha of each annotator subset given as a bit mask (nan = undefined).

    ``masks`` are unsigned integers; bit ``a`` selects row ``a`` of ``ratings``.  Equals
    ``krippendorff.alpha(ratings[members], value_domain=domain, level_of_measurement=level)``.

    >>> r = np.array([[1, 2, 3, np.nan], [1, 2, 3, 3], [1, 2, 2, 3.0]])
    >>> subset_alphas(r, level="nominal", domain=[1, 2, 3], masks=[0b011, 0b111]).round(3).tolist()
    [1.0, 0.75]
    """
    prep = prepare(ratings, level=level, domain=domain)
    masks = np.asarray(masks, dtype=np.uint64).reshape(-1)
    if prep.k < 64 and masks.size and int(masks.max()) >= (1 << prep.k):
        raise ValueError(f"masks select annotators beyond the {prep.k} rows of ratings")
    return alphas_for_members(prep, masks_to_members(masks, prep.k))


# --- exhaustive engine: all masks of a contiguous, aligned range -----------------------------


class _Halves:
    """Per-half precomputation: counts for every mask of the low and of the high annotators."""

    def __init__(self, prep: Prepared, block_subsets: int | None = None) -> None:
        k = prep.k
        self.low_bits = k // 2
        self.prep = prep
        self.low = self._half(prep.onehot[: self.low_bits], prep)
        self.high = self._half(prep.onehot[self.low_bits :], prep)
        self.n_low = 1 << self.low_bits
        n_high = 1 << (k - self.low_bits)
        # A power of two (blocks tile the 2^k masks exactly) and at least 8, because the low-half
        # products batch over the high masks of a block.
        per_block = max(8, (block_subsets or _BLOCK_SUBSETS) // self.n_low)
        self.high_per_block = min(n_high, 1 << (per_block.bit_length() - 1))
        self.block_masks = self.high_per_block * self.n_low
        ks = np.arange(k + 1, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            pairable = ks >= 2
            self.p_tab = pairable.astype(float)
            self.u_tab = np.where(pairable, 1.0 / (ks - 1.0), 0.0)  # 1/(m-1)
            self.um_tab = np.where(pairable, ks / (ks - 1.0), 0.0)  # m/(m-1)

    @staticmethod
    def _half(onehot: FloatArray, prep: Prepared) -> dict[str, npt.NDArray[Any]]:
        bits = onehot.shape[0]
        masks = np.arange(1 << bits, dtype=np.uint64)
        members = masks_to_members(masks, bits).astype(float)
        counts = (members @ onehot.reshape(bits, -1)).reshape(1 << bits, *onehot.shape[1:])
        half = {
            "n": counts,  # (2^bits, I, V)
            "nT": np.ascontiguousarray(counts.transpose(0, 2, 1)),  # (2^bits, V, I)
            "m": counts.sum(axis=-1).astype(np.intp),  # (2^bits, I)
        }
        if prep.level == "interval":
            v = prep.values
            half["s1"], half["s2"] = counts @ v, counts @ (v * v)
        elif prep.level in ("nominal", "ratio"):
            half["nd"] = counts @ prep.distance
            half["q"] = np.einsum("xic,xic->xi", half["nd"], counts)
        return half

    def _workspace(self) -> dict[str, npt.NDArray[Any]]:
        # Reused between blocks, and between calls of the same shape in this thread when small:
        # fresh multi-megabyte arrays cost more in page faults than the arithmetic itself.
        shape = (self.high_per_block, self.n_low, self.prep.n_items)
        cached: dict[str, npt.NDArray[Any]] | None = getattr(_CACHE, "workspace", None)
        if cached is not None and cached["m"].shape == shape:
            return cached
        ws = {
            "m": np.empty(shape, dtype=np.intp),
            "w": np.empty((2, *shape)),  # p and m/(m-1), per (h, l, i)
            "s1": np.empty(shape),
            "tmp": np.empty(shape),
        }
        if 5 * ws["m"].nbytes <= _CACHED_WORKSPACE_BYTES:
            _CACHE.workspace = ws
        return ws

    def block(self, b: int, ws: dict[str, npt.NDArray[Any]] | None = None) -> FloatArray:
        """Return alphas for masks ``b·B .. (b+1)·B - 1`` (nan for masks with < 2 members)."""
        prep, low, high = self.prep, self.low, self.high
        if prep.level in ("nominal", "ratio"):
            return self._block_fixed(b)
        ws = self._workspace() if ws is None else ws
        h0 = b * self.high_per_block
        hs = slice(h0, h0 + self.high_per_block)
        nh, nl = self.high_per_block, self.n_low
        m = ws["m"]
        np.add(high["m"][hs][:, None, :], low["m"][None, :, :], out=m)  # (nh, nl, I)
        w = ws["w"]
        self.p_tab.take(m, out=w[0], mode="clip")
        self.um_tab.take(m, out=w[1], mode="clip")
        # [n_v, A][h,l] = Σ_i [p, m/(m-1)][h,l,i] · (n_low[l,i] + n_high[h,i]), one batched
        # product per half (contraction over items).
        by_high = np.matmul(w.transpose(1, 0, 2, 3), high["n"][hs][:, None])  # (nh, 2, nl, V)
        by_low = np.matmul(w.transpose(2, 0, 1, 3), low["n"][:, None])  # (nl, 2, nh, V)
        sums = by_high + by_low.transpose(2, 1, 0, 3)
        n_v, a = sums[:, 0], sums[:, 1]  # (nh, nl, V)
        s1, tmp = ws["s1"], ws["tmp"]
        if prep.level == "ordinal":
            r = _mid_ranks2(n_v)
            np.matmul(r, high["nT"][hs], out=s1)
            np.matmul(r.transpose(1, 0, 2), low["nT"], out=tmp.transpose(1, 0, 2))
            s1 += tmp
        else:
            r = np.broadcast_to(prep.values, n_v.shape)
            np.add(high["s1"][hs][:, None, :], low["s1"][None, :, :], out=s1)
        # D_o ∝ Σ_i u (m s2 - s1²) = Σ_c r_c² A_c - Σ_i u s1²  (s2 = Σ_c n r²).
        self.u_tab.take(m, out=tmp, mode="clip")
        d_o = np.einsum("hlc,hlc->hl", r * r, a) - np.einsum("hli,hli,hli->hl", s1, s1, tmp)
        total = n_v.sum(axis=-1)
        d_e = total * np.einsum("hlc,hlc->hl", n_v, r * r) - np.einsum("hlc,hlc->hl", n_v, r) ** 2
        return _finish(n_v, d_o, d_e).reshape(nh * nl)

    def _block_fixed(self, b: int) -> FloatArray:
        prep, low, high = self.prep, self.low, self.high
        h0 = b * self.high_per_block
        hs = slice(h0, h0 + self.high_per_block)
        nh, nl = self.high_per_block, self.n_low
        m = high["m"][hs][:, None, :] + low["m"][None, :, :]
        p = self.p_tab.take(m)
        n_v = np.matmul(p.transpose(1, 0, 2), low["n"]).transpose(1, 0, 2)
        n_v += np.matmul(p, high["n"][hs])  # (nh, nl, V)
        # q[h,l,i] = (n_low + n_high)ᵀ d (n_low + n_high); cross[i,l,h] = n_lowᵀ d n_high.
        cross = np.matmul(low["n"].transpose(1, 0, 2), high["nd"][hs].transpose(1, 2, 0))
        q = cross.transpose(2, 1, 0) * 2.0
        q += high["q"][hs][:, None, :]
        q += low["q"][None, :, :]
        d_o = np.einsum("hli,hli->hl", q, self.u_tab.take(m))
        d_e = np.einsum("hlc,hlc->hl", n_v @ prep.distance, n_v)
        return _finish(n_v, d_o, d_e).reshape(nh * nl)


ENGINES = ("compiled", "numpy")


def default_engine() -> str:
    """The engine `enumerated_alphas` uses: the compiled one when numba is installed."""
    from core.stats import _subsets_compiled

    return "compiled" if _subsets_compiled.AVAILABLE else "numpy"


def enumerated_alphas(prep: Prepared, start: int, stop: int,
                      engine: str | None = None) -> FloatArray:
    """Return alphas of subsets ``start..stop-1`` in enumeration order (nan = undefined).

    ``engine``: ``"compiled"`` (numba, ``core.stats._subsets_compiled``: exact counts walked mask
    by mask) or ``"numpy"`` (the batched matrix products below); by default the compiled one
    when numba is installed.  Both give krippendorff's alphas to ~1e-12; each is deterministic
    per subset, so chunks of a range merge to the whole range bit for bit.
    """
    total = n_subsets(prep.k)
    if not 0 <= start <= stop <= total:
        raise ValueError(f"subset range [{start}, {stop}) out of [0, {total}) for k={prep.k}")
    engine = default_engine() if engine is None else engine
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if start == stop:
        return np.zeros(0)
    if prep.undefined_reason is not None:
        return np.full(stop - start, np.nan)
    if engine == "compiled":
        from core.stats import _subsets_compiled

        if not _subsets_compiled.AVAILABLE:
            raise ValueError("the compiled engine needs numba, which is not installed")
        return _subsets_compiled.walk_alphas(prep.onehot, prep.values, prep.distance, prep.level,
                                             mask_at(start, prep.k), mask_at(stop - 1, prep.k),
                                             stop - start)
    halves = _Halves(prep)
    ws = halves._workspace() if prep.level in ("ordinal", "interval") else None
    lo, hi = mask_at(start, prep.k), mask_at(stop - 1, prep.k)
    size = halves.block_masks
    parts = []
    with single_threaded_blas():
        for b in range(lo // size, hi // size + 1):
            first = b * size
            alphas = halves.block(b, ws)
            masks = np.arange(first, first + alphas.size, dtype=np.uint64)
            keep = (np.bitwise_count(masks) >= 2) & (masks >= lo) & (masks <= hi)
            parts.append(alphas[keep])
    return np.concatenate(parts)
