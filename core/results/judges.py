"""The `judges` section of a results document: every LLM judge beside the study's annotators,
per question × scale (docs/results.md, "Judges"; the statistics in `core.stats.judges`, their
formulas in docs/statistics/judges.md).

The human side is what the run analyses — the people's answers after the run's exclusions —
never a judge: an annotator named ``"judge: <name>"`` (the labelled "with judges" view appends
each judge so) is left out here too. One record per judge × question × scale (a comparative
question's scale is ``"choice"``); the lists per annotator hold at most
``JUDGE_ANNOTATORS_SHOWN`` rows and the plot at most ``JUDGE_PLOT_POINTS`` points, so the
section's size does not grow with the items. A judge's first run (the first of its
`JudgeAnswers` for the question, in the order given) is the judge; every run enters the
self-consistency, and for comparative questions the position bias and the order consistency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from core.data import QuestionData, StudyData
from core.judges import JudgeAnswers, JudgeInfo
from core.results.comparisons import Judgments
from core.results.scales import ScaleView, scale_views
from core.settings import AnalysisSettings
from core.stats._types import BoolArray, FloatArray, IntArray, LongRatings
from core.stats.alpha import alpha_long, domain_codes
from core.stats.judges import (
    DEFAULT_EPSILON,
    DEFAULT_Q,
    AltTestResult,
    CorrelationCI,
    Proportion,
    alt_metric,
    alt_test,
    annotator_pair_alphas,
    first_position,
    judge_annotator_alphas,
    judge_correlations,
    majority_match,
    replaced_alphas,
)
from core.stats.systems import blocks, cell_means, item_means, system_scores
from core.stats.systems_meta import pairwise_accuracy, system_correlations

JUDGE_ANNOTATORS_SHOWN = 50
JUDGE_PLOT_POINTS = 400
# The correlations' and the system ranking's bootstrap draw at most this many resamples (the
# run's settings may ask more for the sections of the people).
JUDGE_BOOTSTRAP_MAX = 1000
# How the labelled "with judges" view names a judge it appends as an annotator.
JUDGE_ANNOTATOR_PREFIX = "judge: "
COMPARATIVE_SCALE = "choice"


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: FloatArray) -> float | None:
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else None


def judge_settings(s: AnalysisSettings) -> tuple[float, float]:
    """The test's ε and BY level q from the run's settings (their defaults until the settings
    carry them)."""
    return (float(getattr(s, "judge_epsilon", DEFAULT_EPSILON)),
            float(getattr(s, "judge_q", DEFAULT_Q)))


def _people(names: Sequence[str], s: AnalysisSettings) -> list[str]:
    """The annotators the judges section leaves out: the run's excluded ones and any judge."""
    excluded = set(s.excluded_annotators)
    return [n for n in names if n in excluded or n.startswith(JUDGE_ANNOTATOR_PREFIX)]


def human_data(data: StudyData, s: AnalysisSettings) -> StudyData:
    """The people's answers the run analyses (idempotent: already filtered data stays as is)."""
    return data.without_annotators(_people(data.annotators, s))


def judges_info(judges: Sequence[JudgeInfo], answers: Sequence[JudgeAnswers]
                ) -> list[dict[str, Any]]:
    """One dict per judge: its `JudgeInfo` fields and the labels of its runs (first seen
    first); a judge with answers but no `JudgeInfo` gets its name alone."""
    runs: dict[str, list[str]] = {}
    for a in answers:
        labels = runs.setdefault(a.judge, [])
        if a.run not in labels:
            labels.append(a.run)
    out = [{**asdict(j), "temperature": _num(j.temperature), "runs": runs.get(j.name, [])}
           for j in judges]
    known = {j.name for j in judges}
    out += [{**asdict(JudgeInfo(name)), "runs": labels} for name, labels in runs.items()
            if name not in known]
    return out


def _judge_order(judges: Sequence[JudgeInfo], answers: Sequence[JudgeAnswers]) -> list[str]:
    return list(dict.fromkeys([j.name for j in judges] + [a.judge for a in answers]))


def judges_records(doc: dict[str, Any], questions: Sequence[QuestionData],
                   judgments: Sequence[Judgments], judges: Sequence[JudgeInfo],
                   answers: Sequence[JudgeAnswers],
                   settings: AnalysisSettings | Mapping[str, Any]) -> None:
    """Set ``doc["judges"]`` (one record per judge × question × scale; [] without judges) and
    ``doc["judges_info"]`` (one dict per judge), as docs/results.md describes.

    ``questions``: the scale questions (`QuestionData`, the people's answers; the run's excluded
    annotators are left out here if they are still in); ``judgments``: the comparative ones;
    ``answers``: every run of every judge (`JudgeAnswers`). Example: ``judges_records(doc,
    [q], [], [JudgeInfo("gpt")], [JudgeAnswers("gpt", "1", "rating", ids, values)], s)`` gives
    ``doc["judges"][0]["alt_test"]["passed"]``.
    """
    s = settings if isinstance(settings, AnalysisSettings) else AnalysisSettings.coerce(settings)
    doc["judges"] = []
    doc["judges_info"] = judges_info(judges, answers)
    if not answers:
        return
    runs: dict[tuple[str, str], list[JudgeAnswers]] = {}
    for a in answers:
        runs.setdefault((a.judge, a.question), []).append(a)
    order = _judge_order(judges, answers)
    for q in questions:
        names = [n for n in order if (n, q.key) in runs]
        if names:
            doc["judges"] += _Scale(q, s).records([(n, runs[(n, q.key)]) for n in names])
    for j in judgments:
        names = [n for n in order if (n, j.question) in runs]
        if names:
            doc["judges"] += _Comparative(j, s).records([(n, runs[(n, j.question)])
                                                         for n in names])


# --------------------------------------------------------------------------------------------
# What every kind of question shares


class _Units:
    """The units (items or comparisons) of a question by external id, for aligning a run."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = tuple(ids)
        self.sorted = np.asarray(self.ids, dtype=str)
        self.order = np.argsort(self.sorted, kind="stable")
        self.sorted = self.sorted[self.order]

    def aligned(self, run: JudgeAnswers) -> FloatArray:
        """The run's values per unit (nan: not answered); ids the question lacks are ignored."""
        n = len(self.ids)
        values = np.asarray(run.value, dtype=np.float64)
        if len(run.item_ids) != values.size:
            raise ValueError(f"judge {run.judge!r} run {run.run!r}: {len(run.item_ids)} item ids "
                             f"but {values.size} values")
        if tuple(run.item_ids) == self.ids:  # the common case: every unit, in order
            return np.where(np.isfinite(values), values, np.nan)
        out = np.full(n, np.nan)
        if not values.size or not n:
            return out
        wanted = np.asarray(run.item_ids, dtype=str)
        pos = np.clip(np.searchsorted(self.sorted, wanted), 0, n - 1)
        known = (self.sorted[pos] == wanted) & np.isfinite(values)
        out[self.order[pos[known]]] = values[known]
        return out


def _ci(c: CorrelationCI) -> dict[str, float | None]:
    return {"value": _num(c.value), "low": _num(c.low), "high": _num(c.high)}


def _proportion(p: Proportion) -> dict[str, Any]:
    return {"value": _num(p.value), "low": _num(p.low), "high": _num(p.high),
            "comparisons": int(p.n), "matched": int(p.k)}


def _ranked(names: Sequence[str], items: IntArray, present: IntArray) -> list[int]:
    """The annotators shown in the per-annotator lists: most items first, then by name."""
    chosen = sorted((int(a) for a in present), key=lambda a: (-int(items[a]), names[a]))
    return chosen[:JUDGE_ANNOTATORS_SHOWN]


@dataclass
class _Humans:
    """One question × scale as the judges see it: the people's ratings and what does not depend
    on the judge (computed once for all the judges)."""

    names: list[str]
    ratings: LongRatings
    domain: tuple[float, ...]
    level: str
    aggregate: FloatArray  # per unit, the people's mean answer (nan: none)

    def __post_init__(self) -> None:
        self._pairs: tuple[Any, ...] | None = None
        self._alpha: float | None | str = "unset"
        self._codes: IntArray | None = None

    @property
    def codes(self) -> IntArray:
        """Each answer's position in the scale's domain (-1: blank), computed once for every
        judge of the scale."""
        if self._codes is None:
            self._codes = domain_codes(self.ratings.value, self.domain)
        return self._codes

    @property
    def present(self) -> IntArray:
        answered = ~np.isnan(self.ratings.value)
        counts = np.bincount(self.ratings.annotator[answered],
                             minlength=self.ratings.n_annotators)
        return np.flatnonzero(counts > 0)

    def alpha(self) -> float | None:
        if self._alpha == "unset":
            self._alpha = _num(alpha_long(self.ratings, level=self.level,
                                          domain=self.domain).value)
        return self._alpha if not isinstance(self._alpha, str) else None

    def pairs(self) -> tuple[Any, ...]:
        if self._pairs is None:
            found = annotator_pair_alphas(self.ratings, level=self.level, domain=self.domain)
            if found is None:
                self._pairs = (None, np.full(self.ratings.n_annotators, np.nan))
            else:
                pairs, alphas, _ = found
                ok = ~np.isnan(alphas)
                k = self.ratings.n_annotators
                total = np.bincount(pairs[ok].ravel(), weights=np.repeat(alphas[ok], 2),
                                    minlength=k)
                count = np.bincount(pairs[ok].ravel(), minlength=k)
                with np.errstate(invalid="ignore", divide="ignore"):
                    per = np.where(count > 0, total / np.maximum(count, 1), np.nan)
                self._pairs = (_mean(alphas), per)
        return self._pairs


def _alpha_section(h: _Humans, f: FloatArray) -> dict[str, Any] | None:
    present = h.present
    if not present.size:
        return None
    judge_alpha, items = judge_annotator_alphas(h.ratings, f, level=h.level, domain=h.domain,
                                                codes=h.codes)
    replaced = replaced_alphas(h.ratings, f, level=h.level, domain=h.domain, codes=h.codes)
    humans = h.alpha()
    humans_mean, per_humans = h.pairs()
    shown = _ranked(h.names, items, present)
    defined = replaced[present][~np.isnan(replaced[present])]
    return {
        "humans": humans,
        "judge_mean": _mean(judge_alpha[present]),
        "humans_mean": humans_mean,
        "replaced_mean": _mean(replaced[present]),
        "replaced_up": int(np.count_nonzero(defined > humans)) if humans is not None else 0,
        "replaced_down": int(np.count_nonzero(defined < humans)) if humans is not None else 0,
        "per_annotator": [{"annotator": h.names[a], "items": int(items[a]),
                           "judge_alpha": _num(judge_alpha[a]),
                           "humans_alpha": _num(per_humans[a]),
                           "replaced_alpha": _num(replaced[a])} for a in shown],
    }


def _alt_section(h: _Humans, f: FloatArray, epsilon: float, q: float) -> dict[str, Any]:
    result: AltTestResult = alt_test(h.ratings, f, metric=alt_metric(h.level), epsilon=epsilon,
                                     q=q)
    rows = sorted(result.per_annotator, key=lambda r: (r.won is None, -r.items,
                                                        h.names[r.annotator]))
    return {"epsilon": result.epsilon, "q": result.q, "metric": result.metric,
            "annotators": result.annotators, "winning_rate": _num(result.winning_rate),
            "rho": _num(result.rho), "passed": result.passed, "reason": result.reason,
            "per_annotator": [{"annotator": h.names[r.annotator], "items": r.items,
                               "rho_judge": _num(r.rho_judge), "rho_human": _num(r.rho_human),
                               "t": _num(r.t), "p": _num(r.p), "p_adjusted": _num(r.p_adjusted),
                               "won": r.won, "reason": r.reason}
                              for r in rows[:JUDGE_ANNOTATORS_SHOWN]]}


def _self_consistency(values: list[FloatArray], level: str, domain: Sequence[float]
                      ) -> dict[str, Any] | None:
    """Alpha over the runs as annotators (None with fewer than two runs)."""
    if len(values) < 2:
        return None
    dense = np.vstack(values)
    ratings = LongRatings.from_dense(dense)
    result = alpha_long(ratings, level=level, domain=domain)
    return {"alpha": _num(result.value), "runs": len(values), "items": int(result.n_items),
            "reason": result.reason or ""}


def _plot(f: FloatArray, agg: FloatArray, seed: int) -> list[list[float]]:
    both = np.flatnonzero(~np.isnan(f) & ~np.isnan(agg))
    if both.size > JUDGE_PLOT_POINTS:
        both = np.sort(np.random.default_rng(seed).choice(both, JUDGE_PLOT_POINTS,
                                                           replace=False))
    return [[float(f[i]), float(agg[i])] for i in both]


def _base(judge: str, question: str, scale: str, kind: str, level: str, runs: int,
          items: int) -> dict[str, Any]:
    return {"judge": judge, "question": question, "scale": scale, "kind": kind, "level": level,
            "runs": runs, "items": items, "correlations": None, "majority_match": None,
            "alpha": None, "alt_test": None, "self_consistency": None, "position_bias": None,
            "order_consistency": None, "systems": None, "plot": []}


# --------------------------------------------------------------------------------------------
# Scale questions


class _Scale:
    def __init__(self, q: QuestionData, s: AnalysisSettings) -> None:
        self.q, self.s = q, s
        self.data = human_data(q.data, s)
        self.views = scale_views(self.data, q.values, q.reductions)
        self.units = _Units(self.data.item_ids)
        self.epsilon, self.alpha_q = judge_settings(s)
        self._systems: dict[bytes, Any] = {}

    def _view_values(self, view: ScaleView, raw: FloatArray) -> FloatArray:
        """A judge's raw answers on ``view``'s scale (nan: none, or off the scale)."""
        domain = np.asarray(self.q.values, dtype=np.float64)
        out = np.where(np.isin(raw, domain), raw, np.nan)
        if view.name == "raw":
            return out
        mapping = {float(k): float(v) for k, v in self.q.reductions[view.name].items()}
        mapped = np.array([mapping.get(float(x), np.nan) if not np.isnan(x) else np.nan
                           for x in np.unique(out[~np.isnan(out)])])
        keys = np.unique(out[~np.isnan(out)])
        result = np.full(out.shape, np.nan)
        if keys.size:
            ok = ~np.isnan(out)
            result[ok] = mapped[np.searchsorted(keys, out[ok])]
        return result

    def records(self, judges: list[tuple[str, list[JudgeAnswers]]]) -> list[dict[str, Any]]:
        data, n = self.data, self.data.n_items
        raw_runs = {name: [self.units.aligned(r) for r in runs] for name, runs in judges}
        out = []
        for view in self.views:
            ratings = LongRatings(item=data.item, annotator=data.annotator, value=view.values,
                                  n_items=n, n_annotators=data.n_annotators)
            humans = _Humans(list(data.annotators), ratings, view.domain, self.s.level,
                             item_means(data.item, view.values, n))
            for name, _ in judges:
                values = [self._view_values(view, v) for v in raw_runs[name]]
                out.append(self._record(name, view, humans, values))
        return out

    def _record(self, judge: str, view: ScaleView, h: _Humans, values: list[FloatArray]
                ) -> dict[str, Any]:
        s = self.s
        f = values[0]
        items = int(np.count_nonzero(~np.isnan(f) & ~np.isnan(h.aggregate)))
        rec = _base(judge, self.q.key, view.name, "scale", s.level, len(values), items)
        c = judge_correlations(f, h.aggregate, rng=np.random.default_rng(s.seed),
                               n_boot=min(s.bootstrap_samples, JUDGE_BOOTSTRAP_MAX),
                               confidence=s.bootstrap_confidence)
        rec["correlations"] = {"pearson": _ci(c.pearson), "spearman": _ci(c.spearman),
                               "kendall": _ci(c.kendall), "items": c.items,
                               "interval": c.interval, "reason": c.reason}
        if s.level == "nominal":
            rec["majority_match"] = _proportion(majority_match(
                h.ratings, f, confidence=s.bootstrap_confidence))
        rec["alpha"] = _alpha_section(h, f)
        rec["alt_test"] = _alt_section(h, f, self.epsilon, self.alpha_q)
        rec["self_consistency"] = _self_consistency(values, s.level, view.domain)
        rec["systems"] = self._systems_section(f, h.aggregate)
        rec["plot"] = _plot(f, h.aggregate, s.seed)
        return rec

    def _systems_section(self, f: FloatArray, agg: FloatArray) -> dict[str, Any] | None:
        """The judge's system ranking against the people's, on the items both scored (control
        items and items without a system left out, as in the systems section)."""
        data, s = self.data, self.s
        if data.item_system is None or not data.system_names:
            return None
        k = len(data.system_names)
        system: IntArray = np.where(data.control, -1, data.item_system)
        source = data.item_source if data.item_source is not None \
            else np.full(data.n_items, -1, dtype=np.int64)
        source = np.where(system >= 0, source, -1)
        both: BoolArray = (system >= 0) & ~np.isnan(agg) & ~np.isnan(f)
        if not both.any():
            return None
        key = np.packbits(both).tobytes()
        if key not in self._systems:  # the people's scores on these items, once per item set
            human = np.where(both, agg, np.nan)
            self._systems[key] = system_scores(
                system, source, human, n_systems=k,
                n_boot=min(s.systems_bootstrap, JUDGE_BOOTSTRAP_MAX),
                confidence=s.bootstrap_confidence, rng=np.random.default_rng(s.seed))
        scores = self._systems[key]
        block, n_blocks = blocks(source)
        sums, counts = cell_means(system, block, np.where(both, f, np.nan), k, n_blocks)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = sums.sum(axis=0) / counts.sum(axis=0)
            boot = (scores.counts @ sums) / (scores.counts @ counts)
        kendall = next(v for v in system_correlations(
            scores.mean, point, boot_human=scores.boot, boot_metric=boot,
            confidence=s.bootstrap_confidence) if v.statistic == "kendall")
        defined = int(np.count_nonzero(~np.isnan(scores.mean) & ~np.isnan(point)))
        accuracy = pairwise_accuracy(scores.mean, point) if defined >= 2 else math.nan
        return {"kendall_tau": {"value": _num(kendall.value), "low": _num(kendall.low),
                                "high": _num(kendall.high)},
                "pairwise_accuracy": _num(accuracy), "systems": defined,
                "reason": kendall.reason or "",
                "scores": [{"system": data.system_names[i], "judge": _num(point[i]),
                            "humans": _num(scores.mean[i])} for i in range(k)]}


# --------------------------------------------------------------------------------------------
# Comparative questions


def _first_judgments(j: Judgments) -> tuple[IntArray, IntArray, FloatArray]:
    """One judgment per (comparison, annotator), the first; valued ones only."""
    ok = np.isfinite(j.value)
    key = j.comparison[ok] * max(1, len(j.annotators)) + j.annotator[ok]
    _, first = np.unique(key, return_index=True)
    rows = np.flatnonzero(ok)[first]
    return j.comparison[rows], j.annotator[rows], j.value[rows]


def _choice_key(kind: str, choice: Mapping[str, Any]) -> Any:
    """What a judgment chose, whatever the order shown: comparable across orders."""
    if kind == "pairwise":
        return choice.get("pick")
    if kind == "ranking":
        return tuple(frozenset([g] if isinstance(g, str) else g)
                     for g in choice.get("order") or [])
    return (choice.get("best"), choice.get("worst"))


def _judge_first(kind: str, choice: Mapping[str, Any]) -> tuple[bool, bool, float] | None:
    """(decided, chose the first shown, chance) of one stored judgment; None if malformed."""
    shown = choice.get("shown")
    if not isinstance(shown, list) or len(shown) < 2:
        return None
    chance = 1.0 / len(shown)
    if kind == "pairwise":
        pick = choice.get("pick")
        decided = pick in shown
        return decided, decided and pick == shown[0], chance
    if kind == "ranking":
        order = choice.get("order") or []
        top = order[0] if order else None
        group = [top] if isinstance(top, str) else list(top or [])
        decided = len(group) == 1
        return decided, decided and group[0] == shown[0], chance
    return True, choice.get("best") == shown[0], chance


class _Comparative:
    def __init__(self, j: Judgments, s: AnalysisSettings) -> None:
        self.s = s
        self.j = j.without_annotators(_people(list(j.annotators), s))
        self.units = _Units(self.j.comparisons)
        self.epsilon, self.alpha_q = judge_settings(s)

    def records(self, judges: list[tuple[str, list[JudgeAnswers]]]) -> list[dict[str, Any]]:
        j = self.j
        comparison, annotator, value = _first_judgments(j)
        n = len(j.comparisons)
        runs = {name: [self.units.aligned(r) for r in rs] for name, rs in judges}
        found = [value] + [v[~np.isnan(v)] for vs in runs.values() for v in vs]
        domain = tuple(float(v) for v in np.unique(np.concatenate(found))) or (0.0,)
        ratings = LongRatings(item=comparison, annotator=annotator, value=value, n_items=n,
                              n_annotators=len(j.annotators))
        humans = _Humans(list(j.annotators), ratings, domain, "nominal",
                         np.full(n, np.nan))
        people = self._people_first()
        out = []
        for name, rs in judges:
            out.append(self._record(name, rs, runs[name], humans, people))
        return out

    def _people_first(self) -> Proportion:
        j = self.j
        if not j.n:
            return first_position([], [], [], confidence=self.s.bootstrap_confidence)
        size = (j.shown >= 0).sum(axis=1)
        decided = (j.level == 0).sum(axis=1) == 1
        chose = (j.level[:, 0] == 0) & decided
        return first_position(chose, decided, 1.0 / np.maximum(size, 1),
                              confidence=self.s.bootstrap_confidence)

    def _record(self, judge: str, runs: list[JudgeAnswers], values: list[FloatArray],
                h: _Humans, people: Proportion) -> dict[str, Any]:
        j, s = self.j, self.s
        f = values[0]
        answered = np.bincount(h.ratings.item, minlength=len(j.comparisons)) > 0
        items = int(np.count_nonzero(~np.isnan(f) & answered))
        rec = _base(judge, j.question, COMPARATIVE_SCALE, j.kind, "nominal", len(values), items)
        rec["majority_match"] = _proportion(majority_match(
            h.ratings, f, confidence=s.bootstrap_confidence))
        rec["alpha"] = _alpha_section(h, f)
        rec["alt_test"] = _alt_section(h, f, self.epsilon, self.alpha_q)
        rec["self_consistency"] = _self_consistency(values, "nominal", h.domain)
        decided, first, chance = [], [], []
        orders: dict[frozenset[str], dict[tuple[str, ...], Any]] = {}
        for run in runs:
            for choice in run.choices:
                parsed = _judge_first(j.kind, choice)
                if parsed is None:
                    continue
                decided.append(parsed[0])
                first.append(parsed[1])
                chance.append(parsed[2])
                shown = tuple(str(x) for x in choice["shown"])
                orders.setdefault(frozenset(shown), {}).setdefault(
                    shown, _choice_key(j.kind, choice))
        if decided:
            mine = first_position(first, decided, chance, confidence=s.bootstrap_confidence)
            rec["position_bias"] = {
                "first_share": _num(mine.value), "low": _num(mine.low),
                "high": _num(mine.high), "p": _num(mine.p), "judgments": mine.n,
                "chance": _num(float(np.mean(np.asarray(chance)[np.asarray(decided)]))
                               if any(decided) else None),
                "humans_first_share": _num(people.value), "humans_low": _num(people.low),
                "humans_high": _num(people.high), "humans_p": _num(people.p),
                "humans_judgments": people.n}
        both = [set(map(repr, seen.values())) for seen in orders.values() if len(seen) >= 2]
        if both:
            rec["order_consistency"] = {"share": sum(len(c) == 1 for c in both) / len(both),
                                        "pairs": len(both)}
        return rec
