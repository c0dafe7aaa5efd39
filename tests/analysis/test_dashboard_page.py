"""The dashboard's reads and its context: every query in the selector, none in the builder."""

import pytest
from django.http import QueryDict

from analysis import dashboard as tables
from analysis.dashboard_page import dashboard_context, selection
from analysis.selectors import dashboard_data
from analysis.services import analysis_run_create, analysis_run_execute
from demo.services import demo_seed

pytestmark = pytest.mark.django_db

# the keys of a finished run's page (annotators_shown only when some are left out)
KEYS = {"study", "runs", "finished", "active", "active_state", "form", "people", "document",
        "annotators_shown", "question", "questions", "scale", "scales", "levels", "alpha_tables",
        "trust", "trust_simple", "duplicates", "timing_pooled", "timing", "rules", "rule_labels",
        "flags", "correlations", "ranking", "quality_correlations", "style_correlations",
        "comparisons", "competence_labels", "gaps", "largest_gaps", "weight_features", "weights",
        "noise", "charts", "settings_used", "notes", "systems", "systems_method", "comparative",
        "judged", "judges_method", "with_judges"}


@pytest.fixture
def study():
    _, created = demo_seed()
    return next(d.study for d in created if d.study.slug == "demo-coref")


def test_it_reads_in_the_selector_and_builds_the_context_without_a_query(
        study, monkeypatch, django_assert_num_queries):
    with django_assert_num_queries(3):  # recent runs, the newest finished run, the counts
        before = dashboard_data(study=study)
    assert before.finished is None and before.runs == []
    with django_assert_num_queries(0):
        empty = dashboard_context(study=study, data=before, question=None, scale="raw",
                                  everyone=False, query=QueryDict(""))
    assert set(empty) == {"study", "runs", "finished", "active", "active_state", "form",
                          "people", "document"} and empty["document"] is None

    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    queued = analysis_run_create(study=study, enqueue=False)
    data = dashboard_data(study=study)
    assert data.finished == run and data.runs == [queued, run]
    monkeypatch.setattr(tables, "SHOWN_ANNOTATORS", 2)  # a crowd: some annotators left out
    with django_assert_num_queries(0):
        context = dashboard_context(study=study, data=data, question="nope", scale="nope",
                                    everyone=False, query=QueryDict("scale=nope"))
    assert set(context) == KEYS and len(KEYS) == 43
    assert context["active"] == queued and context["active_state"]["status"] == "queued"
    assert context["scale"] == "raw" and context["question"] == context["questions"][0][0]
    assert context["annotators_shown"]["shown"] == 2
    assert context["annotators_shown"]["query"] == "scale=nope&annotators=all"
    assert len(context["document"]["annotators"]) == 2
    assert context["people"]["total"] == study.participants.count() > 2


def test_it_falls_back_to_the_first_question_and_scale():
    doc = {"annotators": [], "scales": [{"name": "raw"}, {"name": "z"}]}
    assert selection(doc, question=None, scale="z")[2] == "z"
    assert selection(doc, question="q", scale="gravity")[::2] == (None, "raw")
