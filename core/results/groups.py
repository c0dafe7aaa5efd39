"""A results build in section groups, as bytes: what the tasks of a fanned-out run store and read
(`analysis.sections`), and the critical path of their timings.

A build is the parts of its groups put together (`core.results.build.section_groups`,
`group_part`, `assemble`).  A fanned-out run stores each question as its analyses see it
(`question_bytes`, read back by `question_from_bytes`: its arrays without the excluded
annotators, its simple items; the scales are derived again), the study-wide rows
(`rows_bytes`) and each group's `Part` (`part_bytes`), so that a task on any machine computes its
group from a shared database and the document is the one a single process builds.

The bytes are one ``.npz`` (NumPy's format, read with ``allow_pickle=False``: arrays of numbers
and booleans only, never a Python object) holding a JSON ``__meta__``, deflated (level 1: the
arrays of a study are written once and read by a few tasks).  Floats go through JSON as their
shortest exact text, so a part read back is equal value for value.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.data import QuestionData, StudyData
from core.results.build import StudyRows, _clean
from core.results.comparisons import Judgments
from core.results.records import Group, ItemRecords, Part
from core.results.scales import _Question, scale_views
from core.results_quality import LabelBlock
from core.stats.competence_results import ItemLabels
from core.stats.gaps import ItemGapBlock

META = "__meta__"


def _pack(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    text = json.dumps(meta, allow_nan=True).encode()
    entries: dict[str, Any] = {META: np.frombuffer(text, np.uint8), **arrays}
    np.savez(buffer, **entries)
    return zlib.compress(buffer.getvalue(), 1)


def _unpack(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(io.BytesIO(zlib.decompress(data)), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    meta = json.loads(arrays.pop(META).tobytes().decode())
    return meta, arrays


# --------------------------------------------------------------------------- dataclasses


def _fields_out(obj: Any, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The fields of a dataclass of arrays (`StudyData`, `Judgments`): arrays into ``arrays``,
    the rest described in the returned meta."""
    meta: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, np.ndarray):
            arrays[f"{prefix}{f.name}"] = value
            meta[f.name] = {"kind": "array"}
        elif isinstance(value, Mapping) and value and all(isinstance(v, np.ndarray)
                                                          for v in value.values()):
            keys = list(value)
            for n, key in enumerate(keys):
                arrays[f"{prefix}{f.name}.{n}"] = value[key]
            meta[f.name] = {"kind": "arrays", "keys": keys}
        elif value is None:
            meta[f.name] = {"kind": "none"}
        elif isinstance(value, tuple):
            meta[f.name] = {"kind": "tuple", "value": list(value)}
        else:
            meta[f.name] = {"kind": "json", "value": value}
    return meta


def _fields_in(cls: type, meta: Mapping[str, Any], prefix: str,
               arrays: Mapping[str, np.ndarray]) -> Any:
    values: dict[str, Any] = {}
    for name, spec in meta.items():
        kind = spec["kind"]
        if kind == "array":
            values[name] = arrays[f"{prefix}{name}"]
        elif kind == "arrays":
            values[name] = {key: arrays[f"{prefix}{name}.{n}"]
                            for n, key in enumerate(spec["keys"])}
        elif kind == "none":
            values[name] = None
        elif kind == "tuple":
            values[name] = tuple(spec["value"])
        else:
            values[name] = spec["value"]
    return cls(**values)


# --------------------------------------------------------------------------- questions


def question_bytes(question: QuestionData, prepared: _Question) -> bytes:
    """One question as its analyses see it: ``prepared``'s arrays (the excluded annotators left
    out) and simple items, with ``question``'s scale and reductions."""
    arrays: dict[str, np.ndarray] = {"simple": prepared.simple}
    meta = {"key": question.key, "prompt": question.prompt,
            "values": [float(v) for v in question.values],
            "reductions": {name: dict(mapping) for name, mapping in question.reductions.items()},
            "data": _fields_out(prepared.data, "data.", arrays)}
    return _pack(meta, arrays)


def question_from_bytes(data: bytes) -> _Question:
    """The question `question_bytes` stored, its scales derived again (``everyone``: its
    analysed data; a group never reads it)."""
    meta, arrays = _unpack(data)
    study: StudyData = _fields_in(StudyData, meta["data"], "data.", arrays)
    views = scale_views(study, meta["values"], meta["reductions"])
    simple = arrays["simple"]
    simple_rows = simple[study.item] if study.item.size else np.zeros(0, bool)
    return _Question(meta["key"], meta["prompt"], study, study, views, simple, simple_rows)


def rows_bytes(rows: StudyRows, checks: Sequence[Mapping[str, Any]]) -> bytes:
    """The study-wide rows and the attention checks (what the study's rules read)."""
    return _pack({"checks": [dict(row) for row in checks]},
                 {"answered": rows.answered, "positions": rows.positions})


def rows_from_bytes(data: bytes) -> tuple[StudyRows, list[dict[str, Any]]]:
    meta, arrays = _unpack(data)
    return StudyRows(arrays["answered"], arrays["positions"]), meta["checks"]


def judgments_bytes(judged: Sequence[Judgments],
                    mean_ratings: Mapping[str, Mapping[str, float]]) -> bytes:
    """The comparative questions' judgments (the excluded annotators' left out) and the mean
    ratings of the scale questions' items (what the comparisons' correlations read)."""
    arrays: dict[str, np.ndarray] = {}
    meta = {"mean_ratings": {k: dict(v) for k, v in mean_ratings.items()},
            "judged": [_fields_out(j, f"j{n}.", arrays) for n, j in enumerate(judged)]}
    return _pack(meta, arrays)


def judgments_from_bytes(data: bytes) -> tuple[list[Judgments], dict[str, dict[str, float]]]:
    meta, arrays = _unpack(data)
    judged = [_fields_in(Judgments, spec, f"j{n}.", arrays)
              for n, spec in enumerate(meta["judged"])]
    return judged, meta["mean_ratings"]


def head_bytes(head: Mapping[str, Any], records: ItemRecords) -> bytes:
    """The document's head (`document_head`) and the run's items and simple items."""
    return _pack({"head": head, "item_ids": records.item_ids, "questions": records.questions},
                 {f"simple.{n}": records.simple[key] for n, key in enumerate(records.questions)})


def head_from_bytes(data: bytes) -> tuple[dict[str, Any], ItemRecords]:
    """The head and a fresh `ItemRecords` (no gaps, no labels yet) `head_bytes` stored."""
    meta, arrays = _unpack(data)
    records = ItemRecords(meta["item_ids"], meta["questions"],
                          {key: arrays[f"simple.{n}"] for n, key in enumerate(meta["questions"])})
    return meta["head"], records


# --------------------------------------------------------------------------- parts


def part_bytes(part: Part) -> bytes:
    """A group's `Part` as bytes (its records made JSON-safe first, as the document's are)."""
    arrays: dict[str, np.ndarray] = {}
    gaps = []
    for n, (question, block) in enumerate(part.gaps):
        for name in ("item", "human", "metric_value", "gap"):
            arrays[f"g{n}.{name}"] = getattr(block, name)
        gaps.append([question, block.scale, block.aggregate, block.metric])
    labels = []
    for n, label_block in enumerate(part.labels):
        for name in ("label", "probability", "entropy", "n"):
            arrays[f"l{n}.{name}"] = getattr(label_block.labels, name)
        labels.append([label_block.question, label_block.scale, label_block.method])
    meta = {"group": part.group.to_dict(), "sections": _clean(part.sections),
            "settings": _clean(part.settings), "entry": _clean(part.entry),
            "seconds": part.seconds, "gaps": gaps, "labels": labels}
    return _pack(meta, arrays)


def part_from_bytes(data: bytes) -> Part:
    meta, arrays = _unpack(data)
    gaps = [(question, ItemGapBlock(scale, aggregate, metric,
                                    *(arrays[f"g{n}.{name}"]
                                      for name in ("item", "human", "metric_value", "gap"))))
            for n, (question, scale, aggregate, metric) in enumerate(meta["gaps"])]
    labels = [LabelBlock(question, scale, method, ItemLabels(
                  *(arrays[f"l{n}.{name}"] for name in ("label", "probability", "entropy", "n"))))
              for n, (question, scale, method) in enumerate(meta["labels"])]
    return Part(Group(**meta["group"]), meta["sections"], meta["settings"], meta["entry"],
                gaps, labels, meta["seconds"])


# --------------------------------------------------------------------------- timings


def critical_path(tasks: Mapping[str, tuple[float, Sequence[str]]]) -> tuple[float, list[str]]:
    """Return the longest chain of ``tasks`` (``{name: (seconds, the names it waited for)}``)
    and its seconds: what the run takes with as many workers as it has tasks.

    Example: ``{"plan": (2, []), "a": (5, ["plan"]), "b": (3, ["plan"]), "assemble": (1, ["a",
    "b"])}`` → ``(8.0, ["plan", "a", "assemble"])``.  A dependency not among ``tasks`` counts
    0 s; a cycle raises ValueError.
    """
    best: dict[str, tuple[float, list[str]]] = {}
    visiting: set[str] = set()

    def longest(name: str) -> tuple[float, list[str]]:
        if name in best:
            return best[name]
        if name not in tasks:
            return 0.0, []
        if name in visiting:
            raise ValueError(f"the tasks' dependencies run in a cycle through {name!r}")
        visiting.add(name)
        seconds, depends = tasks[name]
        before = max((longest(d) for d in depends), key=lambda c: c[0], default=(0.0, []))
        visiting.discard(name)
        best[name] = (before[0] + float(seconds), [*before[1], name])
        return best[name]

    return max((longest(name) for name in tasks), key=lambda c: c[0], default=(0.0, []))
