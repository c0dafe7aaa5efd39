"""Time the sampled trust estimate at k = 30, 60, 120 annotators × 100 items.

Run from the repository root: ``python -m bench.trust_sampled [--samples N ...] [--seed N]``.

Data: 100 items on the ordinal 0–7 scale; annotator ``a`` of the first k − 1 reports the item's
true value plus normal noise of sd ``0.3 … 3.0``, rounded and clipped; the last annotator answers
uniformly at random; 10 % of the cells missing; seeded. For each k and each sample size, times
``trust_coefficients(method="sampled")`` (best of ``--repeat``), and reports how stable the
estimate is — the Spearman correlation of the coefficients of two seeds — and the rank of the
random annotator (1 = lowest coefficient), the largest Monte-Carlo error the estimate reports, and
the engine's cost estimate (``sampled_seconds``, which ``trust_budget_s`` is checked against)
beside the measured time: the estimate should stay above it. Prints human-readable lines and,
LAST, one line of JSON (docs/statistics/trust.md, "Cost of the sampled estimate").
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from scipy.stats import spearmanr

from core.stats.trust import sampled_seconds, trust_coefficients

N_ITEMS = 100
DOMAIN = np.arange(8)
LEVEL = "ordinal"
KS = (30, 60, 70, 120)


def make_ratings(k: int, seed: int) -> np.ndarray:
    """Return (k × 100) ordinal 0–7 ratings, 10 % missing; the last annotator is random."""
    rng = np.random.default_rng([seed, k])
    truth = rng.integers(0, 8, N_ITEMS)
    noise = np.linspace(0.3, 3.0, k - 1)[:, None]
    honest = np.clip(np.rint(truth + rng.normal(0.0, 1.0, (k - 1, N_ITEMS)) * noise), 0, 7)
    ratings = np.vstack([honest, rng.integers(0, 8, (1, N_ITEMS))]).astype(float)
    ratings[rng.random((k, N_ITEMS)) < 0.10] = np.nan
    return ratings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--samples", type=int, nargs="+", default=[20_000])
    parser.add_argument("--ks", type=int, nargs="+", default=list(KS))
    args = parser.parse_args(argv)
    rows = []
    print(f"sampled trust, {N_ITEMS} items, {LEVEL} 0-7, 10% missing, seed {args.seed}")
    for k in args.ks:
        ratings = make_ratings(k, args.seed)
        for n in args.samples:
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                a = trust_coefficients(ratings, level=LEVEL, domain=DOMAIN, n_samples=n,
                                       rng=np.random.default_rng(args.seed))
                best = min(best, time.perf_counter() - start)
            b = trust_coefficients(ratings, level=LEVEL, domain=DOMAIN, n_samples=n,
                                   rng=np.random.default_rng(args.seed + 1))
            rho = float(spearmanr(a.coefficients, b.coefficients).statistic)
            coef = np.array(a.coefficients, dtype=float)
            random_rank = int((coef < coef[-1]).sum()) + 1
            mc_error = max(e for e in (a.mc_error or (0.0,)) if e is not None)
            estimate = sampled_seconds(k=k, n_items=N_ITEMS, n_values=DOMAIN.size, n_samples=n)
            rows.append({"k": k, "n_samples": n, "seconds": round(best, 3),
                         "estimated_s": round(estimate, 3), "max_mc_error": round(mc_error, 4),
                         "seed_spearman": round(rho, 4), "random_rank": random_rank,
                         "random_coefficient": round(float(coef[-1]), 3),
                         "outliers": len(a.outliers)})
            print(f"  k={k:3d} n_samples={n:6d}: {best:7.2f} s; seed-to-seed Spearman {rho:.3f};"
                  f" random annotator rank {random_rank} of {k} (coefficient {coef[-1]:.3f});"
                  f" {len(a.outliers)} outlier(s); largest MC error {mc_error:.4f};"
                  f" estimated {estimate:.2f} s")
    print(json.dumps({"items": N_ITEMS, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
