"""Quality rules beyond Solomon et al. 2021's five: too fast, attention checks, straight-lining,
duplicate inconsistency.

Same shapes as ``core.stats.heuristics``: one `HeuristicResult` per rule with its parameters in
``params`` and one record per annotator ``0 .. n_annotators - 1``; a value that cannot be computed
is ``None`` with a ``reason`` and is never flagged. The records are `QualityRecord`s, i.e.
`HeuristicRecord`s with a ``detail`` mapping of the numbers a reader wants next to the value (the
attention accuracy, the length of the longest run, …). Pure numpy, no Django.

Sources (docs/statistics/quality.md): response time and reading speed — Curran 2016 (response
time as a careless-responding index) and Brysbaert 2019 (silent reading ≈ 238 words per minute,
≈ 4 words per second, for English non-fiction); attention checks and instructed-response items —
Meade and Craig 2012; straight-lining as the longest string of identical answers — Johnson 2005,
Curran 2016; duplicate consistency — Borovikova et al. 2022, §3.4. Thresholds are Concord's
defaults, stated in each function and recorded in ``params``.

The rules are per annotator. What the caller assembles:

- too fast: one active time per (item, annotator), the first revision's (a revision's time is not
  a reading time), aligned with the ratings like ``slow_annotators``' durations;
- attention: one row per check answer (annotator, item, value, expected, tolerance);
- straight-lining: per annotator, their answers in presentation order, across items and across
  an item's questions;
- duplicate inconsistency: one row per duplicated pair (annotator, first value, repeat value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from core.stats._types import FloatArray, IntArray
from core.stats.heuristics import (
    HeuristicRecord,
    HeuristicResult,
    Ratings,
    as_long_ratings,
    per_row,
    rated_rows,
)

__all__ = [
    "QUALITY_RULES",
    "QualityRecord",
    "attention_check_annotators",
    "attention_count_annotators",
    "duplicate_inconsistency_annotators",
    "longest_run",
    "straight_lining_annotators",
    "too_fast_annotators",
]

# The four rules of this module, in the order the results document lists them after the five.
QUALITY_RULES: tuple[str, ...] = (
    "too_fast",
    "attention",
    "straight_lining",
    "duplicate_inconsistency",
)

Detail = Mapping[str, float | int | None]


@dataclass(frozen=True)
class QualityRecord(HeuristicRecord):
    """Hold one annotator's value under one quality rule, with the numbers behind it.

    ``detail`` is rule-specific (documented per rule); it is left out of the hash so that records
    stay hashable like `HeuristicRecord`.
    """

    detail: Detail = field(default_factory=dict, hash=False)

    def to_record(self) -> dict[str, object]:
        """Return {rule, annotator, value, threshold, flagged[, reason], detail}."""
        rec = super().to_record()
        rec["detail"] = dict(self.detail)
        return rec


def _records(
    rule: str,
    params: Mapping[str, object],
    rows: Sequence[tuple[float | None, bool, int, str | None, Detail]],
    threshold: float,
) -> HeuristicResult:
    """Build the result from per-annotator (value, flagged, n, reason, detail) tuples."""
    records = tuple(
        QualityRecord(
            rule=rule,
            annotator=j,
            value=value,
            threshold=float(threshold),
            flagged=bool(flagged) and value is not None,
            n=int(n),
            reason=reason if value is None else None,
            detail=detail,
        )
        for j, (value, flagged, n, reason, detail) in enumerate(rows)
    )
    return HeuristicResult(rule=rule, params=dict(params), records=records)


def _share_check(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")


def _min_check(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


# --------------------------------------------------------------------------- too fast


def too_fast_annotators(
    ratings: Ratings,
    duration_ms: object,
    *,
    floor_s: float = 1.0,
    item_length: object | None = None,
    reading_speed: float | None = None,
    threshold: float = 0.5,
    min_answers: int = 3,
) -> HeuristicResult:
    """Flag annotators who answered more than ``threshold`` of their items faster than a floor.

    ``duration_ms``: the active time of each rating in milliseconds (one per row of ``ratings``,
    or dense like it; ``np.nan`` = not measured, ignored, as are blank answers); pass the first
    revision's time. The floor of item i is ``floor_s`` (1.0 s) when ``item_length`` is ``None``,
    else ``max(floor_s, item_length[i] / reading_speed)``: ``item_length`` holds one length per item
    (words, or characters, ``np.nan`` = unknown → ``floor_s``) and ``reading_speed`` is in the same
    units per second (e.g. 5 words/s, faster than the ≈ 4 words/s of silent reading in Brysbaert
    2019, so that a careful reader is seldom under it). An answer is too fast when its time is
    strictly below its floor. value = share of the annotator's timed answers that are too fast;
    flagged when value > ``threshold`` (0.5); fewer than ``min_answers`` (3) timed answers →
    ``None`` + reason. detail: ``n_fast``, ``median_s`` (median active time).

    Example: floors of 1 s, times 0.2, 0.3, 0.25 and 4.0 s → 3 of 4 too fast → value 0.75 >
    0.5 → flagged.
    """
    if floor_s < 0 or not np.isfinite(floor_s):
        raise ValueError(f"floor_s must be finite and >= 0, got {floor_s}")
    _share_check("threshold", threshold)
    _min_check("min_answers", min_answers)
    data = as_long_ratings(ratings)
    dur = per_row("duration_ms", duration_ms, ratings, data)
    if np.any(dur < 0) or np.any(np.isinf(dur)):
        raise ValueError("duration_ms must be finite and >= 0 (np.nan = not measured)")
    floor = np.full(data.n_items, float(floor_s))
    if item_length is not None:
        if reading_speed is None or not reading_speed > 0 or not np.isfinite(reading_speed):
            raise ValueError("item_length needs a positive, finite reading_speed (units per second)")
        length = np.asarray(item_length, dtype=float)
        if length.shape != (data.n_items,):
            raise ValueError(
                f"item_length must have one value per item ({data.n_items}), got {length.shape}"
            )
        if np.any(length < 0) or np.any(np.isinf(length)):
            raise ValueError("item_length must be finite and >= 0 (np.nan = unknown)")
        with np.errstate(invalid="ignore"):
            floor = np.where(np.isnan(length), floor, np.maximum(floor, length / reading_speed))
    elif reading_speed is not None:
        raise ValueError("reading_speed needs item_length")
    ok = rated_rows(data) & ~np.isnan(dur)
    an, seconds = data.annotator[ok], dur[ok] / 1000.0
    fast = seconds < floor[data.item[ok]]
    n = np.bincount(an, minlength=data.n_annotators)
    n_fast = np.bincount(an[fast], minlength=data.n_annotators)
    median = _group_medians(an, seconds, n)
    rows: list[tuple[float | None, bool, int, str | None, Detail]] = []
    for j in range(data.n_annotators):
        detail: Detail = {"n_fast": int(n_fast[j]),
                          "median_s": float(median[j]) if n[j] else None}
        if n[j] < min_answers:
            rows.append((None, False, int(n[j]), f"fewer than {min_answers} timed answers",
                         detail))
            continue
        share = float(n_fast[j] / n[j])
        rows.append((share, share > threshold, int(n[j]), None, detail))
    params: dict[str, object] = {
        "floor_s": float(floor_s),
        "floor": "fixed" if item_length is None else "reading_speed",
        "reading_speed": None if reading_speed is None else float(reading_speed),
        "threshold": float(threshold),
        "min_answers": int(min_answers),
    }
    return _records("too_fast", params, rows, threshold)


def _group_medians(group: IntArray, values: FloatArray, counts: IntArray) -> FloatArray:
    """Return each group's median (nan for an empty group) from one sort, not one pass per group."""
    order = np.lexsort((values, group))
    ordered = values[order]
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = np.full(counts.size, np.nan)
    some = counts > 0
    lo = start[some] + (counts[some] - 1) // 2
    hi = start[some] + counts[some] // 2
    out[some] = (ordered[lo] + ordered[hi]) / 2.0
    return out


# --------------------------------------------------------------------------- attention checks


def attention_check_annotators(
    *,
    annotator: npt.ArrayLike,
    value: npt.ArrayLike,
    expected: npt.ArrayLike,
    tolerance: npt.ArrayLike | float = 0.0,
    n_annotators: int,
    max_failures: int = 2,
    blank_fails: bool = True,
) -> HeuristicResult:
    """Count each annotator's failed attention checks; flag at ``max_failures`` failures or more.

    One row per check answer: ``annotator[r]`` (0-based), the answer ``value[r]`` (``np.nan`` =
    blank), the ``expected[r]`` answer (a gold item's known answer, or the value an
    instructed-response item asks for, "choose 2 for this one" — Meade and Craig 2012) and its
    ``tolerance[r]`` (scalar or per row; 0 = exact, 1 = ±1 on the scale). A check fails when
    ``|value − expected| > tolerance``, and, with ``blank_fails`` (default), when left blank
    (an unanswered check was not read). value = number of failures; flagged when value ≥
    ``max_failures`` (2: "stop after N" of the collection policy); an annotator without checks
    gets ``None`` + reason. detail: ``n_checks``, ``failures``, ``accuracy`` (share passed).

    Example: expected 2 (tolerance 0) and 5 (tolerance 1); answers 2 and 3 → one failure,
    accuracy 0.5, not flagged at ``max_failures=2``.
    """
    _min_check("max_failures", max_failures)
    an = np.asarray(annotator)
    val = np.asarray(value, dtype=float)
    exp = np.asarray(expected, dtype=float)
    tol = np.broadcast_to(np.asarray(tolerance, dtype=float), val.shape)
    if an.ndim != 1 or not (an.shape == val.shape == exp.shape):
        raise ValueError(
            "annotator, value and expected must be 1-D arrays of the same length, got "
            f"{an.shape}, {val.shape} and {exp.shape}"
        )
    if an.size and (not np.issubdtype(an.dtype, np.integer) or an.min() < 0
                    or an.max() >= n_annotators):
        raise ValueError(f"annotator must hold integer indices in [0, {n_annotators})")
    if np.any(~np.isfinite(exp)) or np.any(~np.isfinite(tol)) or np.any(tol < 0):
        raise ValueError("expected and tolerance must be finite, tolerance >= 0")
    an = an.astype(np.int64)
    with np.errstate(invalid="ignore"):
        failed = np.where(np.isnan(val), blank_fails, np.abs(val - exp) > tol)
    n = np.bincount(an, minlength=n_annotators)
    fails = np.bincount(an[failed], minlength=n_annotators)
    result = attention_count_annotators(n_checks=n, failures=fails, max_failures=max_failures)
    return HeuristicResult(rule="attention", records=result.records,
                           params={**result.params, "blank_fails": bool(blank_fails)})


def attention_count_annotators(
    *,
    n_checks: npt.ArrayLike,
    failures: npt.ArrayLike,
    max_failures: int = 2,
) -> HeuristicResult:
    """Flag annotators from their counts of attention checks answered and failed.

    The form of `attention_check_annotators` for a caller that scored each check already (Concord
    scores a check on its first answer, over all the questions with a known answer, and keeps the
    counts on the participant): ``n_checks[j]`` checks answered and ``failures[j]`` failed by
    annotator j. value = failures; flagged when value ≥ ``max_failures`` (2); no checks →
    ``None`` + reason. detail: ``n_checks``, ``failures``, ``accuracy`` (share passed).

    Example: ``n_checks=[4, 0, 3]``, ``failures=[0, 0, 2]`` → values 0, None, 2; accuracy 1.0,
    None, 0.33; only the third flagged.
    """
    _min_check("max_failures", max_failures)
    n = np.asarray(n_checks)
    fails = np.asarray(failures)
    if n.ndim != 1 or n.shape != fails.shape:
        raise ValueError(f"n_checks and failures must be 1-D arrays of the same length, got "
                         f"{n.shape} and {fails.shape}")
    if n.size and (not np.issubdtype(n.dtype, np.integer)
                   or not np.issubdtype(fails.dtype, np.integer)
                   or fails.min() < 0 or np.any(fails > n)):
        raise ValueError("n_checks and failures must be integers with 0 <= failures <= n_checks")
    rows: list[tuple[float | None, bool, int, str | None, Detail]] = []
    for j in range(n.size):
        if n[j] == 0:
            rows.append((None, False, 0, "no attention checks answered",
                         {"n_checks": 0, "failures": 0, "accuracy": None}))
            continue
        rows.append((float(fails[j]), bool(fails[j] >= max_failures), int(n[j]), None,
                     {"n_checks": int(n[j]), "failures": int(fails[j]),
                      "accuracy": float(1.0 - fails[j] / n[j])}))
    return _records("attention", {"max_failures": int(max_failures)}, rows, max_failures)


# --------------------------------------------------------------------------- straight-lining


def longest_run(values: npt.ArrayLike) -> tuple[int, float | None]:
    """Return the length and value of the longest run of identical answers, blanks dropped.

    ``values`` is one annotator's answers in presentation order (``np.nan`` = blank, removed
    before counting: a blank is no answer, so it neither breaks nor extends a run). The first of
    equally long runs wins. Example: ``longest_run([3, 3, nan, 3, 1, 1])`` → ``(3, 3.0)``.
    """
    seq = np.asarray(values, dtype=float)
    if seq.ndim != 1:
        raise ValueError(f"an answer sequence must be 1-D, got shape {seq.shape}")
    seq = seq[~np.isnan(seq)]
    if seq.size == 0:
        return 0, None
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    lengths = np.diff(np.r_[starts, seq.size])
    best = int(np.argmax(lengths))
    return int(lengths[best]), float(seq[starts[best]])


def straight_lining_annotators(
    sequences: Sequence[npt.ArrayLike],
    *,
    run_threshold: int = 10,
    share_threshold: float = 0.8,
    min_answers: int = 5,
) -> HeuristicResult:
    """Flag annotators whose answers contain a long run of one value (straight-lining).

    ``sequences[j]`` is annotator j's answers in presentation order, across items and across an
    item's questions (the caller builds it; values of different questions compare as numbers, so
    pass a common coding such as the position on the scale). Blanks are dropped (`longest_run`).
    value = length of the longest run (the long-string index of Johnson 2005 and Curran 2016);
    flagged when value ≥ ``run_threshold`` (10), or when the run is at least ``share_threshold``
    (0.8) of all the annotator's answers — the second criterion catches short sequences where 10
    identical answers cannot occur. Fewer than ``min_answers`` (5) answers → ``None`` + reason.
    detail: ``share`` (run / answers), ``run_value``, ``n_answers``.

    Example: answers 4, 4, 4, 4, 4, 4, 2 → run 6 < 10 but share 6/7 = 0.86 ≥ 0.8 → flagged.
    """
    _min_check("run_threshold", run_threshold)
    _min_check("min_answers", min_answers)
    _share_check("share_threshold", share_threshold)
    rows: list[tuple[float | None, bool, int, str | None, Detail]] = []
    for seq in sequences:
        arr = np.asarray(seq, dtype=float)
        length, run_value = longest_run(arr)
        n = int((~np.isnan(arr)).sum())
        if n < min_answers:
            rows.append((None, False, n, f"fewer than {min_answers} answers",
                         {"share": None, "run_value": run_value, "n_answers": n}))
            continue
        share = length / n
        rows.append((float(length), length >= run_threshold or share >= share_threshold, n, None,
                     {"share": float(share), "run_value": run_value, "n_answers": n}))
    params = {
        "run_threshold": int(run_threshold),
        "share_threshold": float(share_threshold),
        "min_answers": int(min_answers),
    }
    return _records("straight_lining", params, rows, run_threshold)


# --------------------------------------------------------------------------- duplicates


def duplicate_inconsistency_annotators(
    *,
    annotator: npt.ArrayLike,
    first: npt.ArrayLike,
    repeat: npt.ArrayLike,
    n_annotators: int,
    tolerance: float = 1.0,
    threshold: float = 0.5,
    min_pairs: int = 2,
) -> HeuristicResult:
    """Flag annotators who answer a repeated item differently from the first time too often.

    One row per duplicated pair: ``annotator[r]``, the ``first[r]`` and ``repeat[r]`` answers on
    the scale (``np.nan`` on either side drops the pair, as in ``core.stats.duplicates``). A pair
    is inconsistent when ``|first − repeat| > tolerance`` (1.0: a neighbouring value on a Likert
    scale is the ordinary wobble of a re-read, Borovikova et al. 2022, §3.4; use 0 for nominal
    scales). value = share of inconsistent pairs; flagged when value > ``threshold`` (0.5);
    fewer than ``min_pairs`` (2) answered pairs → ``None`` + reason. detail:
    ``n_inconsistent``, ``mean_abs_diff``.

    Example: pairs (7, 7), (3, 6), (5, 1) → 2 of 3 beyond ±1 → value 0.67 → flagged.
    """
    _share_check("threshold", threshold)
    _min_check("min_pairs", min_pairs)
    if tolerance < 0 or not np.isfinite(tolerance):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance}")
    an = np.asarray(annotator)
    a = np.asarray(first, dtype=float)
    b = np.asarray(repeat, dtype=float)
    if an.ndim != 1 or not (an.shape == a.shape == b.shape):
        raise ValueError(
            "annotator, first and repeat must be 1-D arrays of the same length, got "
            f"{an.shape}, {a.shape} and {b.shape}"
        )
    if an.size and (not np.issubdtype(an.dtype, np.integer) or an.min() < 0
                    or an.max() >= n_annotators):
        raise ValueError(f"annotator must hold integer indices in [0, {n_annotators})")
    both = ~np.isnan(a) & ~np.isnan(b)
    an_ok: IntArray = an[both].astype(np.int64)
    diff = np.abs(a[both] - b[both])
    n = np.bincount(an_ok, minlength=n_annotators)
    bad = np.bincount(an_ok[diff > tolerance], minlength=n_annotators)
    sum_diff = np.bincount(an_ok, weights=diff, minlength=n_annotators)
    rows: list[tuple[float | None, bool, int, str | None, Detail]] = []
    for j in range(n_annotators):
        mad = float(sum_diff[j] / n[j]) if n[j] else None
        detail: Detail = {"n_inconsistent": int(bad[j]), "mean_abs_diff": mad}
        if n[j] < min_pairs:
            rows.append((None, False, int(n[j]), f"fewer than {min_pairs} answered duplicate pairs",
                         detail))
            continue
        share = float(bad[j] / n[j])
        rows.append((share, share > threshold, int(n[j]), None, detail))
    params = {"tolerance": float(tolerance), "threshold": float(threshold),
              "min_pairs": int(min_pairs)}
    return _records("duplicate_inconsistency", params, rows, threshold)
