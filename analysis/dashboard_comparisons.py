"""Shape the comparisons sections of a results document into the dashboard's Comparisons section
(pure: no ORM, no Django).

The comparisons analysis (docs/statistics/comparisons.md) writes five sections, each a list of
records per comparative question (docs/results.md): ``comparison_scores`` (each system's and
each output's wins, losses, ties, counting score, strength with its interval, rank and rank
interval), ``comparison_win_probabilities``, ``comparison_reliability`` (split-half, α,
agreement), ``comparison_consistency`` (per annotator: circular triads, position bias,
competence) and ``comparison_correlations``. `comparisons_section` reads them for every
comparative question, whichever scale question the rest of the page shows; a document without
them (a run before the comparisons analysis, a study without a comparative question) gives None
and the page shows no Comparisons section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .charts.comparisons import (
    comparison_level,
    comparison_questions,
    comparison_records,
    model_label,
    ranked,
    reason_text,
    strengths_chart,
    win_chart,
)
from .charts.vega import Chart, _num
from .dashboard import _missing, reason_notes

# The analysis' flag rules (docs/statistics/comparisons.md, "Consistency").
POSITION_ALPHA = 0.05
TRIADS_SHARE_FLAG = 0.75
KIND_LABELS = {"pairwise": "pairwise preference", "ranking": "ranking",
               "bws": "best–worst scaling"}
LEVEL_LABELS = {"system": "Systems", "output": "Outputs"}


@dataclass
class ComparisonQuestion:
    key: str
    prompt: str
    kind: str  # its label: "pairwise preference", "ranking", "best–worst scaling"
    counts: dict[str, Any]  # the question's judgments, missing, annotators, comparisons, outputs
    level: str  # the level the table shows: "system" when the outputs have systems
    model: str  # the model the strengths come from ("Davidson")
    rows: Sequence[Mapping[str, Any]]  # the scores at `level`, best first
    outputs: Sequence[Mapping[str, Any]]  # the output-level scores (folded) when level is system
    reliability: list[dict[str, Any]]  # {level_label, record, sentence}
    consistency: Sequence[Mapping[str, Any]]
    flagged: int
    correlations: Sequence[Mapping[str, Any]]
    charts: list[Chart]
    notes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def level_label(self) -> str:
        return LEVEL_LABELS.get(self.level, self.level)

    @property
    def what(self) -> str:
        return "system" if self.level == "system" else "output"


@dataclass
class ComparisonsSection:
    questions: list[ComparisonQuestion]

    @property
    def charts(self) -> list[Chart]:
        return [c for q in self.questions for c in q.charts]


def comparisons_section(doc: Mapping[str, Any]) -> ComparisonsSection | None:
    """Return the Comparisons section of the whole document (every comparative question); None
    when the run has no comparison record."""
    questions = [q for key in comparison_questions(doc)
                 if (q := _question(doc, key)) is not None]
    return ComparisonsSection(questions) if questions else None


def _entries(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The document's entry of each question: its ``comparison_questions`` (prompt, kind,
    options, counts), else its ``questions``."""
    out: dict[str, Mapping[str, Any]] = {}
    for name in ("questions", "comparison_questions"):
        entries = doc.get(name)
        if isinstance(entries, list):
            out.update({str(e.get("key")): e for e in entries if isinstance(e, Mapping)})
    return out


def _readable(record: Mapping[str, Any]) -> dict[str, Any]:
    return {**record, "reason": reason_text(record.get("reason"))}


def p_label(value: Any) -> str:
    """A p-value as the page writes it: 4 decimals, "< 0.0001" below, an em dash for null."""
    number = _num(value)
    if number is None:
        return "—"
    return "< 0.0001" if number < 0.0001 else f"{number:.4f}"


def flag_reason(record: Mapping[str, Any]) -> str:
    """Why an annotator is flagged, from their numbers and the analysis' rules: a position
    bias (the left share, with its Holm-adjusted p when the run gives it) or as many circular
    triads as a random annotator; "" when they are not flagged."""
    if record.get("flagged") is not True:
        return ""
    why = []
    left, p = _num(record.get("left_share")), _num(record.get("position_p_adjusted"))
    p = p if p is not None else _num(record.get("position_p"))
    if left is not None and p is not None and p < POSITION_ALPHA:
        shown = p_label(p)
        shown = shown if shown.startswith("<") else f"= {shown}"
        why.append(f"chose the output shown first in {100 * left:.0f} % of their decided "
                   f"judgments, more often than chance (p {shown})")
    share = _num(record.get("triads_share"))
    if share is not None and share >= TRIADS_SHARE_FLAG:
        why.append(f"made {record.get('circular_triads')} circular triads, "
                   f"{100 * share:.0f} % of a random annotator's expected number")
    if why:
        return "; ".join(why)
    return reason_text(record.get("reason")) or "flagged by the analysis"


def _question(doc: Mapping[str, Any], key: str) -> ComparisonQuestion | None:
    level = comparison_level(doc, key)
    if level is None:
        return None
    rows = [_readable(r) for r in ranked(comparison_records(doc, "comparison_scores",
                                                             question=key, level=level))]
    outputs = [_readable(r) for r in ranked(comparison_records(
        doc, "comparison_scores", question=key, level="output"))] if level == "system" else []
    kind = next((str(r.get("kind")) for r in rows if r.get("kind")), "pairwise")
    reliability = [{"level": str(r.get("level")),
                    "level_label": LEVEL_LABELS.get(str(r.get("level")), str(r.get("level"))),
                    "record": _readable(r), "sentence": reliability_sentence(r)}
                   for r in sorted(comparison_records(doc, "comparison_reliability", question=key),
                                   key=lambda r: (r.get("level") != level, str(r.get("level"))))]
    consistency = sorted(({**_readable(r), "flag_reason": flag_reason(r),
                           "p_label": p_label(r.get("position_p")),
                           "p_adjusted_label": p_label(r.get("position_p_adjusted"))
                           if r.get("position_p_adjusted") is not None else ""}
                          for r in comparison_records(doc, "comparison_consistency",
                                                      question=key)),
                         key=lambda r: (r.get("flagged") is not True, _order(doc, r)))
    correlations = sorted((_readable(r) for r in comparison_records(
                               doc, "comparison_correlations", question=key)),
                          key=lambda r: (r.get("level") != level, str(r.get("level")),
                                         r.get("measure_kind") != "rating",
                                         str(r.get("measure"))))
    charts = [c for c in (strengths_chart(doc, key), win_chart(doc, key)) if c is not None]
    entry = _entries(doc).get(key, {})
    counts: Mapping[str, Any] = entry.get("counts") or {} \
        if isinstance(entry.get("counts"), Mapping) else {}
    question = ComparisonQuestion(
        key=key, prompt=str(entry.get("prompt") or ""), kind=KIND_LABELS.get(kind, kind),
        counts=dict(counts),
        level=level, model=model_label(rows), rows=rows, outputs=outputs,
        reliability=reliability, consistency=consistency,
        flagged=sum(1 for r in consistency if r.get("flagged") is True),
        correlations=correlations, charts=charts)
    question.notes = _notes(question)
    return question


def _order(doc: Mapping[str, Any], record: Mapping[str, Any]) -> tuple[int, str]:
    """Annotators in the document's order (A1, A2, … A10), then by name."""
    names = doc.get("annotators")
    order = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    name = str(record.get("annotator"))
    return (order.index(name) if name in order else len(order), name)


def reliability_sentence(record: Mapping[str, Any]) -> str:
    """What a split-half reliability says, in one plain sentence (or why there is none)."""
    value = _num(record.get("split_half"))
    if value is None:
        reason = reason_text(record.get("reason"))
        return (f"No split-half reliability: {reason}." if reason
                else "No split-half reliability.")
    what = "systems" if record.get("level") == "system" else "outputs"
    if value >= 0.9:
        verdict = (f"two random halves of the annotators put the {what} in almost the same "
                   f"order: the ranking is very reliable")
    elif value >= 0.7:
        verdict = (f"two random halves of the annotators mostly agree on the order of the "
                   f"{what}: the ranking is fairly reliable")
    elif value >= 0.5:
        verdict = (f"two random halves of the annotators agree only in part on the order of the "
                   f"{what}: read close ranks with care")
    else:
        verdict = (f"two random halves of the annotators order the {what} differently: more "
                   f"judgments are needed before the ranking can be trusted")
    return f"A split-half reliability of {value:.2f} means {verdict}."


def _notes(q: ComparisonQuestion) -> dict[str, dict[str, int]]:
    """The numbered reasons of each Comparisons table (`analysis.dashboard.reason_notes`)."""
    return {
        # a reason is noted even beside a strength (an output fitted in a disconnected design)
        "scores": reason_notes(r.get("reason") or None for r in [*q.rows, *q.outputs]),
        "reliability": reason_notes(_missing(r["record"], "alpha") or
                                    _missing(r["record"], "agreement")
                                    for r in q.reliability),
        # why an annotator is flagged, or why a number of theirs is missing
        "consistency": reason_notes(
            reason for r in q.consistency
            for reason in (r["flag_reason"] or None,
                           _missing(r, "circular_triads") or _missing(r, "left_share")
                           or _missing(r, "competence"))),
        "correlations": reason_notes(_missing(r, "spearman") for r in q.correlations),
    }
