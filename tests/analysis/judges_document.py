"""A results document's judges sections built by hand after the agreed contract (CONTRACT27.md,
"The results section"): two judges on the systems demo's questions — "good" passes the
alternative annotator test on adequacy, "first-picker" fails it and prefers the output shown
first on the pairwise question — and one record that could not be tested. The dashboard, its
charts and the exports read them; the analysis that writes them is tested apart."""

from __future__ import annotations

import copy
from typing import Any

from analysis.models import AnalysisRun

ANNOTATORS = ["A1", "A2", "A3", "A4", "A5"]
UNTESTED = "fewer than 3 annotators answered the items the judge answered"


def _interval(value: float, spread: float = 0.08) -> dict[str, float]:
    return {"value": value, "low": round(value - spread, 4), "high": round(value + spread, 4)}


def _alt_test(passed: bool | None, omega: float | None, rho: float | None,
              metric: str = "negative_distance", reason: str = "") -> dict[str, Any]:
    per = [] if passed is None else [
        {"annotator": a, "items": 120, "rho_judge": -0.61 if passed else -1.02,
         "rho_human": -0.74, "p": 0.004 if passed and n < 4 else 0.41,
         "p_adjusted": 0.02 if passed and n < 4 else 0.9, "won": bool(passed and n < 4)}
        for n, a in enumerate(ANNOTATORS)]
    return {"epsilon": 0.2, "q": 0.05, "metric": metric,
            "annotators": 0 if passed is None else len(ANNOTATORS), "winning_rate": omega,
            "rho": rho, "passed": passed, "reason": reason, "per_annotator": per}


def _alpha(judge_mean: float, replaced: float, up: int) -> dict[str, Any]:
    return {"humans": 0.52, "judge_mean": judge_mean, "humans_mean": 0.5,
            "replaced_mean": replaced, "replaced_up": up, "replaced_down": 5 - up,
            "per_annotator": [{"annotator": a, "items": 120, "judge_alpha": judge_mean,
                               "humans_alpha": 0.5, "replaced_alpha": replaced}
                              for a in ANNOTATORS]}


def _systems(tau: float) -> dict[str, Any]:
    return {"kendall_tau": _interval(tau, 0.2), "pairwise_accuracy": (tau + 1) / 2,
            "systems": 4,
            "scores": [{"system": s, "judge": j, "humans": h} for s, j, h in (
                ("mt-large", 4.4, 4.3), ("mt-medium", 3.6, 3.5), ("mt-tuned", 3.4, 3.5),
                ("mt-small", 2.5, 2.4))]}


def judges_sections() -> dict[str, list[dict[str, Any]]]:
    base = {"runs": 2, "items": 120, "majority_match": None, "position_bias": None,
            "order_consistency": None}
    good = {**base, "judge": "good", "question": "adequacy", "scale": "raw", "kind": "scale",
            "level": "ordinal",
            "correlations": {"pearson": _interval(0.83), "spearman": _interval(0.81),
                             "kendall": _interval(0.66), "items": 120},
            "alpha": _alpha(0.61, 0.55, 4), "alt_test": _alt_test(True, 0.8, 0.72),
            "self_consistency": {"alpha": 0.93, "runs": 2, "items": 120},
            "systems": _systems(1.0),
            "plot": [[float(v % 5 + 1), round(v % 5 + 1 + 0.1 * (v % 3), 3)] for v in range(60)]}
    good_reduced = {**copy.deepcopy(good), "scale": "reduced", "plot": []}
    biased_scale = {**base, "judge": "first-picker", "question": "adequacy", "scale": "raw",
                    "kind": "scale", "level": "ordinal",
                    "correlations": {"pearson": _interval(0.42), "spearman": _interval(0.4),
                                     "kendall": _interval(0.3), "items": 120},
                    "alpha": _alpha(0.31, 0.44, 0), "alt_test": _alt_test(False, 0.0, 0.21),
                    "self_consistency": {"alpha": 0.7, "runs": 2, "items": 120},
                    "systems": _systems(0.67),
                    "plot": [[float((v * 7) % 5 + 1), float(v % 5 + 1)] for v in range(40)]}
    biased_choice = {**base, "judge": "first-picker", "question": "preference",
                     "scale": "choice", "kind": "pairwise", "level": "nominal",
                     "correlations": None,
                     "majority_match": {**_interval(0.55), "comparisons": 60},
                     "alpha": _alpha(0.12, 0.3, 0),
                     "alt_test": _alt_test(False, 0.2, 0.3, metric="accuracy"),
                     "self_consistency": None,
                     "position_bias": {"first_share": 0.86, "low": 0.77, "high": 0.93,
                                       "p": 0.00001, "judgments": 60,
                                       "humans_first_share": 0.58, "humans_low": 0.53,
                                       "humans_high": 0.63},
                     "order_consistency": {"share": 0.2, "pairs": 10}, "systems": None,
                     "plot": [[float(v % 2), round(0.3 + 0.4 * (v % 2), 2)] for v in range(60)]}
    good_choice = {**base, "judge": "good", "question": "preference", "scale": "choice",
                   "kind": "pairwise", "level": "nominal", "correlations": None,
                   "majority_match": None, "alpha": None,
                   "alt_test": _alt_test(None, None, None, reason=UNTESTED),
                   "self_consistency": None, "systems": None, "plot": []}
    info = [{"name": "good", "model": "gpt-4o-mini", "prompt": "Rate the translation 1–5.",
             "version": "v2", "date": "2025-06-01", "temperature": 0.0, "notes": "",
             "runs": ["1", "2"]},
            {"name": "first-picker", "model": "small-llm", "prompt": "Which is better?",
             "version": "", "date": "", "temperature": 0.7, "notes": "noisy",
             "runs": ["1", "2"]}]
    return {"judges": [biased_choice, good_reduced, good, biased_scale, good_choice],
            "judges_info": info}


def with_judges(run: AnalysisRun, *, view: bool = False) -> AnalysisRun:
    """Store the judges sections in a finished run's document (``view``: as a run of the view
    with judges, its judges among the annotators)."""
    document = copy.deepcopy(run.results)
    document.update(judges_sections())
    settings = dict(run.settings)
    if view:
        document["settings"]["judges_as_annotators"] = settings["judges_as_annotators"] = True
        document["judge_annotators"] = ["judge: good", "judge: first-picker"]
    AnalysisRun.objects.filter(pk=run.pk).update(results=document, settings=settings)
    run.refresh_from_db()
    return run
