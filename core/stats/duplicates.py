"""Duplicate consistency: how an annotator answers an item shown twice (Borovikova et al. 2022).

Borovikova et al. (2022, §3.4) show three items twice "in order to detect inconsistent annotators"
and conclude from them (§4) that "no one answered at random". Concord makes it a per-annotator,
per-scale record: the number of repeated pairs, the share answered identically (exact agreement)
and the mean absolute difference between the two answers. For a reduction, reduce both answers
first (``scales.reduce_values``) and call the same functions.

A pair counts only when both presentations were answered: a blank (``np.nan``) on either side
drops the pair. With no pair left, both numbers are ``None`` with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from core.stats._types import FloatArray

__all__ = [
    "DuplicateResult",
    "duplicate_consistency",
    "duplicate_consistency_long",
    "duplicate_pairs_long",
]

REASON_NO_PAIRS = "no repeated pair answered on both presentations"


@dataclass(frozen=True)
class DuplicateResult:
    """Hold one annotator's duplicate consistency on one scale.

    ``exact_agreement`` is a share in [0, 1]; ``mean_abs_diff`` is in scale units. Both are
    ``None`` exactly when ``reason`` is set (zero pairs).
    """

    pairs: int
    exact_agreement: float | None
    mean_abs_diff: float | None
    reason: str | None


def duplicate_consistency(first: npt.ArrayLike, repeat: npt.ArrayLike) -> DuplicateResult:
    """Compare one annotator's first and repeated answers, pair by pair.

    ``first[i]`` and ``repeat[i]`` are the two answers to the i-th duplicated item (``np.nan`` =
    blank, which drops the pair). Exact agreement = share of pairs with equal answers; mean absolute
    difference = mean of ``|first - repeat|`` (Borovikova et al. 2022, §3.4;
    docs/statistics/duplicates.md). Example:
    ``duplicate_consistency(np.array([7, 3, 5, np.nan]), np.array([7, 4, 3, 2]))`` has 3 pairs,
    exact agreement 1/3 and mean absolute difference (0 + 1 + 2) / 3 = 1.0.
    """
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(repeat, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"first and repeat must be 1-D arrays of the same length, got {a.shape} and {b.shape}"
        )
    both = ~np.isnan(a) & ~np.isnan(b)
    pairs = int(both.sum())
    if pairs == 0:
        return DuplicateResult(0, None, None, REASON_NO_PAIRS)
    a, b = a[both], b[both]
    return DuplicateResult(
        pairs=pairs,
        exact_agreement=float(np.mean(a == b)),
        mean_abs_diff=float(np.mean(np.abs(a - b))),
        reason=None,
    )


def duplicate_pairs_long(
    annotator: npt.ArrayLike, item: npt.ArrayLike, presentation: npt.ArrayLike, value: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray, FloatArray, FloatArray]:
    """Pair each annotator's first and repeated answers from long-format rows.

    Rows are (annotator, item, presentation, value); ``presentation`` orders the showings of an
    item to an annotator (e.g. 1 and 2, or the positions in their sequence): the smaller is the
    first. Returns ``(annotator, item, first_value, repeat_value)`` for every (annotator, item)
    shown at least twice, sorted by annotator then item; blanks are kept as ``np.nan``. Only the
    first two showings pair (the smallest two presentations); a third or later enters no pair.
    Two rows with the same presentation are malformed (``ValueError``). Example: rows
    ``(0, 5, 1, 7.0)``, ``(0, 5, 9, 6.0)``, ``(0, 5, 12, 1.0)``, ``(0, 6, 2, 3.0)`` give one pair:
    annotator 0, item 5, first 7.0, repeat 6.0.
    """
    ann = np.asarray(annotator)
    itm = np.asarray(item)
    pres = np.asarray(presentation)
    val = np.asarray(value, dtype=np.float64)
    if not (ann.ndim == itm.ndim == pres.ndim == val.ndim == 1):
        raise ValueError("annotator, item, presentation and value must be 1-D arrays")
    if not (ann.shape == itm.shape == pres.shape == val.shape):
        raise ValueError("annotator, item, presentation and value must have the same length")
    order = np.lexsort((pres, itm, ann))
    ann, itm, pres, val = ann[order], itm[order], pres[order], val[order]
    same_group = (ann[1:] == ann[:-1]) & (itm[1:] == itm[:-1])
    if (same_group & (pres[1:] == pres[:-1])).any():
        row = int(np.flatnonzero(same_group & (pres[1:] == pres[:-1]))[0])
        raise ValueError(
            f"annotator {ann[row]} has two rows for item {itm[row]} with the same "
            f"presentation {pres[row]}"
        )
    # A pair is a group's first row and the next: a third or later showing (an imported file
    # may hold one) enters no pair, so a study without one pairs as it always did.
    opens_group = np.r_[True, ~same_group][:-1]
    starts = np.flatnonzero(same_group & opens_group)
    return ann[starts], itm[starts], val[starts], val[starts + 1]


def duplicate_consistency_long(
    annotator: npt.ArrayLike,
    item: npt.ArrayLike,
    presentation: npt.ArrayLike,
    value: npt.ArrayLike,
    *,
    n_annotators: int | None = None,
) -> dict[int, DuplicateResult]:
    """Compute duplicate consistency for every annotator from long-format rows.

    Rows and pairing as in ``duplicate_pairs_long``. Returns ``{annotator: DuplicateResult}``
    in annotator order, for ``range(n_annotators)`` when given (annotators without a repeated
    pair get ``None`` + reason), else for the annotators present in the rows. Example: rows
    ``(0, 5, 1, 7)``, ``(0, 5, 2, 6)``, ``(1, 5, 1, 2)`` give ``{0: DuplicateResult(1, 0.0,
    1.0, None), 1: DuplicateResult(0, None, None, reason)}``.
    """
    ann, _, first, repeat = duplicate_pairs_long(annotator, item, presentation, value)
    if n_annotators is None:
        annotators = [int(a) for a in np.unique(np.asarray(annotator))]
    else:
        annotators = list(range(int(n_annotators)))
        present = np.asarray(annotator)
        if present.size and (present.min() < 0 or present.max() >= n_annotators):
            raise ValueError(f"annotator indices must lie in [0, {n_annotators})")
    return {a: duplicate_consistency(first[ann == a], repeat[ann == a]) for a in annotators}
