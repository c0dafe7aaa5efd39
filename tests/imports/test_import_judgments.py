"""Importing a long file of comparative judgments into a study (PostgreSQL): the service, the
command, the page's check and confirm, and the API (docs/importing-responses.md)."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Answer, Response
from annotation.responses_import import responses_import
from core.problems import InputError
from studies.models import Item, Participant
from tests.comparative import comparative_study, comparison_add

pytestmark = pytest.mark.django_db

JUDGMENTS = (b"annotator,items,choice,comment\n"
             b"ann1,d1-a|d1-b,d1-b,clearer\n"
             b"ann1,d1-c|d1-a,tie,\n"
             b"ann2,d1-b|d1-a,d1-a,\n"
             b"ann2,d1-a|d1-c,d1-c,\n")


@pytest.fixture
def study(alice):
    return comparative_study(alice)


def answers(study) -> list[tuple[str, str, list[str], float | None, dict | None]]:
    rows = (Answer.objects.filter(response__participant__study=study)
            .order_by("response_id")
            .values_list("response__participant__external_id", "response__item__external_id",
                         "response__item__outputs", "value", "choice"))
    return [tuple(r) for r in rows]


def test_it_stores_the_judgments_with_their_choice_and_creates_each_comparison_once(study):
    summary = responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    assert (summary.imported, summary.answers, summary.items, len(summary.annotators)) == (
        True, 4, 2, 2)
    created = list(study.items.exclude(outputs=[]).order_by("position")
                   .values_list("external_id", "outputs", "source", "meta", "role"))
    assert created == [("cmp-doc-1-1", ["d1-a", "d1-b"], "doc-1", {"design": "import"}, "main"),
                       ("cmp-doc-1-2", ["d1-c", "d1-a"], "doc-1", {"design": "import"}, "main")]
    assert answers(study) == [
        ("ann1", "cmp-doc-1-1", ["d1-a", "d1-b"], 1.0,
         {"shown": ["d1-a", "d1-b"], "pick": "d1-b", "strength": ""}),
        ("ann1", "cmp-doc-1-2", ["d1-c", "d1-a"], 0.5,
         {"shown": ["d1-c", "d1-a"], "pick": "tie", "strength": ""}),
        # shown b, a; the comparison is (a, b): a is its first output
        ("ann2", "cmp-doc-1-1", ["d1-a", "d1-b"], 0.0,
         {"shown": ["d1-b", "d1-a"], "pick": "d1-a", "strength": ""}),
        # shown a, c; the comparison is (c, a): c is its first output
        ("ann2", "cmp-doc-1-2", ["d1-c", "d1-a"], 0.0,
         {"shown": ["d1-a", "d1-c"], "pick": "d1-c", "strength": ""}),
    ]
    assert Answer.objects.get(choice__pick="d1-b").comment == "clearer"
    people = Participant.objects.filter(study=study).order_by("pk")
    assert [(p.external_id, p.source, p.n_answered, p.pseudonym_number) for p in people] == [
        ("ann1", "import", 2, 1), ("ann2", "import", 2, 2)]


def test_outputs_only_compared_become_outputs_in_a_study_without_a_scale(study):
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    roles = dict(study.items.filter(outputs=[]).values_list("external_id", "role"))
    assert roles == {"d1-a": "output", "d1-b": "output", "d1-c": "output", "=d1-d": "main"}


def test_a_study_with_a_scale_keeps_its_outputs_main_and_asks_the_scale_only_of_them(alice):
    study = comparative_study(alice, slug="mixed", scale=True)
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    assert set(study.items.filter(outputs=[]).values_list("role", flat=True)) == {"main"}
    # one answer per response: the comparative question only, not the scale
    assert Answer.objects.filter(response__participant__study=study).count() == 4
    assert set(Answer.objects.filter(response__participant__study=study)
               .values_list("question__key", flat=True)) == {"better"}


def test_it_judges_an_existing_comparison_in_its_canonical_order(study):
    comparison_add(study, "pair-1", ["d1-b", "d1-a"])
    responses_import(study=study, data=b"annotator,items,choice\nann1,d1-a|d1-b,d1-a\n",
                     filename="j.csv", fmt="judgments")
    assert study.items.exclude(outputs=[]).count() == 1
    assert answers(study) == [("ann1", "pair-1", ["d1-b", "d1-a"], 1.0,
                               {"shown": ["d1-a", "d1-b"], "pick": "d1-a", "strength": ""})]


def test_a_second_file_reuses_the_comparisons_the_first_created(study):
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    responses_import(study=study, data=b"annotator,items,choice\nann3,d1-b|d1-a,d1-b\n",
                     filename="k.csv", fmt="judgments")
    assert study.items.exclude(outputs=[]).count() == 2
    assert Response.objects.filter(participant__external_id="ann3").get().item.external_id \
        == "cmp-doc-1-1"


def test_two_questions_about_one_comparison_are_one_response(alice):
    study = comparative_study(alice, slug="two", questions=(
        ("better", "pairwise", {}), ("fluent", "pairwise", {})))
    responses_import(study=study, data=(b"annotator,items,choice,question\n"
                                        b"ann1,d1-a|d1-b,d1-a,better\n"
                                        b"ann1,d1-b|d1-a,d1-b,fluent\n"),
                     filename="j.csv", fmt="judgments")
    response = Response.objects.get(participant__study=study)
    assert dict(response.answers.values_list("question__key", "value")) == {
        "better": 0.0, "fluent": 1.0}


def test_a_ranking_and_a_best_worst_file(alice):
    study = comparative_study(alice, slug="rank", questions=(
        ("rank", "ranking", {"ties": True}), ("bws", "bws", {"size": 4})))
    responses_import(study=study, data=(b"annotator,items,choice,question\n"
                                        b"ann1,d1-a|d1-b|d1-c,d1-c|d1-a=d1-b,rank\n"
                                        b"ann1,d1-a|d1-b|d1-c|=d1-d,d1-b|=d1-d,bws\n"),
                     filename="j.csv", fmt="judgments")
    stored = {a.question.key: (a.value, a.choice) for a in
              Answer.objects.filter(response__participant__study=study, missing="")
              .select_related("question")}
    assert stored == {
        "rank": (2.0, {"shown": ["d1-a", "d1-b", "d1-c"],
                       "order": [["d1-c"], ["d1-a", "d1-b"]]}),
        "bws": (1.0, {"shown": ["d1-a", "d1-b", "d1-c", "=d1-d"], "best": "d1-b",
                      "worst": "=d1-d"}),
    }


def test_a_bad_file_stores_nothing_and_names_every_problem(study):
    with pytest.raises(InputError) as caught:
        responses_import(study=study, data=(b"annotator,items,choice\n"
                                            b"ann1,d1-a|d1-b,d1-b\n"
                                            b"ann1,d1-a|nope,d1-a\n"
                                            b"ann2,d1-a|d1-b,d1-c\n"),
                         filename="j.csv", fmt="judgments")
    assert [(p.line, p.column) for p in caught.value.problems] == [(3, "items"), (4, "choice")]
    assert "'nope' is not an item id" in caught.value.problems[0].message
    assert not Participant.objects.filter(study=study).exists()
    assert not study.items.exclude(outputs=[]).exists()


def test_a_dry_run_counts_and_creates_nothing(study):
    summary = responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments",
                               dry_run=True)
    assert (summary.imported, summary.answers, summary.rows) == (False, 4, 4)
    assert summary.warnings == ("2 comparisons of outputs this study does not compare yet "
                                "will be created",)
    assert not study.items.exclude(outputs=[]).exists()
    assert not Participant.objects.filter(study=study).exists()


def test_it_refuses_an_annotator_already_imported(study):
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    with pytest.raises(InputError, match="'ann1' was already imported"):
        responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")


def test_a_scale_file_is_refused_in_a_study_of_comparative_questions_only(study):
    with pytest.raises(InputError, match="only comparative questions"):
        responses_import(study=study, data=b"annotator,item,value\nann1,d1-a,3\n",
                         filename="r.csv", fmt="long")


def test_a_long_scale_file_answers_only_the_scale_in_a_mixed_study(alice):
    study = comparative_study(alice, slug="mixed-long", scale=True)
    comparison_add(study, "pair-1", ["d1-b", "d1-a"])
    responses_import(study=study, data=io.BytesIO(b"annotator,item,value\nann1,d1-a,3\n"),
                     filename="r.csv", fmt="long")
    scale = next(q for q in study.question_list if not q.is_comparative)
    assert list(Answer.objects.filter(response__participant__study=study)
                .values_list("question__key", "value")) == [(scale.key, 3.0)]
    with pytest.raises(InputError, match="'pair-1' is not an item id"):
        responses_import(study=study, data=io.BytesIO(b"annotator,item,value\nann2,pair-1,3\n"),
                         filename="r.csv", fmt="long")


def test_the_command_imports_a_judgments_file(study, tmp_path):
    path = tmp_path / "j.csv"
    path.write_bytes(JUDGMENTS)
    out = io.StringIO()
    call_command("import_responses", study.slug, str(path), "--format", "judgments", stdout=out)
    assert "Imported 4 answers of 2 annotators on 2 items" in out.getvalue()
    path.write_bytes(b"annotator,items,choice\nann9,d1-a|zz,d1-a\n")
    with pytest.raises(CommandError, match="'zz' is not an item id"):
        call_command("import_responses", study.slug, str(path), "--format", "judgments")


def test_the_page_checks_then_imports_a_judgments_file(study, alice_client):
    url = reverse("imports:responses_import", args=[study.slug])
    page = alice_client.post(url, {"format": "judgments",
                                   "file": SimpleUploadedFile("j.csv", JUDGMENTS)})
    assert page.status_code == 302
    check = alice_client.get(page["Location"])
    assert b"2 comparisons of outputs" in check.content
    done = alice_client.post(page["Location"] + "confirm/")
    assert done.status_code == 302
    assert Answer.objects.filter(response__participant__study=study).count() == 4


def test_the_page_lists_the_problems_of_a_judgments_file(study, alice_client):
    url = reverse("imports:responses_import", args=[study.slug])
    page = alice_client.post(url, {"format": "judgments", "file": SimpleUploadedFile(
        "j.csv", b"annotator,items,choice\nann1,d1-a|<b>x</b>,d1-a\n")})
    assert page.status_code == 400
    assert b"&lt;b&gt;x&lt;/b&gt;" in page.content and b"<b>x</b>" not in page.content


def test_the_api_imports_a_judgments_file(study, alice):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(alice)
    url = f"/api/studies/{study.slug}/responses/import/"
    answer = client.post(url, {"format": "judgments", "dry_run": "true",
                               "file": SimpleUploadedFile("j.csv", JUDGMENTS)},
                         format="multipart")
    assert answer.status_code == 200, answer.content
    assert answer.json()["answers"] == 4 and answer.json()["imported"] is False
    bad = client.post(url, {"format": "judgments",
                            "file": SimpleUploadedFile("j.csv", b"annotator,items,choice\n"
                                                                b"a,d1-a|zz,d1-a\n")},
                      format="multipart")
    assert bad.status_code == 400
    assert not Item.objects.filter(study=study).exclude(outputs=[]).exists()


def test_hostile_bytes_are_problems_with_their_line_never_a_crash(study):
    for data, line, column in (
            (b"annotator,items,choice,comment\nann1,d1-a|d1-b,d1-a,a\x00b\n", 2, 4),
            (b"annotator,items,choice\nann1,\"d1-a|d1-b,d1-a\n", 2, None),
            (b"annotator,items,choice\n" + b"ann1," + b"d1-a|" * 40_000 + b"d1-b,d1-a\n", 2,
             None)):
        with pytest.raises(InputError) as caught:
            responses_import(study=study, data=data, filename="j.csv", fmt="judgments")
        assert (caught.value.problems[0].line, caught.value.problems[0].column) == (line,
                                                                                      column)
    with pytest.raises(InputError, match="UTF-16"):
        responses_import(study=study, data="annotator,items,choice\n".encode("utf-16"),
                         filename="j.csv", fmt="judgments")
    assert not Participant.objects.filter(study=study).exists()
