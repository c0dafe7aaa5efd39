"""The judges section of a results document (core.results.judges): its shape, its bounds, its
JSON-safety and its reasons."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from core.data import QuestionData, item_columns, question_data_from_answers
from core.judges import JudgeAnswers, JudgeInfo
from core.results.build import _clean
from core.results.comparisons import judgments_from_choices
from core.results.judges import (
    JUDGE_ANNOTATORS_SHOWN,
    JUDGE_PLOT_POINTS,
    judge_settings,
    judges_records,
)
from core.settings import AnalysisSettings

DOMAIN = (1.0, 2.0, 3.0, 4.0, 5.0)


def scale_study(n_items: int = 60, n_annotators: int = 4, seed: int = 0, *,
                systems: bool = False, names: list[str] | None = None
                ) -> tuple[QuestionData, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    ids = [f"i{n}" for n in range(n_items)]
    truth = rng.integers(1, 6, n_items)
    items = item_columns(ids, [False] * n_items, [{}] * n_items, [{}] * n_items,
                         [{}] * n_items,
                         systems=[f"s{n % 3}" for n in range(n_items)] if systems else None,
                         sources=[f"d{n // 3}" for n in range(n_items)] if systems else None)
    participant = np.repeat(np.arange(n_annotators), n_items)
    item = np.tile(np.arange(n_items), n_annotators)
    value = np.clip(truth[item] + rng.integers(-1, 2, item.size), 1, 5).astype(float)
    data = question_data_from_answers(
        items, participant=participant, item=item, presentation=np.ones(item.size, np.int64),
        active_ms=np.zeros(item.size), values={"q": value},
        names=None if names is None else dict(enumerate(names)))["q"]
    return QuestionData("q", data, DOMAIN, reductions={"two": {"1": 0, "2": 0, "3": 0,
                                                               "4": 1, "5": 1}}), \
        truth.astype(float), ids


def build(questions: list[QuestionData], answers: list[JudgeAnswers], judges=(), judgments=(),
          settings: Any = None) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    judges_records(doc, questions, list(judgments), list(judges), answers,
                   settings or AnalysisSettings())
    return doc


def test_it_has_empty_lists_without_judges():
    q, _, _ = scale_study()
    doc = build([q], [])
    assert doc == {"judges": [], "judges_info": []}


def test_it_builds_one_record_per_judge_question_and_scale():
    q, truth, ids = scale_study()
    answers = [JudgeAnswers("good", "1", "q", tuple(ids), truth),
               JudgeAnswers("good", "2", "q", tuple(ids), truth),
               JudgeAnswers("other", "1", "q", tuple(ids), np.full(len(ids), 3.0))]
    doc = build([q], answers, judges=[JudgeInfo("good", model="m", temperature=0.5)])
    assert [(r["judge"], r["scale"]) for r in doc["judges"]] == [
        ("good", "raw"), ("other", "raw"), ("good", "two"), ("other", "two")]
    good = doc["judges"][0]
    assert good["kind"] == "scale" and good["level"] == "ordinal" and good["runs"] == 2
    assert good["items"] == 60
    assert set(good["correlations"]) >= {"pearson", "spearman", "kendall", "items"}
    assert good["alt_test"]["epsilon"] == 0.2 and good["alt_test"]["q"] == 0.05
    assert good["alt_test"]["metric"] == "negative_distance"
    assert good["alt_test"]["passed"] is True and good["alt_test"]["reason"] == ""
    assert good["self_consistency"]["alpha"] == 1.0 and good["self_consistency"]["runs"] == 2
    assert good["position_bias"] is None and good["systems"] is None
    assert len(good["alpha"]["per_annotator"]) == 4
    # A constant judge: no correlation, with the reason; α with it undefined or low.
    other = doc["judges"][1]
    assert other["correlations"]["pearson"]["value"] is None
    assert "same answer" in other["correlations"]["reason"]
    assert doc["judges_info"] == [
        {"name": "good", "model": "m", "prompt": "", "version": "", "date": "",
         "temperature": 0.5, "notes": "", "runs": ["1", "2"]},
        {"name": "other", "model": "", "prompt": "", "version": "", "date": "",
         "temperature": None, "notes": "", "runs": ["1"]}]
    assert _clean(doc) == doc
    json.dumps(doc, allow_nan=False)


def test_a_judge_of_some_items_counts_only_those():
    q, truth, ids = scale_study()
    answers = [JudgeAnswers("half", "1", "q", tuple(ids[:20]) + ("unknown",),
                            np.append(truth[:20], 4.0))]
    rec = build([q], answers)["judges"][0]
    assert rec["items"] == 20 and rec["correlations"]["items"] == 20
    assert len(rec["plot"]) == 20
    assert rec["alt_test"]["passed"] is None and "fewer than 30" in \
        rec["alt_test"]["per_annotator"][0]["reason"]


def test_a_question_nobody_answered_gives_reasons_not_errors():
    q, truth, ids = scale_study()
    empty = QuestionData("q", q.data.__class__(**{**q.data.__dict__,
                                                   "value": np.full(q.data.value.size, np.nan)}),
                         DOMAIN)
    rec = build([empty], [JudgeAnswers("j", "1", "q", tuple(ids), truth)])["judges"][0]
    assert rec["items"] == 0 and rec["alpha"] is None
    assert "no item answered" in rec["alt_test"]["reason"]
    assert "fewer than 3" in rec["correlations"]["reason"]
    json.dumps(_clean(rec), allow_nan=False)


def test_two_annotators_do_not_meet_the_tests_requirements():
    q, truth, ids = scale_study(n_annotators=2)
    rec = build([q], [JudgeAnswers("j", "1", "q", tuple(ids), truth)])["judges"][0]
    assert rec["alt_test"]["passed"] is None
    assert "at least 3 annotators" in rec["alt_test"]["reason"]


def test_it_bounds_the_lists():
    q, truth, ids = scale_study(n_items=500, n_annotators=60)
    rec = build([q], [JudgeAnswers("j", "1", "q", tuple(ids), truth)])["judges"][0]
    assert len(rec["alpha"]["per_annotator"]) == JUDGE_ANNOTATORS_SHOWN
    assert len(rec["alt_test"]["per_annotator"]) == JUDGE_ANNOTATORS_SHOWN
    assert rec["alt_test"]["annotators"] == 60
    assert len(rec["plot"]) == JUDGE_PLOT_POINTS


def test_judges_and_excluded_annotators_stay_off_the_human_side():
    names = ["A1", "A2", "A3", "judge: copycat"]
    q, truth, ids = scale_study(names=names)
    s = AnalysisSettings.from_mapping({"excluded_annotators": ["A2"]})
    rec = build([q], [JudgeAnswers("j", "1", "q", tuple(ids), truth)], settings=s)["judges"][0]
    shown = {row["annotator"] for row in rec["alpha"]["per_annotator"]}
    assert shown == {"A1", "A3"}
    assert rec["alt_test"]["passed"] is None  # two people left


def test_it_ranks_systems_as_the_people_do():
    q, truth, ids = scale_study(n_items=90, systems=True)
    system = np.arange(90) % 3
    judge = truth + system * 0.0
    rec = build([q], [JudgeAnswers("j", "1", "q", tuple(ids), judge)])["judges"][0]
    sy = rec["systems"]
    assert sy["systems"] == 3 and [s["system"] for s in sy["scores"]] == ["s0", "s1", "s2"]
    assert set(sy["kendall_tau"]) == {"value", "low", "high"}
    assert 0.0 <= sy["pairwise_accuracy"] <= 1.0


def test_it_reads_epsilon_and_q_from_the_settings_when_they_carry_them():
    assert judge_settings(AnalysisSettings()) == (0.2, 0.05)
    assert judge_settings(SimpleNamespace(judge_epsilon=0.1, judge_q=0.01)) == (0.1, 0.01)


def pairwise_study() -> tuple[Any, list[str]]:
    outputs = ["a", "b", "c", "d"]
    pairs = [("a", "b"), ("c", "d"), ("a", "c"), ("b", "d")]
    comparisons = [f"c{n}" for n in range(len(pairs))]
    rows = []
    for person in ("A1", "A2", "A3"):
        for cid, (x, y) in zip(comparisons, pairs, strict=True):
            better = min(x, y)  # "a" beats "b" …: the alphabet is quality
            shown = [x, y] if person != "A3" else [y, x]
            rows.append((person, cid, float(outputs.index(better) != outputs.index(x)),
                         {"shown": shown, "pick": better}))
    return judgments_from_choices("pref", "pairwise", outputs=outputs, rows=rows), comparisons


def test_it_judges_a_comparative_question():
    j, comparisons = pairwise_study()
    pairs = [("a", "b"), ("c", "d"), ("a", "c"), ("b", "d")]
    # A judge that always picks the first shown: shown in both orders over two runs.
    answers = []
    for run, flip in (("1", False), ("2", True)):
        choices = []
        values = []
        for x, y in pairs:
            shown = [y, x] if flip else [x, y]
            choices.append({"shown": shown, "pick": shown[0], "strength": ""})
            values.append(0.0 if shown[0] == x else 1.0)
        answers.append(JudgeAnswers("first", run, "pref", tuple(comparisons),
                                    np.array(values), choices=tuple(choices)))
    doc = build([], answers, judgments=[j])
    rec = doc["judges"][0]
    assert rec["kind"] == "pairwise" and rec["scale"] == "choice" and rec["level"] == "nominal"
    assert rec["items"] == 4 and rec["runs"] == 2
    assert rec["correlations"] is None
    assert rec["majority_match"]["comparisons"] == 4 and rec["majority_match"]["value"] == 1.0
    bias = rec["position_bias"]
    assert bias["first_share"] == 1.0 and bias["judgments"] == 8
    assert bias["humans_first_share"] == pytest.approx(8 / 12)
    assert rec["order_consistency"] == {"share": 0.0, "pairs": 4}
    assert rec["self_consistency"]["runs"] == 2
    assert rec["alt_test"]["metric"] == "accuracy"
    json.dumps(_clean(doc), allow_nan=False)
