"""Filtering heuristics for unreliable annotators, and radical/centrist styles.

Source: Solomon et al. 2021, *Rethinking Crowd Sourcing for Semantic Similarity*, §5.1 (the five
heuristics, footnotes 5–7) and §5.2 / table 2 (radical and centrist annotators), with the parameters
Concord fixes (docs/statistics/heuristics.md). Pure numpy: arrays in, frozen dataclasses out.

Input convention: `LongRatings` (``core.stats._types``), one row per rating (an
annotator's *first* presentation of an item, ``np.nan`` = blank, ignored). Dense
``(n_annotators, n_items)`` matrices with ``np.nan`` = not rated are accepted too (`as_long_ratings`).
Every rule returns one record per annotator ``0 .. n_annotators - 1``; a value that cannot be
computed (too few ratings, no durations) is ``None`` with a ``reason`` and is never flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from core.stats._types import BoolArray, FloatArray, IntArray, LongRatings

# The five rules, in the paper's order: the one list of rule names (core.settings offers it to
# the rest of the code, and its HeuristicSettings has one section per name).
RULES: tuple[str, ...] = ("slow", "low_variance", "high_random", "disagreeable", "sentiment")
STYLES: tuple[str, ...] = ("radical", "centrist", "neither")

# 1.9 is the paper's threshold for model sentiment scores in [-1, 1] (imported as
# meta:sentiment_a / meta:sentiment_b); VADER's compound scores rarely reach such opposite
# extremes on near-identical sentences, so Concord's default with VADER is 1.0.
SENTIMENT_THRESHOLDS: Mapping[str, float] = {"imported": 1.9, "vader": 1.0}


# --------------------------------------------------------------------------- input

Ratings = LongRatings | np.ndarray


def as_long_ratings(ratings: Ratings) -> LongRatings:
    """Return ``ratings`` as `LongRatings`, converting a dense ``(n_annotators, n_items)`` array.

    Example: ``as_long_ratings(np.array([[1, np.nan], [2, 3]])).value`` is ``[1., 2., 3.]``.
    """
    if isinstance(ratings, LongRatings):
        return ratings
    return LongRatings.from_dense(np.asarray(ratings, dtype=float))


def per_row(name: str, values: object, ratings: Ratings, data: LongRatings) -> FloatArray:
    """Align a per-rating array with the rows of ``data`` (= ``as_long_ratings(ratings)``).

    Accepts one value per row of ``data`` or, when ``ratings`` was dense, a dense array of the
    same shape. Example: durations given as a dense ``(n_annotators, n_items)`` matrix.
    """
    arr = np.asarray(values, dtype=float)
    if not isinstance(ratings, LongRatings) and arr.shape == np.shape(ratings) and arr.ndim == 2:
        aligned: FloatArray = arr[data.annotator, data.item]
        return aligned
    if arr.shape != data.item.shape:
        raise ValueError(
            f"{name} must have one value per rating ({data.item.size}), got shape {arr.shape}"
        )
    return arr


def rated_rows(data: LongRatings) -> BoolArray:
    """Return the boolean mask of rows that hold an answer (blank answers are missing values)."""
    return ~np.isnan(data.value)


def _per_item(name: str, values: object, n_items: int) -> FloatArray:
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n_items,):
        raise ValueError(f"{name} must have one value per item ({n_items}), got shape {arr.shape}")
    return arr


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class HeuristicRecord:
    """Hold one annotator's value under one rule (the ``heuristics`` record of docs/results.md)."""

    rule: str
    annotator: int
    value: float | None
    threshold: float
    flagged: bool
    n: int
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the results-document record {rule, annotator, value, threshold, flagged[, reason]}."""
        rec: dict[str, object] = {
            "rule": self.rule,
            "annotator": self.annotator,
            "value": self.value,
            "threshold": self.threshold,
            "flagged": self.flagged,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class HeuristicResult:
    """Hold every annotator's record under one rule, with the parameters used."""

    rule: str
    params: Mapping[str, object]
    records: tuple[HeuristicRecord, ...]

    @property
    def flagged(self) -> tuple[int, ...]:
        """Return the indices of the flagged annotators, ascending."""
        return tuple(r.annotator for r in self.records if r.flagged)


def _result(
    rule: str,
    params: Mapping[str, object],
    value: FloatArray,
    defined: BoolArray,
    flagged: BoolArray,
    n: IntArray,
    threshold: float,
    reasons: npt.NDArray[np.str_] | str,
) -> HeuristicResult:
    records = []
    for j in range(value.size):
        ok = bool(defined[j])
        records.append(
            HeuristicRecord(
                rule=rule,
                annotator=j,
                value=float(value[j]) if ok else None,
                threshold=float(threshold),
                flagged=bool(flagged[j]) and ok,
                n=int(n[j]),
                reason=None if ok else (reasons if isinstance(reasons, str) else str(reasons[j])),
            )
        )
    return HeuristicResult(rule=rule, params=dict(params), records=tuple(records))


# --------------------------------------------------------------------------- the five rules


def slow_annotators(
    ratings: Ratings,
    duration_ms: object,
    *,
    threshold_s: float = 300.0,
) -> HeuristicResult:
    """Flag annotators whose mean active time per item exceeds ``threshold_s`` seconds.

    Solomon et al. 2021, §5.1 heuristic 1 and footnote 5 ("mean labeling time greater than 300
    seconds", the 98th percentile of their crowd). ``duration_ms`` is the active time in
    milliseconds of each rating (one per row of ``ratings``, or dense like it; ``np.nan`` = not
    measured, ignored, as are blank answers); value = mean in seconds; annotators without any
    duration get ``None`` + reason.

    Example: one annotator's durations 200 000 and 500 000 ms → value 350.0 s > 300 → flagged.
    """
    data = as_long_ratings(ratings)
    dur = per_row("duration_ms", duration_ms, ratings, data)
    if np.any(dur < 0) or np.any(np.isinf(dur)):
        raise ValueError("duration_ms must be finite and >= 0 (np.nan = not measured)")
    ok = rated_rows(data) & ~np.isnan(dur)
    an, na = data.annotator[ok], data.n_annotators
    n = np.bincount(an, minlength=na)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.bincount(an, weights=dur[ok], minlength=na) / n / 1000.0
    return _result(
        "slow",
        {"threshold_s": threshold_s},
        mean_s,
        n > 0,
        mean_s > threshold_s,
        n,
        threshold_s,
        "no active time recorded for this annotator",
    )


def _std(
    an: IntArray, val: FloatArray, n_annotators: int, ddof: int
) -> tuple[FloatArray, IntArray]:
    # Two passes (mean, then squared deviations) stay accurate where sum-of-squares would not.
    n = np.bincount(an, minlength=n_annotators)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(an, weights=val, minlength=n_annotators) / n
        dev = val - mean[an]
        var = np.bincount(an, weights=dev * dev, minlength=n_annotators) / (n - ddof)
    return np.sqrt(np.maximum(var, 0.0)), n


def low_variance_annotators(
    ratings: Ratings,
    *,
    threshold: float = 1.0,
    ddof: int = 1,
    min_ratings: int = 2,
) -> HeuristicResult:
    """Flag annotators whose labels' sample standard deviation is below ``threshold``.

    Solomon et al. 2021, §5.1 heuristic 2 ("variance for all of the labels given by one annotator is
    lower than 1"; with threshold 1, std < 1 ⇔ variance < 1). value = std with ``ddof`` (1) over all
    the annotator's labels; fewer than ``min_ratings`` (2) labels → ``None`` + reason.

    Example: labels 3, 3, 3, 4 have std 0.5 < 1 → flagged; labels 1, 5 have std 2.83 → not.
    """
    if min_ratings <= ddof:
        raise ValueError(f"min_ratings must exceed ddof ({ddof}), got {min_ratings}")
    data = as_long_ratings(ratings)
    ok = rated_rows(data)
    std, n = _std(data.annotator[ok], data.value[ok], data.n_annotators, ddof)
    return _result(
        "low_variance",
        {"threshold": threshold, "ddof": ddof, "min_ratings": min_ratings},
        std,
        n >= min_ratings,
        std < threshold,
        n,
        threshold,
        f"fewer than {min_ratings} ratings",
    )


def high_random_annotators(
    ratings: Ratings,
    control: object,
    *,
    threshold: float = 0.0,
    min_ratings: int = 2,
) -> HeuristicResult:
    """Flag annotators whose mean label on control items exceeds their mean on the other items.

    Solomon et al. 2021, §5.1 heuristic 3 ("mean semantic similarity score of all random pairs is
    higher than their mean … for non-random pairs"). ``control`` is one boolean per item (the random
    pairs of Solomon et al. 2021, §4). value = mean(control) − mean(other), flagged when value >
    ``threshold`` (0, the paper's); each side needs ``min_ratings`` (2) ratings, else ``None`` +
    reason.

    Example: control labels 4, 5 (mean 4.5) and other labels 3, 4 (mean 3.5): value 1.0 → flagged.
    """
    data = as_long_ratings(ratings)
    ctl = np.asarray(control)
    if ctl.shape != (data.n_items,):
        raise ValueError(f"control must hold one flag per item ({data.n_items}), got {ctl.shape}")
    ok = rated_rows(data)
    an, val, na = data.annotator[ok], data.value[ok], data.n_annotators
    is_ctl = ctl.astype(bool)[data.item[ok]]
    n_c = np.bincount(an[is_ctl], minlength=na)
    n_o = np.bincount(an[~is_ctl], minlength=na)
    with np.errstate(invalid="ignore", divide="ignore"):
        m_c = np.bincount(an[is_ctl], weights=val[is_ctl], minlength=na) / n_c
        m_o = np.bincount(an[~is_ctl], weights=val[~is_ctl], minlength=na) / n_o
    diff = m_c - m_o
    reasons = np.where(
        n_c < min_ratings,
        f"fewer than {min_ratings} ratings on control items",
        f"fewer than {min_ratings} ratings on non-control items",
    )
    return _result(
        "high_random",
        {"threshold": threshold, "min_ratings": min_ratings},
        diff,
        (n_c >= min_ratings) & (n_o >= min_ratings),
        diff > threshold,
        np.minimum(n_c, n_o),
        threshold,
        reasons,
    )


def disagreeable_annotators(
    reduced: Ratings,
    *,
    min_other_raters: int = 2,
    min_items: int = 3,
    threshold: float = 0.5,
) -> HeuristicResult:
    """Flag annotators who contradict a unanimous decision of the other raters in most cases.

    Solomon et al. 2021, §5.1 heuristic 4: on the reduced scale (pass *reduced* ratings, e.g.
    similarity {1,2→−1, 3→0, 4,5→1}) an annotator is disagreeable when they "disagree with an
    unanimous decision from the other two annotators more than in half of the cases". For each item
    an annotator rated, the *others* are its other raters; the item counts when there are at least
    ``min_other_raters`` (2: the paper's "other two"; with a single other rater "unanimous" is
    vacuous) and they all gave the same value. value = share of those items where the annotator gave
    a different value; flagged when value > ``threshold`` (0.5); fewer than ``min_items`` (3) such
    items → ``None`` + reason.

    Example: three raters on 4 items, the others agree on all 4 and annotator 0 differs on 3:
    value 0.75 → flagged.
    """
    if min_other_raters < 1:
        raise ValueError(f"min_other_raters must be >= 1, got {min_other_raters}")
    data = as_long_ratings(reduced)
    ok = rated_rows(data)
    it, an, val = data.item[ok], data.annotator[ok], data.value[ok]
    n_items, na = data.n_items, data.n_annotators
    codes, cat = np.unique(val, return_inverse=True)
    m = max(codes.size, 1)
    n_per_item = np.bincount(it, minlength=n_items)
    pair_count = np.bincount(it * m + cat, minlength=n_items * m)
    distinct = np.bincount(np.flatnonzero(pair_count) // m, minlength=n_items)
    own = pair_count[it * m + cat]  # raters of the item who gave this row's value, itself included
    k, d = n_per_item[it], distinct[it]
    # The others are unanimous ⇔ one value on the item, or two values and this rater alone on theirs.
    eligible = (k - 1 >= min_other_raters) & ((d == 1) | ((d == 2) & (own == 1)))
    differs = eligible & (d == 2)
    n_elig = np.bincount(an[eligible], minlength=na)
    n_diff = np.bincount(an[differs], minlength=na)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = n_diff / n_elig
    return _result(
        "disagreeable",
        {"min_other_raters": min_other_raters, "min_items": min_items, "threshold": threshold},
        share,
        n_elig >= min_items,
        share > threshold,
        n_elig,
        threshold,
        f"fewer than {min_items} items where the other raters agree",
    )


def sentiment_annotators(
    ratings: Ratings,
    *,
    bleu1: object,
    sentiment_a: object,
    sentiment_b: object,
    sentiment_source: Literal["imported", "vader"] = "imported",
    sentiment_threshold: float | None = None,
    bleu_threshold: float = 0.8,
    std_threshold: float = 1.0,
    ddof: int = 1,
    min_pairs: int = 2,
) -> HeuristicResult:
    """Flag annotators whose labels vary on near-identical pairs of opposite sentiment.

    Solomon et al. 2021, §5.1 heuristic 5 and footnote 7: pairs with unigram BLEU >
    ``bleu_threshold`` (0.8) and |sentiment_a − sentiment_b| ≥ ``sentiment_threshold``; an annotator
    is flagged when the std (``ddof`` 1) of their labels on such pairs exceeds ``std_threshold`` (1;
    the paper's "variance … greater than 1" is the same cut), over at least ``min_pairs`` (2) pairs,
    else ``None`` + reason. ``bleu1``, ``sentiment_a`` and ``sentiment_b`` hold one precomputed
    value per item (``np.nan`` = unknown: the pair does not qualify; unigram BLEU is
    ``core.metrics.similarity.bleu1``, text_a as reference). ``sentiment_threshold=None`` takes
    Concord's default for ``sentiment_source``: 1.9 for imported model scores (the paper's), 1.0 for
    VADER compound scores; the value used is recorded in ``params``.

    Example: an annotator labels two qualifying pairs 1 and 5: std 2.83 > 1 → flagged.
    """
    if sentiment_source not in SENTIMENT_THRESHOLDS:
        raise ValueError(
            f"sentiment_source must be one of {sorted(SENTIMENT_THRESHOLDS)}, got {sentiment_source!r}"
        )
    if sentiment_threshold is None:
        sentiment_threshold = SENTIMENT_THRESHOLDS[sentiment_source]
    if min_pairs <= ddof:
        raise ValueError(f"min_pairs must exceed ddof ({ddof}), got {min_pairs}")
    data = as_long_ratings(ratings)
    b = _per_item("bleu1", bleu1, data.n_items)
    sa = _per_item("sentiment_a", sentiment_a, data.n_items)
    sb = _per_item("sentiment_b", sentiment_b, data.n_items)
    with np.errstate(invalid="ignore"):
        qualifies = (b > bleu_threshold) & (np.abs(sa - sb) >= sentiment_threshold)
    sel = rated_rows(data) & qualifies[data.item]
    std, n = _std(data.annotator[sel], data.value[sel], data.n_annotators, ddof)
    return _result(
        "sentiment",
        {
            "sentiment_source": sentiment_source,
            "sentiment_threshold": float(sentiment_threshold),
            "bleu_threshold": bleu_threshold,
            "std_threshold": std_threshold,
            "ddof": ddof,
            "min_pairs": min_pairs,
            "n_pairs": int(qualifies.sum()),
        },
        std,
        n >= min_pairs,
        std > std_threshold,
        n,
        std_threshold,
        f"fewer than {min_pairs} rated pairs with high overlap and opposite sentiment",
    )


def run_heuristics(
    ratings: Ratings,
    *,
    reduced: Ratings | None = None,
    duration_ms: object | None = None,
    control: object | None = None,
    bleu1: object | None = None,
    sentiment_a: object | None = None,
    sentiment_b: object | None = None,
    sentiment_source: Literal["imported", "vader"] = "imported",
    sentiment_threshold: float | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, HeuristicResult]:
    """Run every rule whose inputs are given, with Concord's defaults unless ``params`` says.

    ``low_variance`` always runs (raw ``ratings``); ``slow`` needs ``duration_ms``,
    ``high_random`` ``control``, ``disagreeable`` the ``reduced`` ratings, ``sentiment`` the
    three per-item arrays. ``params`` maps a rule name to keyword arguments of its function
    (``{"slow": {"threshold_s": 600}}``; the analysis settings' ``heuristics``); a
    ``sentiment_threshold`` there wins over the argument of the same name. Returns
    ``{rule: HeuristicResult}`` in the order of `RULES`.

    Example: ``run_heuristics(ratings)`` returns only ``{"low_variance": …}``.
    """
    params = params or {}
    unknown = sorted(set(params) - set(RULES))
    if unknown:
        raise ValueError(f"params names unknown rule(s) {unknown}; the rules are {RULES}")
    data = as_long_ratings(ratings)
    out: dict[str, HeuristicResult] = {}
    if duration_ms is not None:
        out["slow"] = slow_annotators(data, per_row("duration_ms", duration_ms, ratings, data),
                                      **params.get("slow", {}))
    out["low_variance"] = low_variance_annotators(data, **params.get("low_variance", {}))
    if control is not None:
        out["high_random"] = high_random_annotators(data, control, **params.get("high_random", {}))
    if reduced is not None:
        red = as_long_ratings(reduced)
        if (red.n_items, red.n_annotators) != (data.n_items, data.n_annotators):
            raise ValueError("reduced ratings must cover the same items and annotators as ratings")
        out["disagreeable"] = disagreeable_annotators(red, **params.get("disagreeable", {}))
    if bleu1 is not None and sentiment_a is not None and sentiment_b is not None:
        out["sentiment"] = sentiment_annotators(
            data,
            bleu1=bleu1,
            sentiment_a=sentiment_a,
            sentiment_b=sentiment_b,
            sentiment_source=sentiment_source,
            **{"sentiment_threshold": sentiment_threshold, **params.get("sentiment", {})},
        )
    return out


# --------------------------------------------------------------------------- styles


@dataclass(frozen=True)
class StyleRecord:
    """Hold one annotator's style (the ``styles`` record of docs/results.md)."""

    annotator: int
    style: str
    extreme_share: float | None
    moderate_share: float | None
    n: int
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {annotator, style, extreme_share, moderate_share[, reason]}."""
        rec: dict[str, object] = {
            "annotator": self.annotator,
            "style": self.style,
            "extreme_share": self.extreme_share,
            "moderate_share": self.moderate_share,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class StylesResult:
    """Hold every annotator's style, with the parameters used."""

    params: Mapping[str, object]
    records: tuple[StyleRecord, ...] = field(default=())

    def annotators(self, style: str) -> tuple[int, ...]:
        """Return the indices of the annotators with ``style``."""
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        return tuple(r.annotator for r in self.records if r.style == style)


def annotator_styles(
    ratings: Ratings,
    *,
    extreme: Sequence[float] = (1, 5),
    moderate: Sequence[float] = (2, 4),
    share_threshold: float = 0.5,
    ignored: Sequence[float] = (),
) -> StylesResult:
    """Classify annotators as radical, centrist or neither by the labels they use.

    Solomon et al. 2021, §5.2 and table 2: *radical* when labels in ``extreme`` ({1, 5}) make more
    than ``share_threshold`` (50 %) of the annotator's labels, *centrist* when labels in
    ``moderate`` ({2, 4}) do, else *neither*. Concord counts shares over all the annotator's labels
    (``ignored=()``); the paper ignored the label 3 in these shares (``ignored=(3,)``). Annotators
    without (non-ignored) labels are *neither* with ``None`` shares + reason.

    Example: labels 1, 5, 5, 3 → extreme share 0.75 → radical; labels 2, 4, 3, 3 → extreme 0,
    moderate 0.5 → neither (not more than half).
    """
    if set(map(float, extreme)) & set(map(float, moderate)):
        raise ValueError("extreme and moderate values must not overlap")
    data = as_long_ratings(ratings)
    na = data.n_annotators
    keep = rated_rows(data) & ~np.isin(data.value, np.asarray(ignored, dtype=float))
    an, val = data.annotator[keep], data.value[keep]
    n = np.bincount(an, minlength=na)
    n_ext = np.bincount(an[np.isin(val, np.asarray(extreme, dtype=float))], minlength=na)
    n_mod = np.bincount(an[np.isin(val, np.asarray(moderate, dtype=float))], minlength=na)
    records = []
    for j in range(na):
        if n[j] == 0:
            records.append(StyleRecord(j, "neither", None, None, 0, "no labels"))
            continue
        ext, mod = n_ext[j] / n[j], n_mod[j] / n[j]
        style = "radical" if ext > share_threshold else "centrist" if mod > share_threshold else "neither"
        records.append(StyleRecord(j, style, float(ext), float(mod), int(n[j])))
    params = {
        "extreme": [float(x) for x in extreme],
        "moderate": [float(x) for x in moderate],
        "share_threshold": share_threshold,
        "ignored": [float(x) for x in ignored],
    }
    return StylesResult(params=params, records=tuple(records))
