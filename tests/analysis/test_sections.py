"""The analysis fanned out (analysis/sections.py): a run's section groups as Celery tasks, the
document the one a single process builds, each task's time recorded.

The chord runs eagerly here (in this process); tests/analysis/test_worker.py runs it on a real
worker.  The group and assembly tasks are also called one by one, as a broker would deliver (or
redeliver) them.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from analysis import fanout, sections, tasks
from analysis.models import AnalysisRun, RunBlob, RunTask
from analysis.selectors import full_document, study_questions
from analysis.services import analysis_run_create, analysis_run_execute
from core.results import section_groups
from demo.services import demo_seed
from judges.selectors import study_has_judges
from tests.analysis.test_fanout import eager, rated_study  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def comparable(document: dict) -> dict:
    """The full document without what differs between two runs of the same answers."""
    doc = full_document(document=document)
    doc = {k: v for k, v in doc.items() if k != "generated_at"}
    doc["study"] = {k: v for k, v in doc["study"].items() if k != "run"}
    return doc


def in_process(study, **kw):
    run = analysis_run_create(study=study, enqueue=False, **kw)
    return analysis_run_execute(run_id=run.pk)


def fanned(study, **kw):
    run = analysis_run_create(study=study, enqueue=False, **kw)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def fan_on(settings):
    settings.CONCORD_ANALYSIS_FANOUT = "on"
    return settings


@pytest.fixture
def rated(make_study, alice):
    return rated_study(make_study, alice, annotators=6, items=20, slug="sections")


def test_the_demo_studies_fanned_out_give_the_same_documents(eager, fan_on):  # noqa: F811
    _, demos = demo_seed()
    for demo in demos:
        expected = in_process(demo.study)
        run = fanned(demo.study)
        assert run.status == "done", run.error
        assert comparable(run.results) == comparable(expected.results), demo.study.slug
        names = list(RunTask.objects.filter(run=run).values_list("name", flat=True))
        if study_has_judges(study=demo.study):  # the systems demo: built in one task
            assert names == [] and run.results["judges"], demo.study.slug
            continue
        assert names[0] == "plan" and names[-1] == "assemble"
        assert any(n.startswith("competence:") for n in names)
        assert not RunBlob.objects.filter(run=run).exists()  # the snapshot is gone


def test_a_synthetic_study_fanned_out_with_exclusions_and_the_timings(eager, fan_on, rated,  # noqa: F811
                                                                     client, alice):
    overrides = {"excluded_annotators": ["A2"], "bootstrap_samples": 50}
    expected = in_process(rated, overrides=overrides)
    run = fanned(rated, overrides=overrides)
    assert run.status == "done" and run.progress == 100 and run.attempts == 1
    assert comparable(run.results) == comparable(expected.results)
    assert run.results["counts"]["excluded_annotators"] == 1
    rows = {t.name: t for t in RunTask.objects.filter(run=run)}
    groups = [t for t in rows.values() if t.group and "family" in t.group]
    scales = 1 + len(study_questions(study=rated)[0].reductions)
    assert scales >= 2 and len(groups) == 1 + scales * 5 + 1  # study, 5 families a scale, filtering
    assert all(t.done_at and t.seconds is not None and t.depends == ["plan"] for t in groups)
    assert rows["assemble"].depends == [t.name for t in groups] and rows["assemble"].seconds
    f = run.timings["fanout"]
    work = sum(t.seconds for t in rows.values())
    assert f["tasks"] == len(rows) and abs(f["work_s"] - work) < 1e-3
    assert f["critical_path"][0] == "plan" and f["critical_path"][-1] == "assemble"
    longest = max(t.seconds for t in groups)
    expect = rows["plan"].seconds + longest + rows["assemble"].seconds
    assert abs(f["critical_path_s"] - expect) < 1e-3 and f["critical_path_s"] <= f["work_s"]
    assert run.timings["sections_s"]["competence"] > 0 and run.timings["load_s"] is not None
    client.force_login(alice)  # the run's page says what a cluster would take
    page = client.get(reverse("analysis:dashboard", args=[rated.slug])).content.decode()
    assert 'id="run-fanout"' in page and f"{f['tasks']} tasks shared by the workers" in page


def test_off_and_auto_stay_in_process(eager, settings, rated):  # noqa: F811
    settings.CONCORD_ANALYSIS_FANOUT = "off"
    run = fanned(rated)
    assert run.status == "done" and not RunTask.objects.filter(run=run).exists()
    settings.CONCORD_ANALYSIS_FANOUT = "auto"  # eager, and a small study: in process
    run = fanned(rated)
    assert run.status == "done" and not RunTask.objects.filter(run=run).exists()
    data = study_questions(study=rated)
    assert not sections.fan_out(data=data)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS = 1
    from django.db import connection
    assert sections.fan_out(data=data) == (connection.vendor == "postgresql")


def test_tasks_delivered_one_by_one_and_again_store_once(fan_on, rated, monkeypatch):
    sent = []
    monkeypatch.setattr("analysis.fanout.sections_send",
                        lambda *, run_id, names: sent.append(names)
                        or sections.sections_mark_sent(run_id=run_id))
    run = analysis_run_create(study=rated, enqueue=False)
    tasks.run_analysis(run.pk)
    names = sent[0]
    fanout.analysis_run_start(run_id=run.pk)  # a redelivered start sends nothing
    assert len(sent) == 1
    first = sections.section_compute(run_id=run.pk, name=names[1])
    again = sections.section_compute(run_id=run.pk, name=names[1])
    assert first["computed"] and again["skipped"] == "already stored"
    assert RunBlob.objects.filter(run=run, name=f"part:{names[1]}").count() == 1
    run.refresh_from_db()
    assert run.status == "running" and 5 < run.progress < 90
    # The other groups' tasks were lost: the assembly computes them, and the document is right.
    done = sections.sections_assemble(run_id=run.pk)
    assert done.status == "done" and len(done.timings["sections_fallback"]) == len(names) - 1
    assert comparable(done.results) == comparable(in_process(rated).results)
    assert sections.section_compute(run_id=run.pk, name=names[2])["skipped"] == \
        "the run is not running"
    assert sections.sections_assemble(run_id=run.pk).status == "done"  # redelivered: nothing


def test_a_failed_group_fails_the_run(eager, fan_on, rated, monkeypatch):  # noqa: F811
    def boom(*args, **kwargs):
        raise RuntimeError("a group went wrong")

    monkeypatch.setattr(sections, "group_part", boom)
    run = analysis_run_create(study=rated, enqueue=False)
    with pytest.raises(RuntimeError):
        tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and "a group went wrong" in run.error


def test_analyze_fanout_runs_the_protocol_here_and_prints_the_critical_path(rated, tmp_path):
    err = io.StringIO()
    call_command("analyze", rated.slug, "--fanout", "--output", str(tmp_path / "r.json"),
                 stderr=err)
    run = AnalysisRun.objects.filter(study=rated).latest("id")
    groups = section_groups(study_questions(study=rated))
    assert run.status == "done" and RunTask.objects.filter(run=run).count() == len(groups) + 2
    assert "critical path" in err.getvalue() and "total work" in err.getvalue()
    assert comparable(run.results) == comparable(in_process(rated).results)
