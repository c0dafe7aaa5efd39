"""Read a results document for one of its questions (`question_view`, `question_keys`): what the
dashboard, the charts and the annotator's page show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The sections whose records name their question (timing and the slow rule with null).
SECTIONS = ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
            "heuristics", "styles", "correlations", "noise", "timing", "quality",
            "quality_correlations", "correlation_intervals", "metric_comparisons",
            "style_correlations", "competence", "competence_models", "item_labels",
            "largest_gaps", "item_gap_sample", "systems", "system_tests", "system_clusters",
            "mixed_model", "metric_meta_evaluation")


def question_keys(document: Mapping[str, Any]) -> list[str]:
    """Return the keys of a document's questions in order (``[]`` for a `concord.results/1` one)."""
    entries = document.get("questions")
    if not isinstance(entries, list):
        return []
    return [e["key"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("key"), str)]


def question_view(document: Mapping[str, Any], question: str | None = None) -> dict[str, Any]:
    """Return the document as it reads for one question (the primary one by default).

    Every section keeps the records of ``question`` and the study-wide ones (``question``
    null: timing, the slow rule); ``scales``, ``simple_items``, the answer counts and the
    derived settings become the question's.  An unknown key reads as the primary question; a
    document without ``questions`` (`concord.results/1`) is returned as it is.  Never raises on a
    malformed document (the charts read any).

    Example: ``question_view(doc, "fluency")["alpha"]`` holds fluency's alpha records only.
    """
    view = dict(document)
    entries = [e for e in (document.get("questions") or []) if isinstance(e, Mapping)] \
        if isinstance(document.get("questions"), list) else []
    entry = next((e for e in entries if e.get("key") == question), entries[0] if entries else None)
    if entry is None:
        return view
    key = entry.get("key")
    for section in SECTIONS:
        records = document.get(section)
        if isinstance(records, list):
            view[section] = [r for r in records if not isinstance(r, Mapping)
                             or r.get("question", key) in (key, None)]
    scales = document.get("scales")
    if isinstance(scales, list):
        view["scales"] = [r for r in scales if isinstance(r, Mapping)
                          and r.get("question", key) == key]
    if "simple_items" in entry:
        view["simple_items"] = entry["simple_items"]
    counts, own = document.get("counts"), entry.get("counts")
    if isinstance(counts, Mapping) and isinstance(own, Mapping):
        view["counts"] = {**counts, **own}
    settings = document.get("settings")
    if isinstance(settings, Mapping):
        settings = dict(settings)
        for name in ("heuristics_reduced_scale", "styles"):
            if name in entry:
                settings[name] = entry[name]
            else:
                settings.pop(name, None)
        view["settings"] = settings
    view["question"] = key
    return view
