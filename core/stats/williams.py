"""Which of two metrics agrees better with the humans: Williams' test of two dependent
correlations (`williams_test`) and every pair of metrics compared with it (`compare_metrics`).
`core.stats.correlation_uncertainty` (the bootstrap intervals) re-exports both; the definitions
and the worked example are in docs/statistics/williams.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from core.stats._types import FloatArray
from core.stats.correlations import _correlate_clean, average_ranks, correlate

# --------------------------------------------------------------------------- Williams' test


@dataclass(frozen=True)
class WilliamsResult:
    """Hold Williams' t for H0: ρ12 = ρ13 (``None`` + reason when it cannot be computed).

    ``p_one_sided`` is for H1: ρ12 > ρ13 (metric A agrees with the humans better than B);
    ``p_two_sided`` for H1: ρ12 ≠ ρ13. ``df`` = n − 3.
    """

    r12: float
    r13: float
    r23: float
    n: int
    t: float | None
    df: int
    p_one_sided: float | None
    p_two_sided: float | None
    reason: str | None = None


def williams_test(*, r12: float, r13: float, r23: float, n: int) -> WilliamsResult:
    """Test whether two correlations sharing variable 1 differ (Williams 1959; Steiger 1980, eq. 7).

    With |R| = 1 − r12² − r13² − r23² + 2 r12 r13 r23 (the determinant of the 3 × 3 correlation
    matrix) and r̄ = (r12 + r13) / 2::

        t = (r12 − r13) √((n − 1)(1 + r23)) / √(2 |R| (n − 1)/(n − 3) + r̄² (1 − r23)³)

    follows Student's t with n − 3 degrees of freedom under H0: ρ12 = ρ13 (variable 1 = the
    humans, 2 and 3 = two metrics, r23 = the metrics' correlation with each other; Graham and
    Baldwin 2014). Needs n ≥ 4; |R| must be ≥ 0 up to rounding (correlations computed on one set
    of items always are), else ``ValueError``. Two metrics perfectly correlated with each other
    (r23 = 1) leave nothing to test → ``None`` + reason.

    Worked example (Steiger 1980, the first numerical example: N = 103, r12 = .50, r13 = .40,
    r23 = .10): |R| = 1 − .25 − .16 − .01 + .04 = .62; t = .10 × √(102 × 1.1) /
    √(2 × .62 × 102/100 + .2025 × .729) = .10 × 10.592 / 1.1884 = 0.891 with 100 df, two-sided
    p = .375: no evidence that the two correlations differ.
    """
    for name, r in (("r12", r12), ("r13", r13), ("r23", r23)):
        if not -1.0 <= r <= 1.0:
            raise ValueError(f"{name} must lie in [-1, 1], got {r}")
    if n < 4:
        return WilliamsResult(r12, r13, r23, n, None, max(n - 3, 0), None, None,
                              f"fewer than 4 items ({n})")
    det = 1.0 - r12 * r12 - r13 * r13 - r23 * r23 + 2.0 * r12 * r13 * r23
    if det < -1e-9:
        raise ValueError(f"r12, r13 and r23 are not the correlations of one data set (|R| = {det})")
    det = max(det, 0.0)
    mean = (r12 + r13) / 2.0
    denominator = 2.0 * det * (n - 1) / (n - 3) + mean * mean * (1.0 - r23) ** 3
    df = n - 3
    if denominator <= 0.0:
        return WilliamsResult(r12, r13, r23, n, None, df, None, None,
                              "the two metrics are perfectly correlated with each other")
    t = (r12 - r13) * np.sqrt((n - 1) * (1.0 + r23)) / np.sqrt(denominator)
    return WilliamsResult(r12, r13, r23, n, float(t), df, float(stats.t.sf(t, df)),
                          float(2.0 * stats.t.sf(abs(t), df)))


# --------------------------------------------------------------------------- comparisons


Verdict = Literal["a_better", "b_better", "cannot_tell"]


@dataclass(frozen=True)
class MetricComparison:
    """Hold Williams' test of metric A against metric B on the same items and human scores.

    ``verdict`` is "a_better" or "b_better" when the two-sided p is below ``alpha`` (the sign of
    r_a − r_b says which), else "cannot_tell" (also when the test is undefined, with ``reason``).
    """

    metric_a: str
    metric_b: str
    method: Literal["pearson", "spearman"]
    n_items: int
    r_a: float | None
    r_b: float | None
    r_ab: float | None
    t: float | None
    df: int
    p_one_sided: float | None  # H1: metric A agrees better than B
    p_two_sided: float | None
    alpha: float
    verdict: Verdict
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {metric_a, metric_b, method, n_items, r_a, r_b, r_ab, t, df, …}."""
        rec: dict[str, object] = {
            "metric_a": self.metric_a, "metric_b": self.metric_b, "method": self.method,
            "n_items": self.n_items, "r_a": self.r_a, "r_b": self.r_b, "r_ab": self.r_ab,
            "t": self.t, "df": self.df, "p_one_sided": self.p_one_sided,
            "p_two_sided": self.p_two_sided, "alpha": self.alpha, "verdict": self.verdict,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


def _r(x: FloatArray, y: FloatArray, method: str, rx: FloatArray | None,
       ry: FloatArray | None) -> float | None:
    if method == "pearson":
        return _correlate_clean(x, y, spearman=False).pearson
    return _correlate_clean(x, y, rx, ry).spearman


def compare_metrics(
    human: npt.ArrayLike,
    metrics: Mapping[str, npt.ArrayLike],
    *,
    method: Literal["pearson", "spearman"] = "pearson",
    alpha: float = 0.05,
) -> tuple[MetricComparison, ...]:
    """Test every pair of metrics for a difference in their correlation with the humans.

    ``human`` holds one score per item (e.g. the mean raw label over the items kept by
    ``correlations.item_means``), each metric one value per item. For each pair (A, B) in the
    order of ``metrics`` (A before B), the items where the human score and both metrics are
    defined give r_a = corr(human, A), r_b = corr(human, B) and r_ab = corr(A, B) with ``method``
    (Pearson, as in WMT; Spearman = Pearson on average ranks, for which Williams' normal-theory
    t is an approximation), and `williams_test` decides at ``alpha`` (0.05, two-sided).

    Example: A = human + small noise, B = human + large noise on 200 items → "a_better";
    two metrics with the same noise on 30 items → usually "cannot_tell".
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    h = np.asarray(human, dtype=float)
    if h.ndim != 1:
        raise ValueError(f"human must be 1-D, got shape {h.shape}")
    arrays: dict[str, FloatArray] = {}
    for name, values in metrics.items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != h.shape:
            raise ValueError(f"metric {name!r} must have one value per item ({h.size}), "
                             f"got {arr.shape}")
        arrays[name] = arr
    names = list(arrays)
    out = []
    # Spearman's ranks of an array over a set of items, computed once: the pairs usually share
    # their items (every metric defined on every item).
    ranks: dict[tuple[str | None, bytes], FloatArray] = {}

    def ranked(name: str | None, values: FloatArray, ok: npt.NDArray[np.bool_]) -> FloatArray | None:
        if method == "pearson":
            return None
        key = (name, np.packbits(ok).tobytes())
        if key not in ranks:
            ranks[key] = average_ranks(values)
        return ranks[key]

    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ok = np.isfinite(h) & np.isfinite(arrays[a]) & np.isfinite(arrays[b])
            hh, xa, xb = h[ok], arrays[a][ok], arrays[b][ok]
            n = int(ok.sum())
            rh, ra, rb = ranked(None, hh, ok), ranked(a, xa, ok), ranked(b, xb, ok)
            r_a, r_b, r_ab = (_r(xa, hh, method, ra, rh), _r(xb, hh, method, rb, rh),
                              _r(xa, xb, method, ra, rb))
            if r_a is None or r_b is None or r_ab is None:
                reason = correlate(xa, hh).reason or correlate(xb, hh).reason or "constant metric"
                out.append(MetricComparison(a, b, method, n, r_a, r_b, r_ab, None, max(n - 3, 0),
                                            None, None, alpha, "cannot_tell", reason))
                continue
            w = williams_test(r12=r_a, r13=r_b, r23=r_ab, n=n)
            verdict: Verdict = "cannot_tell"
            if w.p_two_sided is not None and w.p_two_sided < alpha:
                verdict = "a_better" if r_a > r_b else "b_better"
            out.append(MetricComparison(a, b, method, n, r_a, r_b, r_ab, w.t, w.df,
                                        w.p_one_sided, w.p_two_sided, alpha, verdict, w.reason))
    return tuple(out)
