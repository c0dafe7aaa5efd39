"""Exports through the API with a token: start a job, poll it, download the file."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from exports.models import ExportJob
from exports.services import export_job_execute
from studies.models import Membership
from tests.answers import submit
from tokens.services import token_create

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    _, key = token_create(user=user, name="script", days=7)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_it_starts_polls_and_downloads_an_export(alice, make_study,
                                                 django_capture_on_commit_callbacks):
    from studies.services import participants_invite

    study = make_study(alice, slug="ex")
    submit(participants_invite(study=study, count=1)[0])
    api = api_for(alice)
    with django_capture_on_commit_callbacks(execute=False):
        started = api.post("/api/studies/ex/exports/", {"what": "responses"}, format="json")
    assert started.status_code == 202, started.content
    job = started.json()
    assert (job["status"], job["what"], job["format"]) == ("queued", "responses", "csv")
    assert api.get(f"/api/studies/ex/exports/{job['id']}/download/").status_code == 404
    export_job_execute(job_id=job["id"])  # what the worker does
    polled = api.get(f"/api/studies/ex/exports/{job['id']}/").json()
    assert polled["status"] == "done" and polled["rows"] == 1
    body = b"".join(api.get(polled["download_url"]).streaming_content)
    assert body.startswith(b"annotator,item") and body.count(b"\n") == 2


@pytest.mark.parametrize("body, problem", [
    ({"what": "everything"}, "what"),
    ({"what": "responses", "format": "xlsx"}, "format"),
    ({}, "what"),
])
def test_it_names_a_bad_request(alice, make_study, body, problem):
    make_study(alice, slug="ex")
    reply = api_for(alice).post("/api/studies/ex/exports/", body, format="json")
    assert reply.status_code == 400 and problem in reply.json()
    assert not ExportJob.objects.exists()


def test_a_viewer_may_export_and_a_stranger_sees_nothing(alice, bob, django_user_model,
                                                         make_study):
    study = make_study(alice, slug="ex")
    Membership.objects.create(study=study, user=bob, role="viewer")
    dave = django_user_model.objects.create_user("dave", "d@example.org", "dave-pw-1")
    assert api_for(bob).post("/api/studies/ex/exports/", {"what": "items"},
                             format="json").status_code == 202
    job = ExportJob.objects.get()
    assert api_for(dave).post("/api/studies/ex/exports/", {"what": "items"},
                              format="json").status_code == 404
    assert api_for(dave).get(f"/api/studies/ex/exports/{job.pk}/").status_code == 404
