"""Deleting a participant (withdrawal of consent) leaves nothing of theirs behind."""

import pytest

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create
from annotation.models import Answer, Response
from exports.models import ExportJob
from exports.selectors import export_job_file
from exports.services import export_job_create, export_job_execute
from studies.models import Assignment, Membership, Participant, StudyEvent
from studies.selectors import pseudonyms
from studies.services import participant_delete, participant_exclude, participants_invite
from tests.answers import submit

pytestmark = pytest.mark.django_db


def export(study, what):
    job = export_job_create(study=study, what=what, fmt="csv", enqueue=False)
    export_job_execute(job_id=job.pk)
    job.refresh_from_db()
    path = export_job_file(job=job)
    assert path is not None and path.is_file()
    return job, path


@pytest.fixture
def answered(make_study, alice, settings, tmp_path):
    settings.EXPORTS_DIR = str(tmp_path / "exports")
    study = make_study(alice, slug="withdraw")
    people = participants_invite(study=study, count=3)
    old_job, old_file = export(study, "items")  # finished before anyone answered
    for person in people:
        for position in range(2):
            submit(person, position=position, value=position + 2)
    return study, people, old_file


def test_it_deletes_every_answer_and_every_file_that_holds_them(
        answered, alice, django_capture_on_commit_callbacks):
    study, (a, b, c), old_file = answered
    job, new_file = export(study, "responses")
    assert b"A2" in new_file.read_bytes()
    analysis_run_create(study=study, enqueue=False)
    participant_exclude(study=study, pseudonym="A2", excluded=True)
    before = pseudonyms(study=study)
    with django_capture_on_commit_callbacks(execute=True):
        counts = participant_delete(participant=b, user=alice)
    assert counts == {"pseudonym": "A2", "responses": 2, "answers": 2, "analysis_runs": 1,
                      "exports": 1}
    assert not Participant.objects.filter(pk=b.pk).exists()
    assert not Response.objects.filter(participant_id=b.pk).exists()
    assert not Assignment.objects.filter(participant_id=b.pk).exists()
    assert Answer.objects.count() == 4  # the others' answers stay
    assert not new_file.exists() and not ExportJob.objects.filter(pk=job.pk).exists()
    assert old_file.exists()  # made before their first answer: it cannot hold it
    assert not AnalysisRun.objects.filter(study=study).exists()
    after = pseudonyms(study=study)
    assert after == {a.pk: before[a.pk], c.pk: before[c.pk]} == {a.pk: "A1", c.pk: "A3"}
    study.refresh_from_db()
    assert "A2" not in study.analysis_settings.get("excluded_annotators", [])
    event = StudyEvent.objects.get(study=study, action="participant_delete")
    assert event.user == alice and event.detail == counts
    # A new annotator does not take the freed pseudonym.
    (d,) = participants_invite(study=study, count=1)
    submit(d)
    assert pseudonyms(study=study)[d.pk] == "A4"


def test_the_page_asks_first_and_needs_an_editor(answered, client, alice, bob):
    study, (a, b, c), _ = answered
    url = f"/studies/{study.slug}/participants/{b.pk}/delete/"
    Membership.objects.create(study=study, user=bob, role=Membership.Role.VIEWER)
    client.force_login(bob)
    assert client.get(url).status_code == 403
    client.force_login(alice)
    page = client.get(url)
    assert page.status_code == 200 and b"A2" in page.content and b"withdrawal" in page.content
    assert client.post(url).status_code == 400  # not confirmed on the page
    assert Participant.objects.filter(pk=b.pk).exists()
    assert client.post(url, {"confirm": "delete"}).status_code == 302
    assert not Participant.objects.filter(pk=b.pk).exists()
    assert client.get(url).status_code == 404
    other = f"/studies/{study.slug}/participants/999999/delete/"
    assert client.post(other, {"confirm": "delete"}).status_code == 404


def test_the_api_deletes_too(answered, client, alice):
    study, (a, b, c), _ = answered
    client.force_login(alice)
    url = f"/api/studies/{study.slug}/participants/{c.pk}/delete/"
    reply = client.post(url)
    assert reply.status_code == 200 and reply.json()["pseudonym"] == "A3"
    assert reply.json()["answers"] == 2
    assert client.post(url).status_code == 404
    assert set(pseudonyms(study=study).values()) == {"A1", "A2"}
