"""The E-steps of Dawid–Skene and MACE over many answers, compiled with numba.

Pure numpy + numba, no Django.  Same contract as the numpy E-steps of
``core.stats.competence`` (which stay the reference, and the engine for small inputs and where
numba is not installed).  The answers come grouped by item (``starts[i]:starts[i + 1]`` are item
``i``'s rows, in their original order), so one pass over the rows computes each item's class
scores, normalises them (log-sum-exp), and adds what the item's answers contribute to the
M-step's counts while they are still in cache.  Everything that depends only on an annotator
and an answer (its logarithms) is computed once per iteration by the caller, with numpy, into
small (annotators × classes) tables, so the kernels do no logarithm per row.

Why: at a million answers the numpy E-step of MACE makes a dozen passes over per-row arrays
(gathers, logarithms, ``bincount``) and took about 50 ms; MACE runs it some 500 times per scale
(10 restarts × 50 iterations).  The first call in a process compiles the kernels (a second or
two; numba caches the machine code beside this file when it can write there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numba is optional: without it the numpy E-steps compute the same models
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None


def _mace_e_step(starts: Any, annotator: Any, cat: Any, tables: Any, post: Any,
                 counts: Any) -> float:
    """One E-step of MACE; return the log-likelihood of the answered items.

    ``tables[a, 0, c]`` = log(guess), ``tables[a, 1, c]`` = log(1 + know/guess) and
    ``tables[a, 2, c]`` = know/(guess + know) for annotator a and answer c: one annotator's in
    adjacent memory, so an answer reads one or two cache lines (at tens of thousands of
    annotators the tables outgrow the processor's cache).  Per item i and class t: score =
    Σ log(guess) + Σ_{answers equal to t} log(1 + know/guess) − log K; the posterior is
    exp(score − logsumexp(score)) (nan for an item without answers).  Then each answer adds
    P(known) = post[i, c] · know/(guess + know) to ``counts[a, 1]``, the rest to
    ``counts[a, 0]`` and ``counts[a, 2 + c]`` (zeroed here): MACE's expected knowing and
    strategy counts, side by side for the same reason.
    """
    n_items, k = post.shape
    counts[:] = 0.0
    log_k = np.log(k)
    score = np.empty(k)
    total = 0.0
    for i in range(n_items):
        lo = starts[i]
        hi = starts[i + 1]
        if lo == hi:
            for t in range(k):
                post[i, t] = np.nan
            continue
        base = 0.0
        for t in range(k):
            score[t] = 0.0
        for r in range(lo, hi):
            a = annotator[r]
            c = cat[r]
            base += tables[a, 0, c]
            score[c] += tables[a, 1, c]
        top = -np.inf
        for t in range(k):
            score[t] += base - log_k
            if score[t] > top:
                top = score[t]
        total += _normalise(score, top, post, i)
        for r in range(lo, hi):
            a = annotator[r]
            c = cat[r]
            knew = post[i, c] * tables[a, 2, c]
            guessed = 1.0 - knew
            counts[a, 0] += guessed
            counts[a, 1] += knew
            counts[a, 2 + c] += guessed
    return total


def _ds_e_step(starts: Any, annotator: Any, cat: Any, log_confusion: Any, log_prior: Any,
               post: Any, counts: Any) -> float:
    """One E-step of Dawid–Skene; return the log-likelihood of the answered items.

    Per item i and class t: score = Σ_answers log π_a[t, c] + log p_t; the posterior is
    exp(score − logsumexp(score)) (nan for an item without answers).  ``log_confusion`` is
    indexed [a, c, t] (answer before class): an answer's K terms are adjacent in memory.  The
    next M-step's counts are added while the item's answers are in cache: ``counts[a, c, t]`` =
    Σ over a's answers c of the item's posterior of class t (zeroed here; `_ds_counts`).
    """
    n_items, k = post.shape
    counts[:] = 0.0
    score = np.empty(k)
    total = 0.0
    for i in range(n_items):
        lo = starts[i]
        hi = starts[i + 1]
        if lo == hi:
            for t in range(k):
                post[i, t] = np.nan
            continue
        for t in range(k):
            score[t] = 0.0
        for r in range(lo, hi):
            a = annotator[r]
            c = cat[r]
            for t in range(k):
                score[t] += log_confusion[a, c, t]
        top = -np.inf
        for t in range(k):
            score[t] += log_prior[t]
            if score[t] > top:
                top = score[t]
        total += _normalise(score, top, post, i)
        for r in range(lo, hi):
            a = annotator[r]
            c = cat[r]
            for t in range(k):
                counts[a, c, t] += post[i, t]
    return total


def _normalise(score: Any, top: float, out: Any, i: int) -> float:
    """Fill ``out[i]`` with exp(score − logsumexp(score)) and return logsumexp(score) (``top``:
    the largest score): one exponential per class."""
    s = 0.0
    for t in range(score.size):
        e = np.exp(score[t] - top)
        out[i, t] = e
        s += e
    for t in range(score.size):
        out[i, t] /= s
    return float(top + np.log(s))


def _ds_counts(starts: Any, annotator: Any, cat: Any, post: Any, counts: Any) -> None:
    """Dawid–Skene's expected counts: ``counts[a, c, t]`` = Σ over a's answers c of the
    item's posterior of class t (zeroed here; answer before class, as in `_ds_e_step`)."""
    n_items, k = post.shape
    counts[:] = 0.0
    for i in range(n_items):
        for r in range(starts[i], starts[i + 1]):
            a = annotator[r]
            c = cat[r]
            for t in range(k):
                counts[a, c, t] += post[i, t]


mace_e_step: Any = _mace_e_step
ds_e_step: Any = _ds_e_step
ds_counts: Any = _ds_counts
if AVAILABLE:
    _jit = numba.njit(cache=True, nogil=True, error_model="numpy")
    _normalise = _jit(_normalise)  # the kernels call the compiled one
    mace_e_step = _jit(_mace_e_step)
    ds_e_step = _jit(_ds_e_step)
    ds_counts = _jit(_ds_counts)
