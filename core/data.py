"""A study's answers and items as arrays: what the results builder reads (no ORM here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from core.stats._types import BoolArray, FloatArray, IntArray
from core.stats.duplicates import duplicate_pairs_long


@dataclass(frozen=True)
class StudyData:
    """A study's answers as arrays, annotators in the order of their first response.

    `item`, `annotator`, `value`, `duration_ms` are aligned long-format arrays of the *first*
    presentations (index into `item_ids` / `annotators`; value nan = blank). `dup_*` hold the
    duplicate pairs (first and repeat answers of the same annotator and item): the first two
    presentations only, so `later_annotator` names the annotator of each response to a third or
    later presentation (an imported file may hold them), which enters no statistic. `cant_judge`,
    aligned with `value`, marks the blanks whose reason is "can't judge" (None: not known);
    such an answer is a missing value like any blank, never a category.
    """

    annotators: list[str]
    item_ids: list[str]
    item: IntArray
    annotator: IntArray
    value: FloatArray
    duration_ms: FloatArray
    dup_item: IntArray
    dup_annotator: IntArray
    dup_first: FloatArray
    dup_repeat: FloatArray
    control: BoolArray
    metrics: dict[str, FloatArray]
    features: dict[str, FloatArray]
    sentiment_a: FloatArray | None
    sentiment_b: FloatArray | None
    sentiment_source: str
    cant_judge: BoolArray | None = None
    # Words of each item's text (all its texts together), for the reading-speed floor of the
    # too-fast rule; None: not known.
    item_words: FloatArray | None = None
    later_annotator: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # The system that produced each item and the source it answers (docs/systems.md): indices
    # into `system_names` / `source_names`, -1 = none; None: no item names a system.
    item_system: IntArray | None = None
    item_source: IntArray | None = None
    system_names: Sequence[str] = ()
    source_names: Sequence[str] = ()
    # System-level metric scores imported per system: {metric: {system name: value}}.
    system_scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_annotators(self) -> int:
        return len(self.annotators)

    def without_annotators(self, names: Iterable[str]) -> StudyData:
        """Return the data without the answers of the annotators ``names`` (pseudonyms).

        The others keep their pseudonyms (``A1, A2, A4`` without ``A3``): a pseudonym always
        names the same person.  Every item stays, rated or not.  A name that is not an
        annotator of the study is an error, so a typo never leaves someone in silently.

        Example: ``data.without_annotators(["A3"]).annotators == ["A1", "A2", "A4"]`` for four.
        """
        names = list(dict.fromkeys(names))
        if not names:
            return self
        unknown = [n for n in names if n not in self.annotators]
        if unknown:
            have = f"A1–A{self.n_annotators}" if self.n_annotators else "none yet"
            raise ValueError(f"excluded_annotators: {', '.join(unknown)} "
                             f"{'is not an annotator' if len(unknown) == 1 else 'are not annotators'}"
                             f" of this study (annotators: {have})")
        drop = np.array([self.annotators.index(n) for n in names])
        kept = np.setdiff1d(np.arange(self.n_annotators), drop)
        new_index = np.full(self.n_annotators, -1, dtype=np.int64)
        new_index[kept] = np.arange(kept.size)
        rows = new_index[self.annotator] >= 0
        pairs = new_index[self.dup_annotator] >= 0
        return replace(
            self,
            annotators=[self.annotators[a] for a in kept],
            item=self.item[rows], annotator=new_index[self.annotator[rows]],
            value=self.value[rows], duration_ms=self.duration_ms[rows],
            cant_judge=None if self.cant_judge is None else self.cant_judge[rows],
            dup_item=self.dup_item[pairs], dup_annotator=new_index[self.dup_annotator[pairs]],
            dup_first=self.dup_first[pairs], dup_repeat=self.dup_repeat[pairs],
            later_annotator=new_index[self.later_annotator[new_index[self.later_annotator] >= 0]],
        )


@dataclass(frozen=True)
class ItemColumns:
    """A study's items in their order: ids, control flags and their numeric columns."""

    ids: list[str]
    control: BoolArray
    metrics: dict[str, FloatArray]
    features: dict[str, FloatArray]
    meta: Sequence[Mapping[str, object]]
    words: FloatArray | None = None  # words of each item's texts (None: not known)
    # Each item's system and source as indices into the sorted names (-1 = none); None when
    # no item names a system (a study without systems), and the system-level metric scores
    # imported per system ({metric: {system: value}}).
    system: IntArray | None = None
    source: IntArray | None = None
    system_names: Sequence[str] = ()
    source_names: Sequence[str] = ()
    system_scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def _number(value: object) -> float:
    try:
        # Any cell value may arrive here; float() raising TypeError/ValueError (caught below) is
        # the check, so the call is wider than typeshed's float(SupportsFloat | str | ...).
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return np.nan


def _factorised(labels: Sequence[str] | None, n: int) -> tuple[IntArray | None, list[str]]:
    """Return indices into the sorted distinct non-blank labels (-1 = blank) and those names;
    (None, []) when no label is given or every one is blank."""
    if labels is None or not any(labels):
        return None, []
    names = sorted({label for label in labels if label})
    index = {name: k for k, name in enumerate(names)}
    codes = np.array([index.get(label, -1) for label in labels], dtype=np.int64).reshape(n)
    return codes, names


def item_columns(ids: Sequence[str], control: Sequence[bool],
                 metrics: Sequence[Mapping[str, object]], features: Sequence[Mapping[str, object]],
                 meta: Sequence[Mapping[str, object]],
                 texts: Sequence[str] | None = None, *,
                 systems: Sequence[str] | None = None,
                 sources: Sequence[str] | None = None) -> ItemColumns:
    """Turn per-item dicts of metrics and features into one array per name (nan = absent).

    ``texts``: each item's text (its texts joined), whose words the too-fast rule's reading
    speed reads; ``None`` leaves the words unknown.  ``systems``, ``sources``: each item's
    system and source ("" = none), kept as indices into their sorted names.
    Example: systems ``["b", "", "a"]`` → ``system == [1, -1, 0]``, ``system_names == ["a", "b"]``.
    """
    metric_names = sorted({m for row in metrics for m in row})
    feature_names = sorted({f for row in features for f in row})
    system, system_names = _factorised(systems, len(ids))
    source, source_names = _factorised(sources, len(ids))
    if system is None:  # sources matter only to a study with systems
        source, source_names = None, []
    return ItemColumns(
        ids=list(ids),
        control=np.asarray(control, dtype=bool).reshape(len(ids)),
        metrics={m: np.array([_number(row.get(m)) for row in metrics], dtype=float)
                 for m in metric_names},
        features={f: np.array([_number(row.get(f)) for row in features], dtype=float)
                  for f in feature_names},
        meta=list(meta),
        words=None if texts is None
        else np.array([len(t.split()) for t in texts], dtype=float).reshape(len(ids)),
        system=system, source=source, system_names=system_names, source_names=source_names,
    )


def _joined_codes(parts: Sequence[ItemColumns], attr: str
                  ) -> tuple[IntArray | None, list[str]]:
    """Join the parts' index arrays of ``attr`` ("system" or "source") over their names' union."""
    names_attr = f"{attr}_names"
    if all(getattr(p, attr) is None for p in parts):
        return None, []
    names = sorted({n for p in parts for n in getattr(p, names_attr)})
    index = {name: k for k, name in enumerate(names)}
    out = []
    for p in parts:
        codes = getattr(p, attr)
        if codes is None:
            out.append(np.full(len(p.ids), -1, dtype=np.int64))
            continue
        remap = np.array([index[n] for n in getattr(p, names_attr)] + [-1], dtype=np.int64)
        out.append(remap[codes])  # -1 indexes the appended -1
    return np.concatenate(out), names


# The keys of an item's ``meta`` that the analyses read (the sentiments of the sentiment rule).
ANALYSED_META = ("sentiment_a", "sentiment_b", "sentiment_source")


def concat_item_columns(parts: Sequence[ItemColumns]) -> ItemColumns:
    """Join the columns of consecutive runs of items (a study's items read in chunks) into one:
    the same as `item_columns` of all of them at once (a metric or feature absent from a part
    is nan there)."""
    def joined(tables: list[dict[str, FloatArray]]) -> dict[str, FloatArray]:
        names = sorted({name for table in tables for name in table})
        return {name: np.concatenate([table.get(name, np.full(len(part.ids), np.nan))
                                      for table, part in zip(tables, parts, strict=True)])
                if parts else np.zeros(0) for name in names}

    words = [p.words for p in parts]
    system, system_names = _joined_codes(parts, "system")
    source, source_names = _joined_codes(parts, "source") if system is not None else (None, [])
    return ItemColumns(
        ids=[i for p in parts for i in p.ids],
        control=np.concatenate([p.control for p in parts]) if parts else np.zeros(0, bool),
        metrics=joined([p.metrics for p in parts]),
        features=joined([p.features for p in parts]),
        meta=[m for p in parts for m in p.meta],
        words=None if not parts or any(w is None for w in words)
        else np.concatenate([w for w in words if w is not None]),
        system=system, source=source, system_names=system_names, source_names=source_names,
    )


def study_data_from_answers(items: ItemColumns, *, participant: npt.ArrayLike,
                            item: npt.ArrayLike, presentation: npt.ArrayLike,
                            value: npt.ArrayLike, active_ms: npt.ArrayLike,
                            cant_judge: npt.ArrayLike | None = None,
                            names: Mapping[int, str] | None = None) -> StudyData:
    """Build a study's arrays from its answers in the order they were stored.

    The answer arrays are aligned, one row per stored answer, in storage order: `participant`
    (any integer id), `item` (index into `items.ids`), `presentation` (1 = first showing),
    `value` and `active_ms` (nan = blank or unknown), and optionally `cant_judge` (the blanks
    answered "can't judge"). Annotators are numbered in the order of
    their first answer and named A1, A2, ...; only first presentations enter `item`/`value`;
    an item shown twice to the same annotator is a duplicate pair (first and repeat answers);
    a third or later presentation enters neither, only `later_annotator`.
    Example: participants [9, 4, 9] answering items [0, 0, 1] make annotators A1 (9) and A2 (4).
    ``names`` ({participant id: name}, e.g. the pseudonyms a database stores) names them
    instead, in the same order; an id it lacks is named "P<id>".
    """
    participant = np.asarray(participant, dtype=np.int64)
    ids, first_rows, annotator = np.unique(participant, return_index=True, return_inverse=True)
    # np.unique numbers participants by id; renumber them by their first answer instead.
    rank = np.empty(first_rows.size, dtype=np.int64)
    rank[np.argsort(first_rows, kind="stable")] = np.arange(first_rows.size)
    annotator = rank[annotator.reshape(-1)]
    item = np.asarray(item, dtype=np.int64)
    presentation = np.asarray(presentation, dtype=np.int64)
    value = np.asarray(value, dtype=float)
    first = presentation == 1
    dup_annotator, dup_item, dup_first, dup_repeat = duplicate_pairs_long(
        annotator, item, presentation, value)
    later = presentation > 2  # numbered from 1 (above), so the rows duplicate_pairs_long leaves
    meta = items.meta
    has_sentiment = bool(meta) and all("sentiment_a" in m and "sentiment_b" in m for m in meta)
    sources = {m.get("sentiment_source", "imported") for m in meta}
    if names is None:
        annotators = [f"A{n}" for n in range(1, first_rows.size + 1)]
    else:
        by_first = ids[np.argsort(first_rows, kind="stable")]
        annotators = [names.get(int(pid), f"P{int(pid)}") for pid in by_first]
    return StudyData(
        annotators=annotators,
        item_ids=items.ids,
        item=item[first], annotator=annotator[first], value=value[first],
        duration_ms=np.asarray(active_ms, dtype=float)[first],
        dup_item=dup_item.astype(np.int64), dup_annotator=dup_annotator.astype(np.int64),
        dup_first=dup_first, dup_repeat=dup_repeat,
        control=items.control, metrics=items.metrics, features=items.features,
        sentiment_a=np.array([_number(m.get("sentiment_a")) for m in meta])
        if has_sentiment else None,
        sentiment_b=np.array([_number(m.get("sentiment_b")) for m in meta])
        if has_sentiment else None,
        sentiment_source="vader" if sources == {"vader"} else "imported",
        cant_judge=None if cant_judge is None
        else np.asarray(cant_judge, dtype=bool).reshape(value.shape)[first],
        item_words=items.words,
        later_annotator=annotator[later],
        item_system=items.system, item_source=items.source,
        system_names=list(items.system_names), source_names=list(items.source_names),
        system_scores=items.system_scores,
    )


@dataclass(frozen=True)
class QuestionData:
    """One question of a study: its key, scale and answers, on the rows the study's questions share.

    The questions of a study are asked together, one response per item presentation, so every
    question's `data` has the same annotators, items and rows (`item`, `annotator`,
    `duration_ms`, the duplicate pairs); only the values differ (`question_data_from_answers`
    builds them so).  ``values`` is the scale's full domain; ``reductions`` maps each reduction's
    name to ``{raw value: code}`` in the question's order.

    Example: SummEval's coherence question, ``QuestionData("coherence", data, (1, 2, 3, 4, 5))``.
    """

    key: str
    data: StudyData
    values: tuple[float, ...]
    reductions: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    prompt: str = ""


def question_data_from_answers(items: ItemColumns, *, participant: npt.ArrayLike,
                               item: npt.ArrayLike, presentation: npt.ArrayLike,
                               active_ms: npt.ArrayLike,
                               values: Mapping[str, npt.ArrayLike],
                               cant_judge: Mapping[str, npt.ArrayLike] | None = None,
                               names: Mapping[int, str] | None = None,
                               ) -> dict[str, StudyData]:
    """Build every question's arrays from one row per stored response, in storage order.

    The rows are the study's responses (`study_data_from_answers` describes them); ``values``
    maps each question's key to its answers, one per row (nan = blank, or not answered), and
    ``cant_judge`` to the blanks whose reason is "can't judge".  Every question gets the same
    rows, so its annotators are the study's: whoever answered any question, numbered by their
    first response.  Example: rows of participants [9, 4] with ``values={"a": [1, nan],
    "b": [nan, 2]}`` give both questions the annotators A1 (9) and A2 (4).
    """
    cant_judge = cant_judge or {}
    return {key: study_data_from_answers(items, participant=participant, item=item,
                                         presentation=presentation, value=value,
                                         active_ms=active_ms, cant_judge=cant_judge.get(key),
                                         names=names)
            for key, value in values.items()}
