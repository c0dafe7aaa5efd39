"""Run analyses and store their results; the same service serves Celery and `manage.py analyze`.

A run started by its Celery task may first fan its trust coefficients out to other workers:
that protocol is `analysis.fanout`, which finishes the run through `analysis_run_complete`.
"""

from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from core.results import SectionClock, build_results
from core.settings import AnalysisSettings
from jobs.services import job_done, job_fail, job_progress, job_send, job_start
from studies.models import Study

from .models import AnalysisRun
from .selectors import QuestionData, study_checks, study_questions


@functools.cache
def code_version() -> str:
    """Return the code's git commit (or CONCORD_VERSION), recorded with every result."""
    import os

    if os.environ.get("CONCORD_VERSION"):
        return os.environ["CONCORD_VERSION"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"],  # noqa: S607
                             cwd=Path(django_settings.BASE_DIR), capture_output=True, text=True,
                             timeout=5, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def analysis_settings(*, study: Study, overrides: Mapping[str, Any] | None = None
                      ) -> AnalysisSettings:
    """Return the settings of a run: the study's analysis settings with ``overrides`` applied.

    Raises `core.settings.SettingsError` (a ValueError) naming every unknown or invalid key.
    """
    return AnalysisSettings.from_mapping(
        overrides or {}, base=AnalysisSettings.from_mapping(study.analysis_settings))


def analysis_run_create(*, study: Study, user=None, overrides: Mapping[str, Any] | None = None,
                        enqueue: bool = True) -> AnalysisRun:
    """Record a queued run and send its task once the transaction commits.

    When the broker cannot be reached the returned run is already failed, with the reason
    (the caller tells the researcher at once: a message, HTTP 503).
    """
    settings = analysis_settings(study=study, overrides=overrides)
    run = AnalysisRun.objects.create(
        study=study, created_by=user, settings=settings.to_dict(),
        code_version=code_version(), message="waiting for a worker",
    )
    if enqueue:
        # After the commit (a worker must find the row); a broker that does not answer marks
        # the run failed with the reason, in this copy too (`jobs.services.job_send`).
        transaction.on_commit(lambda: job_send(model=AnalysisRun, job=run,
                                               send=functools.partial(analysis_run_send, run.pk)))
    return run


def analysis_run_send(run_id: int, delivery: int) -> None:
    """Publish the task of a run (its ``delivery``-th message)."""
    from .tasks import run_analysis

    run_analysis.apply_async(args=[run_id], kwargs={"delivery": delivery})


def _progress(run_id: int, low: int = 0, high: int = 100):
    """Report progress, rescaled from 0–100 into ``low``–``high`` (a fanned-out run's finisher)."""

    def report(pct: int, message: str) -> None:
        job_progress(model=AnalysisRun, job_id=run_id, progress=low + (high - low) * pct // 100,
                     message=message)

    return report


def analysis_run_fail(*, run_id: int, error: BaseException) -> None:
    """Mark a run failed with ``error``; a finished run stays as it is."""
    job_fail(model=AnalysisRun, job_id=run_id, error=error)


def analysis_run_execute(*, run_id: int) -> AnalysisRun:
    """Execute a run in this process (idempotent: a finished run is left as it is, a redelivered
    one restarts).  This is what ``manage.py analyze`` runs; trust is never fanned out here."""
    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return run
    return analysis_run_complete(run=run)


def peak_rss_reset() -> None:
    """Start measuring this process's peak memory afresh (Linux: ``/proc/self/clear_refs``).

    A Celery worker lives for many runs; resetting its high-water mark at the start of a run
    makes ``peak_rss_mb`` the peak of this run (and of anything the process does meanwhile).
    Elsewhere it does nothing, and ``peak_rss_mb`` is the process's lifetime peak.
    """
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float | None:
    """The process's peak resident memory in MB since `peak_rss_reset` (None if unknown)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def analysis_run_complete(*, run: AnalysisRun, data: list[QuestionData] | None = None,
                          load_s: float = 0.0,
                          resume_at: int | None = None, trust_results: Mapping | None = None,
                          timings: Mapping[str, Any] | None = None) -> AnalysisRun:
    """Build and store the results document of ``run`` (``data``: its questions, already loaded
    in ``load_s``).

    ``resume_at`` (the finisher of a fanned-out run): the run already counts as started (its
    ``started_at`` and ``attempts`` stay) and progress continues from this percentage;
    ``trust_results`` are merged trust coefficients to use, ``timings`` join the run's timings.
    """
    started = time.perf_counter()
    if data is None:  # else the caller loaded the answers, and reset the peak before
        peak_rss_reset()
    clock = SectionClock()
    if resume_at is None:
        job_start(model=AnalysisRun, job_id=run.pk, message="loading the answers")
        progress = _progress(run.pk)
    else:
        progress = _progress(run.pk, resume_at, 100)
    study = run.study
    try:
        if data is None:
            data = study_questions(study=study)
        loaded = time.perf_counter()
        document = build_results(
            data,
            settings=run.settings,
            study={"slug": study.slug, "title": study.title, "run": run.pk,
                   "code_version": run.code_version},
            progress=progress,
            trust_results=trust_results,
            checks=study_checks(study=study),
            clock=clock,
        )
    except Exception as exc:
        analysis_run_fail(run_id=run.pk, error=exc)
        raise
    finished = time.perf_counter()
    document["generated_at"] = timezone.now().isoformat()
    timings = {"load_s": round(load_s + loaded - started, 4),
               "analyses_s": round(finished - loaded, 4),
               "sections_s": clock.rounded(),
               "peak_rss_mb": peak_rss_mb(),
               **(timings or {})}
    # Only the first to finish records the run: a duplicate delivery running at the same time
    # (a broker redelivering after its visibility timeout) computed the same and writes nothing.
    job_done(model=AnalysisRun, job_id=run.pk, results=document, timings=timings)
    run.refresh_from_db()
    return run
