"""How many threads the compiled kernels may use: the processor cores this process may run on.

The kernels of ``_bootstrap_compiled`` and ``_competence_compiled`` release the GIL, so independent
pieces of one analysis (MACE's restarts, the correlations of one bootstrap block) run side by
side in threads, with the same result as in sequence. The deployment may cap them
(`limit_threads`; the analysis app applies ``CONCORD_ANALYSIS_THREADS`` at start-up), e.g. at 1
where the worker processes already take every core.
"""

from __future__ import annotations

import os

_limit = 0  # 0: every core this process may use


def limit_threads(limit: int) -> None:
    """Cap the threads of the compiled kernels at ``limit`` (0: no cap)."""
    global _limit
    if limit < 0:
        raise ValueError(f"the thread limit must be >= 0, got {limit}")
    _limit = limit


def available_threads() -> int:
    """Return the cores this process may use (``os.sched_getaffinity``), at most the limit."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _limit) if _limit else cores)
