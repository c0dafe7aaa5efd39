"""The systems sections of the results document (pure, no database): a planted study's order is
recovered, its planted tie is not declared significant, and a study without systems is
unchanged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from core.data import QuestionData, item_columns, question_data_from_answers
from core.results import build_results, question_view
from core.results.systems import SYSTEM_SECTIONS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
SYSTEMS = ("alpha", "bravo", "charlie", "delta")
QUALITY = {"alpha": 4.2, "bravo": 3.4, "charlie": 2.6, "delta": 2.6}  # a planted tie
SETTINGS = {"bootstrap_samples": 20, "systems_bootstrap": 300, "systems_permutations": 2000}
N_SOURCES, N_ANNOTATORS = 30, 5


def planted(*, with_systems: bool = True, seed: int = 0) -> list[QuestionData]:
    """Four systems × 30 sources, every annotator rating every output on 1–5; a metric that
    follows the humans loosely, another imported per system."""
    rng = np.random.default_rng(seed)
    systems = [s for _ in range(N_SOURCES) for s in SYSTEMS]
    sources = [f"doc{n}" for n in range(N_SOURCES) for _ in SYSTEMS]
    n_items = len(systems)
    difficulty = rng.normal(0, 0.5, N_SOURCES)
    quality = np.array([QUALITY[s] for s in systems]) + np.repeat(difficulty, len(SYSTEMS))
    metric = quality + rng.normal(0, 0.6, n_items)
    items = item_columns([f"i{n}" for n in range(n_items)], [False] * n_items,
                         [{"chrf": float(v)} for v in metric], [{}] * n_items, [{}] * n_items,
                         systems=systems if with_systems else None,
                         sources=sources if with_systems else None)
    items = replace(items, system_scores={"bleu": {"alpha": 30.0, "bravo": 28.0,
                                                   "charlie": 21.0, "delta": 22.0}})
    participant = np.repeat(np.arange(N_ANNOTATORS), n_items)
    item = np.tile(np.arange(n_items), N_ANNOTATORS)
    bias = rng.normal(0, 0.3, N_ANNOTATORS)
    value = np.clip(np.rint(quality[item] + bias[participant] + rng.normal(0, 0.7, item.size)),
                    1, 5)
    data = question_data_from_answers(items, participant=participant, item=item,
                                      presentation=np.ones(item.size, int),
                                      active_ms=np.full(item.size, 4000.0),
                                      values={"quality": value})
    return [QuestionData("quality", data["quality"], (1.0, 2.0, 3.0, 4.0, 5.0))]


@pytest.fixture(scope="module")
def document():
    return build_results(planted(), settings=SETTINGS, study={"slug": "s", "title": "S"})


def raw(doc, section):
    return [r for r in doc[section] if r["scale"] == "raw"]


def test_it_validates_against_the_schema(document):
    jsonschema.validate(document, SCHEMA)


def test_it_recovers_the_planted_order(document):
    rows = raw(document, "systems")
    assert [r["system"] for r in rows][:2] == ["alpha", "bravo"]
    assert {r["system"] for r in rows[2:]} == {"charlie", "delta"}
    assert all(r["mean_low"] <= r["mean"] <= r["mean_high"] for r in rows)
    assert rows[0]["rank"] == 1 and rows[0]["sources"] == N_SOURCES
    assert rows[0]["items"] == N_SOURCES and rows[0]["answers"] == N_SOURCES * N_ANNOTATORS


def test_it_does_not_call_the_planted_tie_significant(document):
    tests = {(r["system_a"], r["system_b"]): r for r in raw(document, "system_tests")}
    assert len(tests) == 6
    assert not tests[("charlie", "delta")]["significant"]
    assert tests[("alpha", "bravo")]["significant"] and tests[("alpha", "bravo")][
        "mean_difference"] > 0
    assert tests[("alpha", "bravo")]["p_adjusted"] >= tests[("alpha", "bravo")]["p_value"]


def test_it_puts_the_tied_systems_in_one_cluster(document):
    clusters = {r["system"]: r["cluster"] for r in raw(document, "system_clusters")}
    assert clusters["alpha"] == 1 and clusters["bravo"] == 2
    assert clusters["charlie"] == clusters["delta"] == 3
    assert {r["system"]: r["cluster"] for r in raw(document, "systems")} == clusters


def test_it_fits_the_mixed_model(document):
    rows = raw(document, "mixed_model")
    fixed = {r["name"]: r for r in rows if r["kind"] == "fixed"}
    variance = {r["name"]: r for r in rows if r["kind"] == "variance"}
    assert fixed["alpha"]["estimate"] > fixed["bravo"]["estimate"] > fixed["charlie"]["estimate"]
    assert set(variance) == {"source", "annotator", "residual"}
    assert sum(r["share"] for r in variance.values()) == pytest.approx(1.0)
    assert all(r["converged"] for r in rows)


def test_it_meta_evaluates_item_and_imported_metrics(document):
    rows = raw(document, "metric_meta_evaluation")
    chrf = {(r["level"], r["grouping"], r["statistic"]): r for r in rows
            if r["metric"] == "chrf" and r["statistic"] != "williams"}
    assert chrf[("system", None, "pearson")]["value"] > 0.8
    assert chrf[("system", None, "soft_pairwise_accuracy")]["value"] is not None
    assert chrf[("item", "none", "kendall")]["n"] == N_SOURCES * len(SYSTEMS)
    assert chrf[("item", "item", "pearson")]["n"] == N_SOURCES
    assert chrf[("item", "system", "spearman")]["n"] == len(SYSTEMS)
    bleu = {r["statistic"]: r for r in rows if r["metric"] == "bleu" and r["level"] == "system"
            and r["statistic"] != "williams"}
    assert bleu["pairwise_accuracy"]["value"] == pytest.approx(5 / 6)  # charlie < delta only
    assert bleu["soft_pairwise_accuracy"]["value"] is None and bleu["soft_pairwise_accuracy"][
        "reason"].startswith("system-level scores only")
    williams = [r for r in rows if r["statistic"] == "williams"]
    assert {(r["metric"], r["other_metric"]) for r in williams} == {("chrf", "bleu"),
                                                                    ("bleu", "chrf")}


def test_a_question_view_keeps_the_systems_sections(document):
    assert question_view(document, "quality")["systems"] == document["systems"]


def test_a_study_without_systems_is_unchanged():
    with_systems = build_results(planted(), settings=SETTINGS, study={"slug": "s", "title": "S"})
    without = build_results(planted(with_systems=False), settings=SETTINGS,
                            study={"slug": "s", "title": "S"})
    for section in SYSTEM_SECTIONS:
        assert without[section] == []
        assert with_systems[section]
    rest = [k for k in without if k not in SYSTEM_SECTIONS]
    assert {k: without[k] for k in rest} == {k: with_systems[k] for k in rest}
