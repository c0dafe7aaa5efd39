"""One job plumbing: every kind's task body (`jobs.tasks.job_task`) and its enqueue
(`jobs.services.job_enqueue`) are written once in `jobs`; no app's services import its tasks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create
from analysis.tasks import run_analysis
from exports.models import ExportJob
from exports.services import export_job_create
from exports.tasks import run_export
from imports.models import ImportJob
from imports.tasks import run_import, run_import_queued_before_the_move
from jobs.kinds import JOB_KINDS
from jobs.services import job_start

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function, relative ones resolved
    within its package."""
    package = path.parent.name
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return found


def test_no_services_module_imports_its_own_tasks():
    services = sorted(ROOT.glob("*/services.py"))
    assert {p.parent.name for p in services} >= {"analysis", "exports", "annotation", "imports", "jobs"}
    found = [str(p.relative_to(ROOT)) for p in services
             if f"{p.parent.name}.tasks" in imported_modules(p)]
    assert found == []


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "analysis" / "services.py"
    module.parent.mkdir()
    module.write_text("def send():\n    from .tasks import run_analysis\n")
    assert "analysis.tasks" in imported_modules(module)


@pytest.mark.parametrize(("task", "name"), [
    (run_analysis, "analysis.tasks.run_analysis"),
    (run_export, "exports.tasks.run_export"),
    (run_import, "imports.tasks.run_import"),
    # A message queued before the import task moved from annotation still runs.
    (run_import_queued_before_the_move, "annotation.tasks.run_import"),
])
def test_every_job_task_keeps_its_name_and_its_delivery_options(task, name):
    assert task.name == name
    assert task.acks_late and task.reject_on_worker_lost and task.ignore_result
    assert task.max_retries is None


def test_every_kind_registers_its_task():
    assert {AnalysisRun, ExportJob, ImportJob} <= set(JOB_KINDS)


@pytest.mark.django_db
def test_a_new_job_is_sent_through_its_kind_after_the_commit(
        alice, make_study, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    for model in (AnalysisRun, ExportJob):
        monkeypatch.setitem(JOB_KINDS, model, lambda job_id, delivery, _m=model:
                            sent.append((_m.__name__, job_id, delivery)))
    study = make_study(alice, slug="plumbing")
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_create(study=study)
        export = export_job_create(study=study, what="items", fmt="csv")
        assert sent == []  # not before the commit
    assert sent == [("AnalysisRun", run.pk, 1), ("ExportJob", export.pk, 1)]
    assert run.deliveries == 1 and run.sent_at is not None


@pytest.mark.django_db
def test_the_task_skips_a_superseded_delivery_and_a_finished_job(alice, make_study,
                                                                 monkeypatch):
    ran = []
    monkeypatch.setattr("exports.tasks.export_job_execute", lambda job_id: ran.append(job_id))
    job = export_job_create(study=make_study(alice, slug="skip"), what="items", fmt="csv",
                            enqueue=False)
    ExportJob.objects.filter(pk=job.pk).update(deliveries=2)
    run_export.apply(args=[job.pk], kwargs={"delivery": 1}).get()  # superseded
    assert ran == []
    run_export.apply(args=[job.pk], kwargs={"delivery": 2}).get()
    assert ran == [job.pk]
    job_start(model=ExportJob, job_id=job.pk, message="running")
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.DONE)
    run_export.apply(args=[job.pk], kwargs={"delivery": 2}).get()
    assert ran == [job.pk]
