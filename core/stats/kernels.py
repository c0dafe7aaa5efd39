"""Compile every numba kernel of the analyses into its on-disk cache: ``python -m core.stats.kernels``.

Pure numpy + numba, no Django.  The kernels (``_bootstrap_compiled``, ``_competence_compiled``,
``_subsets_compiled``) are compiled on their first call and cached beside their source
(``core/stats/__pycache__``, numba's ``cache=True``); without this step the first analysis after
an install paid for it (the correlations of ``bench.crowd`` on a fresh clone: 1.72 s, 0.23–0.30 s
once compiled).  ``make run``, ``make test`` and ``make bench`` run it (``make kernels``) after
installing the dependencies, and again whenever a kernel's source or the dependencies change
(numba's cache is keyed by the source file).

Each kernel is compiled by calling the engine that uses it on a tiny input, through the same
code path as an analysis, so the cached machine code has the argument types an analysis passes
(a call with other types would compile again).  Nothing here changes a result.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from core.stats import _bootstrap_compiled, _competence_compiled, _subsets_compiled


def compile_kernels() -> dict[str, float]:
    """Call every compiled engine once on a tiny input; return the seconds each took (the
    compilation, or reading the cache when it is already there).  Without numba: ``{}``."""
    seconds: dict[str, float] = {}
    rng = np.random.default_rng(0)
    if _competence_compiled.AVAILABLE:
        from core.stats.competence import dawid_skene, mace

        ratings = rng.integers(1, 4, (4, 12)).astype(float)
        started = time.perf_counter()
        dawid_skene(ratings, domain=(1.0, 2.0, 3.0), engine="compiled")
        mace(ratings, domain=(1.0, 2.0, 3.0), n_restarts=2, engine="compiled")
        seconds["competence"] = time.perf_counter() - started
    if _bootstrap_compiled.AVAILABLE:
        from core.stats.correlation_uncertainty import bootstrap_correlations

        x = rng.random(40)
        started = time.perf_counter()
        bootstrap_correlations([(x, x + rng.random(40)), (x * 2, x + rng.random(40))], seed=0,
                               n_resamples=40, engine="compiled")
        seconds["correlation_intervals"] = time.perf_counter() - started
    if _subsets_compiled.AVAILABLE:
        from core.stats._subsets import enumerated_alphas, n_subsets, prepare
        from core.stats.scales import LEVELS

        ratings = rng.integers(1, 4, (4, 12)).astype(float)
        started = time.perf_counter()
        for level in LEVELS:
            prep = prepare(ratings, level=level, domain=(1.0, 2.0, 3.0))
            enumerated_alphas(prep, 0, n_subsets(prep.k), engine="compiled")
        seconds["trust"] = time.perf_counter() - started
    return seconds


def main() -> int:
    seconds = compile_kernels()
    if not seconds:
        print("numba is not installed: the analyses use their numpy engines")
        return 0
    print("compiled kernels cached: " + ", ".join(f"{name} {s:.1f} s"
                                                  for name, s in seconds.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
