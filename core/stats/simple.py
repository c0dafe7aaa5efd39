"""*Simple* items: at most T distinct answers among all annotators (Borovikova et al. 2022, §4).

Borovikova et al. (2022, §4) "eliminated the questions that contained more than three different
answers from the annotators and computed the results only for the remaining *simple* questions".
Concord fixes the details (docs/statistics/alpha.md): the count is taken on the RAW scale (T = 3 by
default), and the resulting set is computed once and reused for every reduction, every annotator
subset and every outlier removal (so removing an annotator never changes which items are simple).

An item nobody answered has zero distinct answers; we call it NOT simple: there is nothing to
agree on, it is not pairable for alpha anyway, and listing it among the "simple" items in a
results document would mislead. Blank answers (``np.nan``) are missing, never a distinct answer.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from core.stats._types import BoolArray, IntArray, LongRatings

__all__ = [
    "distinct_answer_counts",
    "distinct_answer_counts_long",
    "simple_items",
    "simple_items_long",
]


def _check_threshold(threshold: int) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, int | np.integer):
        raise ValueError(f"threshold must be an integer, got {threshold!r}")
    if threshold < 1:
        raise ValueError(f"threshold must be at least 1, got {threshold}")
    return int(threshold)


def distinct_answer_counts(ratings_raw: npt.ArrayLike) -> IntArray:
    """Count the distinct non-blank answers per item of dense ``(n_annotators, n_items)`` data.

    Example: ``distinct_answer_counts(np.array([[1, 2, np.nan], [1, 3, np.nan]]))`` gives
    ``array([1, 2, 0])``.
    """
    dense = np.asarray(ratings_raw, dtype=np.float64)
    if dense.ndim != 2:
        raise ValueError(f"ratings must be 2-D (n_annotators, n_items), got shape {dense.shape}")
    if dense.shape[0] == 0:
        return np.zeros(dense.shape[1], dtype=np.int64)
    ordered = np.sort(dense, axis=0)  # NaN sorts last in every column
    answered = ~np.isnan(ordered)
    changes = (ordered[1:] != ordered[:-1]) & answered[1:]
    counts: IntArray = answered[0].astype(np.int64) + changes.sum(axis=0)
    return counts


def distinct_answer_counts_long(data: LongRatings) -> IntArray:
    """Count the distinct non-blank answers per item of long-format data: shape ``(n_items,)``.

    Example: items ``[0, 0, 0, 1]`` with values ``[4, 4, 5, 2]`` give ``array([2, 1])``.
    """
    answered = ~np.isnan(data.value)
    values, codes = np.unique(data.value[answered], return_inverse=True)
    keys = np.unique(data.item[answered] * max(values.size, 1) + codes)
    return np.bincount(keys // max(values.size, 1), minlength=data.n_items)


def simple_items(ratings_raw: npt.ArrayLike, *, threshold: int = 3) -> BoolArray:
    """Return the boolean mask of *simple* items: 1 to ``threshold`` distinct raw answers.

    Borovikova et al. 2022, §4 (T = 3). Pass the RAW ratings, dense ``(n_annotators, n_items)``,
    ``np.nan`` = not rated; compute the mask once and reuse it for every reduction and annotator
    subset. Items with no answer are not simple. Example::

        >>> simple_items(np.array([[0, 7, 1, np.nan],
        ...                        [1, 5, 1, np.nan],
        ...                        [2, 3, 1, np.nan],
        ...                        [2, 1, 1, np.nan]]))
        array([ True, False,  True, False])
    """
    limit = _check_threshold(threshold)
    counts = distinct_answer_counts(ratings_raw)
    return (counts >= 1) & (counts <= limit)


def simple_items_long(data: LongRatings, *, threshold: int = 3) -> BoolArray:
    """Return the mask of *simple* items (``(n_items,)``) from long-format RAW ratings.

    Same definition as ``simple_items``; equals ``simple_items(data.to_dense(), ...)``. Example:
    items ``[0, 0, 0, 0, 1]`` with values ``[0, 1, 2, 3, 5]`` give ``array([False, True])``.
    """
    limit = _check_threshold(threshold)
    counts = distinct_answer_counts_long(data)
    return (counts >= 1) & (counts <= limit)
