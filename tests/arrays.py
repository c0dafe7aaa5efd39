"""Test helpers for study arrays."""

from __future__ import annotations

import numpy as np


def dense_of(data, values=None) -> np.ndarray:
    """The (annotators × items) matrix of first-presentation answers, as krippendorff takes it."""
    out = np.full((data.n_annotators, data.n_items), np.nan)
    out[data.annotator, data.item] = data.value if values is None else values
    return out
