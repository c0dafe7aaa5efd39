"""The sections of a study's comparative questions (pairwise, ranking, best–worst): scores,
win probabilities, reliability, each annotator's consistency and the correlations with the rest
of the study (docs/results.md, "Comparisons"; the statistics in `core.stats.comparisons`, their
formulas in docs/statistics/comparisons.md).

The input is one `Judgments` per comparative question: its judgments as arrays, each judgment
the outputs shown (in the order shown) and the *level* of each (0 = the best group; a pairwise
tie puts both outputs on level 0; a best–worst judgment puts the best on 0, the worst on 2 and
the rest on 1). Every analysis runs on the outputs (``level: "output"``) and, when the outputs
name their systems, on the systems (``level: "system"``: each output stands for its system).

>>> j = judgments_from_choices("q", "pairwise", outputs=["a", "b"], rows=[
...     ("A1", "c1", 0.0, {"shown": ["b", "a"], "pick": "a"})])
>>> j.shown.tolist(), j.level.tolist()
([[1, 0]], [[1, 0]])
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy import stats as sps
from scipy.sparse import csgraph

from core.comparative import TIE
from core.settings import AnalysisSettings
from core.stats._types import BoolArray, FloatArray, IntArray, LongRatings
from core.stats.alpha import alpha_long
from core.stats.comparisons import (
    ComparisonScores,
    bootstrap_pairwise,
    bootstrap_rankings,
    circular_triads,
    pairwise_counts,
    position_bias,
    split_half,
)
from core.stats.competence import mace
from core.stats.correlation_uncertainty import bootstrap_correlation
from core.stats.systems import adjust

COMPARISON_SECTIONS = ("comparison_scores", "comparison_win_probabilities",
                       "comparison_reliability", "comparison_consistency",
                       "comparison_correlations")
# Strengths are fitted for at most this many outputs (or systems) of one question: a fit's
# Newton step solves a dense system of that size, once per bootstrap resample. A study with
# more (many sources, each with its own outputs) gets its outputs' counts and its systems' fit.
FIT_LIMIT = 200
# The win-probability matrix lists at most this many outputs (a matrix of 60 has 3 540 cells,
# already more than a heatmap can show readably); systems are never that many.
MATRIX_LIMIT = 60
# An annotator is flagged as inconsistent when their circular triads reach this share of a
# random annotator's expected number, once that expectation is at least TRIADS_MIN_EXPECTED
# (10 triangles of decided pairs); or when their position bias' Holm-adjusted p is below
# POSITION_ALPHA.
TRIADS_SHARE_FLAG = 0.75
TRIADS_MIN_EXPECTED = 2.5
POSITION_ALPHA = 0.05
MODELS = {"pairwise": "bradley_terry", "bws": "bradley_terry", "ranking": "plackett_luce"}


@dataclass(frozen=True)
class Judgments:
    """One comparative question's judgments (the given ones: a missing answer is counted in
    ``missing`` and nowhere else).

    ``outputs``: the outputs' names (external ids), ``systems`` each output's system ("" =
    none), ``metrics`` each output's metric values (nan = none); ``annotator`` and
    ``comparison`` index ``annotators`` and ``comparisons``; ``shown`` (judgments × widest
    tuple) the outputs in the order shown, -1 padding; ``level`` the level of each shown output
    (0 best); ``value`` the stored canonical value (what α and MACE read)."""

    question: str
    kind: str
    outputs: tuple[str, ...]
    systems: tuple[str, ...]
    annotators: tuple[str, ...]
    comparisons: tuple[str, ...]
    annotator: IntArray
    comparison: IntArray
    shown: IntArray
    level: IntArray
    value: FloatArray
    prompt: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    missing: int = 0
    metrics: Mapping[str, FloatArray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.annotator.size)

    def without_annotators(self, names: Iterable[str]) -> Judgments:
        """The judgments without those of the annotators named (the run's excluded ones)."""
        left_out = {n for n, name in enumerate(self.annotators) if name in set(names)}
        if not left_out:
            return self
        keep = ~np.isin(self.annotator, sorted(left_out))
        return replace(self, annotator=self.annotator[keep], comparison=self.comparison[keep],
                       shown=self.shown[keep], level=self.level[keep], value=self.value[keep])


def _levels(kind: str, choice: Mapping[str, Any], index: Mapping[str, int]
            ) -> tuple[list[int], list[int]] | None:
    shown = choice.get("shown")
    if not isinstance(shown, list) or not all(s in index for s in shown) or len(shown) < 2:
        return None
    rank: dict[str, int] = {}
    if kind == "pairwise":
        pick = choice.get("pick")
        if pick == TIE:
            rank = {s: 0 for s in shown}
        elif pick in shown:
            rank = {s: 0 if s == pick else 1 for s in shown}
    elif kind == "ranking":
        for g, group in enumerate(choice.get("order") or []):
            for name in [group] if isinstance(group, str) else group:
                rank[name] = g
    else:
        rank = {s: 0 if s == choice.get("best") else 2 if s == choice.get("worst") else 1
                for s in shown}
    if set(rank) != set(shown):
        return None
    return [index[s] for s in shown], [rank[s] for s in shown]


def judgments_from_choices(question: str, kind: str, *, outputs: Sequence[str],
                           rows: Iterable[tuple[str, str, float | None, Any]],
                           systems: Sequence[str] | None = None,
                           metrics: Mapping[str, Sequence[float]] | None = None,
                           annotators: Sequence[str] = (), prompt: str = "",
                           options: Mapping[str, Any] | None = None) -> Judgments:
    """Build a question's `Judgments` from its stored answers: ``rows`` of (annotator, the
    comparison's id, value, the stored choice (``Answer.choice``) or None when missing).

    ``annotators`` fixes the order of the annotators (others follow in order of appearance); a
    choice naming an output not in ``outputs`` counts as missing."""
    index = {name: n for n, name in enumerate(outputs)}
    names = list(dict.fromkeys(annotators))
    people = {name: n for n, name in enumerate(names)}
    comparisons: dict[str, int] = {}
    ann: list[int] = []
    cmp: list[int] = []
    vals: list[float] = []
    shown: list[list[int]] = []
    level: list[list[int]] = []
    missing = 0
    for person, comparison, value, choice in rows:
        parsed = _levels(kind, choice, index) if isinstance(choice, Mapping) else None
        if parsed is None:
            missing += 1
            continue
        if person not in people:
            people[person] = len(names)
            names.append(person)
        ann.append(people[person])
        cmp.append(comparisons.setdefault(comparison, len(comparisons)))
        vals.append(math.nan if value is None else float(value))
        shown.append(parsed[0])
        level.append(parsed[1])
    width = max((len(s) for s in shown), default=2)
    shown_a = np.full((len(shown), width), -1, dtype=np.int64)
    level_a = np.full((len(shown), width), -1, dtype=np.int64)
    for r, (s, lv) in enumerate(zip(shown, level, strict=True)):
        shown_a[r, :len(s)] = s
        level_a[r, :len(lv)] = lv
    n = len(outputs)
    return Judgments(
        question=question, kind=kind, outputs=tuple(outputs),
        systems=tuple(systems) if systems is not None else ("",) * n,
        annotators=tuple(names), comparisons=tuple(comparisons),
        annotator=np.array(ann, dtype=np.int64), comparison=np.array(cmp, dtype=np.int64),
        shown=shown_a, level=level_a, value=np.array(vals, dtype=np.float64), prompt=prompt,
        options=dict(options or {}), missing=missing,
        metrics={k: np.asarray(v, dtype=np.float64) for k, v in (metrics or {}).items()})


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------------------------
# One level: the outputs, or the systems


@dataclass
class _Level:
    """A question's judgments on one level: ``units`` (outputs or systems), ``unit`` the unit
    of each shown output (-1: none), and the pairs the judgments imply."""

    name: str
    units: list[str]
    unit: IntArray  # judgments × width
    winner: IntArray
    loser: IntArray
    tie: BoolArray
    row: IntArray  # the judgment of each pair


def _level(j: Judgments, name: str, units: list[str], of_output: IntArray) -> _Level:
    unit = np.where(j.shown >= 0, of_output[np.maximum(j.shown, 0)], -1)
    winners, losers, ties, rows = [], [], [], []
    for a, b in combinations(range(j.shown.shape[1]), 2):
        ua, ub = unit[:, a], unit[:, b]
        la, lb = j.level[:, a], j.level[:, b]
        ok = (ua >= 0) & (ub >= 0) & (ua != ub)
        if j.kind == "bws":
            ok &= la != lb  # two middle outputs of a tuple: nothing said about them
        first = la <= lb
        winners.append(np.where(first, ua, ub)[ok])
        losers.append(np.where(first, ub, ua)[ok])
        ties.append((la == lb)[ok])
        rows.append(np.flatnonzero(ok))
    cat = np.concatenate
    return _Level(name, units, unit, cat(winners).astype(np.int64), cat(losers).astype(np.int64),
                  cat(ties).astype(bool), cat(rows).astype(np.int64))


def _levels_of(j: Judgments) -> list[_Level]:
    out = [_level(j, "output", list(j.outputs), np.arange(len(j.outputs), dtype=np.int64))]
    named = sorted({s for s in j.systems if s})
    if named:
        code = {s: n for n, s in enumerate(named)}
        of_output = np.array([code.get(s, -1) for s in j.systems], dtype=np.int64)
        out.append(_level(j, "system", named, of_output))
    return out


def _appearances(lv: _Level, mask: BoolArray | None = None) -> IntArray:
    """In how many judgments each unit was shown (once per judgment)."""
    unit = lv.unit if mask is None else lv.unit[mask]
    k = len(lv.units)
    rows = np.repeat(np.arange(unit.shape[0]), unit.shape[1]).reshape(unit.shape)
    keep = unit >= 0
    keys = np.unique(rows[keep] * k + unit[keep])
    return np.bincount(keys % k, minlength=k).astype(np.int64) if k else np.zeros(0, np.int64)


def _bws_best_worst(j: Judgments, lv: _Level) -> tuple[IntArray, IntArray]:
    """The unit chosen best and worst in each judgment (-1: none)."""
    rows = np.arange(j.n)
    best = lv.unit[rows, np.argmax(j.level == 0, axis=1)] if j.n else np.zeros(0, np.int64)
    worst = lv.unit[rows, np.argmax(j.level == 2, axis=1)] if j.n else np.zeros(0, np.int64)
    return best, worst


def _counting(j: Judgments, lv: _Level) -> dict[str, npt.NDArray[Any]]:
    k = len(lv.units)
    shown = _appearances(lv)
    if j.kind == "bws":
        best, worst = _bws_best_worst(j, lv)
        wins = np.bincount(best[best >= 0], minlength=k)
        losses = np.bincount(worst[worst >= 0], minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(shown > 0, (wins - losses) / shown, np.nan)
        return {"judgments": shown, "wins": wins, "losses": losses, "ties": np.zeros(k, np.int64),
                "score": score}
    counts = pairwise_counts(lv.winner, lv.loser, lv.tie, n_outputs=k)
    return {"judgments": shown, "wins": counts.wins, "losses": counts.losses,
            "ties": counts.ties, "score": counts.win_rate}


@dataclass
class _Fit:
    scores: ComparisonScores | None
    fitted: IntArray  # the units fitted (indices into the level's units)
    model: str
    reason: str  # why nothing was fitted ("" when fitted)


def _rankings(j: Judgments, lv: _Level, code: IntArray, rng: np.random.Generator
              ) -> list[list[int]]:
    """Each judgment as a ranking of fitted units, best first; the members of a tied group in a
    random order (Plackett–Luce has no ties; see docs/statistics/comparisons.md), a unit shown
    twice in one judgment (two outputs of one system) kept at its better place."""
    width = lv.unit.shape[1]
    noise = rng.random(lv.unit.shape)
    key = np.where(lv.unit >= 0, j.level * 2.0 + noise, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    ranked = np.take_along_axis(lv.unit, order, axis=1)
    out = []
    for row in ranked:
        seen: list[int] = []
        for u in row[:width]:
            if u < 0:
                break
            c = int(code[u])
            if c >= 0 and c not in seen:
                seen.append(c)
        if len(seen) >= 2:
            out.append(seen)
    return out


def _fit(j: Judgments, lv: _Level, s: AnalysisSettings) -> _Fit:
    model = MODELS[j.kind]
    present = np.unique(np.concatenate([lv.winner, lv.loser]))
    if present.size < 2:
        return _Fit(None, present, model, "fewer_than_two_compared")
    if present.size > FIT_LIMIT:
        return _Fit(None, np.zeros(0, np.int64), model, "too_many_to_fit")
    code = np.full(len(lv.units), -1, dtype=np.int64)
    code[present] = np.arange(present.size)
    graph = sparse.coo_matrix((np.ones(lv.winner.size), (code[lv.winner], code[lv.loser])),
                              shape=(present.size, present.size))
    if csgraph.connected_components(graph, directed=False)[0] > 1:
        # Groups of outputs that never meet (the outputs of different sources): one fit would
        # rest on the virtual record alone between them; the systems level compares them.
        return _Fit(None, np.zeros(0, np.int64), model, "groups_never_compared")
    rng = np.random.default_rng(s.seed)
    n, b, c = int(present.size), s.comparisons_bootstrap, s.bootstrap_confidence
    if j.kind == "pairwise":
        scores = bootstrap_pairwise(code[lv.winner], code[lv.loser], lv.tie, n_outputs=n,
                                    n_resamples=b, confidence=c, rng=rng)
        if scores.fit.tie_parameter is not None:
            model = "davidson"
    elif j.kind == "bws":
        scores = bootstrap_pairwise(code[lv.winner], code[lv.loser], None, davidson=False,
                                    judgment=lv.row, n_outputs=n, n_resamples=b,
                                    confidence=c, rng=rng)
    else:
        rankings = _rankings(j, lv, code, np.random.default_rng(s.seed))
        scores = bootstrap_rankings(rankings, n_outputs=n, n_resamples=b, confidence=c,
                                    rng=rng)
    if not (np.all(np.isfinite(scores.fit.log_strength)) and np.all(np.isfinite(scores.low))
            and np.all(np.isfinite(scores.high))):
        return _Fit(None, np.zeros(0, np.int64), model, "no_finite_estimate")
    return _Fit(scores, present, model, "")


# --------------------------------------------------------------------------------------------
# The sections


def _score_records(j: Judgments, lv: _Level, fit: _Fit) -> list[dict[str, Any]]:
    counts = _counting(j, lv)
    k = len(lv.units)
    strength = np.full(k, np.nan)
    low, high = np.full(k, np.nan), np.full(k, np.nan)
    rank, rank_low, rank_high = np.full(k, np.nan), np.full(k, np.nan), np.full(k, np.nan)
    fit_reason = ""
    if fit.scores is not None:
        sc = fit.scores
        strength[fit.fitted] = sc.fit.log_strength
        low[fit.fitted], high[fit.fitted] = sc.low, sc.high
        rank[fit.fitted] = sc.rank
        rank_low[fit.fitted], rank_high[fit.fitted] = sc.rank_low, sc.rank_high
        fit_reason = sc.fit.reason or ""
    out: list[dict[str, Any]] = []
    for u in range(k):
        if counts["judgments"][u] == 0:
            continue  # an output of the study no judgment of this question showed
        fitted = math.isfinite(strength[u])
        reason = fit_reason if fitted else (fit.reason or "not_compared")
        out.append({"question": j.question, "kind": j.kind, "level": lv.name,
                    "name": lv.units[u], "judgments": int(counts["judgments"][u]),
                    "wins": int(counts["wins"][u]), "losses": int(counts["losses"][u]),
                    "ties": int(counts["ties"][u]), "score": _num(counts["score"][u]),
                    "strength": _num(strength[u]), "strength_low": _num(low[u]),
                    "strength_high": _num(high[u]), "rank": _num(rank[u]),
                    "rank_low": _num(rank_low[u]), "rank_high": _num(rank_high[u]),
                    "model": fit.model, "reason": reason})
    out.sort(key=lambda r: (math.inf if r["rank"] is None else float(r["rank"]),
                            math.inf if r["score"] is None else -float(r["score"]),
                            str(r["name"])))
    return out


def _win_probability_records(j: Judgments, lv: _Level, fit: _Fit) -> list[dict[str, Any]]:
    if fit.scores is None or fit.fitted.size > MATRIX_LIMIT:
        return []
    p = fit.scores.win_probability
    order = np.argsort(-fit.scores.fit.log_strength, kind="stable")
    out = []
    for a in order:
        for b in order:
            if a != b:
                out.append({"question": j.question, "kind": j.kind, "level": lv.name,
                            "a": lv.units[fit.fitted[a]], "b": lv.units[fit.fitted[b]],
                            "probability": _num(p[a, b])})
    return out


def _split_half(j: Judgments, lv: _Level, s: AnalysisSettings) -> Any:
    k = len(lv.units)
    rng = np.random.default_rng(s.seed)
    if j.kind == "bws":
        best, worst = _bws_best_worst(j, lv)

        def score(mask: BoolArray) -> FloatArray:
            shown = _appearances(lv, mask)
            b, w = best[mask], worst[mask]
            nb = np.bincount(b[b >= 0], minlength=k)
            nw = np.bincount(w[w >= 0], minlength=k)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(shown > 0, (nb - nw) / shown, np.nan)

        return split_half(j.annotator, score, n_splits=s.comparisons_splits, rng=rng)

    def win_rate(mask: BoolArray) -> FloatArray:
        return pairwise_counts(lv.winner[mask], lv.loser[mask], lv.tie[mask],
                               n_outputs=k).win_rate

    return split_half(j.annotator[lv.row], win_rate, n_splits=s.comparisons_splits, rng=rng)


def _first_per_comparison(j: Judgments) -> tuple[IntArray, IntArray, FloatArray]:
    """One judgment per (comparison, annotator): the first; valued ones only."""
    ok = np.isfinite(j.value)
    key = j.comparison[ok] * max(1, len(j.annotators)) + j.annotator[ok]
    _, first = np.unique(key, return_index=True)
    rows = np.flatnonzero(ok)[first]
    return j.comparison[rows], j.annotator[rows], j.value[rows]


def _agreement(j: Judgments) -> tuple[float | None, float | None, str]:
    """Krippendorff's α (nominal) on the canonical values and the share of annotator pairs
    on one comparison who chose alike."""
    comparison, annotator, value = _first_per_comparison(j)
    domain = np.unique(value)
    alpha: float | None = None
    reason = ""
    if domain.size >= 2 and len(j.annotators) >= 2:
        result = alpha_long(LongRatings(comparison, annotator, value, len(j.comparisons),
                                        len(j.annotators)), level="nominal",
                            domain=[float(v) for v in domain])
        alpha = _num(result.value)
        if alpha is None:
            reason = result.reason or "alpha_undefined"
    else:
        reason = "fewer_than_two_annotators" if len(j.annotators) < 2 else "a_single_choice"
    code = np.searchsorted(domain, value)
    cells = np.bincount(comparison * max(1, domain.size) + code,
                        minlength=len(j.comparisons) * max(1, domain.size)).astype(float)
    per = np.bincount(comparison, minlength=len(j.comparisons)).astype(float)
    total = float(np.sum(per * (per - 1) / 2))
    agreement = float(np.sum(cells * (cells - 1) / 2)) / total if total > 0 else None
    if agreement is None and not reason:
        reason = "no_comparison_judged_twice"
    return alpha, agreement, reason


def _reliability_records(j: Judgments, lv: _Level, s: AnalysisSettings,
                         agreement: tuple[float | None, float | None, str]
                         ) -> dict[str, Any]:
    sh = _split_half(j, lv, s)
    alpha, share, reason = agreement
    return {"question": j.question, "kind": j.kind, "level": lv.name,
            "split_half": _num(sh.reliability), "split_half_sd": _num(sh.sd),
            "splits": int(sh.splits), "alpha": alpha, "agreement": share,
            "judgments": j.n, "annotators": int(np.unique(j.annotator).size),
            "comparisons": int(np.unique(j.comparison).size),
            "reason": sh.reason or reason}


def _competence(j: Judgments, s: AnalysisSettings) -> tuple[FloatArray, str]:
    """MACE (Hovy et al. 2013) on the canonical values of the judgments, one per comparison
    and annotator; nan with a reason when it cannot be fitted."""
    out = np.full(len(j.annotators), np.nan)
    comparison, annotator, value = _first_per_comparison(j)
    domain = np.unique(value)
    if len(j.annotators) < 2:
        return out, "fewer_than_two_annotators"
    if domain.size < 2:
        return out, "a_single_choice"
    if np.unique(comparison).size == np.unique(comparison * len(j.annotators) + annotator).size:
        return out, "no_comparison_judged_twice"
    result = mace(LongRatings(comparison, annotator, value, len(j.comparisons),
                              len(j.annotators)),
                  domain=[float(v) for v in domain], rng=np.random.default_rng(s.seed))
    for a in result.annotators:
        if a.competence is not None:
            out[a.annotator] = a.competence
    return out, ""


def _position(j: Judgments) -> tuple[IntArray, IntArray, FloatArray]:
    """Per judgment: whether it decided the first-shown output's place (pairwise: not a tie;
    ranking: a single output ranked first), whether it chose that output (chosen, ranked first,
    marked best), and the chance of choosing it at random (1 / outputs shown)."""
    size = (j.shown >= 0).sum(axis=1)
    top = (j.level == 0).sum(axis=1)
    chose = j.level[:, 0] == 0 if j.n else np.zeros(0, bool)
    decided = top == 1
    return decided, chose & decided, 1.0 / np.maximum(size, 1)


def _consistency_records(j: Judgments, lv: _Level, s: AnalysisSettings
                         ) -> list[dict[str, Any]]:
    people = len(j.annotators)
    triads = circular_triads(lv.winner, lv.loser, lv.tie, j.annotator[lv.row],
                             n_outputs=len(lv.units), n_annotators=people)
    decided, left, chance = _position(j)
    p = np.full(people, np.nan)
    share = np.full(people, np.nan)
    counts = np.bincount(j.annotator, minlength=people)
    for a in range(people):
        mine = (j.annotator == a) & decided
        n = int(mine.sum())
        if n == 0:
            continue
        k = int(left[mine].sum())
        share[a] = k / n
        if j.kind == "pairwise":
            p[a] = position_bias(left[mine]).p_value
        else:
            p[a] = float(sps.binomtest(k, n, float(chance[mine].mean())).pvalue)
    adjusted = adjust(p, "holm")
    competence, competence_reason = _competence(j, s)
    out = []
    for a in range(people):
        if counts[a] == 0:
            continue
        expected = float(triads.expected[a])
        triads_share = triads.circular[a] / expected if expected > 0 else None
        flag_triads = expected >= TRIADS_MIN_EXPECTED and triads_share is not None \
            and triads_share >= TRIADS_SHARE_FLAG
        flag_position = bool(np.isfinite(adjusted[a]) and adjusted[a] < POSITION_ALPHA)
        reasons = []
        if expected == 0:
            reasons.append("no_triangle_of_decided_pairs")
        if not np.isfinite(p[a]):
            reasons.append("no_decided_judgment")
        if competence_reason:
            reasons.append(competence_reason)
        out.append({"question": j.question, "kind": j.kind, "annotator": j.annotators[a],
                    "judgments": int(counts[a]), "circular_triads": int(triads.circular[a]),
                    "triads_expected": expected, "triads_share": _num(triads_share),
                    "left_share": _num(share[a]), "position_p": _num(p[a]),
                    "position_p_adjusted": _num(adjusted[a]),
                    "competence": _num(competence[a]),
                    "flagged": bool(flag_triads or flag_position),
                    "reason": "; ".join(reasons)})
    return out


def _unit_means(values: FloatArray, of_output: IntArray, k: int) -> FloatArray:
    """The mean of the outputs' values per unit (nan values left out; nan when none)."""
    ok = np.isfinite(values) & (of_output >= 0)
    total = np.bincount(of_output[ok], values[ok], minlength=k)
    n = np.bincount(of_output[ok], minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _correlation_records(j: Judgments, lv: _Level, fit: _Fit, s: AnalysisSettings,
                         ratings: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    if fit.scores is None:
        return []
    if lv.name == "output":
        of_output = np.arange(len(j.outputs), dtype=np.int64)
    else:
        code = {name: n for n, name in enumerate(lv.units)}
        of_output = np.array([code.get(x, -1) for x in j.systems], dtype=np.int64)
    measures: list[tuple[str, str, FloatArray]] = []
    for key, means in ratings.items():
        values = np.array([means.get(o, np.nan) for o in j.outputs], dtype=np.float64)
        if np.isfinite(values).any():
            measures.append((key, "rating", values))
    measures += [(name, "metric", values) for name, values in j.metrics.items()
                 if np.isfinite(values).any()]
    strength = fit.scores.fit.log_strength
    out = []
    for measure, measure_kind, values in measures:
        unit_values = _unit_means(values, of_output, len(lv.units))[fit.fitted]
        ci = bootstrap_correlation(strength, unit_values, rng=np.random.default_rng(s.seed),
                                   n_resamples=s.comparisons_bootstrap,
                                   confidence=s.bootstrap_confidence)
        out.append({"question": j.question, "kind": j.kind, "level": lv.name,
                    "measure": measure, "measure_kind": measure_kind, "n": int(ci.n_items),
                    "spearman": _num(ci.spearman), "low": _num(ci.spearman_low),
                    "high": _num(ci.spearman_high), "pearson": _num(ci.pearson),
                    "reason": ci.reason or ""})
    return out


def question_entry(j: Judgments) -> dict[str, Any]:
    """The document's entry of a comparative question (``comparison_questions``)."""
    return {"key": j.question, "prompt": j.prompt, "kind": j.kind, "options": dict(j.options),
            "counts": {"judgments": j.n, "missing": j.missing,
                       "annotators": int(np.unique(j.annotator).size),
                       "comparisons": int(np.unique(j.comparison).size),
                       "outputs": int(np.unique(j.shown[j.shown >= 0]).size)}}


def comparison_records(doc: dict[str, Any], questions: Sequence[Judgments],
                       s: AnalysisSettings,
                       ratings: Mapping[str, Mapping[str, float]] | None = None) -> None:
    """Fill the comparison sections of ``doc`` (and its ``comparison_questions``) from the
    comparative questions' judgments; ``ratings``: per scale question, the mean rating of each
    rated item by its external id (the outputs' ratings, for the correlations)."""
    for section in (*COMPARISON_SECTIONS, "comparison_questions"):
        doc.setdefault(section, [])
    for j in questions:
        doc["comparison_questions"].append(question_entry(j))
        if j.n == 0:
            continue
        agreement = _agreement(j)
        levels = _levels_of(j)
        matrix_level = levels[-1]
        for lv in levels:
            fit = _fit(j, lv, s)
            doc["comparison_scores"].extend(_score_records(j, lv, fit))
            if lv is matrix_level:
                doc["comparison_win_probabilities"].extend(_win_probability_records(j, lv, fit))
            doc["comparison_reliability"].append(_reliability_records(j, lv, s, agreement))
            doc["comparison_correlations"].extend(
                _correlation_records(j, lv, fit, s, ratings or {}))
        doc["comparison_consistency"].extend(_consistency_records(j, levels[0], s))
