"""The comparison sections of the results document (pure, no database): a planted study's true
order is recovered for each kind; reversing every judgment reverses the order; renaming the
outputs renames the results; a ranking's ties and a study of comparative questions only; the
document stays schema-valid."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from core.comparative import shown_order
from core.results import (
    COMPARISON_SECTIONS,
    build_results,
    comparison_records,
    judgments_from_choices,
)
from core.results.comparisons import FIT_LIMIT, MATRIX_LIMIT, Judgments
from core.settings import AnalysisSettings
from tests.unit.test_results_systems import planted

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
SYSTEMS = ("s1", "s2", "s3", "s4", "s5")
TRUTH = dict(zip(SYSTEMS, np.linspace(1.5, -1.5, 5), strict=True))
FAST = AnalysisSettings.from_mapping({"comparisons_bootstrap": 100, "comparisons_splits": 20})
SOURCES, ANNOTATORS = 6, 6


def outputs(names=lambda o: o) -> tuple[list[str], list[str]]:
    outs = [f"d{s}-{system}" for s in range(SOURCES) for system in SYSTEMS]
    return [names(o) for o in outs], [o.split("-")[1] for o in outs]


def planted_rows(kind: str, *, seed: int = 0, reverse: bool = False,
                 names=lambda o: o, ties: bool = False) -> list[tuple]:
    rng = np.random.default_rng(seed)
    sign = -1 if reverse else 1
    rows = []
    for a in range(ANNOTATORS):
        for s in range(SOURCES):
            outs = [f"d{s}-{system}" for system in SYSTEMS]
            groups = ([list(p) for p in combinations(outs, 2)] if kind == "pairwise"
                      else [outs] if kind == "ranking" else [outs[:4], outs[1:], outs[::2]])
            for n, group in enumerate(groups):
                noisy = {o: sign * TRUTH[o.split("-")[1]] + rng.gumbel() for o in group}
                ranked = sorted(group, key=lambda o: -noisy[o])
                shown = shown_order(group, f"{a}:{s}:{n}")
                if kind == "pairwise":
                    choice = {"shown": shown, "pick": ranked[0]}
                elif kind == "ranking":
                    order = [[o] for o in ranked]
                    if ties:  # the middle two tied
                        order = [order[0], order[1], order[2] + order[3], order[4]]
                    choice = {"shown": shown, "order": order}
                else:
                    choice = {"shown": shown, "best": ranked[0], "worst": ranked[-1]}
                rename = {o: names(o) for o in group}
                choice = {k: ([[rename[x] for x in g] for g in v] if k == "order"
                              else [rename[x] for x in v] if isinstance(v, list)
                              else rename[v]) for k, v in choice.items()}
                rows.append((f"A{a + 1}", f"c{s}-{n}", float(group.index(ranked[0])), choice))
    return rows


def judged(kind: str, **kw) -> Judgments:
    names = kw.get("names", lambda o: o)
    outs, systems = outputs(names)
    rng = np.random.default_rng(5)
    metric = [TRUTH[s] + rng.normal(0, 0.3) for s in systems]
    return judgments_from_choices("pref", kind, outputs=outs, systems=systems,
                                  metrics={"tracking": metric}, rows=planted_rows(kind, **kw))


def records(j: Judgments, settings=FAST, ratings=None) -> dict:
    doc: dict = {}
    comparison_records(doc, [j], settings, ratings)
    return doc


def order(doc: dict, level: str = "system") -> list[str]:
    return [r["name"] for r in doc["comparison_scores"] if r["level"] == level]


@pytest.mark.parametrize("kind", ["pairwise", "ranking", "bws"])
def test_the_planted_order_is_recovered(kind):
    doc = records(judged(kind))
    assert order(doc) == list(SYSTEMS)
    systems = [r for r in doc["comparison_scores"] if r["level"] == "system"]
    assert [r["rank"] for r in systems] == [1, 2, 3, 4, 5]
    for r in systems:
        assert r["strength_low"] <= r["strength"] <= r["strength_high"]
        assert r["rank_low"] <= r["rank"] <= r["rank_high"]
    assert abs(sum(r["strength"] for r in systems)) < 1e-9  # centred
    reliability = {r["level"]: r for r in doc["comparison_reliability"]}
    assert reliability["system"]["split_half"] > 0.8 and reliability["system"]["splits"] == 20
    assert reliability["output"]["comparisons"] == len({row[1] for row in planted_rows(kind)})
    assert 0 <= reliability["output"]["agreement"] <= 1
    correlation = next(r for r in doc["comparison_correlations"]
                       if r["level"] == "system" and r["measure"] == "tracking")
    assert correlation["spearman"] > 0.8 and correlation["n"] == 5


@pytest.mark.parametrize("kind", ["pairwise", "ranking", "bws"])
def test_reversing_every_judgment_reverses_the_order(kind):
    forward = records(judged(kind, seed=1))
    backward = records(judged(kind, seed=1, reverse=True))
    assert order(backward) == order(forward)[::-1]


@pytest.mark.parametrize("kind", ["pairwise", "ranking", "bws"])
def test_renaming_the_outputs_renames_the_results(kind):
    plain = records(judged(kind, seed=2))
    renamed = records(judged(kind, seed=2, names=lambda o: "x-" + o))
    for a, b in zip(plain["comparison_scores"], renamed["comparison_scores"], strict=True):
        if a["level"] == "output":
            assert b["name"] == "x-" + a["name"]
        assert {k: v for k, v in a.items() if k != "name"} == \
            {k: v for k, v in b.items() if k != "name"}
    assert plain["comparison_reliability"] == renamed["comparison_reliability"]


def test_pairwise_counts_and_the_win_probabilities():
    doc = records(judged("pairwise"))
    out = [r for r in doc["comparison_scores"] if r["level"] == "output"]
    assert len(out) == SOURCES * 5
    for r in out:  # every output meets the 4 others of its source once per annotator
        assert r["judgments"] == 4 * ANNOTATORS == r["wins"] + r["losses"]
        assert r["score"] == pytest.approx(r["wins"] / r["judgments"])
        # outputs of different sources never meet: counts, and no strength
        assert r["strength"] is None and r["reason"] == "groups_never_compared"
    p = {(r["a"], r["b"]): r["probability"] for r in doc["comparison_win_probabilities"]}
    assert len(p) == 20 and all(r["level"] == "system"
                                for r in doc["comparison_win_probabilities"])
    assert p["s1", "s5"] > 0.9 and p["s1", "s5"] + p["s5", "s1"] == pytest.approx(1)


def test_a_pairwise_tie_is_fitted_by_davidson():
    j = judged("pairwise")
    rows = planted_rows("pairwise")
    for n in range(0, len(rows), 7):
        person, comparison, _, choice = rows[n]
        rows[n] = (person, comparison, 0.5, {**choice, "pick": "tie"})
    outs, systems = outputs()
    j = judgments_from_choices("pref", "pairwise", outputs=outs, systems=systems, rows=rows)
    doc = records(j)
    systems_rows = [r for r in doc["comparison_scores"] if r["level"] == "system"]
    assert {r["model"] for r in systems_rows} == {"davidson"}
    assert sum(r["ties"] for r in systems_rows) == 2 * len(range(0, len(rows), 7))
    p = {(r["a"], r["b"]): r["probability"] for r in doc["comparison_win_probabilities"]}
    assert p["s1", "s2"] + p["s2", "s1"] < 1  # the rest is a tie
    # a tie is not a decided judgment for the position bias
    assert all(r["left_share"] is not None for r in doc["comparison_consistency"])


def test_a_rankings_ties_count_as_ties_and_still_give_the_order():
    doc = records(judged("ranking", ties=True))
    assert order(doc) == list(SYSTEMS)
    assert sum(r["ties"] for r in doc["comparison_scores"] if r["level"] == "output") \
        == 2 * ANNOTATORS * SOURCES


def test_best_worst_counts_are_the_counting_score():
    doc = records(judged("bws"))
    for r in doc["comparison_scores"]:
        assert r["ties"] == 0
        assert r["score"] == pytest.approx((r["wins"] - r["losses"]) / r["judgments"])


def test_consistency_flags_a_random_annotator_and_spares_the_careful():
    rows = planted_rows("pairwise")
    rng = np.random.default_rng(9)
    careful = []
    for s in range(SOURCES):  # A7 always follows the truth: no circular triad
        for n, (x, y) in enumerate(combinations([f"d{s}-{system}" for system in SYSTEMS], 2)):
            shown = [x, y] if n % 2 else [y, x]
            careful.append(("A7", f"c{s}-{n}", 0.0, {"shown": shown, "pick": x}))
    for s in range(SOURCES):  # A8 always picks the left one: a position bias
        for n, (x, y) in enumerate(combinations([f"d{s}-{system}" for system in SYSTEMS], 2)):
            shown = [x, y] if rng.random() < 0.5 else [y, x]
            careful.append(("A8", f"c{s}-{n}", float([x, y].index(shown[0])),
                            {"shown": shown, "pick": shown[0]}))
    outs, systems = outputs()
    doc = records(judgments_from_choices("pref", "pairwise", outputs=outs, systems=systems,
                                         rows=rows + careful))
    people = {r["annotator"]: r for r in doc["comparison_consistency"]}
    assert people["A7"]["circular_triads"] == 0 and not people["A7"]["flagged"]
    assert people["A7"]["triads_expected"] == SOURCES * 10 / 4  # 10 triangles per source
    assert people["A8"]["left_share"] == 1.0 and people["A8"]["flagged"]
    assert people["A8"]["position_p_adjusted"] < 0.05
    assert all(0 <= r["competence"] <= 1 for r in people.values())


def test_too_many_outputs_keep_their_counts_without_a_fit():
    n = FIT_LIMIT + 1
    outs = [f"o{i}" for i in range(n)]
    rng = np.random.default_rng(0)
    rows = []
    for k in range(3 * n):
        a, b = rng.choice(n, 2, replace=False)
        rows.append((f"A{k % 3 + 1}", f"c{k}", 0.0,
                     {"shown": [outs[a], outs[b]], "pick": outs[min(a, b)]}))
    doc = records(judgments_from_choices("pref", "pairwise", outputs=outs, rows=rows))
    scores = doc["comparison_scores"]
    assert scores and all(r["strength"] is None and r["reason"] == "too_many_to_fit"
                          for r in scores)
    assert doc["comparison_win_probabilities"] == [] and MATRIX_LIMIT < n


def test_a_document_with_scales_and_comparisons_is_schema_valid():
    doc = build_results(planted(), settings={"bootstrap_samples": 20, "systems_bootstrap": 50,
                                             "comparisons_bootstrap": 50},
                        study={"slug": "s", "title": "S"}, comparisons=[judged("bws")])
    jsonschema.validate(doc, SCHEMA)
    assert all(doc[s] for s in COMPARISON_SECTIONS)
    assert doc["comparison_questions"][0]["kind"] == "bws"
    assert doc["alpha"] and doc["questions"][0]["key"] == "quality"


def test_a_document_of_comparative_questions_only_is_schema_valid():
    doc = build_results([], settings={"comparisons_bootstrap": 50},
                        study={"slug": "s", "title": "S"},
                        comparisons=[judged("ranking"), judged("pairwise")])
    jsonschema.validate(doc, SCHEMA)
    assert doc["questions"] == [] and doc["alpha"] == [] and doc["items"] == []
    assert [q["kind"] for q in doc["comparison_questions"]] == ["ranking", "pairwise"]
    assert doc["annotators"] == [f"A{n}" for n in range(1, ANNOTATORS + 1)]


def test_a_document_without_comparative_questions_has_empty_sections():
    doc = build_results(planted(), settings={"bootstrap_samples": 20, "systems_bootstrap": 50},
                        study={"slug": "s", "title": "S"})
    assert all(doc[s] == [] for s in (*COMPARISON_SECTIONS, "comparison_questions"))


def test_the_sections_are_seeded():
    first, again = records(judged("bws")), records(judged("bws"))
    assert first == again
    other = records(judged("bws"), AnalysisSettings.from_mapping(
        {"comparisons_bootstrap": 100, "comparisons_splits": 20, "seed": 7}))
    assert other["comparison_scores"] != first["comparison_scores"]


def test_a_missing_or_unknown_judgment_is_counted_as_missing():
    rows = planted_rows("pairwise")[:10] + [("A1", "c0-0", None, None),
                                           ("A1", "c0-1", 0.0, {"shown": ["zz", "d0-s1"],
                                                                "pick": "zz"})]
    outs, systems = outputs()
    j = judgments_from_choices("pref", "pairwise", outputs=outs, systems=systems, rows=rows)
    assert j.n == 10 and j.missing == 2


def test_outputs_that_all_meet_are_fitted_with_their_matrix():
    """One source, no systems (an arena): the outputs themselves get strengths, intervals and
    the win-probability matrix."""
    rows = [r for r in planted_rows("pairwise") if r[1].startswith("c0-")]
    outs = [f"d0-{system}" for system in SYSTEMS]
    doc = records(judgments_from_choices("pref", "pairwise", outputs=outs, rows=rows))
    assert order(doc, "output") == outs
    assert all(r["strength"] is not None and r["reason"] == "" for r in doc["comparison_scores"])
    assert {r["level"] for r in doc["comparison_win_probabilities"]} == {"output"}
    assert len(doc["comparison_win_probabilities"]) == 20
    assert {r["level"] for r in doc["comparison_reliability"]} == {"output"}


def test_an_excluded_annotator_leaves_a_comparative_only_document():
    doc = build_results([], settings={"comparisons_bootstrap": 20, "excluded_annotators": ["A2"]},
                        study={"slug": "s", "title": "S"}, comparisons=[judged("bws")])
    assert "A2" not in doc["annotators"] and doc["counts"]["excluded_annotators"] == 1
    assert "A2" not in {r["annotator"] for r in doc["comparison_consistency"]}
