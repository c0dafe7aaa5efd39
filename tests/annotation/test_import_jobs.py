"""Large browser uploads of responses and items are imported by a background job.

Over CONCORD_IMPORT_SYNC_MAX_BYTES the upload is kept under IMPORTS_DIR, an `ImportJob` runs
the same import as the page and the commands (same checks, same messages, nothing written on a
problem), its page shows the progress then the result; the kept file is deleted after the job.
A response file is checked by a first job (the preview), then imported by a second one.
Here the threshold is a few bytes and Celery runs eagerly; the last test uses a real worker.
"""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.models import Response
from imports.models import ImportJob
from imports.services import import_job_create, import_job_execute
from imports.tasks import run_import
from studies.models import Item
from studies.services import member_add
from tests.workers import require_worker_services, start_worker, stop_worker, wait_for

pytestmark = pytest.mark.django_db

ITEMS = "id,text\n" + "".join(f"p{n},Passage {n}.\n" for n in range(1, 5))
LONG = (b"annotator,item,value,duration_ms,position\n"
        b"w1,p1,3,1200,0\nw1,p2,4,900,1\nw2,p1,5,,0\nw2,p3,1,,1\n")
BROKEN = (b"annotator,item,value,duration_ms,position\n"
          b"w1,p1,3,1200,0\nw1,nope,4,900,1\nw2,p2,99,,0\nw1,p1,2,,0\n")


@pytest.fixture
def large(settings, tmp_path):
    """Every upload over 10 bytes goes to a job; kept files under tmp_path/imports."""
    settings.CONCORD_IMPORT_SYNC_MAX_BYTES = 10
    settings.IMPORTS_DIR = tmp_path / "imports"
    return settings.IMPORTS_DIR


@pytest.fixture
def eager():
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture
def study(alice, make_study):
    return make_study(alice, slug="big", items=ITEMS)


def post_responses(client, study, data=LONG, name="long.csv"):
    return client.post(f"/studies/{study.slug}/responses/import/",
                       {"file": SimpleUploadedFile(name, data), "format": "long"})


def kept(imports: Path) -> list[Path]:
    return sorted(imports.rglob("*")) if imports.exists() else []


def test_it_checks_then_imports_a_large_response_upload_in_jobs(
        alice_client, study, large, eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_responses(alice_client, study)
    check = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/studies/big/imports/{check.pk}/"
    assert (check.status, check.what, check.filename, check.dry_run) == (
        "done", "responses", "long.csv", True)
    assert Response.objects.count() == 0  # a preview: nothing stored yet
    page = alice_client.get(response["Location"]).content.decode()
    assert "long.csv holds 4 answers of 2 annotators; nothing is stored yet." in page
    assert 'data-summary="answers">4<' in page and "Confirm import" in page
    assert 'data-summary="merged"' not in page  # a long file's rows are never merged
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(f"/studies/big/imports/{check.pk}/confirm/")
    job = ImportJob.objects.latest("pk")
    assert response["Location"] == f"/studies/big/imports/{job.pk}/"
    assert (job.status, job.dry_run) == ("done", False)
    assert Response.objects.filter(participant__study=study).count() == 4
    page = alice_client.get(response["Location"]).content.decode()
    assert "Imported 4 answers of 2 annotators from long.csv." in page
    assert kept(large) == []  # the upload is deleted after the import


def test_a_double_confirm_imports_once(alice_client, study, large, eager,
                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_responses(alice_client, study)
    check = ImportJob.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(f"/studies/big/imports/{check.pk}/confirm/")
        again = alice_client.post(f"/studies/big/imports/{check.pk}/confirm/")
    assert again.status_code == 404
    assert ImportJob.objects.count() == 2 and Response.objects.count() == 4


def test_a_cancelled_check_deletes_the_kept_file(alice_client, study, large, eager,
                                                 django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_responses(alice_client, study)
    check = ImportJob.objects.get()
    assert [p.name for p in kept(large)] == [check.folder, "data"]
    assert alice_client.post(f"/studies/big/imports/{check.pk}/cancel/").status_code == 302
    assert kept(large) == [] and Response.objects.count() == 0
    assert alice_client.post(f"/studies/big/imports/{check.pk}/confirm/").status_code == 404


def test_it_lists_every_problem_of_a_large_file_and_imports_nothing(
        alice_client, study, large, eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_responses(alice_client, study, BROKEN, "broken.csv")
    job = ImportJob.objects.get()
    assert job.status == "failed" and job.error == "3 problems; nothing was imported."
    assert "Confirm import" not in alice_client.get(response["Location"]).content.decode()
    assert Response.objects.count() == 0 and kept(large) == []
    page = alice_client.get(response["Location"]).content.decode()
    assert "3 problems; nothing was imported" in page
    # The same messages as the page and the command: file, line, column.
    assert ("<td>broken.csv</td><td>3</td><td>item</td><td>&#x27;nope&#x27; is not an item id "
            "of this study</td>") in page
    assert "<td>broken.csv</td><td>4</td><td>value</td><td>&#x27;99&#x27; is not a value" in page
    assert "already has item &#x27;p1&#x27; at position 0 on line 2" in page


def test_an_unconfirmed_check_loses_its_file_after_a_day_to_the_hourly_sweep(
        alice_client, study, large, eager, django_capture_on_commit_callbacks, settings):
    """Celery beat sends `sweep_imports` every hour: a check nobody confirmed for a day loses
    its kept file, its page no longer offers Confirm import, and a late confirmation is a 404;
    a younger check keeps its file."""
    import os
    import time

    from imports.tasks import sweep_imports

    assert settings.CELERY_BEAT_SCHEDULE["imports-sweep"]["task"] == "imports.tasks.sweep_imports"
    with django_capture_on_commit_callbacks(execute=True):
        post_responses(alice_client, study, name="old.csv")
        post_responses(alice_client, study, name="new.csv")
    old, new = ImportJob.objects.order_by("pk")
    assert old.folder and new.folder
    day_ago = time.time() - 24 * 3600 - 60
    os.utime(large / old.folder, (day_ago, day_ago))
    assert sweep_imports() == 1
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.folder == "" and new.folder
    assert [p.name for p in large.iterdir()] == [new.folder]
    page = alice_client.get(f"/studies/big/imports/{old.pk}/").content.decode()
    assert "Confirm import" not in page and "deleted after a day unconfirmed" in page
    assert alice_client.post(f"/studies/big/imports/{old.pk}/confirm/").status_code == 404
    assert "Confirm import" in alice_client.get(f"/studies/big/imports/{new.pk}/").content.decode()


def test_it_checks_a_small_upload_at_once_and_keeps_it_as_a_job(
        alice_client, study, settings, tmp_path, django_capture_on_commit_callbacks):
    """One kept upload for every size: a small file is a job too, checked in the request (no
    task sent), previewed on the same page, imported at once on confirm."""
    settings.IMPORTS_DIR = tmp_path / "imports"
    with django_capture_on_commit_callbacks(execute=True) as sent:
        response = post_responses(alice_client, study)
    check = ImportJob.objects.get()
    assert sent == [] and (check.status, check.dry_run, check.sent_at) == ("done", True, None)
    assert response["Location"] == f"/studies/big/imports/{check.pk}/"
    assert [p.name for p in kept(settings.IMPORTS_DIR)] == [check.folder, "data"]
    page = alice_client.get(response["Location"]).content.decode()
    assert "Preview: long.csv" in page and "Confirm import" in page
    assert page.count("<tr><td>w") == 2  # the annotators listed
    with django_capture_on_commit_callbacks(execute=True) as sent:
        done = alice_client.post(f"/studies/big/imports/{check.pk}/confirm/")
    assert sent == [] and done["Location"] == "/studies/big/"
    assert ImportJob.objects.latest("pk").status == "done" and Response.objects.count() == 4
    assert kept(settings.IMPORTS_DIR) == []


def test_it_shows_the_progress_of_a_queued_job(alice_client, study, large):
    job = import_job_create(study=study, user=None, what="responses",
                            upload=SimpleUploadedFile("long.csv", LONG),
                            options={"fmt": "long"}, enqueue=False)
    page = alice_client.get(f"/studies/big/imports/{job.pk}/").content.decode()
    assert 'data-status="queued"' in page and "js/jobs." in page
    status = alice_client.get(f"/studies/big/imports/{job.pk}/status.json").json()
    assert (status["status"], status["progress"]) == ("queued", 0)
    assert [p.name for p in kept(large)] == [job.folder, "data"]


def test_it_records_progress_while_it_imports(study, large, monkeypatch):
    seen = []
    monkeypatch.setattr("imports.services.job_progress",
                        lambda **kwargs: seen.append(kwargs["progress"]))
    monkeypatch.setattr("imports.services.time.monotonic", iter(range(0, 1000, 10)).__next__)
    job = import_job_create(study=study, user=None, what="responses",
                            upload=SimpleUploadedFile("long.csv", LONG),
                            options={"fmt": "long"}, enqueue=False)
    assert import_job_execute(job_id=job.pk).status == "done"
    assert seen and all(1 <= p <= 99 for p in seen)


def test_it_imports_large_item_files_in_a_job(alice, alice_client, make_study, large, eager,
                                              django_capture_on_commit_callbacks):
    draft = make_study(alice, slug="draft", items=None, open=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post("/studies/draft/items/",
                                     {"file": SimpleUploadedFile("items.csv", ITEMS.encode())})
    job = ImportJob.objects.get()
    assert response["Location"] == f"/studies/draft/imports/{job.pk}/"
    assert (job.status, job.summary) == ("done", {"items": 4})
    assert Item.objects.filter(study=draft).count() == 4
    assert "Imported 4 items from items.csv." in alice_client.get(response["Location"]).content.decode()
    assert kept(large) == []


def test_it_refuses_a_file_over_the_browser_limit_before_keeping_it(alice_client, study, large,
                                                                   settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = 20
    response = post_responses(alice_client, study)
    assert response.status_code == 400
    assert "the limit is 20 bytes" in response.content.decode()
    assert not ImportJob.objects.exists() and kept(large) == []


def test_a_viewer_can_neither_start_nor_follow_an_import(alice, bob, study, large):
    member_add(study=study, username="bob", role="viewer", user=alice)
    viewer = Client()
    viewer.force_login(bob)
    assert post_responses(viewer, study).status_code in (403, 404)
    check = import_job_create(study=study, user=alice, what="responses", dry_run=True,
                              upload=SimpleUploadedFile("long.csv", LONG),
                              options={"fmt": "long"}, enqueue=False)
    assert import_job_execute(job_id=check.pk).status == "done"
    for tail in ("", "status.json"):
        assert viewer.get(f"/studies/big/imports/{check.pk}/{tail}").status_code in (403, 404)
    for tail in ("confirm/", "cancel/"):
        assert viewer.post(f"/studies/big/imports/{check.pk}/{tail}").status_code in (403, 404)
    assert ImportJob.objects.count() == 1 and kept(large) != []


def test_it_needs_the_csrf_token(alice, study, large):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert post_responses(client, study).status_code == 403
    assert not ImportJob.objects.exists()


def test_a_finished_job_is_not_run_again(study, large):
    job = import_job_create(study=study, user=None, what="responses",
                            upload=SimpleUploadedFile("long.csv", LONG),
                            options={"fmt": "long"}, enqueue=False)
    run_import.apply(args=[job.pk]).get()
    run_import.apply(args=[job.pk]).get()  # a redelivered message
    assert Response.objects.count() == 4
    assert ImportJob.objects.get().attempts == 1
    assert run_import.acks_late and run_import.reject_on_worker_lost


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_runs_an_import(tmp_path, alice, make_study, settings):
    require_worker_services()
    from config.celery import app

    app.control.purge()
    study = make_study(alice, slug="worker-import", items=ITEMS)
    worker = start_worker(tmp_path, "importer")
    try:
        job = import_job_create(study=study, user=alice, what="responses",
                                upload=SimpleUploadedFile("long.csv", LONG),
                                options={"fmt": "long"})
        done = wait_for(lambda: ImportJob.objects.filter(pk=job.pk, status="done").first(), 120,
                        "the import job to finish")
        assert done.summary["answers"] == 4 and done.attempts == 1 and done.folder == ""
        assert Response.objects.filter(participant__study=study).count() == 4
        assert not (Path(settings.IMPORTS_DIR) / job.folder).exists()
    finally:
        stop_worker(worker)
