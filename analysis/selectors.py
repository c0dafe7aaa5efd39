"""ORM rows to arrays: the only place that knows both the database and numpy."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annotation.models import Response
from studies.models import Item, Study


@dataclass(frozen=True)
class StudyData:
    """A study's answers as arrays, annotators in the order of their first response.

    `item`, `annotator`, `value`, `duration_ms` are aligned long-format arrays of the *first*
    presentations (index into `item_ids` / `annotators`; value nan = blank). `dup_*` hold the
    duplicate pairs (first and repeat answers of the same annotator and item).
    """

    annotators: list[str]
    item_ids: list[str]
    item: np.ndarray
    annotator: np.ndarray
    value: np.ndarray
    duration_ms: np.ndarray
    dup_item: np.ndarray
    dup_annotator: np.ndarray
    dup_first: np.ndarray
    dup_repeat: np.ndarray
    control: np.ndarray
    metrics: dict[str, np.ndarray]
    features: dict[str, np.ndarray]
    sentiment_a: np.ndarray | None
    sentiment_b: np.ndarray | None
    sentiment_source: str
    extra: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_annotators(self) -> int:
        return len(self.annotators)

    def dense(self, values: np.ndarray | None = None) -> np.ndarray:
        """Return an (annotators × items) matrix of `values` (default: the raw answers)."""
        out = np.full((self.n_annotators, self.n_items), np.nan)
        out[self.annotator, self.item] = self.value if values is None else values
        return out


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def study_data(*, study: Study) -> StudyData:
    """Load a study's items (one query) and answers (one query) as arrays."""
    items = list(Item.objects.filter(study=study).order_by("position")
                 .values_list("id", "external_id", "is_control", "metrics", "features", "meta"))
    index = {pk: n for n, (pk, *_) in enumerate(items)}
    rows = (Response.objects.filter(participant__study=study).order_by("id")
            .values_list("participant_id", "item_id", "presentation", "value", "active_ms"))
    order: dict[int, int] = {}
    first: dict[tuple[int, int], tuple[int, float, float]] = {}
    repeats: dict[tuple[int, int], float] = {}
    for participant, item_pk, presentation, value, active_ms in rows.iterator(chunk_size=5000):
        a = order.setdefault(participant, len(order))
        key = (a, index[item_pk])
        v = np.nan if value is None else float(value)
        if presentation == 1:
            first[key] = (a, v, np.nan if active_ms is None else float(active_ms))
        else:
            repeats[key] = v
    keys = list(first)
    item_arr = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    ann_arr = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
    val_arr = np.fromiter((first[k][1] for k in keys), dtype=float, count=len(keys))
    dur_arr = np.fromiter((first[k][2] for k in keys), dtype=float, count=len(keys))
    pairs = [k for k in repeats if k in first]
    metric_names = sorted({m for *_, metrics, _, _ in items for m in metrics})
    feature_names = sorted({f for *_, features, _ in items for f in features})
    metas = [meta for *_, meta in items]
    has_sentiment = all("sentiment_a" in m and "sentiment_b" in m for m in metas) and bool(items)
    sources = {m.get("sentiment_source", "imported") for m in metas}
    return StudyData(
        annotators=[f"A{n}" for n in range(1, len(order) + 1)],
        item_ids=[external for _, external, *_ in items],
        item=item_arr, annotator=ann_arr, value=val_arr, duration_ms=dur_arr,
        dup_item=np.array([k[1] for k in pairs], dtype=np.int64),
        dup_annotator=np.array([k[0] for k in pairs], dtype=np.int64),
        dup_first=np.array([first[k][1] for k in pairs], dtype=float),
        dup_repeat=np.array([repeats[k] for k in pairs], dtype=float),
        control=np.array([control for _, _, control, *_ in items], dtype=bool),
        metrics={m: np.array([_float(metrics.get(m)) for *_, metrics, _, _ in items])
                 for m in metric_names},
        features={f: np.array([_float(features.get(f)) for *_, features, _ in items])
                  for f in feature_names},
        sentiment_a=np.array([_float(m.get("sentiment_a")) for m in metas]) if has_sentiment else None,
        sentiment_b=np.array([_float(m.get("sentiment_b")) for m in metas]) if has_sentiment else None,
        sentiment_source="vader" if sources == {"vader"} else "imported",
    )


def latest_run(*, study: Study, with_results: bool = False):
    """Return the newest run of the study (or None); results are loaded only when asked."""
    from .models import AnalysisRun

    runs = AnalysisRun.objects.filter(study=study)
    if not with_results:
        runs = runs.defer("results")
    return runs.order_by("-created_at", "-id").first()


def latest_results(*, study: Study) -> dict | None:
    """Return the results document of the newest finished run, or None. One query."""
    from .models import AnalysisRun

    return (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
            .order_by("-finished_at", "-id").values_list("results", flat=True).first())
