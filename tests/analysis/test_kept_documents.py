"""The pages that read a finished run's document keep it decoded per process
(`analysis.selectors.run_document`): they must read the stored document, never change it, and a
new run is read anew."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.models import AnalysisRun
from analysis.selectors import KEPT_DOCUMENTS, latest_run, run_document
from analysis.services import analysis_run_create, analysis_run_execute

pytestmark = pytest.mark.django_db


def _pages(client, slug: str, document: dict) -> list[bytes]:
    """Every view of the dashboard the document offers, its charts and an annotator's page."""
    base = f"/studies/{slug}/results/"
    urls = [base, f"{base}?annotators=all"]
    for question in document.get("questions", []):
        for scale in question["scales"]:
            urls.append(f"{base}?question={question['key']}&scale={scale['name']}")
            urls.append(f"{base}?question={question['key']}&scale={scale['name']}"
                        "&annotators=all")
    if document.get("annotators"):
        urls.append(f"{base}annotators/{document['annotators'][0]}/")
    pages = []
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        pages.append(response.content)
    return pages


def test_the_kept_document_is_the_stored_one_and_no_page_changes_it(demo_studies, client):
    user, created = demo_studies
    study = next(d.study for d in created if d.study.slug == "demo-systems")
    client.force_login(user)
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    run = latest_run(study=study)
    stored = run.results
    first = _pages(client, study.slug, stored)
    kept = latest_run(study=study, kept=True)
    assert kept.results == stored  # every view rendered: the kept document is unchanged
    assert kept.results is run_document(run_id=run.pk, finished_at=run.finished_at)
    again = _pages(client, study.slug, stored)
    strip = [page.split(b"csrfmiddlewaretoken")[0] for page in first]
    assert [page.split(b"csrfmiddlewaretoken")[0] for page in again] == strip


def test_a_kept_document_costs_no_query_and_a_new_run_is_read(demo_studies):
    study = next(d.study for d in demo_studies[1] if d.study.slug == "demo-systems")
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    run = latest_run(study=study, kept=True)
    with CaptureQueriesContext(connection) as read:
        again = latest_run(study=study, kept=True)
    assert len(read.captured_queries) == 1 and "results" not in read.captured_queries[0]["sql"]
    assert again.results is run.results
    newer = AnalysisRun.objects.create(
        study=study, status=AnalysisRun.Status.DONE, finished_at=run.finished_at,
        settings=run.settings, results={**run.results, "study": {"slug": "newer"}})
    assert latest_run(study=study, kept=True).results["study"] == {"slug": "newer"}
    newest = [AnalysisRun.objects.create(study=study, status=AnalysisRun.Status.DONE,
                                         finished_at=newer.finished_at, settings=run.settings,
                                         results={"n": n})
              for n in range(KEPT_DOCUMENTS)]
    assert [latest_run(study=study, kept=True).results for _ in newest[:1]] == [{"n": 1}]
    for old in newest:  # more documents than are kept: the least recently read is forgotten
        run_document(run_id=old.pk, finished_at=old.finished_at)
    with CaptureQueriesContext(connection) as read:
        assert run_document(run_id=newer.pk, finished_at=newer.finished_at)["study"] == {
            "slug": "newer"}
    assert len(read.captured_queries) == 1
