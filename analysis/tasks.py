"""Thin Celery tasks: an id in, one service call.

Every task is ``acks_late`` + ``reject_on_worker_lost`` and idempotent, so a task whose worker
dies is redelivered and completes once.  A run with exact trust coefficients for many annotators
fans out (``services.analysis_run_begin``): a chord of ``trust_chunk_task`` (alphas stored in
TrustChunk rows; the header results are a few bytes) whose body ``finish_analysis`` merges them
and builds the document.  The result backend only carries the chord's plumbing.
"""

from celery import chord, shared_task

TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True}


@shared_task(**TASK_OPTIONS)
def run_analysis(run_id: int) -> None:
    from .services import analysis_run_begin, analysis_run_fail, analysis_run_fanned_out

    chunks = analysis_run_begin(run_id=run_id)
    if not chunks:
        return  # computed in-process here, already done, or its chord is already out
    header = [trust_chunk_task.si(run_id, key, start, stop) for key, start, stop in chunks]
    body = finish_analysis.s(run_id).on_error(analysis_failed.s(run_id))
    try:
        chord(header)(body)
    except Exception as exc:  # the broker or the result backend refused it: say so
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    analysis_run_fanned_out(run_id=run_id)


@shared_task(bind=True, **TASK_OPTIONS)
def trust_chunk_task(self, run_id: int, key: str, start: int, stop: int) -> dict:
    from .services import trust_chunk_compute

    summary = trust_chunk_compute(run_id=run_id, key=key, start=start, stop=stop)
    return {**summary, "host": self.request.hostname}


@shared_task(**TASK_OPTIONS)
def finish_analysis(chunk_results: list | None, run_id: int) -> None:
    """The chord's body: the header's summaries, then the run (the alphas are in our table)."""
    from .services import analysis_run_finish

    analysis_run_finish(run_id=run_id, chunk_results=chunk_results)


@shared_task(**TASK_OPTIONS)
def analysis_failed(request, exc, traceback, run_id: int) -> None:
    """Errback of the chord: a chunk (or the finisher) failed, so the run is marked failed."""
    from .services import analysis_run_fail

    analysis_run_fail(run_id=run_id, error=exc)
