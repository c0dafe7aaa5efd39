"""Competence models: Dawid–Skene (Dawid and Skene 1979) and MACE (Hovy et al. 2013).

Both read the answers as nominal categories (the scale's ``domain``, in its order) and return, in
one `CompetenceResult`: a competence per annotator, an aggregated label per item with its
posterior probability and entropy, the log-likelihood, the number of EM iterations and whether
the tolerance was met. Pure numpy/scipy, no Django; deterministic (MACE's random restarts draw
from an injected ``rng``). docs/statistics/competence.md gives the models, the definitions of
competence, the defaults and how the implementations were checked against crowd-kit (Ustalov et
al. 2024) and the paper's data. What they return is defined in `core.stats.competence_results`
(importable from here).

Input: `LongRatings` (or a dense ``(n_annotators, n_items)`` array), ``np.nan`` = blank (ignored);
every other value must be in ``domain``. ``repeats`` adds further answers of the same annotators
to the same items (Dawid and Skene 1979 model repeated assessments as counts; Concord's duplicated
items can be passed this way), each a `LongRatings` of the same shape.

Dawid–Skene, in one line: class prior p_k and, per annotator j, a confusion matrix
π_j[k, l] = P(j answers l | true class k), fitted by EM from the vote shares; competence_j =
Σ_k p_k π_j[k, k], the probability that j's answer to a random item is its true class.

MACE, in one line: the true label is uniform; annotator j knows it with probability θ_j and then
answers it, else guesses from their own distribution ξ_j; competence_j = θ_j.

>>> r = np.array([[0, 1, 1, 0, 1.0], [0, 1, 1, 0, 1], [1, 0, 0, 1, 0]])
>>> ds = dawid_skene(r, domain=[0, 1])
>>> [i.label for i in ds.items]
[0.0, 1.0, 1.0, 0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.special import digamma, logsumexp

from core.stats import _competence_compiled
from core.stats._threads import available_threads
from core.stats._types import Domain, FloatArray, IntArray
from core.stats.competence_results import (
    AnnotatorCompetence,
    CompetenceResult,
    ItemLabel,
    ItemLabels,
)
from core.stats.heuristics import Ratings, as_long_ratings, rated_rows

__all__ = [
    "AnnotatorCompetence",
    "CompetenceResult",
    "ItemLabel",
    "ItemLabels",
    "dawid_skene",
    "mace",
]

Engine = Literal["auto", "numpy", "compiled"]
# From this many answers "auto" fits with the compiled E-steps (`_competence_compiled`): below,
# numpy is fast enough and a process saves numba's compilation.
COMPILED_MIN_ROWS = 20_000

# Floor of every probability that enters a logarithm (crowd-kit's _EPS): a confusion cell never
# observed would otherwise veto a class outright with log 0.
EPS = 1e-10


# --------------------------------------------------------------------------- input


@dataclass(frozen=True)
class _Rows:
    """Answers as (item, annotator, category index) rows; repeats are extra rows."""

    item: IntArray
    annotator: IntArray
    cat: IntArray
    n_items: int
    n_annotators: int
    domain: FloatArray


@dataclass(frozen=True)
class _ByItem:
    """The rows grouped by item for the compiled E-steps: item i's rows are
    ``starts[i]:starts[i + 1]`` of ``annotator`` and ``cat``, in their original order."""

    starts: IntArray
    annotator: IntArray
    cat: IntArray

    @classmethod
    def of(cls, rows: _Rows) -> _ByItem:
        order = np.argsort(rows.item, kind="stable")
        starts = np.zeros(rows.n_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows.item, minlength=rows.n_items), out=starts[1:])
        return cls(starts, rows.annotator[order], rows.cat[order])


def _compiled(engine: str, rows: _Rows) -> _ByItem | None:
    """The grouped rows when ``engine`` (``"auto"`` from COMPILED_MIN_ROWS answers) compiles."""
    if engine not in ("auto", "numpy", "compiled"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'compiled', got {engine!r}")
    if engine == "compiled" and not _competence_compiled.AVAILABLE:
        raise ValueError("engine 'compiled' needs numba, which is not installed")
    if engine == "compiled" or (engine == "auto" and _competence_compiled.AVAILABLE
                                and rows.item.size >= COMPILED_MIN_ROWS):
        return _ByItem.of(rows)
    return None


def _prepare(ratings: Ratings, domain: Domain, repeats: Sequence[Ratings]) -> _Rows:
    dom = np.asarray(domain, dtype=float)
    if dom.ndim != 1 or dom.size < 2:
        raise ValueError(f"domain must list at least two values, got {list(dom)}")
    if not np.all(np.isfinite(dom)) or np.unique(dom).size != dom.size:
        raise ValueError("domain values must be finite and distinct")
    data = as_long_ratings(ratings)
    parts = [data]
    for extra in repeats:
        more = as_long_ratings(extra)
        if (more.n_items, more.n_annotators) != (data.n_items, data.n_annotators):
            raise ValueError("repeats must cover the same items and annotators as ratings")
        parts.append(more)
    item = np.concatenate([p.item[rated_rows(p)] for p in parts])
    annotator = np.concatenate([p.annotator[rated_rows(p)] for p in parts])
    value = np.concatenate([p.value[rated_rows(p)] for p in parts])
    order = np.argsort(dom, kind="stable")
    pos = np.searchsorted(dom[order], value)
    pos = np.minimum(pos, dom.size - 1)
    found = dom[order][pos] == value
    if not np.all(found):
        bad = value[~found][0]
        raise ValueError(f"value {bad} is not in the domain {list(dom)}")
    return _Rows(item, annotator, order[pos].astype(np.int64), data.n_items, data.n_annotators,
                 dom)


def _labels(post: FloatArray, n_per_item: IntArray, dom: FloatArray) -> ItemLabels:
    """Each item's label (the value of highest posterior, the first on a tie), its probability
    and the posterior's entropy in nats; nan for an item without answers."""
    n_items = post.shape[0]
    answered = n_per_item > 0
    p = np.where(answered[:, None], post, 0.0)
    best = np.argmax(p, axis=1)
    rows = np.arange(n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    entropy = np.maximum(-terms.sum(axis=1), 0.0)
    blank = np.where(answered, 0.0, np.nan)  # nan where unanswered, else adds nothing
    return ItemLabels(dom[best] + blank, p[rows, best] + blank, entropy + blank,
                      n_per_item.astype(np.int64))


def _competences(values: FloatArray, n: IntArray) -> tuple[AnnotatorCompetence, ...]:
    return tuple(
        AnnotatorCompetence(j, float(values[j]), int(n[j]))
        if n[j] > 0 else AnnotatorCompetence(j, None, 0, "no answers")
        for j in range(values.size)
    )


def _check_iter(max_iter: int, tol: float) -> None:
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")


# --------------------------------------------------------------------------- Dawid–Skene


def _ds_m_step(rows: _Rows, post: FloatArray, answered: npt.NDArray[np.bool_],
               smoothing: float) -> tuple[FloatArray, FloatArray]:
    """Return the class prior (K,) and confusion matrices (J, K, K) from item posteriors."""
    k = rows.domain.size
    j = rows.n_annotators
    prior = post[answered].mean(axis=0)
    counts = np.empty((j, k, k))
    key = rows.annotator * k + rows.cat
    for c in range(k):
        counts[:, c, :] = np.bincount(key, weights=post[rows.item, c],
                                      minlength=j * k).reshape(j, k)
    counts = np.maximum(counts + smoothing, EPS)
    return prior, counts / counts.sum(axis=2, keepdims=True)


def _ds_e_step(rows: _Rows, prior: FloatArray, confusion: FloatArray,
               answered: npt.NDArray[np.bool_]) -> tuple[FloatArray, float]:
    """Return item posteriors (nan rows where unanswered) and the log-likelihood."""
    k = rows.domain.size
    log_conf = np.log(confusion)
    contrib = log_conf[rows.annotator, :, rows.cat]  # (rows, K): log P(answer | class)
    score = np.empty((rows.n_items, k))
    for c in range(k):
        score[:, c] = np.bincount(rows.item, weights=contrib[:, c], minlength=rows.n_items)
    score += np.log(np.maximum(prior, EPS))
    norm = logsumexp(score, axis=1)
    post = np.exp(score - norm[:, None])
    post[~answered] = np.nan
    return post, float(norm[answered].sum())


def _ds_counts_compiled(rows: _Rows, grouped: _ByItem, post: FloatArray) -> FloatArray:
    """Dawid–Skene's expected counts of ``post``, summed item by item (compiled), indexed
    [annotator, answer, class]."""
    k = rows.domain.size
    counts = np.empty((rows.n_annotators, k, k))
    _competence_compiled.ds_counts(grouped.starts, grouped.annotator, grouped.cat, post, counts)
    return counts


def _ds_m_step_counts(counts: FloatArray, post: FloatArray, answered: npt.NDArray[np.bool_],
                      smoothing: float) -> tuple[FloatArray, FloatArray]:
    """`_ds_m_step` from the expected counts ([annotator, answer, class]) of ``post``."""
    prior = post[answered].mean(axis=0)
    smoothed = np.maximum(counts.transpose(0, 2, 1) + smoothing, EPS)
    return prior, smoothed / smoothed.sum(axis=2, keepdims=True)


def _ds_e_step_compiled(rows: _Rows, grouped: _ByItem, prior: FloatArray,
                        confusion: FloatArray) -> tuple[FloatArray, float, FloatArray]:
    """`_ds_e_step` item by item (compiled); also the next M-step's expected counts of the new
    posteriors, summed in the same pass ([annotator, answer, class])."""
    k = rows.domain.size
    post = np.empty((rows.n_items, k))
    counts = np.empty((rows.n_annotators, k, k))
    log_lik = _competence_compiled.ds_e_step(
        grouped.starts, grouped.annotator, grouped.cat,
        np.ascontiguousarray(np.log(confusion).transpose(0, 2, 1)),  # [annotator, answer, class]
        np.log(np.maximum(prior, EPS)), post, counts)
    return post, float(log_lik), counts


def dawid_skene(
    ratings: Ratings,
    *,
    domain: Domain,
    repeats: Sequence[Ratings] = (),
    max_iter: int = 100,
    tol: float = 1e-6,
    smoothing: float = 0.01,
    engine: Engine = "auto",
) -> CompetenceResult:
    """Fit Dawid and Skene 1979's class-conditional model by EM.

    Start (Dawid and Skene 1979, §3; crowd-kit's start too): each item's posterior is its vote
    shares (a soft majority vote). Each iteration: M-step — class prior p_k = mean posterior over
    the answered items; confusion π_j[k, l] ∝ Σ_answers of j with value l posterior(item, k) +
    ``smoothing`` (0.01, a pseudo-count per cell so that one unseen (class, answer) pair cannot
    veto a class; 0 gives the paper's maximum likelihood), floored at 1e-10; E-step — posterior
    ∝ p_k Π_answers π_j[k, answer] (in logs). Stops when the log-likelihood per answer changes by
    less than ``tol`` (1e-6; 0 runs exactly ``max_iter``) or after ``max_iter`` (100) iterations
    (``converged`` says which). The reported prior and confusion matrices are re-estimated from
    the final posteriors (as crowd-kit reports them). Competence_j = Σ_k p_k π_j[k, k]: 1 for an
    annotator who always gives the true class, about 1/K for one answering uniformly at random,
    near 0 for one who systematically answers another class (whose answers Dawid–Skene still
    uses, through π, to find the labels).

    ``engine``: ``"numpy"`` (the reference), ``"compiled"`` (numba: the same fit to rounding,
    several times faster on many answers) or ``"auto"`` (compiled from ``COMPILED_MIN_ROWS``
    answers when numba is installed).

    Example: two annotators agree on five binary items and a third always answers the other
    value: the labels follow the first two (see the module doctest), and the third's
    competence is near 0.
    """
    _check_iter(max_iter, tol)
    if not smoothing >= 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}")
    rows = _prepare(ratings, domain, repeats)
    grouped = _compiled(engine, rows)
    k = rows.domain.size
    n_per_item = np.bincount(rows.item, minlength=rows.n_items)
    answered = n_per_item > 0
    votes = np.bincount(rows.item * k + rows.cat, minlength=rows.n_items * k).reshape(-1, k)
    post = np.full((rows.n_items, k), np.nan)
    post[answered] = votes[answered] / n_per_item[answered, None]
    params: dict[str, object] = {"max_iter": max_iter, "tol": tol, "smoothing": smoothing,
                                 "init": "vote_shares", "n_repeats": len(repeats)}
    n_ann = np.bincount(rows.annotator, minlength=rows.n_annotators)
    if not answered.any():
        prior = np.full(k, 1.0 / k)
        return CompetenceResult("dawid_skene", params, tuple(map(float, rows.domain)),
                                _competences(np.zeros(rows.n_annotators), n_ann),
                                _labels(post, n_per_item, rows.domain), post, prior, 0.0, 0,
                                False, np.full((rows.n_annotators, k, k), 1.0 / k))
    n_rows = rows.item.size
    previous = -np.inf
    converged = False
    iterations = 0
    log_lik = 0.0
    # The compiled engine sums each M-step's counts in the E-step that made its posteriors.
    counts = None if grouped is None else _ds_counts_compiled(rows, grouped, post)

    def m_step(post: FloatArray) -> tuple[FloatArray, FloatArray]:
        if counts is None:
            return _ds_m_step(rows, post, answered, smoothing)
        return _ds_m_step_counts(counts, post, answered, smoothing)

    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        prior, confusion = m_step(post)
        if grouped is None:
            post, log_lik = _ds_e_step(rows, prior, confusion, answered)
        else:
            post, log_lik, counts = _ds_e_step_compiled(rows, grouped, prior, confusion)
        if abs(log_lik - previous) / n_rows < tol:
            converged = True
            break
        previous = log_lik
    prior, confusion = m_step(post)
    diag = confusion[:, np.arange(k), np.arange(k)]
    competence = diag @ prior
    return CompetenceResult(
        method="dawid_skene",
        params=params,
        domain=tuple(float(v) for v in rows.domain),
        annotators=_competences(competence, n_ann),
        labels=_labels(post, n_per_item, rows.domain),
        posterior=post,
        class_prior=prior,
        log_likelihood=log_lik,
        iterations=iterations,
        converged=converged,
        confusion=confusion,
    )


# --------------------------------------------------------------------------- MACE


@dataclass(frozen=True)
class _MaceFit:
    spamming: FloatArray  # (J, 2): [P(guess), P(know)], MACE's "spamming" table
    strategy: FloatArray  # (J, K): ξ
    posterior: FloatArray
    log_likelihood: float
    iterations: int
    converged: bool


def _mace_e_step(
    rows: _Rows, spamming: FloatArray, strategy: FloatArray, answered: npt.NDArray[np.bool_]
) -> tuple[FloatArray, float, FloatArray, FloatArray]:
    """Return posteriors, log-likelihood and the expected (know, guess, strategy) counts."""
    k = rows.domain.size
    j = rows.n_annotators
    guess = np.maximum(spamming[rows.annotator, 0] * strategy[rows.annotator, rows.cat], 1e-300)
    know = spamming[rows.annotator, 1]
    # log P(answers of i | T_i = t) = Σ log(guess) + Σ_{answers equal to t} log(1 + know/guess).
    base = np.bincount(rows.item, weights=np.log(guess), minlength=rows.n_items)
    bonus = np.bincount(rows.item * k + rows.cat, weights=np.log1p(know / guess),
                        minlength=rows.n_items * k).reshape(-1, k)
    score = base[:, None] + bonus - np.log(k)
    norm = logsumexp(score, axis=1)
    post = np.exp(score - norm[:, None])
    post[~answered] = np.nan
    # The answer was given knowingly only if the true label is the answer itself.
    knew = post[rows.item, rows.cat] * know / (guess + know)
    guessed = 1.0 - knew
    knowing: FloatArray = np.stack(
        [np.bincount(rows.annotator, weights=guessed, minlength=j),
         np.bincount(rows.annotator, weights=knew, minlength=j)], axis=1).astype(np.float64)
    strat: FloatArray = np.bincount(rows.annotator * k + rows.cat, weights=guessed,
                                    minlength=j * k).reshape(j, k).astype(np.float64)
    return post, float(norm[answered].sum()), knowing, strat


def _mace_e_step_compiled(
    rows: _Rows, grouped: _ByItem, spamming: FloatArray, strategy: FloatArray
) -> tuple[FloatArray, float, FloatArray, FloatArray]:
    """`_mace_e_step` item by item (compiled): the logarithms per annotator and answer come
    from small tables, computed here."""
    k, j = rows.domain.size, rows.n_annotators
    guess = np.maximum(spamming[:, :1] * strategy, 1e-300)  # (J, K), as per row in numpy
    know = spamming[:, 1:]
    tables = np.stack([np.log(guess), np.log1p(know / guess), know / (guess + know)], axis=1)
    post = np.empty((rows.n_items, k))
    counts = np.empty((j, 2 + k))
    log_lik = _competence_compiled.mace_e_step(grouped.starts, grouped.annotator, grouped.cat,
                                               tables, post, counts)
    return post, float(log_lik), counts[:, :2].copy(), counts[:, 2:].copy()


def _mace_m_step(
    knowing: FloatArray, strat: FloatArray, *, method: str, smoothing: float,
    prior_guessing: float, prior_knowing: float, prior_strategy: float,
) -> tuple[FloatArray, FloatArray]:
    if method == "em":
        s = knowing + smoothing
        x = strat + smoothing
        return s / s.sum(axis=1, keepdims=True), x / x.sum(axis=1, keepdims=True)
    # Variational Bayes (Hovy et al. 2013, §2.4; MACE's default): exp(ψ(count + prior)) over
    # exp(ψ(total + priors)), the mean-field point estimates of the Beta/Dirichlet posteriors.
    s = knowing + np.array([prior_guessing, prior_knowing])
    x = strat + prior_strategy
    return (np.exp(digamma(s) - digamma(s.sum(axis=1, keepdims=True))),
            np.exp(digamma(x) - digamma(x.sum(axis=1, keepdims=True))))


def _mace_run(
    rows: _Rows, spamming: FloatArray, strategy: FloatArray, *, method: str, max_iter: int,
    tol: float, smoothing: float, prior_guessing: float, prior_knowing: float,
    prior_strategy: float, grouped: _ByItem | None = None,
) -> _MaceFit:
    """Run one EM start from the given parameters: E, then ``max_iter`` × (M, E) at most
    (``grouped``: with the compiled E-step)."""
    answered = np.bincount(rows.item, minlength=rows.n_items) > 0
    n_rows = max(rows.item.size, 1)

    def e_step(spamming: FloatArray, strategy: FloatArray
               ) -> tuple[FloatArray, float, FloatArray, FloatArray]:
        if grouped is None:
            return _mace_e_step(rows, spamming, strategy, answered)
        return _mace_e_step_compiled(rows, grouped, spamming, strategy)

    post, log_lik, knowing, strat = e_step(spamming, strategy)
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        spamming, strategy = _mace_m_step(
            knowing, strat, method=method, smoothing=smoothing, prior_guessing=prior_guessing,
            prior_knowing=prior_knowing, prior_strategy=prior_strategy,
        )
        previous = log_lik
        post, log_lik, knowing, strat = e_step(spamming, strategy)
        if abs(log_lik - previous) / n_rows < tol:
            converged = True
            break
    return _MaceFit(spamming, strategy, post, log_lik, iterations, converged)


def mace(
    ratings: Ratings,
    *,
    domain: Domain,
    repeats: Sequence[Ratings] = (),
    method: Literal["vb", "em"] = "vb",
    n_restarts: int = 10,
    max_iter: int = 50,
    tol: float = 1e-7,
    smoothing: float | None = None,
    prior_guessing: float = 0.5,
    prior_knowing: float = 0.5,
    prior_strategy: float = 10.0,
    init_noise: float = 0.5,
    rng: np.random.Generator | None = None,
    engine: Engine = "auto",
) -> CompetenceResult:
    """Fit MACE (Hovy et al. 2013) by EM with random restarts; keep the best log-likelihood.

    Model: the true label T_i is uniform over the K domain values; annotator j knows it with
    probability θ_j (then answers T_i) and otherwise guesses from ξ_j. Defaults are those of the
    paper's reference implementation (MACE 0.5): ``method="vb"`` — Variational Bayes with a
    Beta(``prior_guessing`` 0.5, ``prior_knowing`` 0.5) prior on (1 − θ_j, θ_j) and a symmetric
    Dirichlet(``prior_strategy`` 10) prior on ξ_j; ``method="em"`` — plain EM whose M-step adds
    ``smoothing`` (default 0.01 / K) to the expected counts. Each of ``n_restarts`` (10) starts
    draws θ_j and ξ_j as 1 + ``init_noise`` (0.5) × U[0, 1) per cell, normalised, from ``rng``
    (default ``np.random.default_rng(0)``), runs an E-step and then at most ``max_iter`` (50)
    M/E rounds, stopping early when the log-likelihood per answer changes by less than ``tol``
    (1e-7; 0 = always ``max_iter``, MACE's own schedule). The start with the highest final
    log-likelihood wins (the first on a tie); ``iterations`` and ``converged`` are its own.
    ``engine`` as for `dawid_skene`.
    Competence_j = θ_j, MACE's competence (in VB mode its variational estimate
    exp(ψ(know + 0.5)) / exp(ψ(answers + 1)), slightly below the posterior mean). ``params``
    records every setting and the winning ``restart``.

    Example: on the module doctest's data the third annotator, always contradicting the other
    two, gets θ near 0 and the labels follow the other two.
    """
    _check_iter(max_iter, tol)
    if method not in ("vb", "em"):
        raise ValueError(f"method must be 'vb' or 'em', got {method!r}")
    if n_restarts < 1:
        raise ValueError(f"n_restarts must be >= 1, got {n_restarts}")
    if min(prior_guessing, prior_knowing, prior_strategy) <= 0:
        raise ValueError("the priors must be positive")
    if init_noise < 0:
        raise ValueError(f"init_noise must be >= 0, got {init_noise}")
    rows = _prepare(ratings, domain, repeats)
    grouped = _compiled(engine, rows)
    k, j = rows.domain.size, rows.n_annotators
    smooth = 0.01 / k if smoothing is None else float(smoothing)
    if smooth < 0 or (method == "em" and smooth == 0):
        raise ValueError("smoothing must be positive for method='em' (a zero count gives log 0)")
    rng = np.random.default_rng(0) if rng is None else rng
    # Every start is drawn first, in the order a sequential loop draws them, so the restarts
    # can run side by side (the compiled E-step releases the GIL) with the same result.
    starts = []
    for _ in range(n_restarts):
        spamming = 1.0 + init_noise * rng.random((j, 2))
        strategy = 1.0 + init_noise * rng.random((j, k))
        starts.append((spamming / spamming.sum(axis=1, keepdims=True),
                       strategy / strategy.sum(axis=1, keepdims=True)))

    def run(start: tuple[FloatArray, FloatArray]) -> _MaceFit:
        return _mace_run(
            rows, *start, method=method, max_iter=max_iter, tol=tol, smoothing=smooth,
            prior_guessing=prior_guessing, prior_knowing=prior_knowing,
            prior_strategy=prior_strategy, grouped=grouped)

    workers = min(n_restarts, available_threads()) if grouped is not None else 1
    best: _MaceFit | None = None
    best_restart = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # In restart order, keeping only the best so far (a fit's posteriors are items × K).
        for restart, fit in enumerate(pool.map(run, starts) if workers > 1
                                      else map(run, starts)):
            if best is None or fit.log_likelihood > best.log_likelihood:
                best, best_restart = fit, restart
    assert best is not None  # n_restarts >= 1
    n_per_item = np.bincount(rows.item, minlength=rows.n_items)
    n_ann = np.bincount(rows.annotator, minlength=j)
    params: dict[str, object] = {
        "method": method, "n_restarts": n_restarts, "max_iter": max_iter, "tol": tol,
        "smoothing": smooth if method == "em" else None,
        "prior_guessing": prior_guessing if method == "vb" else None,
        "prior_knowing": prior_knowing if method == "vb" else None,
        "prior_strategy": prior_strategy if method == "vb" else None,
        "init_noise": init_noise, "restart": best_restart, "n_repeats": len(repeats),
    }
    return CompetenceResult(
        method="mace",
        params=params,
        domain=tuple(float(v) for v in rows.domain),
        annotators=_competences(best.spamming[:, 1], n_ann),
        labels=_labels(best.posterior, n_per_item, rows.domain),
        posterior=best.posterior,
        class_prior=np.full(k, 1.0 / k),
        log_likelihood=best.log_likelihood,
        iterations=best.iterations,
        converged=best.converged,
        strategy=best.strategy,
    )
