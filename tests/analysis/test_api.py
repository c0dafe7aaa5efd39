"""Results API: latest document, runs listed, started and polled; owner-scoped; fixed queries."""

import pytest
from rest_framework.test import APIClient

from analysis.services import analysis_run_create, analysis_run_execute

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_it_serves_the_latest_results_document(api, alice, make_study):
    study = make_study(alice)
    assert api.get(f"/api/studies/{study.slug}/results/").status_code == 404
    run = analysis_run_create(study=study, enqueue=False)
    analysis_run_execute(run_id=run.pk)
    document = api.get(f"/api/studies/{study.slug}/results/").json()
    assert document["schema"] == "concord.results/3" and document["study"]["run"] == run.pk


def test_it_starts_and_polls_a_run(api, alice, make_study, django_capture_on_commit_callbacks):
    study = make_study(alice)
    with django_capture_on_commit_callbacks() as callbacks:
        created = api.post(f"/api/studies/{study.slug}/runs/", {"level": "interval"}, format="json")
    assert created.status_code == 201 and created.json()["status"] == "queued"
    assert created.json()["settings"]["level"] == "interval"
    assert len(callbacks) == 1  # the task is enqueued only after the commit
    run_id = created.json()["id"]
    analysis_run_execute(run_id=run_id)
    polled = api.get(f"/api/studies/{study.slug}/runs/{run_id}/").json()
    assert polled["status"] == "done" and polled["progress"] == 100
    assert [r["id"] for r in api.get(f"/api/studies/{study.slug}/runs/").json()["results"]] == [run_id]


def test_it_rejects_an_unknown_level(api, alice, make_study):
    study = make_study(alice)
    response = api.post(f"/api/studies/{study.slug}/runs/", {"level": "fancy"}, format="json")
    assert response.status_code == 400 and "level" in response.json()


def test_another_researcher_sees_nothing(alice, bob, make_study):
    study = make_study(alice)
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    client = APIClient()
    client.force_authenticate(bob)
    for url in (f"/api/studies/{study.slug}/results/", f"/api/studies/{study.slug}/runs/"):
        assert client.get(url).status_code == 404
    assert client.post(f"/api/studies/{study.slug}/runs/", {}, format="json").status_code == 404


def test_the_results_route_makes_a_fixed_number_of_queries(api, alice, make_study,
                                                            django_assert_num_queries):
    study = make_study(alice)
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    with django_assert_num_queries(2):  # the owner-scoped study, the newest results
        assert api.get(f"/api/studies/{study.slug}/results/").status_code == 200


def test_the_runs_routes_make_a_fixed_number_of_queries(api, alice, make_study,
                                                        django_assert_num_queries):
    study = make_study(alice)
    runs = [analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
            for _ in range(3)]
    # the owner-scoped study, the page count, the page of runs (their documents are not loaded)
    with django_assert_num_queries(3):
        listed = api.get(f"/api/studies/{study.slug}/runs/").json()
    assert [r["id"] for r in listed["results"]] == [r.pk for r in reversed(runs)]
    assert all("results" not in r for r in listed["results"])
    with django_assert_num_queries(2):  # the owner-scoped study, the run
        assert api.get(f"/api/studies/{study.slug}/runs/{runs[0].pk}/").json()["status"] == "done"
