"""The linear mixed model ``rating ~ 0 + system + (1|source) + (1|annotator)`` fitted by REML
(no Django).

statsmodels' `MixedLM` fits crossed random effects as variance components of one group, with
dense matrices over all answers: 2 250 answers took 4 s and 9 000 took 85 s on this machine, too
slow for a WMT campaign (90 000 answers).  `mixed_model` maximises the same restricted
likelihood (Patterson and Thompson 1971; the profiled form of Bates et al. 2015) through the
model's sufficient statistics: with γ_f = σ²_f / σ² and θ_f = √γ_f, the penalised system
``M = I + Λ Z'Z Λ`` has a diagonal block per factor, so the larger factor (sources) is solved
elementwise and only the smaller one (annotators) needs a dense Schur complement; one evaluation
costs O(sources × annotators × systems), whatever the number of answers.  The tests check the
fixed effects and the variance components against statsmodels' `MixedLM` on the same data
(1e-6).  docs/statistics/systems.md gives the formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, sparse, stats

from core.stats._types import FloatArray

FACTORS = ("source", "annotator")


@dataclass(frozen=True)
class MixedModelResult:
    """Hold the fit: each system's fixed effect (its mean adjusted for sources and annotators,
    cell-means coding), its standard error and Wald interval, and the variance of sources,
    annotators and the residual with their shares of the total.

    ``effects[k]`` is nan for a system without answers; ``variances`` maps "source",
    "annotator", "residual" to σ² (nan when the factor has fewer than 2 levels: ``reasons``
    says so); ``reason`` is set when nothing could be fitted.
    """

    effects: FloatArray
    std_errors: FloatArray
    low: FloatArray
    high: FloatArray
    variances: dict[str, float]
    shares: dict[str, float]
    converged: bool
    n: int
    reason: str | None
    reasons: dict[str, str]


def _codes(values: npt.ArrayLike) -> tuple[np.ndarray, int]:
    names, codes = np.unique(np.asarray(values), return_inverse=True)
    return codes.reshape(-1).astype(np.int64), int(names.size)


class _Reml:
    """The profiled REML criterion of the model, from its sufficient statistics."""

    def __init__(self, y: FloatArray, x_codes: np.ndarray, p: int,
                 factors: list[tuple[np.ndarray, int]]) -> None:
        n = y.size
        self.n, self.p = n, p
        # [X | y] as a sparse matrix: X is the system indicator (cell-means coding).
        xy = sparse.csr_matrix(
            (np.r_[np.ones(n), y], (np.r_[np.arange(n), np.arange(n)],
                                   np.r_[x_codes, np.full(n, p)])), shape=(n, p + 1))
        self.xy_xy = (xy.T @ xy).toarray()
        self.z_xy: list[FloatArray] = []
        self.z_count: list[FloatArray] = []
        zs = []
        for codes, q in factors:
            z = sparse.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, q))
            zs.append(z)
            self.z_xy.append((z.T @ xy).toarray())
            self.z_count.append(np.bincount(codes, minlength=q).astype(float))
        self.cross = (zs[0].T @ zs[1]).tocsr() if len(zs) == 2 else None

    def parts(self, theta: FloatArray) -> tuple[float, FloatArray]:
        """Return log|M| and [X|y]' H⁻¹ [X|y] for θ (H = I + Z Λ² Z')."""
        g = self.xy_xy.copy()
        if not self.z_xy:
            return 0.0, g
        a = 1.0 + theta[0] ** 2 * self.z_count[0]  # the first factor's diagonal block
        u1 = theta[0] * self.z_xy[0]
        logdet = float(np.log(a).sum())
        g -= u1.T @ (u1 / a[:, None])
        if self.cross is not None:
            u2 = theta[1] * self.z_xy[1]
            b = (theta[0] * theta[1]) * self.cross  # q1 × q2
            a_inv_b = sparse.diags(1.0 / a) @ b
            schur = np.diag(1.0 + theta[1] ** 2 * self.z_count[1]) - (b.T @ a_inv_b).toarray()
            rhs = u2 - a_inv_b.T @ u1
            chol = np.linalg.cholesky(schur)
            logdet += 2.0 * float(np.log(np.diag(chol)).sum())
            solved = np.linalg.solve(chol, rhs)
            g -= solved.T @ solved
        return logdet, g

    def criterion(self, theta: FloatArray) -> float:
        """Return −2 × the profiled restricted log-likelihood, up to a constant."""
        logdet, g = self.parts(theta)
        p = self.p
        xtx, xty, yty = g[:p, :p], g[:p, p], g[p, p]
        sign, logdet_x = np.linalg.slogdet(xtx)
        if sign <= 0:
            return np.inf
        beta = np.linalg.solve(xtx, xty)
        rss = float(yty - xty @ beta)
        if rss <= 0:
            return np.inf
        return float(logdet + logdet_x + (self.n - p) * np.log(rss))

    def estimates(self, theta: FloatArray) -> tuple[FloatArray, FloatArray, float]:
        """Return β, its covariance and σ² at θ."""
        _, g = self.parts(theta)
        p = self.p
        xtx, xty, yty = g[:p, :p], g[:p, p], g[p, p]
        beta = np.asarray(np.linalg.solve(xtx, xty), dtype=float)
        sigma2 = float(yty - xty @ beta) / (self.n - p)
        return beta, np.asarray(sigma2 * np.linalg.inv(xtx), dtype=float), sigma2


def mixed_model(value: npt.ArrayLike, system: npt.ArrayLike, source: npt.ArrayLike,
                annotator: npt.ArrayLike, *, n_systems: int,
                confidence: float = 0.95) -> MixedModelResult:
    """Fit ``rating ~ 0 + C(system) + (1|source) + (1|annotator)`` by REML; one row per answer.

    ``value`` (nan rows are dropped), ``system`` (0 … n_systems − 1), ``source`` and
    ``annotator`` (any labels) are aligned.  Cell-means coding: each system's fixed effect is its
    mean adjusted for who rated it and on which sources, the differences between two systems'
    effects are the treatment-coded contrasts.  The variance parameters θ = (σ_source/σ,
    σ_annotator/σ) ≥ 0 minimise the profiled criterion ``log|M| + log|X'H⁻¹X| + (n − p)
    log(r'H⁻¹r)`` (L-BFGS-B from θ = (1, 1)); then β = (X'H⁻¹X)⁻¹X'H⁻¹y, σ² = r'H⁻¹r/(n − p),
    cov(β) = σ²(X'H⁻¹X)⁻¹, and the interval is β ± z·se (Wald, as statsmodels' `conf_int`).
    A factor with fewer than 2 levels is left out of the model (its variance null, with a
    reason); fewer than 2 systems with answers, or no residual degrees of freedom, fit nothing.

    Example: 4 systems × 20 sources × 3 annotators with source and annotator offsets → the
    effects recover the systems' true means up to noise (tests/unit/stats/test_systems.py
    compares every estimate with statsmodels).
    """
    y = np.asarray(value, dtype=float)
    sys_ = np.asarray(system, dtype=np.int64)
    ok = ~np.isnan(y) & (sys_ >= 0)
    y, sys_ = y[ok], sys_[ok]
    labels = {"source": np.asarray(source)[ok], "annotator": np.asarray(annotator)[ok]}
    nan = np.full(n_systems, np.nan)
    present = np.unique(sys_)
    empty: dict[str, float] = {name: np.nan for name in (*FACTORS, "residual")}

    def nothing(reason: str) -> MixedModelResult:
        return MixedModelResult(nan, nan.copy(), nan.copy(), nan.copy(), dict(empty),
                                dict(empty), False, int(y.size), reason, {})

    if present.size < 2:
        return nothing("fewer than 2 systems with answers")
    x_codes = np.searchsorted(present, sys_)
    p = present.size
    factors, used, reasons = [], [], {}
    for name in FACTORS:
        codes, q = _codes(labels[name])
        if q < 2:
            reasons[name] = f"one {name} only: its variance is not identifiable"
            continue
        factors.append((codes, q))
        used.append(name)
    if y.size - p < 2:
        return nothing("too few answers for the number of systems")
    # The factor with more levels first: its block of M is diagonal, the other's is dense.
    if len(factors) == 2 and factors[1][1] > factors[0][1]:
        factors.reverse()
        used.reverse()
    reml = _Reml(y, x_codes, p, factors)
    if factors:
        fit = optimize.minimize(reml.criterion, np.ones(len(factors)), method="L-BFGS-B",
                                bounds=[(0.0, None)] * len(factors),
                                options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 500})
        # The criterion is flat along a factor with few levels (3 annotators): a simplex
        # polish from L-BFGS-B's optimum brings θ to ~1e-9, where numerical gradients stop.
        polish = optimize.minimize(reml.criterion, fit.x, method="Nelder-Mead",
                                   bounds=[(0.0, None)] * len(factors),
                                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 2000})
        best = polish if polish.fun <= fit.fun else fit
        theta = np.asarray(best.x, dtype=float)
        converged = bool(fit.success or polish.success) and bool(np.isfinite(best.fun))
    else:
        theta, converged = np.zeros(0), True
    beta, cov, sigma2 = reml.estimates(theta)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    effects, std_errors = nan.copy(), nan.copy()
    effects[present], std_errors[present] = beta, se
    variances = dict(empty)
    variances["residual"] = sigma2
    for name, t in zip(used, theta, strict=True):
        variances[name] = float(t * t * sigma2)
    total = sum(v for v in variances.values() if not np.isnan(v))
    shares = {name: (v / total if total > 0 and not np.isnan(v) else np.nan)
              for name, v in variances.items()}
    reason = None if converged else "the REML optimiser did not converge"
    return MixedModelResult(effects, std_errors, effects - z * std_errors,
                            effects + z * std_errors, variances, shares, converged,
                            int(y.size), reason, reasons)
