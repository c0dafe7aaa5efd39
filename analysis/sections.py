"""The analysis fanned out: the section groups of one run as Celery tasks any number of workers
share, each task's time recorded, the document the one a single process builds.

A run of many answers on PostgreSQL (``CONCORD_ANALYSIS_FANOUT``, `fan_out`) whose trust does
not fan out (`analysis.fanout`) is computed in three steps, the chord of the trust fan-out
with other tasks:

1. **plan** (`sections_plan_create`, in the run's task, after loading the answers once): the
   questions prepared as the analyses see them (the excluded annotators left out, the simple
   items), stored in the database as ``RunBlob`` pieces (`core.results.groups`: one per question,
   the study-wide rows, the document's head, the items); one `RunTask` row per section group
   (`core.results.section_groups`: the study's; per question × scale the agreement, each
   competence model, the spread, the systems; per question the filtering; the comparisons), one
   for the plan (its seconds: loading and planning) and one for the assembly; the run marked
   running (5 %).  `sections_send` sends the chord (every group, then the assembly; an errback
   fails the run) and stamps the plan's ``sent_at``, so that a redelivered start sends nothing.
2. **group** (`section_compute`, one task per group): read its question and, for the study's
   and the filtering groups, the study's rows; compute its part of the document
   (`core.results.group_part`) and store it with its seconds and worker, once (the row is
   locked; a redelivered task whose part is stored does nothing); the run's progress moves
   towards 90 %.  A group never loads the study.
3. **assemble** (`sections_assemble`, the chord's body): read the parts in the groups' order
   and put them together (`core.results.assemble`: the document and the item records
   `build_results_split` gives, value for value); a part that is missing (never stored) is
   computed here; store the run as an in-process run is stored; record its own seconds, the
   run's total work and critical path (``timings["fanout"]``), and delete the blobs.

The document describes the answers as they were when the plan loaded them, as a run computed
in one process describes them as they were when it loaded them: every task reads that
snapshot, never the answers as they are later.  Every task is idempotent and ``acks_late`` (a
lost worker's task is redelivered).  `analysis_run_fanned_here` runs the three steps in this
process (``manage.py analyze --fanout``, the benches): each task timed as a worker would time it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.data import QuestionData
from core.results import (
    Group,
    Part,
    assemble,
    document_head,
    group_part,
    prepare_questions,
    section_groups,
    study_rows,
)
from core.results.build import mean_ratings
from core.results.comparisons import Judgments
from core.results.groups import (
    critical_path,
    head_bytes,
    head_from_bytes,
    judgments_bytes,
    judgments_from_bytes,
    part_bytes,
    part_from_bytes,
    question_bytes,
    question_from_bytes,
    rows_bytes,
    rows_from_bytes,
)
from jobs.services import job_start
from judges.selectors import study_has_judges

from .models import AnalysisRun, RunBlob, RunTask
from .selectors import study_checks, study_judgments
from .services import analysis_run_fail, analysis_run_store, peak_rss_mb

PROGRESS = (5, 90)  # the groups move a run from 5 % to 90 %; the assembly to 100 %
PLAN, ASSEMBLE = "plan", "assemble"


def fan_out(*, data: list[QuestionData]) -> bool:
    """Whether a run on these questions fans its sections out (``CONCORD_ANALYSIS_FANOUT``):
    "on", "off", or "auto" — on PostgreSQL, with a broker (not eager), from
    ``CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS`` answers (every question's together)."""
    if not data:
        return False  # comparative questions only: one small task
    mode = django_settings.CONCORD_ANALYSIS_FANOUT
    if mode != "auto":
        return mode == "on"
    if connection.vendor != "postgresql" or django_settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    answers = sum(int(np.count_nonzero(~np.isnan(q.data.value))) for q in data)
    return answers >= int(django_settings.CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS)


# --------------------------------------------------------------------------- blobs


def blob_store(*, run_id: int, name: str, data: bytes) -> None:
    """Store ``data`` under ``name`` in pieces (replacing what was there)."""
    RunBlob.objects.filter(run=run_id, name=name).delete()
    size = RunBlob.PIECE
    RunBlob.objects.bulk_create([RunBlob(run_id=run_id, name=name, seq=n, data=data[at:at + size])
                                 for n, at in enumerate(range(0, max(len(data), 1), size))])


def blob_read(*, run_id: int, name: str) -> bytes | None:
    """The bytes stored under ``name`` (None: none)."""
    pieces = list(RunBlob.objects.filter(run=run_id, name=name).order_by("seq")
                  .values_list("data", flat=True))
    return b"".join(bytes(p) for p in pieces) if pieces else None


def _needed(run_id: int, name: str) -> bytes:
    data = blob_read(run_id=run_id, name=name)
    if data is None:
        raise RuntimeError(f"run {run_id}: the plan's {name!r} is gone")
    return data


# --------------------------------------------------------------------------- 1. plan


def sections_plan_create(*, run: AnalysisRun, data: list[QuestionData], load_s: float,
                         began: float) -> list[str]:
    """Plan a run's section groups (the answers ``data`` loaded in ``load_s`` from ``began``, a
    `time.perf_counter`); return the names of the group tasks to send."""
    s = run.analysis
    study = run.study
    checks = study_checks(study=study)
    judged = [j.without_annotators(s.excluded_annotators)
              for j in study_judgments(study=study)]
    prepared = prepare_questions(data, settings=s)
    head, records = document_head(prepared, s, {"slug": study.slug, "title": study.title,
                                                "run": run.pk, "code_version": run.code_version},
                                  checks)
    groups = section_groups(data, comparisons=bool(judged))
    blobs = {f"question:{q.key}": question_bytes(q, p)
             for q, p in zip(data, prepared, strict=True)}
    blobs["rows"] = rows_bytes(study_rows(prepared), checks)
    blobs["head"] = head_bytes(head, records)
    if judged:
        blobs["judgments"] = judgments_bytes(judged, mean_ratings(prepared))
    now = timezone.now()
    with transaction.atomic():
        RunBlob.objects.filter(run=run).delete()  # of an earlier attempt
        RunTask.objects.filter(run=run).delete()
        for name, value in blobs.items():
            blob_store(run_id=run.pk, name=name, data=value)
        names = [g.name for g in groups]
        plan_s = time.perf_counter() - began
        RunTask.objects.bulk_create(
            [RunTask(run=run, name=PLAN, seconds=round(plan_s, 4), host=socket.gethostname(),
                     started_at=now, done_at=now, group={"load_s": round(load_s, 4)})]
            + [RunTask(run=run, name=g.name, group=g.to_dict(), depends=[PLAN]) for g in groups]
            + [RunTask(run=run, name=ASSEMBLE, depends=names)])
        job_start(model=AnalysisRun, job_id=run.pk, progress=PROGRESS[0], timings={},
                  message=f"sections: 0 of {len(names)}")
    return names


# --------------------------------------------------------------------------- 2. send


def sections_send(*, run_id: int, names: list[str]) -> None:
    """Send the chord of a planned run: every group, then the assembly (errback: the run
    fails)."""
    from celery import chord

    from .tasks import analysis_failed, assemble_sections, section_task

    header = [section_task.si(run_id, name) for name in names]
    body = assemble_sections.s(run_id).on_error(analysis_failed.s(run_id))
    try:
        chord(header)(body)
    except Exception as exc:  # the broker or the result backend refused it: say so
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    sections_mark_sent(run_id=run_id)


def sections_mark_sent(*, run_id: int) -> None:
    RunTask.objects.filter(run=run_id, name=PLAN, sent_at__isnull=True,
                           run__status=AnalysisRun.Status.RUNNING).update(sent_at=timezone.now())


def sections_sent(*, run_id: int) -> bool:
    """Whether the chord of this run's sections is out (a redelivered start sends nothing)."""
    return RunTask.objects.filter(run=run_id, name=PLAN, sent_at__isnull=False).exists()


# --------------------------------------------------------------------------- 3. group


def _head(run_id: int) -> dict[str, Any]:
    return head_from_bytes(_needed(run_id, "head"))[0]


def _compute(run: AnalysisRun, group: Group, head: Mapping[str, Any]) -> Part:
    """Compute one group's part from the plan's blobs."""
    primary = head["questions"][0]["key"]
    q = question_from_bytes(_needed(run.pk, f"question:{group.question or primary}"))
    rows = checks = None
    if group.family in ("study", "filtering"):
        rows, checks = rows_from_bytes(_needed(run.pk, "rows"))
    judged: list[Judgments] = []
    mean_ratings = None
    if group.family == "comparisons":
        judged, mean_ratings = judgments_from_bytes(_needed(run.pk, "judgments"))
    return group_part(group, q, run.analysis, head["settings"], rows=rows, checks=checks or (),
                      primary=q.key == primary, judged=judged, mean_ratings=mean_ratings)


def _progress(run_id: int) -> None:
    """Advance the run by the number of groups done, in one UPDATE (never backwards)."""
    counts = RunTask.objects.filter(run=run_id, group__family__isnull=False).aggregate(
        done=Count("id", filter=Q(done_at__isnull=False)), total=Count("id"))
    done, total = counts["done"], max(1, counts["total"])
    low, high = PROGRESS
    AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.RUNNING,
                               progress__lt=low + (high - low) * done // total).update(
        heartbeat_at=timezone.now(), progress=low + (high - low) * done // total,
        message=f"sections: {done} of {total}")


def section_compute(*, run_id: int, name: str, host: str = "") -> dict[str, Any]:
    """Compute and store one group's part (idempotent: a stored part is not stored again).

    Returns a small summary (the chord's header result); the part goes to a blob, its time to
    the task's row.  A task whose run is over, or whose plan an attempt since replaced, does
    nothing.
    """
    summary: dict[str, Any] = {"run": run_id, "task": name, "computed": False}
    task = RunTask.objects.select_related("run", "run__study").filter(run=run_id, name=name).first()
    if task is None or not task.group or "family" not in task.group:
        return {**summary, "skipped": "the plan is gone"}
    run = task.run
    if run.status != AnalysisRun.Status.RUNNING:
        return {**summary, "skipped": "the run is not running"}
    if task.done_at is not None:
        _progress(run_id)
        return {**summary, "skipped": "already stored"}
    started, began = timezone.now(), time.perf_counter()
    try:
        part = _compute(run, Group(**task.group), _head(run_id))
        data = part_bytes(part)
        with transaction.atomic():
            row = RunTask.objects.select_for_update().filter(pk=task.pk).first()
            if row is None or row.done_at is not None:
                return {**summary, "skipped": "already stored"}
            blob_store(run_id=run_id, name=f"part:{name}", data=data)
            seconds = time.perf_counter() - began
            RunTask.objects.filter(pk=task.pk).update(
                seconds=round(seconds, 4), host=host or socket.gethostname(), started_at=started,
                done_at=timezone.now())
    except Exception as exc:
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    _progress(run_id)
    return {**summary, "computed": True, "seconds": round(seconds, 4)}


# --------------------------------------------------------------------------- 4. assemble


def fanout_figures(tasks: list[RunTask]) -> dict[str, Any]:
    """A fanned-out run's figures from its tasks: their number, the total work (the sum of their
    seconds), the critical path (the longest chain, what a cluster with a worker per task
    takes) and its tasks, and the longest tasks."""
    timed = {t.name: (t.seconds or 0.0, t.depends) for t in tasks}
    path_s, path = critical_path(timed)
    work = sum(seconds for seconds, _ in timed.values())
    hosts: dict[str, int] = {}
    for t in tasks:
        if t.host:
            hosts[t.host] = hosts.get(t.host, 0) + 1
    longest = sorted(((t.name, t.seconds or 0.0) for t in tasks), key=lambda kv: -kv[1])[:5]
    return {"tasks": len(tasks), "work_s": round(work, 4), "critical_path_s": round(path_s, 4),
            "critical_path": path, "longest": [[n, round(s, 4)] for n, s in longest],
            "workers": dict(sorted(hosts.items()))}


def sections_assemble(*, run_id: int, host: str = "") -> AnalysisRun:
    """Put a fanned-out run's parts together and store it (idempotent, like the start)."""
    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    if run.status in (AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED):
        RunBlob.objects.filter(run=run_id).delete()  # a redelivered assembly tidies up
        return run
    tasks = list(RunTask.objects.filter(run=run_id).order_by("id"))
    if not any(t.name == PLAN for t in tasks):
        return run  # not a fanned-out run
    started, began = timezone.now(), time.perf_counter()
    try:
        head, records = head_from_bytes(_needed(run_id, "head"))
        parts, missing = [], []
        for task in tasks:
            if not task.group or "family" not in task.group:
                continue
            data = blob_read(run_id=run_id, name=f"part:{task.name}")
            if data is None:  # never stored (its task lost for good): computed here
                missing.append(task.name)
                parts.append(_compute(run, Group(**task.group), head))
            else:
                parts.append(part_from_bytes(data))
        document, records = assemble(head, parts, records)
    except Exception as exc:
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    plan = next(t for t in tasks if t.name == PLAN)
    sections: dict[str, float] = {}
    for part in parts:
        for section, seconds in part.seconds.items():
            sections[section] = sections.get(section, 0.0) + seconds
    group_s = sum(t.seconds or 0.0 for t in tasks if t.group and "family" in t.group)
    timings: dict[str, Any] = {
        "load_s": (plan.group or {}).get("load_s"),
        "analyses_s": round(group_s, 4),
        "sections_s": {k: round(v, 4) for k, v in sorted(sections.items(), key=lambda kv: -kv[1])},
        "peak_rss_mb": peak_rss_mb(),
    }
    if missing:
        timings["sections_fallback"] = missing
    def stored(timings: dict[str, Any]) -> None:
        # In the transaction that records the run: its own seconds (storing included), then
        # the run's total work and critical path, written with the run.
        RunTask.objects.filter(run=run_id, name=ASSEMBLE, done_at__isnull=True).update(
            seconds=round(time.perf_counter() - began, 4), host=host or socket.gethostname(),
            started_at=started, done_at=timezone.now())
        timings["fanout"] = fanout_figures(list(RunTask.objects.filter(run=run_id).order_by("id")))

    run = analysis_run_store(run=run, document=document, records=records, timings=timings,
                             stored_hook=stored)
    if run.status == AnalysisRun.Status.DONE:
        RunBlob.objects.filter(run=run_id).delete()
    return run


# --------------------------------------------------------------------------- in this process


def analysis_run_fanned_here(*, run_id: int) -> AnalysisRun:
    """Run a run's fanned-out protocol in this process, one task after the other (``manage.py
    analyze --fanout``): the document is the same, and each task's seconds are what a worker of
    its own would take, so the run's critical path is a cluster's time."""
    from .selectors import study_questions
    from .services import peak_rss_reset

    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return run
    peak_rss_reset()
    began = time.perf_counter()
    try:
        data = study_questions(study=run.study)
    except Exception as exc:
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    if not data or study_has_judges(study=run.study):  # as `trust_plan_create` decides
        from .services import analysis_run_complete

        return analysis_run_complete(run=run, data=data, load_s=time.perf_counter() - began)
    names = sections_plan_create(run=run, data=data, load_s=time.perf_counter() - began,
                                 began=began)
    for name in names:
        section_compute(run_id=run_id, name=name)
    return sections_assemble(run_id=run_id)


__all__ = ["analysis_run_fanned_here", "fan_out", "fanout_figures", "section_compute",
           "sections_assemble", "sections_mark_sent", "sections_plan_create", "sections_send",
           "sections_sent"]
