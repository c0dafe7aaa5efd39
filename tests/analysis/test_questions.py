"""Analysis per question on a SummEval-style study: answered through the app, with "can't judge"
answers and revisions, every question's alpha and trust equal the reference implementations on
that question's annotators × items matrix; the dashboard shows one question at a time."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import jsonschema
import krippendorff
import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.selectors import study_questions
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.services import response_submit
from core.stats.trust import trust_coefficients
from studies.selectors import pseudonyms as stored_pseudonyms
from studies.services import participants_invite
from tests.analysis.test_dashboard import DASHBOARD_QUERIES

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/results.schema.json").read_text())
QUESTIONS = ("coherence", "consistency", "fluency", "relevance")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
DOMAIN = [1, 2, 3, 4, 5]
ITEMS = "id,text,metric:rouge\n" + "".join(f"s{n},Summary {n},{(n % 4) / 4}\n" for n in range(8))
REVISED_MS = 987_654  # a revision's time, never the one analysed


class Summeval:
    """Six annotators answer SummEval's four questions on eight summaries through the service.

    ``expected[question][participant pk][item position]`` is the value the analysis must see:
    the last revision's, nan for "can't judge"; ``first_ms`` the first revision's active time.
    """

    def __init__(self, study, seed=7):
        rng = np.random.default_rng(seed)
        truth = {q: rng.integers(1, 6, size=8) for q in QUESTIONS}
        self.study = study
        self.participants = participants_invite(study=study, count=6)
        self.expected = {q: {} for q in QUESTIONS}
        self.first_ms = {}
        self.cant_judge = dict.fromkeys(QUESTIONS, 0)
        for j, participant in enumerate(self.participants):
            for position in range(participant.n_assigned):
                item = participant.assignments.get(position=position).item.position
                answers = {}
                for k, q in enumerate(QUESTIONS):
                    if (item + j + k) % 7 == 0:
                        answers[q] = {"cant_judge": True, "comment": "not enough context"}
                        value = np.nan
                    else:
                        value = int(np.clip(truth[q][item] + rng.integers(-j // 2, j // 2 + 1),
                                            1, 5))
                        answers[q] = {"value": value}
                    self.expected[q].setdefault(participant.pk, {})[item] = value
                ms = 1500 + 100 * position + 10 * j
                self.first_ms[(participant.pk, item)] = ms
                response_submit(participant=participant, position=position, answers=answers,
                                client_id=uuid.uuid4(), active_ms=ms)
        # Two annotators go back to their second item and change every answer (a new client id);
        # one of them now can't judge fluency there, the other now can.
        for participant, fluency in ((self.participants[0], {"cant_judge": True}),
                                     (self.participants[3], {"value": 2})):
            item = participant.assignments.get(position=1).item.position
            answers = {q: {"value": 5 if q != "relevance" else 1} for q in QUESTIONS}
            answers["fluency"] = fluency
            reply = response_submit(participant=participant, position=1, answers=answers,
                                    client_id=uuid.uuid4(), active_ms=REVISED_MS)
            assert reply.revision == 2
            for q in QUESTIONS:
                self.expected[q][participant.pk][item] = answers[q].get("value", np.nan)
        for q in QUESTIONS:
            self.cant_judge[q] = sum(np.isnan(v) for row in self.expected[q].values()
                                     for v in row.values())

    def matrix(self, question: str, names: list[str]) -> np.ndarray:
        """The annotators × items matrix of a question, rows in the document's annotator order."""
        pseudonyms = stored_pseudonyms(study=self.study)
        by_name = {pseudonyms[pk]: row for pk, row in self.expected[question].items()}
        out = np.full((len(names), 8), np.nan)
        for a, name in enumerate(names):
            for item, value in by_name[name].items():
                out[a, item] = value
        return out


@pytest.fixture
def summeval(make_study, alice):
    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=ITEMS)
    return Summeval(study)


@pytest.fixture
def document(summeval):
    run = analysis_run_execute(run_id=analysis_run_create(study=summeval.study,
                                                          enqueue=False).pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    jsonschema.validate(run.results, SCHEMA)
    return run.results


def test_it_analyses_every_question(document):
    assert [q["key"] for q in document["questions"]] == list(QUESTIONS)
    assert document["questions"][0]["prompt"] == "Coherence"
    for section in ("alpha", "trust", "heuristics", "styles", "correlations", "noise"):
        assert {r["question"] for r in document[section]} - {None} == set(QUESTIONS), section


def test_its_alpha_per_question_equals_the_krippendorff_package_at_every_level(summeval,
                                                                               document):
    for q in QUESTIONS:
        matrix = summeval.matrix(q, document["annotators"])
        for level in LEVELS:
            (record,) = [a for a in document["alpha"] if a["question"] == q and a["scale"] == "raw"
                         and a["items"] == "all" and a["level"] == level and not a["without"]]
            expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                          value_domain=DOMAIN)
            assert record["value"] == pytest.approx(expected, abs=1e-9), (q, level)


def test_its_trust_per_question_equals_the_trust_coefficients_of_its_matrix(summeval, document):
    names = document["annotators"]
    for q in QUESTIONS:
        matrix = summeval.matrix(q, names)
        (record,) = [t for t in document["trust"] if t["question"] == q and t["scale"] == "raw"
                     and t["items"] == "all"]
        expected = trust_coefficients(matrix, level="ordinal", domain=DOMAIN, variant="paper",
                                      max_exact=20)
        got = [record["coefficients"][a] for a in names]
        assert got == pytest.approx(expected.coefficients, abs=1e-12), q


def test_cant_judge_is_a_missing_value_never_a_category(summeval, document):
    entries = {q["key"]: q for q in document["questions"]}
    for q in QUESTIONS:
        assert entries[q]["counts"]["cant_judge"] == summeval.cant_judge[q] > 0
        assert entries[q]["counts"]["blank_answers"] == summeval.cant_judge[q]
        assert [s["domain"] for s in entries[q]["scales"]] == [DOMAIN]
    domains = {v for s in document["scales"] for v in s["domain"]}
    assert domains == set(DOMAIN)


def test_a_revision_is_analysed_with_the_time_of_the_first_answer(summeval, document):
    # the revised values are in the matrices above; here: no revision's time reaches the timing
    assert all(r["max_s"] is None or r["max_s"] < REVISED_MS / 1000 for r in document["timing"])
    pooled = next(r for r in document["timing"] if r["annotator"] == "all")
    assert pooled["n"] == 6 * 8 and pooled["max_s"] == max(summeval.first_ms.values()) / 1000
    assert {r["question"] for r in document["timing"]} == {None}
    data = {q.key: q.data for q in study_questions(study=summeval.study)}
    revised = summeval.participants[0]
    item = revised.assignments.get(position=1).item.position
    a = data["fluency"].annotators.index(stored_pseudonyms(
        study=summeval.study)[revised.pk])
    (row,) = np.flatnonzero((data["fluency"].annotator == a) & (data["fluency"].item == item))
    assert np.isnan(data["fluency"].value[row]) and data["fluency"].cant_judge[row]
    assert data["coherence"].value[row] == 5 and data["relevance"].value[row] == 1
    assert data["coherence"].duration_ms[row] == summeval.first_ms[(revised.pk, item)]


def test_the_slow_rule_and_time_are_recorded_once_for_the_study(document):
    n = len(document["annotators"])
    slow = [h for h in document["heuristics"] if h["rule"] == "slow"]
    assert len(slow) == n and {h["question"] for h in slow} == {None}
    assert len([h for h in document["heuristics"] if h["rule"] == "low_variance"]) == 4 * n


def test_a_correlation_targets_each_question(summeval, document):
    names = document["annotators"]
    rouge = np.array([(n % 4) / 4 for n in range(8)])
    for q in QUESTIONS:
        (baseline,) = [c for c in document["correlations"] if c["question"] == q
                       and not c["rules"] and c["metric"] == "rouge"]
        means = np.nanmean(summeval.matrix(q, names), axis=0)
        assert baseline["pearson"] == pytest.approx(np.corrcoef(means, rouge)[0, 1], abs=1e-9)


def test_the_selector_loads_every_question_in_four_queries(summeval,
                                                           django_assert_num_queries):
    from studies.models import Study

    study = Study.objects.get(pk=summeval.study.pk)
    with django_assert_num_queries(4):  # the questions, the items, the answers, the pseudonyms
        questions = study_questions(study=study)
    assert [q.key for q in questions] == list(QUESTIONS)
    assert len({tuple(q.data.annotators) for q in questions}) == 1


# --------------------------------------------------------------------------- the dashboard


def dashboard(client, study, **params):
    url = reverse("analysis:dashboard", kwargs={"slug": study.slug})
    return client.get(url, params).content.decode()


def table(html: str, table_id: str) -> str:
    start = html.index(f'id="{table_id}"')
    return html[start:html.index("</table>", start)]


def test_the_dashboard_shows_the_chosen_question(summeval, document, alice,
                                                 django_assert_num_queries):
    client = Client()
    client.force_login(alice)
    with django_assert_num_queries(DASHBOARD_QUERIES + 1):  # the first visit: the document too
        html = dashboard(client, summeval.study, question="fluency")
    assert '<option value="fluency" selected>fluency: Fluency</option>' in html
    (trust,) = [t for t in document["trust"] if t["question"] == "fluency"
                and t["scale"] == "raw" and t["items"] == "all"]
    rows = re.findall(r'<th scope="row">(A\d+)(?:(?!</th>).)*</th><td class="num">([^<]*)</td>',
                      table(html, "trust-table"))
    shown = {a: float(v) for a, v in rows}
    assert shown == pytest.approx({a: round(c, 3) for a, c in trust["coefficients"].items()},
                                  abs=1e-3)
    fluency = next(q for q in document["questions"] if q["key"] == "fluency")
    assert f'{fluency["counts"]["cant_judge"]} “can\'t judge”' in html
    # the first question by default, and for an unknown key
    for params in ({}, {"question": "nope"}):
        assert '<option value="coherence" selected>' in dashboard(client, summeval.study, **params)
    # the chart downloads follow the question
    assert '?question=fluency&amp;scale=raw' in html
    spec = client.get(reverse("analysis:chart_spec", kwargs={"slug": summeval.study.slug,
                                                             "name": "trust"}),
                      {"question": "fluency"}).json()
    assert spec["title"]["text"] == "fluency: Trust coefficients (raw scale)"


def test_the_dashboard_still_reads_a_document_of_schema_1(make_study, alice):
    from django.utils import timezone

    study = make_study(alice, slug="old-run")
    frozen = Path(__file__).resolve().parents[1] / "fixtures/frozen/demo-coref.results.json"
    old = json.loads(frozen.read_text())
    assert old["schema"] == "concord.results/1" and "questions" not in old
    AnalysisRun.objects.create(study=study, status=AnalysisRun.Status.DONE, results=old,
                               settings=old["settings"], finished_at=timezone.now())
    client = Client()
    client.force_login(alice)
    html = dashboard(client, study, scale="gravity")
    assert 'id="question"' not in html and 'value="gravity" selected' in html
    assert len(re.findall(r'<table class="table alpha"', html)) == 4
    assert "?scale=gravity" in html
