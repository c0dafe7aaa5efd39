"""System-level metric scores of a study: the service (all or nothing, replacing the metrics a
file names), the command, the page (editors upload, viewers read) and the API (docs/systems.md)."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from core.problems import InputError
from studies.models import StudyEvent, SystemScore
from studies.services import (
    member_add,
    study_archive,
    study_clone,
    system_scores_delete,
    system_scores_import,
)
from tests.studies.test_systems import SYSTEMS_CSV, api_for

pytestmark = pytest.mark.django_db

SCORES = b"system,metric,value\nsys-A,BLEU,31.5\nsys-B,BLEU,28\nsys-A,chrF,55\nsys-B,chrF,51\n"


@pytest.fixture
def study(make_study, alice):
    return make_study(alice, slug="systems", items=SYSTEMS_CSV, open=False)


def stored(study) -> list[tuple[str, str, float]]:
    return sorted(study.system_scores.values_list("metric", "system", "value"))


def test_it_stores_the_scores_and_records_the_import(study, alice):
    done = system_scores_import(study=study, data=SCORES, filename="scores.csv", user=alice)
    assert (done.rows, done.metrics, done.replaced) == (4, ["BLEU", "chrF"], 0)
    assert stored(study) == [("BLEU", "sys-A", 31.5), ("BLEU", "sys-B", 28.0),
                             ("chrF", "sys-A", 55.0), ("chrF", "sys-B", 51.0)]
    assert StudyEvent.objects.get(study=study, action="system_scores").detail == {
        "metrics": ["BLEU", "chrF"], "rows": 4, "skipped": 0}


def test_a_file_replaces_only_the_metrics_it_names(study):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    done = system_scores_import(study=study, data=b"system,metric,value\nsys-A,BLEU,40\n",
                                filename="again.csv")
    assert done.replaced == 2
    assert stored(study) == [("BLEU", "sys-A", 40.0), ("chrF", "sys-A", 55.0),
                             ("chrF", "sys-B", 51.0)]


def test_a_bad_file_changes_nothing(study):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    before = stored(study)
    with pytest.raises(InputError) as caught:
        system_scores_import(study=study, data=b"system,metric,value\nsys-A,BLEU,1\n"
                                                b"sys-A,BLEU,2\n", filename="dup.csv")
    assert caught.value.problems[0].line == 3
    assert stored(study) == before


def test_a_study_without_systems_takes_no_scores(make_study, alice):
    plain = make_study(alice, slug="plain", open=False)
    with pytest.raises(InputError, match="no item of this study names a system"):
        system_scores_import(study=plain, data=SCORES, filename="scores.csv")


def test_an_archived_study_takes_no_scores(study, alice):
    study_archive(study=study, archived=True, user=alice)
    with pytest.raises(InputError, match="archived"):
        system_scores_import(study=study, data=SCORES, filename="scores.csv")


def test_scores_are_deleted_one_metric_at_a_time(study):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    assert system_scores_delete(study=study, metric="BLEU") == 2
    assert {m for m, _, _ in stored(study)} == {"chrF"}
    with pytest.raises(InputError):
        system_scores_delete(study=study, metric="BLEU")


def test_a_clone_keeps_the_scores(study, alice):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    clone = study_clone(study=study, slug="systems-copy", user=alice)
    assert stored(clone) == stored(study)


def test_the_command_imports_and_reports_skipped_rows(study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_bytes(SCORES + b"sys-Z,BLEU,1\n")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_system_scores", "systems", str(path), stdout=out, stderr=err)
    assert "Imported 4 system-level scores of BLEU, chrF into 'systems'" in out.getvalue()
    assert "1 row(s) skipped" in err.getvalue() and "sys-Z" in err.getvalue()


def test_the_command_names_every_problem(study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_bytes(b"system,metric,value\nsys-A,BLEU,x\n")
    with pytest.raises(CommandError, match=r"scores.csv:2: column value: .x. is not a finite"):
        call_command("import_system_scores", "systems", str(path), stdout=io.StringIO())
    assert not SystemScore.objects.exists()


def test_an_editor_uploads_on_the_page_and_sees_the_table(study, alice_client):
    url = "/studies/systems/system-scores/"
    reply = alice_client.post(url, {"file": SimpleUploadedFile(
        "scores.csv", SCORES + b"sys-Z,BLEU,1\n")}, follow=True)
    page = reply.content.decode()
    assert reply.redirect_chain[-1][0] == url
    assert "Imported 4 system-level scores of BLEU, chrF from scores.csv." in page
    assert "sys-Z" in page  # the skipped row's warning
    assert '<th scope="row">sys-A</th>' in page and "31.5" in page


def test_the_page_lists_every_problem_and_changes_nothing(study, alice_client):
    reply = alice_client.post("/studies/systems/system-scores/", {"file": SimpleUploadedFile(
        "bad.csv", b"system,metric,value\nsys-A,BLEU,x\nsys-B,,1\n")})
    assert reply.status_code == 400
    page = reply.content.decode()
    assert "bad.csv: nothing was imported" in page and "empty metric" in page
    assert not SystemScore.objects.exists()


def test_a_viewer_reads_the_scores_but_cannot_upload(study, alice, bob, client):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    member_add(study=study, username=bob.username, role="viewer", user=alice)
    client.force_login(bob)
    page = client.get("/studies/systems/system-scores/").content.decode()
    assert "31.5" in page and 'id="scores-form"' not in page
    assert client.post("/studies/systems/system-scores/", {
        "file": SimpleUploadedFile("s.csv", SCORES)}).status_code == 403
    assert client.post("/studies/systems/system-scores/delete/",
                       {"metric": "BLEU"}).status_code == 403


def test_the_page_deletes_a_metric(study, alice_client):
    system_scores_import(study=study, data=SCORES, filename="scores.csv")
    reply = alice_client.post("/studies/systems/system-scores/delete/", {"metric": "chrF"})
    assert reply.status_code == 302
    assert {m for m, _, _ in stored(study)} == {"BLEU"}


def test_a_stranger_gets_404(study, bob, client):
    client.force_login(bob)
    assert client.get("/studies/systems/system-scores/").status_code == 404


def test_the_items_page_links_to_the_scores(study, alice_client):
    page = alice_client.get("/studies/systems/items/").content.decode()
    assert 'href="/studies/systems/system-scores/"' in page


def test_the_api_lists_and_uploads_scores(study, alice):
    api = api_for(alice)
    reply = api.post("/api/studies/systems/system-scores/",
                     {"file": SimpleUploadedFile("s.csv", SCORES + b"sys-Z,BLEU,1\n")},
                     format="multipart")
    assert reply.status_code == 201
    body = reply.json()
    assert (body["imported"], body["metrics"], body["replaced"]) == (4, ["BLEU", "chrF"], 0)
    assert body["skipped"][0]["line"] == 6
    listed = api.get("/api/studies/systems/system-scores/", {"metric": "chrF"}).json()
    assert listed["results"] == [{"system": "sys-A", "metric": "chrF", "value": 55.0},
                                 {"system": "sys-B", "metric": "chrF", "value": 51.0}]


def test_the_api_names_the_problems_of_a_bad_file(study, alice):
    reply = api_for(alice).post(
        "/api/studies/systems/system-scores/",
        {"file": SimpleUploadedFile("s.csv", b"system,metric,value\nsys-A,BLEU,1\nsys-A,BLEU,2\n")},
        format="multipart")
    assert reply.status_code == 400
    assert reply.json()["problems"][0]["line"] == 3
    missing = api_for(alice).post("/api/studies/systems/system-scores/", {}, format="multipart")
    assert missing.status_code == 400
