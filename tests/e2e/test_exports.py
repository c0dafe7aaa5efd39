"""The researcher exports a large study in the background: the job page follows the progress."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from exports.models import ExportJob
from exports.services import export_job_execute
from studies.models import Participant
from tests.answers import store

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_background_export_shows_progress_then_the_download(
        live_server, page, alice, make_study, settings, tmp_path, monkeypatch):
    settings.EXPORTS_DIR = tmp_path / "exports"
    queued = []
    import exports.tasks

    monkeypatch.setattr(exports.tasks, "run_export", type("Task", (), {
        "apply_async": staticmethod(lambda args, kwargs: queued.append((args[0], kwargs)))}))
    study = make_study(alice, slug="big")
    annotator = Participant.objects.create(study=study, source="import", external_id="x")
    for n, item in enumerate(study.items.order_by("position")):
        store(annotator, item, n, position=n)
    login(page, live_server.url, "alice", "alice-password-1")

    page.goto(f"{live_server.url}/studies/{study.slug}/exports/responses.csv?background=1")
    page.get_by_role("button", name="Prepare the file").click()
    expect(page.get_by_role("status")).to_contain_text("Queued")
    job = ExportJob.objects.get()
    assert queued == [(job.pk, {"delivery": 1})]  # sent once, after the commit

    export_job_execute(job_id=job.pk)  # the worker's part; the page polls and reloads
    link = page.locator("#export-download")
    expect(link).to_be_visible(timeout=10_000)
    expect(page.get_by_role("progressbar")).to_have_attribute("value", "100")
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "download.csv"
    download.value.save_as(saved)
    assert download.value.suggested_filename == "big-responses.csv"
    lines = Path(saved).read_text().splitlines()
    assert lines[0].startswith("annotator,item,presentation") and len(lines) == 6
    assert page.csp_violations == []
