"""The results builder with LLM judges (pure, no database): judges enter no section about the
people unless the view with judges is asked for, and then as annotators named "judge: <name>"
(core/results/with_judges.py; docs/results.md, "Judges")."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from core.judges import JudgeAnswers, JudgeInfo
from core.results import build_results, trust_inputs
from core.results.comparisons import judgments_from_choices
from core.results.with_judges import (
    first_runs,
    judgments_with_judges,
    questions_with_judges,
)
from tests.unit.test_results_questions import N_ITEMS, questions

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
FAST = {"bootstrap_samples": 20, "comparisons_bootstrap": 20, "comparisons_splits": 5}
STUDY = {"slug": "s", "title": "S"}
JUDGES = [JudgeInfo(name="good", model="m1"), JudgeInfo(name="noisy", temperature=0.7)]
WITHOUT_JUDGES = ("judges", "judges_info", "judge_annotators")


def judge_runs() -> list[JudgeAnswers]:
    """Two judges on both questions; "good" has two runs, its second far from its first."""
    ids = tuple(f"s{n}" for n in range(N_ITEMS))
    rng = np.random.default_rng(5)
    out = []
    for name, runs in (("good", ("1", "2")), ("noisy", ("a",))):
        for run in runs:
            for key in ("coherence", "relevance"):
                value = rng.integers(1, 6, size=N_ITEMS).astype(float)
                if run == "2":
                    value = np.full(N_ITEMS, 5.0)
                value[2] = np.nan  # an item the judge left blank
                out.append(JudgeAnswers(judge=name, run=run, question=key,
                                        item_ids=ids + ("not-an-item",),
                                        value=np.append(value, 3.0)))
    return out


def people_part(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in WITHOUT_JUDGES}


@pytest.fixture(scope="module")
def plain() -> dict:
    return build_results(questions(), settings=FAST, study=STUDY)


def test_it_leaves_every_section_about_the_people_bit_identical_with_judges_imported(plain):
    with_judges = build_results(questions(), settings=FAST, study=STUDY, judges=JUDGES,
                                judge_answers=judge_runs())
    assert json.dumps(people_part(with_judges), sort_keys=True) == \
        json.dumps(people_part(plain), sort_keys=True)
    assert plain["judges"] == [] and plain["judges_info"] == [] and plain["judge_annotators"] == []
    assert [j["name"] for j in with_judges["judges_info"]] == ["good", "noisy"]
    assert with_judges["judge_annotators"] == []
    jsonschema.validate(with_judges, SCHEMA)


def test_it_adds_each_judges_first_run_as_an_annotator_in_the_view_with_judges(plain):
    doc = build_results(questions(), settings={**FAST, "judges_as_annotators": True},
                        study=STUDY, judges=JUDGES, judge_answers=judge_runs())
    assert doc["judge_annotators"] == ["judge: good", "judge: noisy"]
    assert doc["annotators"] == plain["annotators"] + ["judge: good", "judge: noisy"]
    assert doc["settings"]["judges_as_annotators"] is True
    # the people's numbers move: α now pairs the judges with the annotators
    alpha = {(r["question"], r["scale"], r["level"], r["items"], tuple(r.get("without") or ())):
             r["value"] for r in plain["alpha"]}
    moved = [r for r in doc["alpha"] if alpha.get((r["question"], r["scale"], r["level"],
                                                   r["items"], tuple(r.get("without") or ())))
             != r["value"]]
    assert moved
    # 7 answered items per judge and question (item 2 blank, the unknown item dropped)
    assert doc["counts"]["answers"] == plain["counts"]["answers"] + 2 * (N_ITEMS - 1)
    jsonschema.validate(doc, SCHEMA)


def test_it_adds_nothing_when_the_view_is_asked_for_without_judges(plain):
    doc = build_results(questions(), settings={**FAST, "judges_as_annotators": True},
                        study=STUDY)
    assert people_part(doc) | {"settings": plain["settings"]} == people_part(plain)


def test_trust_inputs_see_the_judges_the_document_sees():
    plain = trust_inputs(questions(), settings=FAST, judges=JUDGES, judge_answers=judge_runs())
    viewed = trust_inputs(questions(), settings={**FAST, "judges_as_annotators": True},
                          judges=JUDGES, judge_answers=judge_runs())
    assert {i.k for i in viewed} == {i.k + 2 for i in plain}


def test_the_first_run_is_the_first_label_met_per_judge():
    runs = judge_runs()
    assert {(a.judge, a.run) for a in first_runs(runs, JUDGES)} == {("good", "1"), ("noisy", "a")}


def test_a_judges_rows_are_shared_by_the_questions_and_blank_where_it_did_not_answer():
    qs = questions()
    only_coherence = [a for a in judge_runs() if a.question == "coherence" and a.run != "2"]
    out, added = questions_with_judges(qs, JUDGES, only_coherence)
    assert added == ["judge: good", "judge: noisy"]
    coherence, relevance = out[0].data, out[1].data
    assert np.array_equal(coherence.item, relevance.item)
    new = coherence.annotator >= qs[0].data.n_annotators
    assert new.sum() == 2 * (N_ITEMS - 1)
    assert np.isnan(relevance.value[new]).all() and not np.isnan(coherence.value[new]).any()
    assert np.isnan(coherence.duration_ms[new]).all()
    assert not coherence.cant_judge[new].any()


def test_a_judge_joins_a_comparative_question_with_its_choices():
    rows = [("A1", "c1", 0.0, {"shown": ["x", "y"], "pick": "x"}),
            ("A2", "c1", 1.0, {"shown": ["y", "x"], "pick": "y"})]
    people = judgments_from_choices("pref", "pairwise", outputs=["x", "y", "z"], rows=rows)
    answers = [JudgeAnswers(judge="good", run="1", question="pref", item_ids=("c1", "c2", "c3"),
                            value=np.array([0.0, 1.0, np.nan]),
                            choices=({"shown": ["y", "x"], "pick": "x"},
                                     {"shown": ["x", "z"], "pick": "z"},
                                     {"shown": ["x", "q"], "pick": "q"}))]
    (out,), added = judgments_with_judges([people], JUDGES, answers)
    assert added == ["judge: good"]
    assert out.annotators == ("A1", "A2", "judge: good")
    assert out.comparisons == ("c1", "c2")  # c3 names an output the study does not have
    assert out.annotator.tolist() == [0, 1, 2, 2]
    assert out.shown[2].tolist() == [1, 0] and out.level[2].tolist() == [1, 0]
    assert out.value[2:].tolist() == [0.0, 1.0]
