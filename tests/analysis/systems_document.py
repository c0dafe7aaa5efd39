"""A results document's systems sections built by hand, following the agreed record contract
(docs/results.md): four systems, one clear winner, a tie in the middle, one clearly worse; the
dashboard, the exports and the API tests read it as a run would have written it."""

from __future__ import annotations

import copy
from itertools import combinations
from typing import Any

from analysis.models import AnalysisRun

# (system, mean, low, high, median, rank, rank_low, rank_high, cluster)
SYSTEMS = [
    ("alpha-mt", 5.6, 5.3, 5.9, 6.0, 1, 1, 1, 1),
    ("beta-mt", 4.1, 3.8, 4.4, 4.0, 2, 2, 3, 2),
    ("gamma-mt", 4.0, 3.7, 4.3, 4.0, 3, 2, 3, 2),
    ("delta-mt", 2.2, 1.9, 2.6, 2.0, 4, 4, 4, 3),
]
RANKED = [s[0] for s in SYSTEMS]


def systems_sections(question: str, scale: str = "raw", *, name: str | None = None
                     ) -> dict[str, list[dict[str, Any]]]:
    """The five sections for one question × scale; ``name`` renames the first system (a
    hostile name for the exports' formula test)."""
    rows = [list(s) for s in SYSTEMS]
    if name is not None:
        rows[0][0] = name
    base = {"question": question, "scale": scale}
    systems = [{**base, "system": s, "sources": 30, "items": 30, "answers": 150, "mean": m,
                "mean_low": lo, "mean_high": hi, "median": md, "rank": r, "rank_low": rl,
                "rank_high": rh, "cluster": c, "reason": None}
               for s, m, lo, hi, md, r, rl, rh, c in rows]
    tests = []
    for a, b in combinations(rows, 2):
        difference = round(a[1] - b[1], 6)
        tied = {a[0], b[0]} == {rows[1][0], rows[2][0]}
        p = 0.41 if tied else 0.0002
        tests.append({**base, "system_a": a[0], "system_b": b[0], "sources": 30,
                      "mean_difference": difference, "effect_size": round(difference / 1.1, 6),
                      "test": "permutation", "statistic": difference, "p_value": p,
                      "p_adjusted": min(1.0, p * 2), "correction": "holm",
                      "significant": not tied, "reason": None})
    clusters = [{**base, "cluster": c, "system": s, "mean": m, "rank": r}
                for s, m, _, _, _, r, _, _, c in rows]
    # cell-means coding, as the analysis fits it: each system's effect is its adjusted mean
    model = [{**base, "kind": "fixed", "name": s, "estimate": m, "std_error": 0.25,
              "low": round(m - 0.5, 6), "high": round(m + 0.5, 6), "share": None,
              "converged": True, "reason": None} for s, m, *_ in sorted(rows)]
    model += [{**base, "kind": "variance", "name": name, "estimate": value, "std_error": None,
               "low": None, "high": None, "share": share, "converged": True, "reason": None}
              for name, value, share in (("annotator", 0.3, 0.2), ("source", 0.45, 0.3),
                                         ("residual", 0.75, 0.5))]
    meta = []
    for metric, r in (("tracking", 0.97), ("noisy", 0.31)):
        for statistic in ("pearson", "spearman", "kendall", "pairwise_accuracy",
                          "soft_pairwise_accuracy"):
            meta.append({**base, "metric": metric, "level": "system", "grouping": None,
                         "statistic": statistic, "value": r, "low": r - 0.1, "high": 1.0,
                         "p_value": 0.01 if statistic == "soft_pairwise_accuracy" else None,
                         "n": 4, "other_metric": None, "reason": None})
        for grouping in ("none", "item", "system"):
            for statistic in ("pearson", "spearman", "kendall"):
                meta.append({**base, "metric": metric, "level": "item", "grouping": grouping,
                             "statistic": statistic, "value": r - 0.2, "low": r - 0.3,
                             "high": r - 0.1, "p_value": None, "n": 120, "other_metric": None,
                             "reason": None})
    meta.append({**base, "metric": "tracking", "level": "system", "grouping": None,
                 "statistic": "williams", "value": 2.5, "low": None, "high": None,
                 "p_value": 0.03, "n": 4, "other_metric": "noisy", "reason": None})
    # A number that could not be computed, with its reason
    meta.append({**base, "metric": "constant", "level": "system", "grouping": None,
                 "statistic": "pearson", "value": None, "low": None, "high": None,
                 "p_value": None, "n": 4, "other_metric": None,
                 "reason": "the metric gives every system the same score"})
    return {"systems": systems, "system_tests": tests, "system_clusters": clusters,
            "mixed_model": model, "metric_meta_evaluation": meta}


def with_systems(run: AnalysisRun, *, name: str | None = None) -> AnalysisRun:
    """Store the systems sections in a finished run's document, for each of its questions."""
    document = copy.deepcopy(run.results)
    keys = [q["key"] for q in document.get("questions") or []] or [None]
    sections: dict[str, list[dict[str, Any]]] = {}
    for key in keys:
        for section, records in systems_sections(key, name=name).items():
            sections.setdefault(section, []).extend(records)
    document.update(sections)
    AnalysisRun.objects.filter(pk=run.pk).update(results=document)
    run.refresh_from_db()
    return run
