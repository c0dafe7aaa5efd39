"""Thin Celery tasks: an id in, one service call.

Every task is ``acks_late`` + ``reject_on_worker_lost`` and idempotent, so a task whose worker
dies is redelivered and completes once.  A run with exact trust coefficients for many annotators
fans out (``analysis.fanout``): a chord of ``trust_chunk_task`` (alphas stored in TrustChunk
rows; the header results are a few bytes) whose body ``finish_analysis`` merges them and builds
the document.  A large run fans its sections out (``analysis.sections``): a chord of
``section_task`` (one per section group; parts stored in RunBlob rows, times in RunTask rows)
whose body ``assemble_sections`` puts the document together.  The result backend only carries
the chords' plumbing.
"""

from celery import shared_task

from jobs.services import job_heartbeat
from jobs.tasks import job_task

from . import fanout, sections
from .live import live_quality_refresh
from .models import AnalysisRun, TrustPlan
from .services import analysis_run_fail

TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True}


@job_task(model=AnalysisRun)
def run_analysis(run_id: int) -> None:
    """Start a run: computed here, or its trust chord sent (``fanout.analysis_run_start``).

    Skipped when this message is superseded or the run over, retried after the stale interval
    while another worker holds the run, the run's heartbeat beating while it runs
    (`jobs.tasks.job_task`).  Its record is the run's row (no result).
    """
    fanout.analysis_run_start(run_id=run_id)


@shared_task(bind=True, **TASK_OPTIONS)
def trust_chunk_task(self, plan_id: int, start: int, stop: int) -> dict:
    """One chunk of a trust plan; its summary names the worker (the run's ``trust_workers``)."""
    run_id = TrustPlan.objects.filter(pk=plan_id).values_list("run_id", flat=True).first()
    if run_id is None:
        summary = fanout.trust_chunk_compute(plan_id=plan_id, start=start, stop=stop)
    else:
        with job_heartbeat(model=AnalysisRun, job_id=run_id):
            summary = fanout.trust_chunk_compute(plan_id=plan_id, start=start, stop=stop)
    return {**summary, "host": self.request.hostname}


@shared_task(**TASK_OPTIONS)
def finish_analysis(chunk_results: list | None, run_id: int) -> None:
    """The chord's body: the header's summaries, then the run (the alphas are in our table)."""
    with job_heartbeat(model=AnalysisRun, job_id=run_id):
        fanout.trust_plan_finish(run_id=run_id, chunk_results=chunk_results)


@shared_task(bind=True, **TASK_OPTIONS)
def section_task(self, run_id: int, name: str) -> dict:
    """One section group of a fanned-out run (``analysis.sections``); its summary is a few
    bytes (the part goes to the run's blobs, its time to the task's row)."""
    with job_heartbeat(model=AnalysisRun, job_id=run_id):
        return sections.section_compute(run_id=run_id, name=name, host=self.request.hostname or "")


@shared_task(bind=True, **TASK_OPTIONS)
def assemble_sections(self, results: list | None, run_id: int) -> None:
    """The sections chord's body: the parts put together into the run's document."""
    with job_heartbeat(model=AnalysisRun, job_id=run_id):
        sections.sections_assemble(run_id=run_id, host=self.request.hostname or "")


@shared_task(**TASK_OPTIONS)
def analysis_failed(request, exc, traceback, run_id: int) -> None:
    """Errback of the chord: a chunk (or the finisher) failed, so the run is marked failed."""
    analysis_run_fail(run_id=run_id, error=exc)


@shared_task(ignore_result=True)
def live_quality() -> dict:
    """Refresh the live quality flags of every open study's participants (`analysis.live`);
    sent by Celery beat every CONCORD_LIVE_QUALITY_SECONDS."""
    return live_quality_refresh()
