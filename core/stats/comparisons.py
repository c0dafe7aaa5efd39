"""Comparative judgments: pairwise preferences, rankings and best–worst scaling (no Django).

The input is judgments as index arrays over ``n_outputs`` outputs:

- pairwise: ``winner``, ``loser`` (for a tie, the two outputs in any order), ``tie`` (bool) and
  ``annotator``;
- rankings: a sequence of lists of output indices, best to worst;
- best–worst: ``tuples`` (a 2-D array, one row per judgment, ``-1`` pads a shorter tuple),
  ``best`` and ``worst``.

Functions:

- `pairwise_counts`, `bws_counts`: wins, losses, ties, win rate; best–worst's %best − %worst
  (Kiritchenko and Mohammad 2017).
- `bradley_terry`: the maximum-likelihood strengths of Bradley and Terry 1952 by Newton's method,
  with Davidson 1970's tie parameter when ties are modelled; `plackett_luce`: the strengths of
  rankings (Luce 1959, Plackett 1975), also by Newton's method (the same maximum as Hunter
  2004's MM algorithm, in a few steps instead of hundreds). Log-strengths have mean 0.
  When the outputs' win graph is not strongly connected (an output never wins, or never loses, or
  a group is never beaten by the rest) the maximum likelihood does not exist: every output then
  receives a virtual 0.01 win and 0.01 loss against a reference of log-strength 0
  (``REGULARISATION``) and the fit's ``reason`` says so.
- `bootstrap_pairwise`, `bootstrap_rankings`: a seeded bootstrap that resamples judgments,
  percentile intervals of the strengths, ranks with their intervals, the win-probability matrix.
- `split_half`: split-half reliability over random halves of the annotators, Spearman's
  correlation of the halves' scores corrected by Spearman–Brown (Spearman 1910, Brown 1910).
- `circular_triads`: per annotator, the circular triads (Kendall and Babington Smith 1940) and
  the number a random annotator would make on the same pairs; `position_bias`: the share of left
  choices with a binomial test.
- `bws_design`, `pair_design`: seeded best–worst tuples and balanced pairs.

docs/statistics/comparisons.md gives every formula, default and reference.

>>> fit = bradley_terry(np.array([0, 0, 1]), np.array([1, 2, 2]), n_outputs=3)
>>> fit.reason
'not_strongly_connected'
>>> fit = bradley_terry(np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2]), n_outputs=3)
>>> [round(float(v), 3) + 0.0 for v in fit.log_strength]
[0.42, 0.0, -0.42]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import sparse, special, stats
from scipy.sparse import csgraph

from core.stats._types import BoolArray, FloatArray, IntArray

REGULARISATION = 0.01  # virtual wins and losses of every output against log-strength 0
NOT_CONNECTED = "not_strongly_connected"
TIES_NOT_MODELLED = "decided_judgments_not_connected"
DENSE_TRIADS = 300  # an annotator's outputs up to which circular triads use dense products


# --------------------------------------------------------------------------------------------
# Inputs


def _index(name: str, values: object, n: int) -> IntArray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {array.shape}")
    array = array.astype(np.int64, copy=False)
    if array.size and (array.min() < 0 or array.max() >= n):
        raise ValueError(f"{name} indices must lie in [0, {n})")
    return array


def _pairwise(winner: object, loser: object, tie: object | None,
              n_outputs: int) -> tuple[IntArray, IntArray, BoolArray]:
    w = _index("winner", winner, n_outputs)
    lo = _index("loser", loser, n_outputs)
    if w.shape != lo.shape:
        raise ValueError("winner and loser must have the same length")
    t = np.zeros(w.size, bool) if tie is None else np.asarray(tie, dtype=bool)
    if t.shape != w.shape:
        raise ValueError("tie must have the length of winner")
    if np.any(w == lo):
        raise ValueError("an output cannot be compared with itself")
    return w, lo, t


# --------------------------------------------------------------------------------------------
# Counting scores


@dataclass(frozen=True)
class PairwiseCounts:
    wins: IntArray
    losses: IntArray
    ties: IntArray
    comparisons: IntArray
    win_rate: FloatArray  # (wins + ties / 2) / comparisons; nan when never compared


def pairwise_counts(winner: object, loser: object, tie: object | None = None, *,
                    n_outputs: int) -> PairwiseCounts:
    """Count each output's wins, losses and ties; the win rate counts a tie as half a win."""
    w, lo, t = _pairwise(winner, loser, tie, n_outputs)
    wins = np.bincount(w[~t], minlength=n_outputs)
    losses = np.bincount(lo[~t], minlength=n_outputs)
    ties = np.bincount(w[t], minlength=n_outputs) + np.bincount(lo[t], minlength=n_outputs)
    comparisons = wins + losses + ties
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(comparisons > 0, (wins + ties / 2) / comparisons, np.nan)
    return PairwiseCounts(wins.astype(np.int64), losses.astype(np.int64), ties.astype(np.int64),
                          comparisons.astype(np.int64), rate.astype(np.float64))


@dataclass(frozen=True)
class BwsCounts:
    appearances: IntArray
    best: IntArray
    worst: IntArray
    score: FloatArray  # (best − worst) / appearances, in [−1, 1]; nan when never shown


def _tuples(tuples: object, n_outputs: int) -> IntArray:
    array = np.asarray(tuples).astype(np.int64)
    if array.ndim != 2:
        raise ValueError("tuples must be a 2-D array (one row per judgment, -1 pads)")
    if array.size and (array.max() >= n_outputs or array.min() < -1):
        raise ValueError(f"tuple entries must lie in [0, {n_outputs}) or be -1")
    return array


def bws_counts(tuples: object, best: object, worst: object, *, n_outputs: int) -> BwsCounts:
    """Kiritchenko and Mohammad 2017's counting score: %best − %worst of each output."""
    tup = _tuples(tuples, n_outputs)
    b = _index("best", best, n_outputs)
    wo = _index("worst", worst, n_outputs)
    if not (b.size == wo.size == tup.shape[0]):
        raise ValueError("best and worst need one entry per tuple")
    rows = np.arange(tup.shape[0])
    if tup.size and (not np.all((tup == b[:, None]).any(axis=1))
                     or not np.all((tup == wo[:, None]).any(axis=1))):
        raise ValueError("best and worst must be outputs of their tuple")
    if np.any(b == wo) and rows.size:
        raise ValueError("best and worst must differ")
    shown = tup[tup >= 0]
    appearances = np.bincount(shown, minlength=n_outputs)
    nb = np.bincount(b, minlength=n_outputs)
    nw = np.bincount(wo, minlength=n_outputs)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(appearances > 0, (nb - nw) / appearances, np.nan)
    return BwsCounts(appearances.astype(np.int64), nb.astype(np.int64), nw.astype(np.int64),
                     score.astype(np.float64))


def bws_to_pairwise(tuples: object, best: object, worst: object, *,
                    n_outputs: int) -> tuple[IntArray, IntArray]:
    """Return the pairs a best–worst judgment implies: best beats every other output of its
    tuple, and every other output beats worst (the pair best–worst counted once)."""
    tup = _tuples(tuples, n_outputs)
    b = _index("best", best, n_outputs)
    wo = _index("worst", worst, n_outputs)
    k = tup.shape[1]
    bb = np.repeat(b, k)
    ww = np.repeat(wo, k)
    flat = tup.ravel()
    beat_by_best = (flat >= 0) & (flat != bb)
    beats_worst = (flat >= 0) & (flat != ww) & (flat != bb)
    winner = np.concatenate([bb[beat_by_best], flat[beats_worst]])
    loser = np.concatenate([flat[beat_by_best], ww[beats_worst]])
    return winner, loser


# --------------------------------------------------------------------------------------------
# Bradley–Terry and Davidson


@dataclass(frozen=True)
class StrengthFit:
    log_strength: FloatArray  # mean 0
    tie_parameter: float | None  # Davidson's ν; None without ties
    log_likelihood: float
    iterations: int
    reason: str | None  # NOT_CONNECTED when regularised

    def win_probability(self) -> FloatArray:
        """P[i, j] = the probability that i beats j (Davidson: not counting a tie)."""
        return win_probability(self.log_strength, self.tie_parameter)


def win_probability(log_strength: FloatArray, tie_parameter: float | None = None) -> FloatArray:
    """Return P[i, j] = π_i / (π_i + π_j + ν √(π_i π_j)) (ν = 0 without ties); P[i, i] = nan."""
    th = np.asarray(log_strength, dtype=np.float64)
    diff = th[:, None] - th[None, :]
    nu = 0.0 if tie_parameter is None else float(tie_parameter)
    # divide numerator and denominator by π_i
    p = 1.0 / (1.0 + np.exp(-diff) + nu * np.exp(-diff / 2))
    np.fill_diagonal(p, np.nan)
    return p


def _strongly_connected(pi: IntArray, pj: IntArray, forward: FloatArray, backward: FloatArray,
                        n: int) -> bool:
    """Is the graph 'i → j when i beat (or tied) j at least once' strongly connected?"""
    if n <= 1:
        return True
    rows = np.concatenate([pi[forward > 0], pj[backward > 0]])
    cols = np.concatenate([pj[forward > 0], pi[backward > 0]])
    graph = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    count, _ = csgraph.connected_components(graph, directed=True, connection="strong")
    return bool(count == 1)


def _aggregate(w: IntArray, lo: IntArray, t: BoolArray, n: int
               ) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Return (pair i, pair j, pair of each judgment, outcome: 0 i wins, 1 j wins, 2 tie)."""
    a = np.minimum(w, lo)
    b = np.maximum(w, lo)
    key = a * n + b
    pairs, pair_of = np.unique(key, return_inverse=True)
    outcome = np.where(t, 2, np.where(w == a, 0, 1))
    return (pairs // n).astype(np.int64), (pairs % n).astype(np.int64), \
        pair_of.astype(np.int64).ravel(), outcome.astype(np.int64)


def _fit_pairs(pi: IntArray, pj: IntArray, wi: FloatArray, wj: FloatArray, tt: FloatArray,
               n: int, *, davidson: bool, theta0: FloatArray | None = None,
               tau0: float = 0.0, regularise: bool = False, tol: float = 1e-11,
               max_iter: int = 200) -> tuple[FloatArray, float, float, int]:
    """Newton's method on the (Davidson) Bradley–Terry log-likelihood of aggregated pairs.

    Returns (centred log-strengths, log ν, log-likelihood, iterations)."""
    if not davidson:
        wi = wi + tt / 2
        wj = wj + tt / 2
        tt = np.zeros_like(wi)
    nn = wi + wj + tt
    k = n + 1 if davidson else n
    theta = np.zeros(n) if theta0 is None else np.array(theta0, dtype=np.float64)
    tau = float(tau0)
    eps = REGULARISATION if regularise else 0.0
    u = np.zeros(k)
    u[:n] = 1.0 / np.sqrt(n)
    diag_i = pi * k + pi
    diag_j = pj * k + pj
    off_ij = pi * k + pj
    off_ji = pj * k + pi

    def evaluate(th: FloatArray, ta: float, hessian: bool
                 ) -> tuple[float, FloatArray, FloatArray | None]:
        a = th[pi]
        b = th[pj]
        if davidson:
            c = ta + (a + b) / 2
            m = np.maximum(np.maximum(a, b), c)
            ea, eb, ec = np.exp(a - m), np.exp(b - m), np.exp(c - m)
            den = ea + eb + ec
            pa, pb, pc = ea / den, eb / den, ec / den
            log_d = m + np.log(den)
            ll = float(np.sum(wi * a + wj * b + tt * c - nn * log_d))
        else:
            m = np.maximum(a, b)
            ea, eb = np.exp(a - m), np.exp(b - m)
            den = ea + eb
            pa, pb = ea / den, eb / den
            pc = np.zeros_like(pa)
            log_d = m + np.log(den)
            ll = float(np.sum(wi * a + wj * b - nn * log_d))
        ma, mb = pa + pc / 2, pb + pc / 2
        ga = wi + tt / 2 - nn * ma
        gb = wj + tt / 2 - nn * mb
        grad = np.zeros(k)
        grad[:n] = np.bincount(pi, ga, minlength=n) + np.bincount(pj, gb, minlength=n)
        if davidson:
            grad[n] = float(np.sum(tt - nn * pc))
        if eps:
            s = special.expit(th)
            ll += float(eps * np.sum(th - 2 * np.logaddexp(0.0, th)))
            grad[:n] += eps * (1 - 2 * s)
        if not hessian:
            return ll, grad, None
        # covariance of the log-sum-exp's directions (1,0,0), (0,1,0), (½,½,1) under (pa,pb,pc)
        caa = pa + pc / 4 - ma * ma
        cbb = pb + pc / 4 - mb * mb
        cab = pc / 4 - ma * mb
        flat = np.bincount(diag_i, nn * caa, minlength=k * k) \
            + np.bincount(diag_j, nn * cbb, minlength=k * k) \
            + np.bincount(off_ij, nn * cab, minlength=k * k) \
            + np.bincount(off_ji, nn * cab, minlength=k * k)
        neg_h = np.asarray(flat, dtype=np.float64).reshape(k, k)
        if davidson:
            cat = pc / 2 - ma * pc
            cbt = pc / 2 - mb * pc
            col = np.bincount(pi, nn * cat, minlength=n) + np.bincount(pj, nn * cbt, minlength=n)
            neg_h[:n, n] += col
            neg_h[n, :n] += col
            neg_h[n, n] += float(np.sum(nn * (pc - pc * pc)))
        if eps:
            s = special.expit(th)
            neg_h[np.arange(n), np.arange(n)] += 2 * eps * s * (1 - s)
        return ll, grad, neg_h

    fixed_tau = tau
    x, ll, iterations = _newton(
        lambda x, hessian: evaluate(x[:n], float(x[n]) if davidson else fixed_tau, hessian),
        np.append(theta, tau) if davidson else theta, eps=eps, u=u, tol=tol, max_iter=max_iter)
    theta, tau = x[:n], float(x[n]) if davidson else fixed_tau
    if eps:  # report the likelihood of the data alone
        ll -= float(eps * np.sum(theta - 2 * np.logaddexp(0.0, theta)))
    return theta - theta.mean(), tau, ll, iterations


def _newton(evaluate: Callable[[FloatArray, bool], tuple[float, FloatArray, FloatArray | None]],
            x: FloatArray, *, eps: float, u: FloatArray, tol: float,
            max_iter: int) -> tuple[FloatArray, float, int]:
    """Maximise a concave log-likelihood by Newton's method with step halving; return the
    parameters, the log-likelihood there and the iterations taken. ``evaluate(x, hessian)``
    gives the log-likelihood, its gradient and (when asked) its negated Hessian; without the
    regularisation ``eps`` the strengths are identified only up to a shift, so ``u u^T`` (``u``
    along that shift) is added to the system solved."""
    iterations = 0
    ll, grad, neg_h = evaluate(x, True)
    while iterations < max_iter:
        iterations += 1
        assert neg_h is not None
        system = neg_h if eps else neg_h + np.outer(u, u)
        try:
            step = np.linalg.solve(system, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(system, grad, rcond=None)[0]
        scale = 1.0
        moved = False
        while scale >= 1e-6:
            new_x = x + scale * step
            with np.errstate(over="ignore", invalid="ignore"):
                new_ll, _, _ = evaluate(new_x, False)
            # a step whose likelihood overflows (a nearly singular system's huge step) is
            # halved like one that lowers it, never taken
            if np.isfinite(new_ll) and new_ll >= ll - 1e-12 * max(1.0, abs(ll)):
                moved = True
                break
            scale /= 2
        if not moved:
            break  # no step of the direction improves: the maximum, to the steps' precision
        x = new_x
        done = float(np.max(np.abs(scale * step))) < tol
        ll, grad, neg_h = evaluate(x, True)
        if done:
            break
    return x, ll, iterations


def bradley_terry(winner: object, loser: object, tie: object | None = None, *, n_outputs: int,
                  davidson: bool | None = None) -> StrengthFit:
    """Fit Bradley–Terry (or Davidson's tie model) by maximum likelihood.

    ``davidson=None`` models ties when there are any; ``davidson=False`` counts a tie as half a
    win for each side. The log-likelihood reported excludes the regularisation."""
    w, lo, t = _pairwise(winner, loser, tie, n_outputs)
    use_ties = bool(t.any()) if davidson is None else bool(davidson)
    pi, pj, pair_of, outcome = _aggregate(w, lo, t, n_outputs)
    counts = np.bincount(pair_of * 3 + outcome, minlength=pi.size * 3).reshape(-1, 3)
    return _fit_counts(pi, pj, counts.astype(np.float64), n_outputs, use_ties)


def _fit_counts(pi: IntArray, pj: IntArray, counts: FloatArray, n: int, use_ties: bool,
                theta0: FloatArray | None = None, tau0: float = 0.0) -> StrengthFit:
    wi, wj, tt = counts[:, 0], counts[:, 1], counts[:, 2]
    if use_ties and tt.sum() == 0:
        # ν → 0: the tie parameter has no finite estimate; fall back to Bradley–Terry.
        use_ties = False
    # Davidson's model needs the decided judgments alone to connect the outputs (with ν free to
    # grow, ties bound nothing); when they do not, ties count as half a win each way, as in
    # Bradley–Terry, whose strengths the virtual record then keeps finite.
    reason = None
    if use_ties and not _strongly_connected(pi, pj, wi, wj, n):
        use_ties = False
        reason = TIES_NOT_MODELLED
    connected = _strongly_connected(pi, pj, wi + tt * (not use_ties), wj + tt * (not use_ties), n)
    theta, tau, ll, iterations = _fit_pairs(pi, pj, wi, wj, tt, n, davidson=use_ties,
                                            theta0=theta0, tau0=tau0, regularise=not connected)
    return StrengthFit(theta, float(np.exp(tau)) if use_ties else None, ll, iterations,
                       reason if connected else NOT_CONNECTED)


# --------------------------------------------------------------------------------------------
# Plackett–Luce


def _rankings(rankings: Sequence[Sequence[int]], n_outputs: int) -> tuple[IntArray, IntArray]:
    lengths = np.array([len(r) for r in rankings], dtype=np.int64)
    width = int(lengths.max()) if lengths.size else 0
    padded = np.full((len(rankings), width), -1, dtype=np.int64)
    for row, ranking in enumerate(rankings):
        if any(int(x) < 0 for x in ranking):
            raise ValueError(f"ranking {row} has a negative output index")
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"ranking {row} repeats an output")
        padded[row, :len(ranking)] = ranking
    if padded.size and (padded.max() >= n_outputs or padded[padded != -1].min(initial=0) < 0):
        raise ValueError(f"ranking entries must lie in [0, {n_outputs})")
    keep = lengths >= 2
    return padded[keep], lengths[keep]


@dataclass(frozen=True)
class _Stages:
    """Every choice stage of the rankings: the output chosen and the outputs it was chosen
    from (-1 pads), the ranking of the stage, and the 'i above j' edges of each ranking."""

    chosen: IntArray
    members: IntArray
    ranking: IntArray
    edge_from: IntArray
    edge_to: IntArray
    edge_ranking: IntArray


def _stages(padded: IntArray, lengths: IntArray) -> _Stages:
    ranking = np.repeat(np.arange(padded.shape[0]), np.maximum(lengths - 1, 0))
    first = np.cumsum(np.maximum(lengths - 1, 0)) - np.maximum(lengths - 1, 0)
    step = np.arange(ranking.size) - np.repeat(first, np.maximum(lengths - 1, 0))
    members = padded[ranking].copy()
    members[np.arange(padded.shape[1])[None, :] < step[:, None]] = -1
    chosen = padded[ranking, step]
    # the chosen output is above every other member of its stage
    others = members.copy()
    others[np.arange(others.shape[0]), step] = -1
    keep = others >= 0
    edge_from = np.broadcast_to(chosen[:, None], others.shape)[keep]
    return _Stages(chosen, members, ranking, edge_from, others[keep],
                   np.broadcast_to(ranking[:, None], others.shape)[keep])


def _fit_pl(st: _Stages, weight: FloatArray, n: int, theta0: FloatArray | None = None,
            tol: float = 1e-11, max_iter: int = 200) -> tuple[FloatArray, float, int, bool]:
    """Newton's method on the Plackett–Luce log-likelihood, each ranking weighted (a bootstrap
    weight is how often the ranking was drawn)."""
    used = weight[st.edge_ranking] > 0
    graph = sparse.coo_matrix((np.ones(int(used.sum())), (st.edge_from[used], st.edge_to[used])),
                              shape=(n, n)).tocsr()
    connected = n <= 1 or csgraph.connected_components(graph, directed=True,
                                                       connection="strong")[0] == 1
    eps = 0.0 if connected else REGULARISATION
    w = weight[st.ranking]
    valid = st.members >= 0
    safe = np.where(valid, st.members, 0)
    pair_index = (safe[:, :, None] * n + safe[:, None, :])
    pair_valid = valid[:, :, None] & valid[:, None, :]
    flat_pairs = pair_index[pair_valid]
    chosen_count = np.bincount(st.chosen, w, minlength=n)
    u = np.full(n, 1.0 / np.sqrt(n))

    def evaluate(th: FloatArray, hessian: bool
                 ) -> tuple[float, FloatArray, FloatArray | None]:
        g = np.where(valid, th[safe], -np.inf)
        top = g.max(axis=1, keepdims=True)
        e = np.where(valid, np.exp(g - top), 0.0)
        total = e.sum(axis=1, keepdims=True)
        p = e / total
        ll = float(np.sum(w * (th[st.chosen] - top[:, 0] - np.log(total[:, 0]))))
        share = np.asarray(np.bincount(safe[valid], (w[:, None] * p)[valid], minlength=n), np.float64)
        grad: FloatArray = chosen_count - share
        if eps:
            ll += float(eps * np.sum(th - 2 * np.logaddexp(0.0, th)))
            grad = grad + eps * (1 - 2 * special.expit(th))
        if not hessian:
            return ll, grad, None
        outer = (w[:, None, None] * p[:, :, None] * p[:, None, :])[pair_valid]
        neg_h: FloatArray = -np.asarray(np.bincount(flat_pairs, outer, minlength=n * n),
                                         dtype=np.float64).reshape(n, n)
        neg_h[np.arange(n), np.arange(n)] += share
        if eps:
            s = special.expit(th)
            neg_h[np.arange(n), np.arange(n)] += 2 * eps * s * (1 - s)
        return ll, grad, neg_h

    theta = np.zeros(n) if theta0 is None else np.array(theta0, dtype=np.float64)
    theta, ll, iterations = _newton(evaluate, theta, eps=eps, u=u, tol=tol, max_iter=max_iter)
    if eps:
        ll -= float(eps * np.sum(theta - 2 * np.logaddexp(0.0, theta)))
    return theta - theta.mean(), ll, iterations, bool(connected)


def plackett_luce(rankings: Sequence[Sequence[int]], *, n_outputs: int,
                  tol: float = 1e-11) -> StrengthFit:
    """Fit Plackett–Luce strengths to rankings (best → worst) by maximum likelihood (Newton's
    method on the log-likelihood of Hunter 2004's formulation)."""
    padded, lengths = _rankings(rankings, n_outputs)
    st = _stages(padded, lengths)
    theta, ll, iterations, connected = _fit_pl(st, np.ones(padded.shape[0]), n_outputs, tol=tol)
    return StrengthFit(theta, None, ll, iterations, None if connected else NOT_CONNECTED)



# --------------------------------------------------------------------------------------------
# Bootstrap


@dataclass(frozen=True)
class ComparisonScores:
    fit: StrengthFit
    low: FloatArray  # percentile interval of the log-strength
    high: FloatArray
    rank: IntArray  # 1 = strongest; equal strengths share the better rank
    rank_low: IntArray  # best rank in the interval (the smaller number)
    rank_high: IntArray
    win_probability: FloatArray
    n_resamples: int
    confidence: float
    regularised_resamples: int  # resamples whose win graph was not strongly connected


def _ranks(theta: FloatArray) -> IntArray:
    ranked = stats.rankdata(-np.round(theta, 12), method="min", axis=-1)
    return np.asarray(ranked, dtype=np.int64)


def _summarise(fit: StrengthFit, draws: FloatArray, confidence: float,
               regularised: int) -> ComparisonScores:
    q = (1 - confidence) / 2 * 100
    ranks = _ranks(draws) if draws.size else np.zeros((0, fit.log_strength.size), np.int64)
    if draws.shape[0]:
        low, high = np.percentile(draws, [q, 100 - q], axis=0)
        rank_low, rank_high = np.percentile(ranks, [q, 100 - q], axis=0, method="nearest")
    else:
        low = high = np.full(fit.log_strength.size, np.nan)
        rank_low = rank_high = _ranks(fit.log_strength)
    return ComparisonScores(fit, low, high, _ranks(fit.log_strength),
                            np.asarray(rank_low, np.int64), np.asarray(rank_high, np.int64),
                            fit.win_probability(), int(draws.shape[0]), confidence, regularised)


def bootstrap_pairwise(winner: object, loser: object, tie: object | None = None, *,
                       n_outputs: int, n_resamples: int = 1000, confidence: float = 0.95,
                       rng: np.random.Generator, davidson: bool | None = None,
                       judgment: object | None = None) -> ComparisonScores:
    """Bradley–Terry (Davidson) strengths with a bootstrap that resamples judgments.

    Resampling m judgments with replacement is drawing the counts of the distinct (pair,
    outcome) cells from a multinomial with the observed shares, which is what this does; each
    resample's fit starts from the full fit.

    ``judgment`` (optional, one index per pair): the judgment each pair comes from, when one
    judgment gives several pairs (the pairs a best–worst judgment or a ranking implies); the
    bootstrap then resamples those judgments, each drawn judgment bringing all its pairs, so
    that the pairs of one judgment are not taken for independent evidence."""
    w, lo, t = _pairwise(winner, loser, tie, n_outputs)
    use_ties = bool(t.any()) if davidson is None else bool(davidson)
    pi, pj, pair_of, outcome = _aggregate(w, lo, t, n_outputs)
    cells = np.bincount(pair_of * 3 + outcome, minlength=pi.size * 3).astype(np.float64)
    if judgment is not None:
        group = np.asarray(judgment, dtype=np.int64)
        if group.shape != w.shape:
            raise ValueError("judgment must give one index per pair")
        groups, group_of = np.unique(group, return_inverse=True)
        group_of = group_of.ravel()
        cell_of = pair_of * 3 + outcome
        fit = _fit_counts(pi, pj, cells.reshape(-1, 3), n_outputs, use_ties)
        tau0 = float(np.log(fit.tie_parameter)) if fit.tie_parameter else 0.0
        use_ties = fit.tie_parameter is not None
        draws = np.empty((n_resamples, n_outputs))
        regularised = 0
        if groups.size == 0:
            return _summarise(fit, draws[:0], confidence, 0)
        for b in range(n_resamples):
            drawn = np.bincount(rng.integers(0, groups.size, groups.size),
                                minlength=groups.size).astype(np.float64)
            counts = np.bincount(cell_of, drawn[group_of], minlength=pi.size * 3
                                 ).astype(np.float64)
            one = _fit_counts(pi, pj, counts.reshape(-1, 3), n_outputs, use_ties,
                              theta0=fit.log_strength, tau0=tau0)
            draws[b] = one.log_strength
            regularised += one.reason is not None
        return _summarise(fit, draws, confidence, regularised)
    fit = _fit_counts(pi, pj, cells.reshape(-1, 3), n_outputs, use_ties)
    tau0 = float(np.log(fit.tie_parameter)) if fit.tie_parameter else 0.0
    use_ties = fit.tie_parameter is not None
    draws = np.empty((n_resamples, n_outputs))
    regularised = 0
    m = int(cells.sum())
    if m == 0:
        return _summarise(fit, draws[:0], confidence, 0)
    share = cells / m
    chunk = 100
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        counts = rng.multinomial(m, share, size=size).astype(np.float64)
        for row in range(size):
            one = _fit_counts(pi, pj, counts[row].reshape(-1, 3), n_outputs, use_ties,
                              theta0=fit.log_strength, tau0=tau0)
            draws[start + row] = one.log_strength
            regularised += one.reason is not None
    return _summarise(fit, draws, confidence, regularised)


def bootstrap_rankings(rankings: Sequence[Sequence[int]], *, n_outputs: int,
                       n_resamples: int = 1000, confidence: float = 0.95,
                       rng: np.random.Generator) -> ComparisonScores:
    """Plackett–Luce strengths with a bootstrap that resamples rankings (a resample weights each
    ranking by how often it was drawn; its fit starts from the full fit)."""
    padded, lengths = _rankings(rankings, n_outputs)
    st = _stages(padded, lengths)
    count = padded.shape[0]
    theta, ll, iterations, connected = _fit_pl(st, np.ones(count), n_outputs)
    fit = StrengthFit(theta, None, ll, iterations, None if connected else NOT_CONNECTED)
    draws = np.empty((n_resamples, n_outputs))
    regularised = 0
    if count == 0:
        return _summarise(fit, draws[:0], confidence, 0)
    for b in range(n_resamples):
        weight = np.bincount(rng.integers(0, count, count), minlength=count).astype(np.float64)
        th, _, _, ok = _fit_pl(st, weight, n_outputs, theta0=theta)
        draws[b] = th
        regularised += not ok
    return _summarise(fit, draws, confidence, regularised)


# --------------------------------------------------------------------------------------------
# Split-half reliability


@dataclass(frozen=True)
class SplitHalf:
    reliability: float  # mean Spearman–Brown corrected correlation over the splits
    sd: float
    low: float  # 2.5th and 97.5th percentiles over the splits
    high: float
    splits: int  # splits with a defined correlation
    reason: str | None


def split_half(annotator: object, score: Callable[[BoolArray], FloatArray], *,
               n_splits: int = 100, rng: np.random.Generator) -> SplitHalf:
    """Split the annotators at random into two halves (the odd one out joins the second),
    score the outputs on each half's judgments (``score(mask)`` → one score per output, nan =
    not scored), correlate the halves by Spearman and correct by Spearman–Brown,
    r_SB = 2r / (1 + r); average over ``n_splits`` splits."""
    ann = np.asarray(annotator, dtype=np.int64)
    people = np.unique(ann)
    if people.size < 2:
        return SplitHalf(np.nan, np.nan, np.nan, np.nan, 0, "fewer_than_two_annotators")
    values = []
    half = people.size // 2
    for _ in range(n_splits):
        first = rng.permutation(people)[:half]
        mask = np.isin(ann, first)
        a = np.asarray(score(mask), dtype=np.float64)
        b = np.asarray(score(~mask), dtype=np.float64)
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
            continue
        r = float(stats.spearmanr(a[ok], b[ok])[0])
        if not np.isfinite(r) or r <= -1:
            continue
        values.append(2 * r / (1 + r))
    if not values:
        return SplitHalf(np.nan, np.nan, np.nan, np.nan, 0, "no_split_with_a_correlation")
    v = np.array(values)
    return SplitHalf(float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0,
                     float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5)), int(v.size),
                     None)


def split_half_pairwise(winner: object, loser: object, tie: object | None, annotator: object, *,
                        n_outputs: int, n_splits: int = 100,
                        rng: np.random.Generator) -> SplitHalf:
    """Split-half reliability of the pairwise win rates."""
    w, lo, t = _pairwise(winner, loser, tie, n_outputs)

    def score(mask: BoolArray) -> FloatArray:
        return pairwise_counts(w[mask], lo[mask], t[mask], n_outputs=n_outputs).win_rate

    return split_half(annotator, score, n_splits=n_splits, rng=rng)


def split_half_bws(tuples: object, best: object, worst: object, annotator: object, *,
                   n_outputs: int, n_splits: int = 100, rng: np.random.Generator) -> SplitHalf:
    """Split-half reliability of the best–worst counting scores (Kiritchenko and Mohammad
    2017)."""
    tup = _tuples(tuples, n_outputs)
    b = _index("best", best, n_outputs)
    wo = _index("worst", worst, n_outputs)

    def score(mask: BoolArray) -> FloatArray:
        return bws_counts(tup[mask], b[mask], wo[mask], n_outputs=n_outputs).score

    return split_half(annotator, score, n_splits=n_splits, rng=rng)


# --------------------------------------------------------------------------------------------
# Consistency


@dataclass(frozen=True)
class Triads:
    circular: IntArray  # per annotator
    expected: FloatArray  # for a random annotator on the same pairs: triangles / 4
    triangles: IntArray  # triples of outputs whose three pairs the annotator decided


def circular_triads(winner: object, loser: object, tie: object | None, annotator: object, *,
                    n_outputs: int, n_annotators: int) -> Triads:
    """Count each annotator's circular triads (A > B, B > C, C > A).

    An annotator's preference on a pair is the direction of the majority of their judgments of
    it; a tie or an even split decides nothing. The count is trace(A³) / 3 for the 0/1
    preference matrix A; the expected count for an annotator choosing at random is a quarter of
    the triangles of decided pairs (2 of a triangle's 8 orientations are circular)."""
    w, lo, t = _pairwise(winner, loser, tie, n_outputs)
    ann = _index("annotator", annotator, n_annotators)
    circular = np.zeros(n_annotators, np.int64)
    triangles = np.zeros(n_annotators, np.int64)
    keep = ~t
    order = np.argsort(ann[keep], kind="stable")
    aw, al, aa = w[keep][order], lo[keep][order], ann[keep][order]
    bounds = np.searchsorted(aa, np.arange(n_annotators + 1))
    for person in range(n_annotators):
        s, e = bounds[person], bounds[person + 1]
        if e - s < 3:
            continue
        outs, local = np.unique(np.concatenate([aw[s:e], al[s:e]]), return_inverse=True)
        k = outs.size
        lw, ll = local[:e - s], local[e - s:]
        if k > DENSE_TRIADS:
            # many outputs, few pairs each (an annotator's pairs of a study's many sources):
            # sparse products, trace(A³) = Σ (A²) ∘ Aᵀ
            net_s = sparse.coo_matrix((np.ones(lw.size), (lw, ll)), shape=(k, k)).tocsr()
            net_s = (net_s - net_s.T).tocsr()
            a_s = (net_s > 0).astype(np.float64).tocsr()
            u_s = (a_s + a_s.T).tocsr()
            circular[person] = int(round((a_s @ a_s).multiply(a_s.T).sum() / 3))
            triangles[person] = int(round((u_s @ u_s).multiply(u_s).sum() / 6))
            continue
        net = np.zeros((k, k))
        np.add.at(net, (lw, ll), 1.0)
        net = net - net.T
        a = (net > 0).astype(np.float64)
        u = a + a.T
        circular[person] = int(round(np.trace(a @ a @ a) / 3))
        triangles[person] = int(round(np.trace(u @ u @ u) / 6))
    return Triads(circular, triangles / 4.0, triangles)


@dataclass(frozen=True)
class PositionBias:
    left: int
    decided: int  # judgments that are not ties
    share_left: float
    p_value: float  # two-sided binomial test of share 0.5


def position_bias(chose_left: object, tie: object | None = None) -> PositionBias:
    """The share of left choices among decided judgments, with a two-sided binomial test."""
    left = np.asarray(chose_left, dtype=bool)
    t = np.zeros(left.size, bool) if tie is None else np.asarray(tie, dtype=bool)
    decided = int((~t).sum())
    k = int((left & ~t).sum())
    if decided == 0:
        return PositionBias(0, 0, np.nan, np.nan)
    p = float(stats.binomtest(k, decided, 0.5).pvalue)
    return PositionBias(k, decided, k / decided, p)


# --------------------------------------------------------------------------------------------
# Designs


def pair_design(n_outputs: int, *, per_pair: int = 1, rng: np.random.Generator) -> IntArray:
    """Every pair of outputs ``per_pair`` times, in random order with random sides (left, right),
    the two sides of each pair as balanced as its count allows."""
    pairs = np.array(list(combinations(range(n_outputs), 2)), dtype=np.int64).reshape(-1, 2)
    rows = np.repeat(pairs, per_pair, axis=0)
    # alternate sides within each pair's repeats, starting on a random side
    start = rng.integers(0, 2, pairs.shape[0]).repeat(per_pair)
    flip = (start + np.tile(np.arange(per_pair), pairs.shape[0])) % 2 == 1
    rows[flip] = rows[flip][:, ::-1]
    return rows[rng.permutation(rows.shape[0])]


def bws_design(n_outputs: int, *, n_tuples: int | None = None, size: int = 4,
               rng: np.random.Generator, attempts: int = 10) -> IntArray:
    """Best–worst tuples as Kiritchenko and Mohammad 2017 describe: ``2N`` tuples of 4 by
    default, every output in the same number of tuples (± 1), and no two outputs together in
    more than one tuple where that is possible (otherwise as few repeats as the greedy search
    finds). Best of ``attempts`` seeded greedy builds (fewer when one repeats no pair)."""
    if n_outputs < size:
        raise ValueError(f"a tuple of {size} needs at least {size} outputs")
    count = 2 * n_outputs if n_tuples is None else int(n_tuples)
    slots = count * size
    best: IntArray | None = None
    best_key: tuple[int, int] | None = None
    for _ in range(attempts):
        quota = np.full(n_outputs, slots // n_outputs, dtype=np.int64)
        quota[rng.permutation(n_outputs)[:slots % n_outputs]] += 1
        together = np.zeros((n_outputs, n_outputs), dtype=np.int16)
        tuples = np.empty((count, size), dtype=np.int64)
        for row in range(count):
            chosen: list[int] = []
            conflicts = np.zeros(n_outputs, dtype=np.int64)
            for _slot in range(size):
                # fewest repeated pairs first, then most remaining quota, then at random
                noise = rng.random(n_outputs)
                key = -conflicts * 1_000_000.0 + quota * 1000.0 + noise
                key[chosen] = -np.inf
                # quota must stay ≥ 0: prefer any with quota left
                pick = int(np.argmax(np.where(quota > 0, key, key - 1e12)))
                chosen.append(pick)
                quota[pick] -= 1
                conflicts += together[pick]
            idx = np.array(chosen)
            together[np.ix_(idx, idx)] += 1
            tuples[row] = idx
        np.fill_diagonal(together, 0)
        key_now = (int(together.max()), int(np.maximum(together - 1, 0).sum()))
        if best_key is None or key_now < best_key:
            best, best_key = tuples, key_now
        if best_key[0] <= 1:
            break  # no pair repeated: nothing to improve
    assert best is not None
    return best
