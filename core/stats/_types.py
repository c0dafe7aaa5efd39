"""Shared input types of the pure statistics package (no Django, ever).

Dense ratings are a float array of shape ``(n_annotators, n_items)`` with ``np.nan`` for "not
rated", exactly what ``krippendorff.alpha(reliability_data=...)`` takes. Large studies use the
long format below, which never materialises that matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

# Array aliases of the annotations: the dtype is what the functions return or store.
FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
# A scale's full value domain in scale order, as given or as already converted to an array.
Domain: TypeAlias = Sequence[float] | FloatArray


def _as_index_array(name: str, values: object) -> IntArray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        # Accept float arrays holding whole numbers (e.g. from a CSV reader), nothing else.
        if (
            not np.issubdtype(array.dtype, np.floating)
            or not np.all(np.isfinite(array))
            or (not np.all(array == np.round(array)))
        ):
            raise ValueError(f"{name} must hold integer indices")
    return array.astype(np.int64, copy=False)


@dataclass(frozen=True, eq=False)
class LongRatings:
    """Hold ratings in long format: one row per (item, annotator) first presentation.

    ``item[r]`` and ``annotator[r]`` are 0-based indices (below ``n_items`` / ``n_annotators``),
    ``value[r]`` the answer (``np.nan`` = blank, ignored). An (item, annotator) pair may appear at
    most once: the repeat of a duplicated item belongs to duplicate consistency, not here.

    Example: annotators 0 and 1 both rate item 0 (values 3 and 4), annotator 1 rates item 1::

        LongRatings(item=np.array([0, 0, 1]), annotator=np.array([0, 1, 1]),
                    value=np.array([3.0, 4.0, 2.0]), n_items=2, n_annotators=2)
    """

    item: IntArray
    annotator: IntArray
    value: FloatArray
    n_items: int
    n_annotators: int

    def __post_init__(self) -> None:
        item = _as_index_array("item", self.item)
        annotator = _as_index_array("annotator", self.annotator)
        value = np.asarray(self.value, dtype=np.float64)
        if value.ndim != 1:
            raise ValueError(f"value must be a 1-D array, got shape {value.shape}")
        if not (item.shape == annotator.shape == value.shape):
            raise ValueError(
                "item, annotator and value must have the same length, got "
                f"{item.size}, {annotator.size} and {value.size}"
            )
        n_items, n_annotators = int(self.n_items), int(self.n_annotators)
        if n_items < 0 or n_annotators < 0:
            raise ValueError("n_items and n_annotators must be non-negative")
        if item.size:
            if item.min() < 0 or item.max() >= n_items:
                raise ValueError(f"item indices must lie in [0, {n_items})")
            if annotator.min() < 0 or annotator.max() >= n_annotators:
                raise ValueError(f"annotator indices must lie in [0, {n_annotators})")
            if np.isinf(value).any():
                raise ValueError("value must not contain infinities (use np.nan for blanks)")
            # A repeated (item, annotator) pair would be counted twice as two "coders".
            keys = np.sort(item * max(n_annotators, 1) + annotator)
            repeated = np.flatnonzero(keys[1:] == keys[:-1])
            if repeated.size:
                key = int(keys[repeated[0]])
                raise ValueError(
                    f"(item, annotator) pair ({key // max(n_annotators, 1)}, "
                    f"{key % max(n_annotators, 1)}) appears more than once; keep only the "
                    "first presentation"
                )
        object.__setattr__(self, "item", item)
        object.__setattr__(self, "annotator", annotator)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "n_items", n_items)
        object.__setattr__(self, "n_annotators", n_annotators)

    @classmethod
    def from_dense(cls, ratings: npt.ArrayLike) -> LongRatings:
        """Convert a dense ``(n_annotators, n_items)`` array (``np.nan`` = not rated).

        Example: ``LongRatings.from_dense(np.array([[1.0, np.nan], [2.0, 2.0]]))`` has rows
        (item 0, annotator 0, 1.0), (item 0, annotator 1, 2.0), (item 1, annotator 1, 2.0).
        """
        dense = np.asarray(ratings, dtype=np.float64)
        if dense.ndim != 2:
            raise ValueError(f"ratings must be 2-D (n_annotators, n_items), got {dense.shape}")
        annotator, item = np.nonzero(~np.isnan(dense))
        order = np.lexsort((annotator, item))
        return cls(
            item=item[order],
            annotator=annotator[order],
            value=dense[annotator[order], item[order]],
            n_items=dense.shape[1],
            n_annotators=dense.shape[0],
        )

    def to_dense(self) -> FloatArray:
        """Return the dense ``(n_annotators, n_items)`` array (small data and tests only)."""
        dense = np.full((self.n_annotators, self.n_items), np.nan)
        dense[self.annotator, self.item] = self.value
        return dense
