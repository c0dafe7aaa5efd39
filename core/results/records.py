"""The records of a results build that are not the document itself: the seconds each section
took (`SectionClock`), and the records that grow with a study's number of items
(`ItemRecords`), which a run stores in tables of its own (docs/results.md, "Items stored apart").
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import results_quality as rq
from core.stats._types import BoolArray, FloatArray, IntArray
from core.stats.gaps import ItemGapBlock

# The parts of a full document that grow with the number of items: a run stores them apart
# (`ItemRecords`, the analysis app's item tables), the stored document keeps their summaries.
ITEM_SECTIONS = ("items", "simple_items", "item_gaps", "item_labels")


@dataclass
class SectionClock:
    """Seconds spent in each section of a build, summed over questions and scales.

    ``with clock("alpha"): ...`` adds the block's wall time to ``seconds["alpha"]``; a run
    records them in its timings (docs/results.md, "Timings").  Sections nest only where the
    inner one is named apart (``competence`` inside a scale's loop, not inside ``alpha``).
    """

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, section: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.seconds[section] = self.seconds.get(section, 0.0) + elapsed

    def rounded(self, digits: int = 4) -> dict[str, float]:
        """The seconds per section, rounded (largest first here; stored as a jsonb object, the
        order is not kept: ``AnalysisRun.sections_by_time`` sorts them again)."""
        ordered = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        return {name: round(value, digits) for name, value in ordered}


@dataclass(frozen=True)
class Group:
    """One section group of a results build: what one task of a fanned-out run computes.

    ``family``: ``study`` (the active times and the study-wide quality rules), per question ×
    scale ``agreement`` (trust, alpha, duplicates), ``competence`` (one model, ``method``),
    ``spread`` (noise, gaps, error weights) and ``systems``, per question ``filtering`` (the
    heuristics, styles, correlations and their intervals), and ``comparisons`` (every
    comparative question).  `core.results.build.section_groups` lists a study's, in the
    order their records enter the document.
    """

    family: str
    question: str | None = None
    scale: str | None = None
    method: str | None = None

    @property
    def name(self) -> str:
        """``family:question:scale:method`` without the parts it has not (a task's name)."""
        return ":".join(p for p in (self.family, self.question, self.scale, self.method)
                        if p is not None)

    def to_dict(self) -> dict[str, str | None]:
        return {"family": self.family, "question": self.question, "scale": self.scale,
                "method": self.method}


@dataclass
class Part:
    """What one `Group` adds to a results build: the records it appended to each section, the
    changes it made to the document's ``settings`` (nested, only what it set), what it adds to
    its question's entry, its item records (gap blocks, label blocks) and its sections'
    seconds.  `core.results.build.assemble` puts the parts of a build together."""

    group: Group
    sections: dict[str, list[Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    entry: dict[str, Any] = field(default_factory=dict)
    gaps: list[tuple[str, ItemGapBlock]] = field(default_factory=list)
    labels: list[rq.LabelBlock] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(eq=False)
class ItemRecords:
    """The records of a run that grow with its number of items, kept out of its document.

    Columns, not dicts: ``item_ids`` in the study's order, ``simple`` one mask over them per
    question key, ``gaps`` the per-item gaps (`ItemGapBlock`, with their question), ``labels``
    the aggregated labels (`LabelBlock`).  A run writes them to its own tables
    (``analysis.models``), normalised: each item once with its metric values (`item_rows`), each
    item's human aggregate once per question × scale × aggregate (`human_rows`), the gap being
    their difference; `merged_into` gives the full document, whose ``items``,
    ``simple_items``, ``item_gaps`` and ``item_labels`` are these records (docs/results.md).
    """

    item_ids: list[str]
    questions: list[str] = field(default_factory=list)
    simple: dict[str, BoolArray] = field(default_factory=dict)
    gaps: list[tuple[str, ItemGapBlock]] = field(default_factory=list)
    labels: list[rq.LabelBlock] = field(default_factory=list)

    @property
    def gap_metrics(self) -> list[str]:
        """The metrics with per-item gaps, in the order of their first block (the order of
        ``item_gap_metrics`` and of each item's ``metrics``)."""
        return list(dict.fromkeys(b.metric for _, b in self.gaps))

    def metric_values(self) -> FloatArray:
        """Each item's value of each of `gap_metrics`, ``(items, metrics)``; nan where it has
        no gap (no value, or no human answer anywhere)."""
        metrics = {m: n for n, m in enumerate(self.gap_metrics)}
        out = np.full((len(self.item_ids), len(metrics)), np.nan)
        for _, b in self.gaps:
            out[b.item, metrics[b.metric]] = b.metric_value
        return out

    def human_blocks(self) -> list[tuple[str, str, str, IntArray, FloatArray]]:
        """(question, scale, aggregate, items, human) per question × scale × aggregate, in
        block order: the items with a gap for any metric, ascending, and their human
        aggregate (rescaled to [0, 1])."""
        grouped: dict[tuple[str, str, str], list[ItemGapBlock]] = {}
        for question, b in self.gaps:
            grouped.setdefault((question, b.scale, b.aggregate), []).append(b)
        out = []
        for (question, scale, aggregate), blocks in grouped.items():
            items, first = np.unique(np.concatenate([b.item for b in blocks]), return_index=True)
            human = np.concatenate([b.human for b in blocks])[first]
            out.append((question, scale, aggregate, items, human))
        return out

    def item_rows(self) -> Iterator[tuple[int, str, list[str], list[float | None]]]:
        """(position, item, keys of the questions on which it is simple, its value of each of
        `gap_metrics` or None), in item order."""
        masks = [(q, self.simple[q]) for q in self.questions if q in self.simple]
        values = self.metric_values()
        for n, item in enumerate(self.item_ids):
            yield (n, item, [q for q, mask in masks if mask[n]],
                   [None if np.isnan(v) else float(v) for v in values[n]])

    def human_rows(self) -> Iterator[tuple[str, str, str, int, float]]:
        """(question, scale, aggregate, position, human) of `human_blocks`, in order (their
        ``seq``)."""
        for question, scale, aggregate, items, human in self.human_blocks():
            for position, value in zip(items.tolist(), human.tolist(), strict=True):
                yield question, scale, aggregate, position, value

    def simple_items(self, question: str) -> list[str]:
        mask = self.simple.get(question)
        return [] if mask is None else [self.item_ids[i] for i in np.flatnonzero(mask)]

    def gap_rows(self) -> Iterator[tuple[str, str, str, str, str, float, float, float]]:
        """(question, scale, aggregate, metric, item, human, metric_value, gap), in document
        order: question × scale × aggregate blocks, items ascending, metrics in `gap_metrics`
        order; what the run's tables give back (`expand_gaps`)."""
        ids, metrics, values = self.item_ids, self.gap_metrics, self.metric_values()
        for question, scale, aggregate, items, human in self.human_blocks():
            for position, h in zip(items.tolist(), human.tolist(), strict=True):
                row = values[position].tolist()
                for metric, value, gap in expand_gaps(metrics, row, h):
                    yield question, scale, aggregate, metric, ids[position], h, value, gap

    def label_rows(self) -> Iterator[tuple[str, str, str, str, float | None, float | None,
                                           float | None, int, str | None]]:
        """(question, scale, method, item, label, probability, entropy, n, reason), in document
        order."""
        ids = self.item_ids
        for b in self.labels:
            for i in range(len(b.labels)):
                r = b.labels.item(i)
                yield (b.question, b.scale, b.method, ids[r.item], _float(r.label),
                       _float(r.probability), _float(r.entropy), int(r.n), r.reason)

    @property
    def n_gaps(self) -> int:
        return sum(len(b) for _, b in self.gaps)

    @property
    def n_labels(self) -> int:
        return sum(len(b.labels) for b in self.labels)

    def gap_records(self) -> Iterator[dict[str, Any]]:
        """The ``item_gaps`` records of the full document."""
        for question, scale, aggregate, metric, item, human, value, gap in self.gap_rows():
            yield {"question": question, "item": item, "scale": scale, "aggregate": aggregate,
                   "metric": metric, "human": human, "metric_value": value, "gap": gap}

    def label_records(self) -> Iterator[dict[str, Any]]:
        """The ``item_labels`` records of the full document."""
        for question, scale, method, item, label, probability, entropy, n, reason in \
                self.label_rows():
            record: dict[str, Any] = {"question": question, "scale": scale, "method": method,
                                      "item": item, "label": label,
                                      "probability": probability, "entropy": entropy, "n": n}
            if reason is not None:
                record["reason"] = reason
            yield record

    def merged_into(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """Return the full document: ``document`` with the item sections put back."""
        full = dict(document)
        entries = []
        for entry in document.get("questions") or []:
            entry = dict(entry)
            entry["simple_items"] = self.simple_items(entry["key"])
            entries.append(entry)
        full["questions"] = entries
        full["items"] = list(self.item_ids)
        full["simple_items"] = entries[0]["simple_items"] if entries else []
        full["item_gaps"] = list(self.gap_records())
        full["item_labels"] = list(self.label_records())
        return full


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def expand_gaps(metrics: Sequence[str], values: Sequence[float | None], human: float
                ) -> Iterator[tuple[str, float, float]]:
    """Yield (metric, metric_value, gap) of one item's human aggregate against its metric
    values (None or nan: no gap); gap = metric_value − human, the same double numpy gives."""
    for metric, value in zip(metrics, values, strict=True):
        if value is not None and value == value:  # not nan
            yield metric, value, value - human
