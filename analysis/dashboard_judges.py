"""Shape the judges sections of a results document into the dashboard's Judges section (pure: no
ORM, no Django).

The judges analysis (docs/statistics/judges.md) writes ``judges_info`` (the study's LLM judges)
and ``judges`` (one record per judge × question × scale, docs/results.md). `judges_section`
gives the page one row per judge and question — its decision in words ("may replace an
annotator of this study at ε = 0.2"), ω and ρ of the alternative annotator test, the
correlations with the people's aggregate, α with and without the judge — and, below, each
record's numbers in full with its chart. A document without judges gives None and the page shows
no Judges section; `with_judges` says whether the run is the view with judges (the judges
analysed as annotators), which the page announces above every section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .charts.comparisons import reason_text
from .charts.judges import chart_name, judge_chart, judge_records
from .charts.vega import Chart, _num

# The scale whose record stands for a judge × question in the summary table: a scale question's
# raw answers, a comparative question's choices; else the record met first.
PRIMARY_SCALES = ("raw", "choice")
KIND_LABELS = {"scale": "rating", "pairwise": "pairwise preference", "ranking": "ranking",
               "bws": "best–worst scaling"}
METRIC_LABELS = {"accuracy": "agreement rate (the share of the other annotators' answers it "
                             "matches)",
                 "negative_distance": "negative root-mean-square distance to the other "
                                      "annotators' answers"}
CORRELATIONS = (("pearson", "Pearson r"), ("spearman", "Spearman ρ"), ("kendall", "Kendall τ"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def with_judges(doc: Mapping[str, Any]) -> list[str]:
    """Return the judges this run analysed as annotators (the view with judges), else []; a run
    asked for the view without any judge to add says so with an empty name list and True."""
    names = doc.get("judge_annotators")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def is_with_judges(doc: Mapping[str, Any]) -> bool:
    """Whether the run was asked for the view with judges (whatever judges it had)."""
    return _mapping(doc.get("settings")).get("judges_as_annotators") is True or bool(
        with_judges(doc))


def decision(record: Mapping[str, Any]) -> str:
    """The alternative annotator test's decision in words (Calderon et al. 2025)."""
    test = _mapping(record.get("alt_test"))
    epsilon = _num(test.get("epsilon"))
    at = f" at ε = {epsilon:g}" if epsilon is not None else ""
    passed = test.get("passed")
    if passed is True:
        return f"may replace an annotator of this study{at}"
    if passed is False:
        return f"may not replace an annotator of this study{at}"
    reason = reason_text(test.get("reason")) or "the analysis gave no reason"
    return f"not tested: {reason}"


def verdict(record: Mapping[str, Any]) -> str:
    """"pass", "fail" or "untested": the badge beside the decision."""
    passed = _mapping(record.get("alt_test")).get("passed")
    return "pass" if passed is True else "fail" if passed is False else "untested"


def _interval(value: Any) -> dict[str, Any]:
    m = _mapping(value)
    return {"value": _num(m.get("value")), "low": _num(m.get("low")), "high": _num(m.get("high"))}


@dataclass
class JudgeRecord:
    """One record of the ``judges`` section as the page reads it."""

    judge: str
    question: str
    scale: str
    kind: str  # its label ("rating", "pairwise preference", …)
    comparative: bool
    runs: int | None
    items: int | None
    decision: str
    verdict: str
    alt_test: Mapping[str, Any]
    metric: str
    correlations: list[dict[str, Any]]  # {label, value, low, high}
    correlation_items: int | None
    majority_match: dict[str, Any] | None
    alpha: Mapping[str, Any]
    per_annotator: list[dict[str, Any]]  # the test's and α's per annotator, by annotator
    self_consistency: Mapping[str, Any]
    position_bias: Mapping[str, Any]
    order_consistency: Mapping[str, Any]
    systems: Mapping[str, Any]
    chart: Chart | None
    slug: str

    @property
    def spearman(self) -> dict[str, Any] | None:
        return next((c for c in self.correlations if c["name"] == "spearman"), None)


@dataclass
class JudgesSection:
    judges: list[dict[str, Any]]  # judges_info, as the page lists them
    rows: list[JudgeRecord]  # one per judge × question (its primary scale)
    records: list[JudgeRecord]  # every record, each with its details
    epsilon: float | None
    with_judges: list[str] = field(default_factory=list)

    @property
    def charts(self) -> list[Chart]:
        return [r.chart for r in self.records if r.chart is not None]

    @property
    def summary(self) -> dict[str, int]:
        return counts(self.rows)


def _per_annotator(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The alternative annotator test's and α's rows of each annotator, joined by annotator."""
    rows: dict[str, dict[str, Any]] = {}
    for source, section in ((record.get("alt_test"), "test"), (record.get("alpha"), "alpha")):
        listed = _mapping(source).get("per_annotator")
        for r in listed if isinstance(listed, list) else []:
            if isinstance(r, Mapping) and isinstance(r.get("annotator"), str):
                rows.setdefault(r["annotator"], {"annotator": r["annotator"]})[section] = r
    return sorted(rows.values(), key=lambda r: _annotator_order(r["annotator"]))


def _annotator_order(name: str) -> tuple[int, int, str]:
    digits = name[1:]
    return (0, int(digits), name) if name[:1] == "A" and digits.isdigit() else (1, 0, name)


def _record(r: Mapping[str, Any]) -> JudgeRecord:
    correlations = _mapping(r.get("correlations"))
    majority = r.get("majority_match")
    kind = str(r.get("kind") or "scale")
    test = _mapping(r.get("alt_test"))
    return JudgeRecord(
        judge=str(r["judge"]), question=str(r["question"]), scale=str(r["scale"]),
        kind=KIND_LABELS.get(kind, kind), comparative=kind != "scale",
        runs=_int(r.get("runs")), items=_int(r.get("items")),
        decision=decision(r), verdict=verdict(r), alt_test=test,
        metric=METRIC_LABELS.get(str(test.get("metric")), str(test.get("metric") or "")),
        correlations=[{"name": name, "label": label, **_interval(correlations.get(name))}
                      for name, label in CORRELATIONS if isinstance(correlations.get(name),
                                                                     Mapping)],
        correlation_items=_int(correlations.get("items")),
        majority_match={**_interval(majority), "comparisons": _int(_mapping(majority).get(
            "comparisons"))} if isinstance(majority, Mapping) else None,
        alpha=_mapping(r.get("alpha")), per_annotator=_per_annotator(r),
        self_consistency=_mapping(r.get("self_consistency")),
        position_bias=_mapping(r.get("position_bias")),
        order_consistency=_mapping(r.get("order_consistency")),
        systems=_systems(r.get("systems")), chart=judge_chart(r), slug=chart_name(r))


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None else None


def _systems(value: Any) -> Mapping[str, Any]:
    m = _mapping(value)
    if not m:
        return {}
    scores = m.get("scores")
    return {**m, "kendall_tau": _interval(m.get("kendall_tau")),
            "scores": [s for s in scores if isinstance(s, Mapping)]
            if isinstance(scores, list) else []}


def _judge_info(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    info = doc.get("judges_info")
    out = []
    for j in info if isinstance(info, list) else []:
        if isinstance(j, Mapping) and isinstance(j.get("name"), str):
            runs = j.get("runs")
            out.append({**j, "runs": [str(x) for x in runs] if isinstance(runs, list) else []})
    return out


def judges_section(doc: Mapping[str, Any]) -> JudgesSection | None:
    """Return the Judges section of the whole document (every judge and question); None when
    the run has no judge."""
    records = [_record(r) for r in judge_records(doc)]
    judges = _judge_info(doc)
    if not records and not judges:
        return None
    order = {j["name"]: n for n, j in enumerate(judges)}
    questions = _question_order(doc)
    records.sort(key=lambda r: (order.get(r.judge, len(order)), r.judge,
                                questions.get(r.question, len(questions)), r.question,
                                r.scale not in PRIMARY_SCALES))
    rows: dict[tuple[str, str], JudgeRecord] = {}
    for r in records:
        rows.setdefault((r.judge, r.question), r)
    epsilon = next((e for r in records if (e := _num(r.alt_test.get("epsilon"))) is not None),
                   _num(_mapping(doc.get("settings")).get("judge_epsilon")))
    return JudgesSection(judges=judges, rows=list(rows.values()), records=records,
                         epsilon=epsilon, with_judges=with_judges(doc))


def _question_order(doc: Mapping[str, Any]) -> dict[str, int]:
    keys: list[str] = []
    for name in ("questions", "comparison_questions"):
        entries = doc.get(name)
        if isinstance(entries, list):
            keys += [str(e.get("key")) for e in entries if isinstance(e, Mapping)]
    return {key: n for n, key in enumerate(dict.fromkeys(keys))}


def counts(rows: Sequence[JudgeRecord]) -> dict[str, int]:
    """How many judge × question rows may replace an annotator, may not, or were not tested."""
    out = {"pass": 0, "fail": 0, "untested": 0}
    for r in rows:
        out[r.verdict] += 1
    return out
