"""Shape one annotator's page from the stored results document and their own answers (pure).

The per-annotator page (`analysis.views.annotator`) reads the newest finished run's document and
one bounded query of the annotator's answers; everything here is reshaping: nothing is computed
from other annotators' answers, so the page costs the same whatever the study's size.  The
consensus an answer is set against is the run's aggregated label of the item (``item_labels``:
Dawid–Skene and MACE on the question's raw scale).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from .dashboard import COMPETENCE_LABELS, QUALITY_RULE_LABELS, RULE_LABELS

CONSENSUS_SCALE = "raw"  # the answers are raw values: compare them with the raw labels


@dataclass
class ConsensusRow:
    item: str
    presentation: int
    value: float | None
    cant_judge: bool
    labels: dict[str, Mapping[str, Any] | None]  # method -> item_labels record
    seconds: float | None

    @property
    def by_method(self) -> list[tuple[Mapping[str, Any] | None, bool | None]]:
        """(label record, agrees) per method, in COMPETENCE_LABELS order."""
        out = []
        for method in COMPETENCE_LABELS:
            label = self.labels.get(method)
            known = label is not None and label.get("label") is not None and self.value is not None
            out.append((label, (float(label["label"]) == float(self.value))  # type: ignore[index, arg-type]
                        if known else None))
        return out


@dataclass
class RuleRow:
    label: str
    question: str | None
    value: float | None
    threshold: float | None
    flagged: bool
    reason: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class AnnotatorPage:
    name: str
    in_run: bool  # the run analysed this annotator (False: excluded, or answered after it)
    rows: list[ConsensusRow]
    agreement: dict[str, tuple[int, int]]  # method -> (agreeing, compared)
    seconds: list[float]
    timing: Mapping[str, Any] | None  # the run's timing record of the annotator
    pooled: Mapping[str, Any] | None
    duplicates: list[Mapping[str, Any]]  # the run's records, one per scale of the question
    pairs: list[tuple[str, float | None, float | None]]  # item, first, repeat (their answers)
    rules: list[RuleRow]
    ranks: list[dict[str, Any]]  # method label, value, rank, of n, outlier
    truncated: bool = False

    @property
    def n_flags(self) -> int:
        return sum(1 for r in self.rules if r.flagged)


def annotator_page(document: Mapping[str, Any], *, name: str, question: str | None,
                   scale: str, answers: Sequence[Mapping[str, Any]],
                   truncated: bool = False,
                   labels: Sequence[Mapping[str, Any]] | None = None) -> AnnotatorPage:
    """Build the page of ``name`` from ``document`` as it reads for ``question``
    (`core.results.question_view`) and the annotator's ``answers``
    (`analysis.selectors.annotator_answers`: every question's).  ``labels``: the run's
    ``item_labels`` records of the question for the annotator's items (a stored document keeps
    them apart: `analysis.selectors.item_labels_for`); by default the document's own."""
    by_item = _labels_by_item((document.get("item_labels") or []) if labels is None else labels)
    rows, seconds, pairs = _answer_rows(answers, question=question, by_item=by_item)
    timing = [r for r in document.get("timing") or [] if r.get("annotator") in (name, "all")]
    return AnnotatorPage(
        name=name, in_run=name in (document.get("annotators") or []), rows=rows,
        agreement=_agreement(rows), seconds=seconds,
        timing=next((r for r in timing if r["annotator"] == name), None),
        pooled=next((r for r in timing if r["annotator"] == "all"), None),
        duplicates=[r for r in document.get("duplicates") or [] if r.get("annotator") == name],
        pairs=pairs, rules=_rules(document, name), ranks=_ranks(document, name, scale),
        truncated=truncated)


def _labels_by_item(records: Sequence[Mapping[str, Any]]
                    ) -> dict[str, dict[str, Mapping[str, Any]]]:
    """The consensus labels of each item (on CONSENSUS_SCALE), by method."""
    by_item: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in records:
        if r.get("scale") == CONSENSUS_SCALE and r.get("method") in COMPETENCE_LABELS:
            by_item[str(r.get("item"))][r["method"]] = r
    return by_item


def _answer_rows(answers: Sequence[Mapping[str, Any]], *, question: str | None,
                 by_item: Mapping[str, dict[str, Mapping[str, Any]]]
                 ) -> tuple[list[ConsensusRow], list[float],
                            list[tuple[str, float | None, float | None]]]:
    """The rows of the question's answers beside their items' labels, the active seconds of
    every presentation (whatever the question), and the duplicated items' (item, first answer,
    repeat) pairs."""
    rows, seconds, seen = [], [], set()
    first: dict[str, float | None] = {}
    repeat: dict[str, float | None] = {}
    for a in answers:
        key = (a["item"], a["presentation"])
        ms = a.get("active_ms")
        if key not in seen:  # time is per presentation, whatever its number of questions
            seen.add(key)
            if ms is not None:
                seconds.append(ms / 1000.0)
        if question is not None and a["question"] != question:
            continue
        value = None if a["value"] is None else float(a["value"])
        if a["presentation"] <= 2:  # a third showing pairs with nothing, as in the analysis
            (first if a["presentation"] == 1 else repeat)[a["item"]] = value
        rows.append(ConsensusRow(a["item"], a["presentation"], value, bool(a["cant_judge"]),
                                 dict(by_item.get(a["item"], {})),
                                 None if ms is None else ms / 1000.0))
    pairs = [(item, value, repeat[item]) for item, value in first.items() if item in repeat]
    return rows, seconds, pairs


def _agreement(rows: Sequence[ConsensusRow]) -> dict[str, tuple[int, int]]:
    """How many first answers agree with each method's label, of those that can be compared."""
    agreement = {}
    for n, method in enumerate(COMPETENCE_LABELS):
        known = [agrees for row in rows if row.presentation == 1
                 for agrees in [row.by_method[n][1]] if agrees is not None]
        agreement[method] = (sum(known), len(known))
    return agreement


def _rules(document: Mapping[str, Any], name: str) -> list[RuleRow]:
    out = []
    for section, names in (("heuristics", RULE_LABELS), ("quality", QUALITY_RULE_LABELS)):
        for r in document.get(section) or []:
            if r.get("annotator") != name:
                continue
            out.append(RuleRow(names.get(r["rule"], r["rule"]), r.get("question"),
                               r.get("value"), r.get("threshold"), bool(r.get("flagged")),
                               r.get("reason") or "", r.get("detail") or {}))
    return out


def _ranks(document: Mapping[str, Any], name: str, scale: str) -> list[dict[str, Any]]:
    n = len(document.get("annotators") or [])
    out = []
    for r in document.get("trust") or []:
        if r.get("scale") == scale and r.get("items") == "all":
            out.append({"method": "Trust (Borovikova et al. 2022)",
                        "value": (r.get("coefficients") or {}).get(name),
                        "rank": (r.get("ranks") or {}).get(name), "n": n,
                        "outlier": name in (r.get("outliers") or []),
                        "reason": r.get("reason") or ""})
            break
    for method, label in COMPETENCE_LABELS.items():
        record = next((c for c in document.get("competence") or []
                       if c.get("scale") == scale and c.get("method") == method
                       and c.get("annotator") == name), None)
        if record is not None:
            out.append({"method": label, "value": record.get("competence"),
                        "rank": record.get("rank"), "n": n, "outlier": False,
                        "reason": record.get("reason") or ""})
    return out


def median_seconds(values: Sequence[float]) -> float | None:
    return float(median(values)) if values else None
