"""Run analyses and store their results; the same service serves Celery and `manage.py analyze`."""

from __future__ import annotations

import functools
import subprocess
import time
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from studies.models import Study

from .models import AnalysisRun
from .results import DEFAULTS, build_results
from .selectors import study_data

SETTING_KEYS = set(DEFAULTS)


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


def analysis_settings(*, study: Study, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge the defaults, the study's analysis settings and the overrides; reject unknowns."""
    overrides = overrides or {}
    unknown = set(overrides) - SETTING_KEYS
    if unknown:
        raise ValueError(f"unknown analysis setting(s): {', '.join(sorted(unknown))}")
    merged = {**DEFAULTS, **{k: v for k, v in study.analysis_settings.items() if k in SETTING_KEYS},
              **overrides}
    if merged["level"] not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level must be nominal, ordinal, interval or ratio, not {merged['level']!r}")
    if merged["trust_variant"] not in ("paper", "notebook"):
        raise ValueError("trust_variant must be paper or notebook")
    if int(merged["simple_threshold"]) < 1:
        raise ValueError("simple_threshold must be at least 1")
    return merged


def analysis_run_create(*, study: Study, user=None, overrides: dict[str, Any] | None = None,
                        enqueue: bool = True) -> AnalysisRun:
    """Record a queued run and enqueue its task once the transaction commits."""
    run = AnalysisRun.objects.create(
        study=study, created_by=user, settings=analysis_settings(study=study, overrides=overrides),
        code_version=code_version(), message="waiting for a worker",
    )
    if enqueue:
        from .tasks import run_analysis

        transaction.on_commit(lambda: run_analysis.delay(run.pk))
    return run


def _progress(run_id: int):
    def report(pct: int, message: str) -> None:
        AnalysisRun.objects.filter(pk=run_id).update(progress=pct, message=message[:200])

    return report


def analysis_run_execute(*, run_id: int) -> AnalysisRun:
    """Execute a run (idempotent: a finished run is left as it is, a redelivered one restarts)."""
    run = AnalysisRun.objects.select_related("study", "study__scale").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return run
    started = time.perf_counter()
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.RUNNING, started_at=timezone.now(), progress=1,
        message="loading the answers", attempts=run.attempts + 1, error="")
    study = run.study
    try:
        data = study_data(study=study)
        loaded = time.perf_counter()
        document = build_results(
            data,
            scale_values=study.scale.values,
            reductions=study.scale.reductions,
            settings=run.settings,
            study={"slug": study.slug, "title": study.title, "run": run.pk,
                   "code_version": run.code_version},
            progress=_progress(run.pk),
        )
    except Exception as exc:
        AnalysisRun.objects.filter(pk=run.pk).update(
            status=AnalysisRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(), message="failed")
        raise
    finished = time.perf_counter()
    document["generated_at"] = timezone.now().isoformat()
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.DONE, progress=100, message="done", results=document,
        finished_at=timezone.now(),
        timings={"load_s": round(loaded - started, 4), "analyses_s": round(finished - loaded, 4)})
    run.refresh_from_db()
    return run
