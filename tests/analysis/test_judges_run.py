"""The people's results are the same with and without LLM judges (issue 27, point 4), on the
systems demo: the whole document but its judges sections is byte for byte the document of the
same answers without judges; the view with judges differs and says so; and the demo's planted
judges come out as planted (the careful one passes where the other does not, the other prefers
the output shown first). The judges' answers are the demo's files read into `JudgeAnswers` in
memory (the build hook's input; the judges app stores and loads them the same way)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from analysis.selectors import study_judgments, study_questions
from core.comparative import judgment_clean
from core.judges import JudgeAnswers, JudgeInfo
from core.results import build_results
from demo.services import (
    DEMO_JUDGES,
    PAIRWISE_KEY,
    PAIRWISE_OPTIONS,
    demo_judge_files,
    demo_systems_study,
)

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_samples": 50, "comparisons_bootstrap": 50, "comparisons_splits": 10,
        "systems_bootstrap": 50, "systems_permutations": 200}
JUDGE_SECTIONS = ("judges", "judges_info", "judge_annotators")


def judge_answers(study) -> list[JudgeAnswers]:
    """The demo judges' files, read as the judges' import reads them (one `JudgeAnswers` per
    judge, run and question)."""
    items = {i.external_id: i for i in study.items.all()}
    by_outputs = {frozenset(i.outputs): i for i in items.values() if i.outputs}
    files = _files(study)
    out: list[JudgeAnswers] = []
    for judge in DEMO_JUDGES:
        rows = list(csv.DictReader(io.StringIO(files[judge["name"]].decode())))
        groups: dict[tuple[str, str], list[dict[str, str]]] = {}
        for r in rows:
            groups.setdefault((r["run"], r["question"]), []).append(r)
        for (run, question), mine in groups.items():
            if question == PAIRWISE_KEY:
                ids, values, choices = [], [], []
                for r in mine:
                    shown = r["items"].split("|")
                    comparison = by_outputs[frozenset(shown)]
                    value, choice = judgment_clean("pairwise", PAIRWISE_OPTIONS,
                                                   comparison.outputs,
                                                   {"shown": shown, "pick": r["choice"]})
                    ids.append(comparison.external_id)
                    values.append(value)
                    choices.append(choice)
                out.append(JudgeAnswers(judge=judge["name"], run=run, question=question,
                                        item_ids=tuple(ids), value=np.array(values),
                                        choices=tuple(choices)))
            else:
                out.append(JudgeAnswers(judge=judge["name"], run=run, question=question,
                                        item_ids=tuple(r["item"] for r in mine),
                                        value=np.array([float(r["value"]) for r in mine])))
    return out


def _files(study) -> dict[str, bytes]:
    # The demo's own call, on the planted quality it stored (demo_systems_study's `truth`).
    from demo.services import SYSTEM_QUALITY, SYSTEM_SOURCES, _system_items

    rng = np.random.default_rng(25)
    _, truth = _system_items(rng)
    assert len(truth) == SYSTEM_SOURCES * len(SYSTEM_QUALITY)
    comparisons = sorted((i for i in study.items.all() if i.outputs), key=lambda i: i.position)
    return demo_judge_files(quality={e: q for e, (_, _, q) in truth.items()},
                            systems={e: s for e, (s, _, _) in truth.items()},
                            comparisons=[(c.external_id, list(c.outputs)) for c in comparisons])


@pytest.fixture
def demo(alice):
    study = demo_systems_study(owner=alice).study
    return study, study_questions(study=study), study_judgments(study=study), judge_answers(study)


def people(doc: dict) -> str:
    return json.dumps({k: v for k, v in doc.items() if k not in JUDGE_SECTIONS}, sort_keys=True)


def test_the_peoples_statistics_are_bit_identical_with_and_without_judges(demo):
    study, data, judgments, answers = demo
    meta = {"slug": study.slug, "title": study.title}
    judges = [JudgeInfo(**j) for j in DEMO_JUDGES]
    alone = build_results(data, settings=FAST, study=meta, comparisons=judgments)
    judged = build_results(data, settings=FAST, study=meta, comparisons=judgments,
                           judges=judges, judge_answers=answers)
    assert people(judged) == people(alone)
    assert alone["judges"] == [] and judged["judge_annotators"] == []
    records = {(r["judge"], r["question"], r["scale"]): r for r in judged["judges"]}
    assert {("careful-judge", "adequacy", "raw"), ("first-shown-judge", "preference", "choice")} \
        <= set(records)
    assert [j["name"] for j in judged["judges_info"]] == ["careful-judge", "first-shown-judge"]
    # as planted: the careful judge follows the people; the other prefers the first shown
    careful = records[("careful-judge", "adequacy", "raw")]
    noisy = records[("first-shown-judge", "adequacy", "raw")]
    assert careful["correlations"]["spearman"]["value"] > noisy["correlations"]["spearman"]["value"]
    assert careful["alt_test"]["winning_rate"] >= noisy["alt_test"]["winning_rate"]
    first = records[("first-shown-judge", "preference", "choice")]["position_bias"]
    careful_first = records[("careful-judge", "preference", "choice")]["position_bias"]
    assert first["first_share"] > 0.75 > careful_first["first_share"]


def test_the_view_with_judges_moves_the_peoples_numbers_and_says_so(demo):
    study, data, judgments, answers = demo
    meta = {"slug": study.slug, "title": study.title}
    judges = [JudgeInfo(**j) for j in DEMO_JUDGES]
    alone = build_results(data, settings=FAST, study=meta, comparisons=judgments)
    viewed = build_results(data, settings={**FAST, "judges_as_annotators": True}, study=meta,
                           comparisons=judgments, judges=judges, judge_answers=answers)
    assert viewed["judge_annotators"] == ["judge: careful-judge", "judge: first-shown-judge"]
    assert viewed["annotators"][-2:] == viewed["judge_annotators"]
    assert viewed["settings"]["judges_as_annotators"] is True
    assert [r["value"] for r in viewed["alpha"]] != [r["value"] for r in alone["alpha"]]
    consistency = {r["annotator"] for r in viewed["comparison_consistency"]}
    assert "judge: first-shown-judge" in consistency
    # the judges section is the people's still: the judges are never their own humans
    assert all(a["annotator"].startswith("A") for r in viewed["judges"]
               for a in (r["alt_test"] or {}).get("per_annotator", []))
