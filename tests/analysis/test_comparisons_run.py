"""Comparative questions analysed by a run (issue 25, point 3): a study with a scale question and
a pairwise one, a ranking-only study and a best–worst-only study, built with the ORM as the
contract stores them, analysed end to end; their documents valid, the planted order of the
systems recovered, the scale sections blind to comparisons; and the results API's comparisons
sections."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.selectors import study_judgments, study_questions
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Answer, Response
from core.results import COMPARISON_SECTIONS
from studies.models import Item, Membership
from tests.analysis.comparisons_study import (
    SYSTEMS,
    TRUTH,
    add_outputs,
    answer_all,
    comparative_question,
    comparisons,
)

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/results.schema.json").read_text())
FAST = {"comparisons_bootstrap": 200, "comparisons_splits": 30, "bootstrap_samples": 20}


def run_of(study) -> AnalysisRun:
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False,
                                                          overrides=FAST).pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    jsonschema.validate(run.results, SCHEMA)
    return run


def system_order(document: dict, question: str = "pref") -> list[str]:
    return [r["name"] for r in document["comparison_scores"]
            if r["question"] == question and r["level"] == "system"]


def rate_outputs(study, people) -> None:
    """The scale question rates every output once per annotator, tracking the truth."""
    scale = study.primary_question
    rng = np.random.default_rng(3)
    outputs = list(Item.objects.filter(study=study, outputs=[]).exclude(system=""))
    responses = Response.objects.bulk_create([
        Response(participant=p, item=item, active_ms=3000) for p in people for item in outputs])
    Answer.objects.bulk_create([
        Answer(response=r, question=scale,
               value=float(np.clip(round(3.5 + 2 * TRUTH[r.item.system] + rng.normal(0, .8)),
                                   0, 7)))
        for r in responses])


@pytest.fixture
def mixed(make_study, alice):
    """A scale question (0–7) and a pairwise one about every two systems of a source."""
    study = make_study(alice, slug="cmp-mixed", items=None, open=False)
    add_outputs(study)
    question = comparative_question(study, "pairwise", options={"ties": False,
                                                               "strength": False})
    items = comparisons(study, "pairwise")
    people = answer_all(study, question, items)
    rate_outputs(study, people)
    return study


def only(make_study, alice, kind: str, slug: str):
    study = make_study(alice, slug=slug, items=None, open=False)
    study.questions.all().delete()
    add_outputs(study, role=Item.Role.OUTPUT)
    question = comparative_question(study, kind, position=0)
    answer_all(study, question, comparisons(study, kind))
    study.refresh_from_db()
    return study


def test_a_scale_and_a_pairwise_question_are_analysed_apart(mixed):
    document = run_of(mixed).results
    assert system_order(document) == list(SYSTEMS)
    # the scale sections see the outputs and the scale question only
    assert [q["key"] for q in document["questions"]] == [mixed.primary_question.key]
    assert document["counts"]["items"] == 5 * 8
    assert {r["question"] for r in document["alpha"]} == {mixed.primary_question.key}
    assert [q["key"] for q in document["comparison_questions"]] == ["pref"]
    assert document["comparison_questions"][0]["counts"]["judgments"] == 6 * 8 * 10
    systems = [r for r in document["comparison_scores"] if r["level"] == "system"]
    assert all(r["model"] == "bradley_terry" and r["reason"] == "" for r in systems)
    assert systems[0]["rank_low"] == 1 and systems[0]["strength_low"] < systems[0]["strength"]
    outputs = [r for r in document["comparison_scores"] if r["level"] == "output"]
    assert len(outputs) == 40 and all(r["judgments"] == 6 * 4 for r in outputs)
    assert all(r["reason"] == "groups_never_compared" for r in outputs)  # sources never meet
    # the win probabilities of the systems, every ordered pair
    probabilities = document["comparison_win_probabilities"]
    assert len(probabilities) == 5 * 4 and {r["level"] for r in probabilities} == {"system"}
    best = next(r for r in probabilities if r["a"] == "alpha" and r["b"] == "echo")
    assert best["probability"] > 0.9
    # reliability on both levels, consistency per annotator, correlations with the rating
    assert {r["level"] for r in document["comparison_reliability"]} == {"output", "system"}
    assert next(r for r in document["comparison_reliability"]
                if r["level"] == "system")["split_half"] > 0.8
    assert [r["annotator"] for r in document["comparison_consistency"]] == [
        f"A{n}" for n in range(1, 7)]
    rating = [r for r in document["comparison_correlations"]
              if r["measure_kind"] == "rating" and r["level"] == "system"]
    assert rating[0]["measure"] == mixed.primary_question.key and rating[0]["spearman"] > 0.8
    assert {r["measure"] for r in document["comparison_correlations"]
            if r["measure_kind"] == "metric"} == {"tracking"}


@pytest.mark.parametrize("kind", ["ranking", "bws"])
def test_a_study_of_one_comparative_question_is_analysed(make_study, alice, kind):
    study = only(make_study, alice, kind, f"cmp-{kind}")
    document = run_of(study).results
    assert system_order(document) == list(SYSTEMS)
    assert document["questions"] == [] and document["alpha"] == [] and document["timing"] == []
    assert document["counts"]["items"] == 0 and document["systems"] == []
    assert document["annotators"] == [f"A{n}" for n in range(1, 7)]
    model = {"ranking": "plackett_luce", "bws": "bradley_terry"}[kind]
    assert {r["model"] for r in document["comparison_scores"]} == {model}
    top = document["comparison_scores"][0]
    if kind == "bws":  # the counting score is %best − %worst
        assert top["score"] == pytest.approx((top["wins"] - top["losses"]) / top["judgments"])
    assert all(r["reason"] in ("", "a_single_choice") for r in document["comparison_reliability"])


def test_the_judgments_load_in_a_fixed_number_of_queries(mixed):
    mixed.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        judged = study_judgments(study=mixed)
    assert len(queries) <= 5
    j = judged[0]
    assert j.kind == "pairwise" and j.n == 6 * 8 * 10
    assert set(j.systems) == set(SYSTEMS) and "tracking" in j.metrics
    # the scale arrays hold the outputs and the scale question, never the comparisons
    questions = study_questions(study=mixed)
    assert [q.key for q in questions] == [mixed.primary_question.key]
    assert not any(i.startswith("cmp-") for i in questions[0].data.item_ids)


def test_a_missing_judgment_is_counted_and_left_out(mixed):
    answer = Answer.objects.filter(question__key="pref").order_by("id").first()
    Answer.objects.filter(pk=answer.pk).update(value=None, choice=None,
                                               missing=Answer.Missing.CANT_JUDGE)
    document = run_of(mixed).results
    counts = document["comparison_questions"][0]["counts"]
    assert counts["missing"] == 1 and counts["judgments"] == 6 * 8 * 10 - 1


def test_an_excluded_annotator_leaves_the_comparisons_too(mixed):
    run = analysis_run_execute(run_id=analysis_run_create(
        study=mixed, enqueue=False, overrides={**FAST, "excluded_annotators": ["A2"]}).pk)
    document = run.results
    assert "A2" not in [r["annotator"] for r in document["comparison_consistency"]]
    assert document["comparison_questions"][0]["counts"]["judgments"] == 5 * 8 * 10


# --- the API --------------------------------------------------------------------------------


def api_url(study, section: str) -> str:
    return reverse("analysis:comparison_results", args=[study.slug, section])


@pytest.mark.parametrize("section", COMPARISON_SECTIONS)
def test_the_api_serves_each_section(alice_client, mixed, section):
    run = run_of(mixed)
    body = alice_client.get(api_url(mixed, section)).json()
    assert body == {"section": section, "run": run.pk, "results": run.results[section]}
    assert body["results"]


def test_the_api_filters_refuses_and_guards(alice_client, mixed, bob):
    client = Client()
    client.force_login(bob)
    assert client.get(api_url(mixed, "comparison_scores")).status_code == 404  # a stranger
    Membership.objects.create(study=mixed, user=bob, role=Membership.Role.VIEWER)
    assert client.get(api_url(mixed, "comparison_scores")).status_code == 404  # no run yet
    run_of(mixed)
    body = client.get(api_url(mixed, "comparison_scores"), {"level": "system"}).json()
    assert [r["name"] for r in body["results"]] == list(SYSTEMS)
    body = client.get(api_url(mixed, "comparison_win_probabilities"), {"a": "alpha"}).json()
    assert len(body["results"]) == 4
    response = client.get(api_url(mixed, "comparison_scores"), {"system": "x"})
    assert response.status_code == 400 and "system" in response.json()
    assert client.get(api_url(mixed, "comparison_scores"),
                      {"name": "x" * 1001}).status_code == 400
    assert client.get(api_url(mixed, "systems")).status_code == 404


def test_a_study_without_comparative_questions_has_empty_sections(alice_client, make_study,
                                                                   alice):
    from tests.analysis.test_dashboard_readable import analysed, four_annotators

    study = four_annotators(alice, make_study)
    analysed(study)
    body = alice_client.get(api_url(study, "comparison_scores")).json()
    assert body["results"] == []


def test_a_comparative_only_study_starts_through_the_worker_path(make_study, alice):
    """The worker's start (`trust_plan_create`) has no trust to fan out and completes the run
    in place, comparisons included."""
    from analysis.fanout import trust_plan_create

    study = only(make_study, alice, "pairwise", "cmp-worker")
    run = analysis_run_create(study=study, enqueue=False, overrides=FAST)
    assert trust_plan_create(run_id=run.pk) == []
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE, run.error
    assert system_order(run.results) == list(SYSTEMS)
    assert "comparisons" in run.timings["sections_s"]


def test_the_dashboard_of_a_comparative_only_study_opens(alice_client, make_study, alice):
    study = only(make_study, alice, "bws", "cmp-dashboard")
    run_of(study)
    assert alice_client.get(reverse("analysis:dashboard", args=[study.slug])).status_code == 200
