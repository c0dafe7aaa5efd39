"""Rating scales, their reductions and the presets shared by the statistics and the web app.

A *reduction* is a named mapping from raw values to ordered codes (docs/statistics/alpha.md);
every analysis runs on the raw scale and on each reduction. The presets below are plain dicts so
that tests, study definitions and the web app read one definition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from core.stats._types import FloatArray

# The levels of measurement Krippendorff's alpha distinguishes (Krippendorff 2011): the one list,
# which core.settings offers as the choices of every form, command and definition file.
LEVELS = ("nominal", "ordinal", "interval", "ratio")


class ScalePreset(TypedDict):
    """Describe a preset: its raw values in scale order, their labels and named reductions."""

    values: list[float]
    labels: dict[float, str]
    reductions: dict[str, dict[float, float]]


# Borovikova et al. 2022, §3.3 (rubric) and §4 (reductions). Higher = better.
# gravity: how serious the worst error is; importance: on which kind of element it lies.
_LIKERT_0_7_COREF: ScalePreset = {
    "values": [0, 1, 2, 3, 4, 5, 6, 7],
    "labels": {
        0: "significant errors on key elements",
        1: "significant errors on peripheral elements",
        2: "significant errors on peripheral elements",
        3: "insignificant errors on key elements",
        4: "insignificant errors on key elements",
        5: "insignificant errors on peripheral elements",
        6: "insignificant errors on peripheral elements",
        7: "no errors",
    },
    "reductions": {
        "reduced": {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4},
        # 0 significant, 1 insignificant, 2 none
        "gravity": {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 2},
        # 0 key element, 1 peripheral element, 2 none
        "importance": {0: 0, 3: 0, 4: 0, 1: 1, 2: 1, 5: 1, 6: 1, 7: 2},
    },
}

# Solomon et al. 2021, §3: "1 being dissimilar and 5 being identical"; 3 is "neither similar nor
# dissimilar" (same section, sources of noise). The intermediate labels are ours.
_SIMILARITY_1_5: ScalePreset = {
    "values": [1, 2, 3, 4, 5],
    "labels": {
        1: "dissimilar",
        2: "mostly dissimilar",
        3: "neither similar nor dissimilar",
        4: "mostly similar",
        5: "identical",
    },
    "reductions": {
        "reduced": {1: -1, 2: -1, 3: 0, 4: 1, 5: 1},
    },
}

# A five-point quality scale, as SummEval's expert annotators used it for each of its four
# dimensions (Fabbri et al. 2021, §4.2: "on a Likert scale from 1 to 5"); labels are ours.
_LIKERT_1_5: ScalePreset = {
    "values": [1, 2, 3, 4, 5],
    "labels": {1: "very poor", 2: "poor", 3: "fair", 4: "good", 5: "very good"},
    "reductions": {},
}

PRESETS: dict[str, ScalePreset] = {
    "likert-0-7-coref": _LIKERT_0_7_COREF,
    "similarity-1-5": _SIMILARITY_1_5,
    "likert-1-5": _LIKERT_1_5,
}


@dataclass(frozen=True)
class Scale:
    """Describe a scale by its name and ordered full value domain.

    The domain lists every value an answer may take, in scale order, including values nobody
    chose: Krippendorff's alpha needs it (``value_domain``), and so do ordinal distances and
    rescaling. Example: ``Scale("raw", (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0))``.
    """

    name: str
    domain: tuple[float, ...]

    def __post_init__(self) -> None:
        domain = tuple(float(v) for v in self.domain)
        if not domain:
            raise ValueError(f"scale {self.name!r} has an empty domain")
        if not all(np.isfinite(domain)):
            raise ValueError(f"scale {self.name!r} has a non-finite value in its domain")
        if len(set(domain)) != len(domain):
            raise ValueError(f"scale {self.name!r} lists a value twice in its domain")
        object.__setattr__(self, "domain", domain)

    @classmethod
    def from_preset(cls, preset: str, reduction: str | None = None) -> Scale:
        """Build the raw scale (or a named reduction) of a preset in ``PRESETS``.

        Example: ``Scale.from_preset("likert-0-7-coref", "gravity").domain == (0.0, 1.0, 2.0)``.
        """
        try:
            spec = PRESETS[preset]
        except KeyError:
            raise ValueError(f"unknown scale preset {preset!r}") from None
        raw = cls("raw", tuple(spec["values"]))
        if reduction is None:
            return raw
        try:
            mapping = spec["reductions"][reduction]
        except KeyError:
            raise ValueError(f"preset {preset!r} has no reduction {reduction!r}") from None
        return reduced_scale(raw, reduction, mapping)


def _mapping_arrays(mapping: Mapping[float, float]) -> tuple[FloatArray, FloatArray]:
    keys = np.array([float(k) for k in mapping], dtype=np.float64)
    codes = np.array([float(mapping[k]) for k in mapping], dtype=np.float64)
    if np.isnan(keys).any() or np.isnan(codes).any():
        raise ValueError("a reduction cannot map from or to NaN (blanks stay blank)")
    order = np.argsort(keys)
    return keys[order], codes[order]


def reduce_values(values: npt.ArrayLike, mapping: Mapping[float, float]) -> FloatArray:
    """Map raw values to reduction codes; ``np.nan`` (blank) stays ``np.nan``.

    Works on any shape (dense ratings, long-format values). A value absent from the mapping is
    malformed input and raises ``ValueError`` naming it. Mapping: Borovikova et al. 2022, §4.

    Example: ``reduce_values(np.array([0, 2, np.nan, 7]), {0: 0, 1: 1, 2: 1, 7: 4})``
    gives ``array([0., 1., nan, 4.])``.
    """
    array = np.asarray(values, dtype=np.float64)
    keys, codes = _mapping_arrays(mapping)
    present = ~np.isnan(array)
    observed = array[present]
    if keys.size == 0:
        if observed.size:
            raise ValueError(f"value {observed[0]:g} is not in the reduction mapping")
        return array.copy()
    pos = np.clip(np.searchsorted(keys, observed), 0, keys.size - 1)
    known = keys[pos] == observed
    if not known.all():
        missing = sorted(set(observed[~known].tolist()))
        shown = ", ".join(f"{v:g}" for v in missing[:10])
        raise ValueError(f"value(s) {shown} not in the reduction mapping")
    out = np.full(array.shape, np.nan)
    out[present] = codes[pos]
    return out


def reduced_scale(raw: Scale, name: str, mapping: Mapping[float, float]) -> Scale:
    """Return the scale of a reduction: its domain is the sorted distinct codes of ``mapping``.

    Every value of the raw domain must be mapped (``ValueError`` naming the first one that is
    not). Example: ``reduced_scale(Scale("raw", (1, 2, 3, 4, 5)), "reduced",
    {1: -1, 2: -1, 3: 0, 4: 1, 5: 1}).domain == (-1.0, 0.0, 1.0)``.
    """
    keys, codes = _mapping_arrays(mapping)
    missing = [v for v in raw.domain if v not in set(keys.tolist())]
    if missing:
        raise ValueError(
            f"reduction {name!r} does not map value {missing[0]:g} of scale {raw.name!r}"
        )
    used = np.isin(keys, np.asarray(raw.domain))
    return Scale(name, tuple(sorted(set(codes[used].tolist()))))


def rescale01(values: npt.ArrayLike, domain: Sequence[float]) -> FloatArray:
    """Rescale values to [0, 1] by the domain's extremes: ``(v - min) / (max - min)``.

    Used for human-vs-metric gaps (Borovikova et al. 2022, §4, table 2). ``np.nan`` stays
    ``np.nan``; values need not be domain values (means are fine). Example:
    ``rescale01(np.array([0, 3.5, 7]), range(8))`` gives ``array([0. , 0.5, 1. ])``.
    """
    bounds = np.asarray(list(domain), dtype=np.float64)
    if bounds.size == 0 or not np.all(np.isfinite(bounds)):
        raise ValueError("domain must be a non-empty sequence of finite values")
    low, high = bounds.min(), bounds.max()
    if high == low:
        raise ValueError("cannot rescale on a domain with a single value")
    rescaled: FloatArray = (np.asarray(values, dtype=np.float64) - low) / (high - low)
    return rescaled
