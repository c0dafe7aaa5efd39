"""LLM judges of a study (docs/judges.md): the import on both paths (COPY on PostgreSQL, in
memory elsewhere), a run given again (refused, or replaced on request), deletion, the history,
the analysis' arrays, the export, the page (editors change, viewers read, strangers see
nothing), the command and the API with its token scopes — and never a person's answer."""

from __future__ import annotations

import io
import json
from unittest import mock

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Answer, Response
from core.problems import InputError
from exports.services import export_open
from judges.models import Judge, JudgeAnswer, JudgeRun
from judges.selectors import judges_for_analysis
from judges.services import (
    judge_answers_import,
    judge_answers_upload,
    judge_create,
    judge_delete,
    judge_run_delete,
)
from studies.models import Membership, StudyEvent
from studies.services import study_archive, study_transition
from tests.comparative import comparative_study, comparison_add
from tests.conftest import require
from tests.studies.test_systems import api_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _only_this_tests_judges(db):
    """The demo studies this module seeds once carry the systems demo's two judges; each test
    counts the judges it makes, so it starts without them (deleted inside the test's
    transaction, which rolls back)."""
    Judge.objects.all().delete()


@pytest.fixture(params=["copy", "memory"])
def path(request):
    """Each import test runs on both paths: COPY (PostgreSQL) and in memory (SQLite's)."""
    if request.param == "copy":
        require(connection.vendor == "postgresql", "the COPY path needs PostgreSQL")
        yield "copy"
    else:
        with mock.patch("judges.services._loads_with_copy", return_value=False):
            yield "memory"


@pytest.fixture
def study(make_study, alice):
    return make_study(alice, slug="judged")


@pytest.fixture
def key(study):
    return study.primary_question.key


def scale_file(key: str, run: str = "") -> bytes:
    runs = f",{run}" if run else ""
    head = "item,value,question" + (",run" if run else "") + ",rationale\n"
    return (head + f"i1,3,{key}{runs},clear\ni2,5,{key}{runs},\ni3,0,{key}{runs},\"a, b\"\n"
            ).encode()


def test_it_imports_a_run_apart_from_the_people(study, key, alice, path):
    judge = judge_create(study=study, name="gpt", model="gpt-4o-mini", temperature=0)
    done = judge_answers_import(study=study, judge=judge, data=scale_file(key), filename="g.csv",
                                run="first", user=alice)
    assert (done.runs, done.answers, done.replaced) == (["first"], 3, [])
    stored = sorted(JudgeAnswer.objects.values_list("item__external_id", "value", "rationale"))
    assert stored == [("i1", 3.0, "clear"), ("i2", 5.0, ""), ("i3", 0.0, "a, b")]
    assert JudgeRun.objects.get().n_answers == 3 and JudgeRun.objects.get().source == "g.csv"
    event = StudyEvent.objects.get(study=study, action="judge_answers")
    assert event.detail == {"judge": "gpt", "runs": ["first"], "answers": 3, "replaced": []}


def test_it_refuses_a_run_the_judge_has_and_replaces_it_on_request(study, key, path):
    judge = judge_create(study=study, name="gpt")
    judge_answers_import(study=study, judge=judge, data=scale_file(key), filename="g.csv")
    with pytest.raises(InputError) as caught:
        judge_answers_import(study=study, judge=judge, data=scale_file(key), filename="g.csv")
    assert "already has run '1'" in caught.value.problems[0].message
    assert JudgeAnswer.objects.count() == 3
    again = f"item,value,question\ni1,7,{key}\n".encode()
    done = judge_answers_import(study=study, judge=judge, data=again, filename="again.csv",
                                replace=True)
    assert done.replaced == ["1"]
    assert list(JudgeAnswer.objects.values_list("value", flat=True)) == [7.0]
    assert JudgeRun.objects.get().n_answers == 1


def test_a_bad_file_stores_nothing_and_names_every_line(study, key, path):
    judge = judge_create(study=study, name="gpt")
    bad = f"item,value,question,run\ni1,3,{key},1\ni2,99,{key},1\ni1,4,{key},1\n".encode()
    with pytest.raises(InputError) as caught:
        judge_answers_import(study=study, judge=judge, data=bad, filename="bad.csv")
    found = [(p.line, p.column) for p in caught.value.problems]
    assert found == [(3, "value"), (4, None)]
    assert "duplicate row" in caught.value.problems[1].message
    assert not JudgeRun.objects.exists() and not JudgeAnswer.objects.exists()


def test_several_runs_in_one_file_and_a_file_read_a_chunk_at_a_time(study, key, path):
    judge = judge_create(study=study, name="gpt")
    text = "item,value,question,run\n" + "".join(
        f"i{n},{(n + r) % 8},{key},{r}\n" for r in (1, 2, 3) for n in range(1, 6))
    done = judge_answers_import(study=study, judge=judge, data=io.BytesIO(text.encode()),
                                filename="runs.csv")
    assert done.runs == ["1", "2", "3"] and done.answers == 15
    assert sorted(JudgeRun.objects.values_list("label", "n_answers")) == [
        ("1", 5), ("2", 5), ("3", 5)]


def test_judges_leave_every_response_and_answer_count_unchanged(demo_studies, path):
    _, demos = demo_studies
    study = demos[0].study
    before = (Response.objects.count(), Answer.objects.count(),
              sorted(Answer.objects.values_list("id", "value")))
    key = study.primary_question.key
    items = list(study.items.filter(outputs=[]).values_list("external_id", flat=True)[:20])
    values = study.primary_question.values
    text = "item,value,question\n" + "".join(f"{i},{values[n % len(values)]},{key}\n"
                                              for n, i in enumerate(items))
    judge_answers_upload(study=study, name="gpt", data=text.encode(), filename="g.csv")
    assert JudgeAnswer.objects.count() == len(items)
    assert (Response.objects.count(), Answer.objects.count(),
            sorted(Answer.objects.values_list("id", "value"))) == before


def test_the_analysis_gets_one_array_per_judge_run_and_question(study, key):
    judge_answers_upload(study=study, name="b-judge", data=scale_file(key, "2"), filename="b")
    judge_answers_upload(study=study, name="a-judge", data=scale_file(key), filename="a",
                         model="m", temperature=0.5)
    with CaptureQueriesContext(connection) as queries:
        infos, answers = judges_for_analysis(study=study)
    # judges, runs, questions, answers (on PostgreSQL grouped by run and question, ordered by
    # the study's items, read apart)
    assert len(queries) == (5 if connection.vendor == "postgresql" else 4)
    assert [i.name for i in infos] == ["a-judge", "b-judge"]
    assert (infos[0].model, infos[0].temperature) == ("m", 0.5)
    assert [(a.judge, a.run, a.question) for a in answers] == [
        ("a-judge", "1", key), ("b-judge", "2", key)]
    first = answers[0]
    assert first.item_ids == ("i1", "i2", "i3")
    assert first.value.dtype == np.float64 and list(first.value) == [3.0, 5.0, 0.0]
    assert first.rationale == ("clear", "", "a, b") and first.choices == ()


def test_a_comparative_judge_reads_back_with_its_judgment(alice, path):
    study = comparative_study(alice)
    comparison_add(study, "c-ab", ["d1-a", "d1-b"])
    judge_answers_upload(study=study, name="gpt", data=b"items,choice,strength\n"
                         b"d1-b|d1-a,d1-a,much\n", filename="c.csv")
    _, answers = judges_for_analysis(study=study)
    (only,) = answers
    assert only.item_ids == ("c-ab",) and list(only.value) == [0.0]
    assert only.choices == ({"shown": ["d1-b", "d1-a"], "pick": "d1-a", "strength": "much"},)


def test_deleting_a_run_or_a_judge_removes_only_theirs(study, key, alice):
    done = judge_answers_upload(study=study, name="gpt", data=scale_file(key, "1"), filename="g")
    judge_answers_import(study=study, judge=done.judge, data=scale_file(key, "2"), filename="g")
    judge_answers_upload(study=study, name="other", data=scale_file(key), filename="o")
    assert judge_run_delete(run=JudgeRun.objects.get(judge=done.judge, label="1"),
                            user=alice) == 3
    assert JudgeAnswer.objects.count() == 6
    assert judge_delete(judge=done.judge, user=alice) == {"runs": 1, "answers": 3}
    assert list(Judge.objects.values_list("name", flat=True)) == ["other"]
    assert JudgeAnswer.objects.count() == 3
    assert set(StudyEvent.objects.filter(study=study).values_list("action", flat=True)) >= {
        "judge_run_delete", "judge_delete"}


def test_a_judge_needs_a_free_name_and_clean_metadata(study):
    judge_create(study=study, name="gpt")
    with pytest.raises(InputError, match="already has a judge named 'gpt'"):
        judge_create(study=study, name=" gpt ")
    with pytest.raises(InputError) as caught:
        judge_create(study=study, name="x", date="yesterday", temperature="hot")
    assert {p.column for p in caught.value.problems} == {"date", "temperature"}


def test_a_refused_upload_leaves_no_new_judge(study):
    with pytest.raises(InputError):
        judge_answers_upload(study=study, name="new", data=b"item,value\nnope,1\n",
                             filename="x.csv")
    assert not Judge.objects.exists()


def test_an_archived_study_refuses_judges(study, alice):
    study_transition(study=study, action="close", user=alice)
    study_archive(study=study, user=alice, archived=True)
    with pytest.raises(InputError, match="archived"):
        judge_create(study=study, name="gpt")


def test_the_export_neutralises_formulas_and_reads_back(study, key):
    judge_answers_upload(study=study, name="=gpt", data=(
        f"item,value,question,rationale\ni1,3,{key},=HYPERLINK(\"x\")\n").encode(),
        filename="g", notes="@note")
    body = b"".join(export_open(study=study, what="judges", fmt="csv").chunks).decode()
    header, row = body.splitlines()
    assert header == ("judge,run,question,item,items,value,choice,strength,rationale,model,"
                      "prompt,version,date,temperature,notes")
    assert row.startswith("'=gpt,1,") and "'=HYPERLINK" in row and row.endswith("'@note")
    # The export is a judge's file: it reads back, formulas and all, for the judge it names.
    judge_delete(judge=Judge.objects.get())
    judge = judge_create(study=study, name="=gpt")
    done = judge_answers_import(study=study, judge=judge, data=body.encode(),
                                filename="judges.csv")
    assert done.answers == 1 and done.runs == ["1"]
    assert JudgeAnswer.objects.get().rationale == '=HYPERLINK("x")'
    assert done.warnings == ["columns not read: model, prompt, version, date, temperature, "
                             "notes (a judge's file has item, value, items, choice, question, "
                             "run, rationale)"]


# --- the page ---------------------------------------------------------------------------------


def upload(client, study, key, **extra):
    data = {"name": "gpt", "model": "gpt-4o", "run": "1", "temperature": "0.2",
            "file": SimpleUploadedFile("g.csv", scale_file(key)), **extra}
    return client.post(f"/studies/{study.slug}/judges/", data)


def test_an_editor_uploads_on_the_page_and_sees_the_run(client, study, key, alice):
    client.force_login(alice)
    response = upload(client, study, key)
    assert response.status_code == 302
    page = client.get(f"/studies/{study.slug}/judges/")
    html = page.content.decode()
    assert page.status_code == 200 and "gpt-4o" in html and 'id="judge-form"' in html
    assert Judge.objects.get().temperature == 0.2
    again = upload(client, study, key)
    assert again.status_code == 400 and "already has run" in again.content.decode()
    assert JudgeAnswer.objects.count() == 3


def test_the_page_lists_problems_with_their_lines(client, study, key, alice):
    client.force_login(alice)
    response = upload(client, study, key,
                      file=SimpleUploadedFile("bad.csv", f"item,value,question\ni1,99,{key}\n"
                                                         .encode()))
    assert response.status_code == 400
    assert "is not a value of the scale" in response.content.decode()
    assert not Judge.objects.exists()


def test_a_viewer_reads_but_cannot_upload_or_delete(client, study, key, bob):
    done = judge_answers_upload(study=study, name="gpt", data=scale_file(key), filename="g")
    Membership.objects.create(study=study, user=bob, role="viewer")
    client.force_login(bob)
    page = client.get(f"/studies/{study.slug}/judges/")
    assert page.status_code == 200 and "gpt" in page.content.decode()
    assert 'id="judge-form"' not in page.content.decode()
    assert upload(client, study, key, name="mine").status_code == 403
    run = done.judge.runs.get()
    assert client.post(f"/studies/{study.slug}/judges/runs/{run.pk}/delete/").status_code == 403
    assert JudgeAnswer.objects.count() == 3


def test_a_stranger_gets_404_everywhere(client, study, key, bob):
    done = judge_answers_upload(study=study, name="gpt", data=scale_file(key), filename="g")
    client.force_login(bob)
    run = done.judge.runs.get()
    for url in (f"/studies/{study.slug}/judges/",
                f"/studies/{study.slug}/judges/runs/{run.pk}/delete/",
                f"/studies/{study.slug}/judges/{done.judge.pk}/delete/",
                f"/studies/{study.slug}/exports/judges.csv"):
        assert client.get(url).status_code == 404, url
    assert upload(client, study, key).status_code == 404


def test_deleting_asks_first_then_deletes_with_a_csrf_token(study, key, alice):
    from django.test import Client

    done = judge_answers_upload(study=study, name="gpt", data=scale_file(key), filename="g")
    run = done.judge.runs.get()
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = f"/studies/{study.slug}/judges/runs/{run.pk}/delete/"
    confirm = client.get(url)
    assert confirm.status_code == 200 and "3 answers" in confirm.content.decode()
    assert client.post(url).status_code == 403  # no CSRF token
    token = confirm.cookies["csrftoken"].value
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 302
    assert not JudgeRun.objects.exists() and Judge.objects.exists()


def test_the_study_page_links_to_the_judges(client, study, alice):
    client.force_login(alice)
    assert f'href="/studies/{study.slug}/judges/"' in client.get(
        f"/studies/{study.slug}/").content.decode()


# --- the command ------------------------------------------------------------------------------


def test_the_command_imports_with_metadata_and_refuses_a_bad_file(study, key, tmp_path):
    good = tmp_path / "g.csv"
    good.write_bytes(scale_file(key))
    out = io.StringIO()
    call_command("import_judge", study.slug, "gpt", str(good), "--run", "a", "--model", "m",
                 "--temperature", "0", "--date", "2025-06-01", "--judge-version", "v2", stdout=out)
    assert "Imported 3 answers of the judge 'gpt'" in out.getvalue()
    judge = Judge.objects.get()
    assert (judge.model, judge.temperature, judge.date, judge.version) == (
        "m", 0.0, "2025-06-01", "v2")
    with pytest.raises(CommandError, match="already has run 'a'"):
        call_command("import_judge", study.slug, "gpt", str(good), "--run", "a")
    call_command("import_judge", study.slug, "gpt", str(good), "--run", "a", "--replace",
                 stdout=io.StringIO())
    assert JudgeAnswer.objects.count() == 3


# --- the API ----------------------------------------------------------------------------------


def test_the_api_creates_a_judge_uploads_and_deletes_a_run(study, key, alice):
    api = api_for(alice)
    base = f"/api/studies/{study.slug}/judges/"
    made = api.post(base, {"name": "gpt", "model": "gpt-4o", "temperature": 0}, format="json")
    assert made.status_code == 201, made.content
    pk = made.json()["id"]
    sent = api.post(f"{base}{pk}/runs/", {"file": SimpleUploadedFile("g.csv", scale_file(key)),
                                          "run": "r1"}, format="multipart")
    assert sent.status_code == 201 and sent.json()["answers"] == 3
    listed = api.get(base).json()
    judges = listed["results"] if isinstance(listed, dict) else listed
    assert judges[0]["runs"][0]["label"] == "r1" and judges[0]["runs"][0]["n_answers"] == 3
    bad = api.post(f"{base}{pk}/runs/", {"file": SimpleUploadedFile("g.csv", scale_file(key)),
                                         "run": "r1"}, format="multipart")
    assert bad.status_code == 400 and "already has run" in json.dumps(bad.json())
    run = judges[0]["runs"][0]["id"]
    assert api.delete(f"{base}{pk}/runs/{run}/").status_code == 204
    assert api.delete(f"{base}{pk}/").status_code == 204
    assert not Judge.objects.exists()


def test_the_api_keeps_read_tokens_viewers_and_strangers_out(study, key, alice, bob):
    from rest_framework.test import APIClient

    from tokens.services import token_create

    done = judge_answers_upload(study=study, name="gpt", data=scale_file(key), filename="g")
    base = f"/api/studies/{study.slug}/judges/"
    _, read_key = token_create(user=alice, name="read", days=7, scope="read")
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {read_key}")
    assert reader.get(base).status_code == 200
    assert reader.post(base, {"name": "x"}, format="json").status_code == 403
    assert reader.delete(f"{base}{done.judge.pk}/").status_code == 403
    stranger = api_for(bob)
    assert stranger.get(base).status_code == 404
    Membership.objects.create(study=study, user=bob, role="viewer")
    assert stranger.get(base).status_code == 200
    sent = stranger.post(f"{base}{done.judge.pk}/runs/",
                         {"file": SimpleUploadedFile("g.csv", scale_file(key)), "run": "2"},
                         format="multipart")
    assert sent.status_code == 403
    assert JudgeRun.objects.count() == 1
