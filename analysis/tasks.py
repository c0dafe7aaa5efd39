"""Thin Celery tasks: an id in, one service call.

Every task is ``acks_late`` + ``reject_on_worker_lost`` and idempotent, so a task whose worker
dies is redelivered and completes once.  A run with exact trust coefficients for many annotators
fans out (``analysis.fanout``): a chord of ``trust_chunk_task`` (alphas stored in TrustChunk
rows; the header results are a few bytes) whose body ``finish_analysis`` merges them and builds
the document.  The result backend only carries the chord's plumbing.
"""

from celery import shared_task

TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True}


@shared_task(**TASK_OPTIONS)
def run_analysis(run_id: int) -> None:
    """Start a run: computed here, or its trust chord sent (``fanout.analysis_run_start``)."""
    from . import fanout

    fanout.analysis_run_start(run_id=run_id)


@shared_task(bind=True, **TASK_OPTIONS)
def trust_chunk_task(self, plan_id: int, start: int, stop: int) -> dict:
    """One chunk of a trust plan; its summary names the worker (the run's ``trust_workers``)."""
    from . import fanout

    summary = fanout.trust_chunk_compute(plan_id=plan_id, start=start, stop=stop)
    return {**summary, "host": self.request.hostname}


@shared_task(**TASK_OPTIONS)
def finish_analysis(chunk_results: list | None, run_id: int) -> None:
    """The chord's body: the header's summaries, then the run (the alphas are in our table)."""
    from . import fanout

    fanout.trust_plan_finish(run_id=run_id, chunk_results=chunk_results)


@shared_task(**TASK_OPTIONS)
def analysis_failed(request, exc, traceback, run_id: int) -> None:
    """Errback of the chord: a chunk (or the finisher) failed, so the run is marked failed."""
    from .services import analysis_run_fail

    analysis_run_fail(run_id=run_id, error=exc)
