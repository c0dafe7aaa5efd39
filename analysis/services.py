"""Run analyses and store their results; the same service serves Celery and `manage.py analyze`."""

from __future__ import annotations

import functools
import subprocess
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import CharField, Count, F, Subquery, Value
from django.db.models.functions import Cast, Coalesce, Concat, Greatest, Least
from django.utils import timezone

from studies.models import Study

from .models import AnalysisRun, TrustChunk
from .results import DEFAULTS, TrustInput, build_results, trust_inputs
from .selectors import StudyData, study_data
from .stats.trust import (
    MAX_EXACT_LIMIT,
    TrustPartial,
    _fingerprint,  # the merge checks the chunks against today's ratings
    plan_chunks,
    trust_chunk,
    trust_merge,
)

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


def _progress(run_id: int, low: int = 0, high: int = 100):
    """Report progress, rescaled from 0–100 into ``low``–``high`` (a fanned-out run's finisher)."""

    def report(pct: int, message: str) -> None:
        AnalysisRun.objects.filter(pk=run_id).update(
            progress=low + (high - low) * pct // 100, message=message[:200])

    return report


def _failed(run_id: int, exc: BaseException) -> None:
    AnalysisRun.objects.filter(pk=run_id).exclude(status=AnalysisRun.Status.DONE).update(
        status=AnalysisRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:10_000],
        finished_at=timezone.now(), message="failed")


def analysis_run_execute(*, run_id: int) -> AnalysisRun:
    """Execute a run in this process (idempotent: a finished run is left as it is, a redelivered
    one restarts).  This is what ``manage.py analyze`` runs; trust is never fanned out here."""
    run = AnalysisRun.objects.select_related("study", "study__scale").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return run
    return _execute(run)


def _execute(run: AnalysisRun, *, data: StudyData | None = None, load_s: float = 0.0,
             fanned_out: dict | None = None, trust_results: Mapping | None = None) -> AnalysisRun:
    """Build and store the results document of ``run`` (``data``: already loaded in ``load_s``).

    ``fanned_out`` (the finisher of a fanned-out run): the run already counts as started (its
    ``started_at`` and ``attempts`` stay), progress continues from 60 %, and these trust figures
    join the timings; ``trust_results`` are the merged trust coefficients to use.
    """
    started = time.perf_counter()
    if fanned_out is None:
        AnalysisRun.objects.filter(pk=run.pk).update(
            status=AnalysisRun.Status.RUNNING, started_at=timezone.now(), progress=1,
            message="loading the answers", attempts=run.attempts + 1, error="")
        progress = _progress(run.pk)
    else:
        progress = _progress(run.pk, FANOUT_PROGRESS[1], 100)
    study = run.study
    try:
        if data is None:
            data = study_data(study=study)
        loaded = time.perf_counter()
        document = build_results(
            data,
            scale_values=study.scale.values,
            reductions=study.scale.reductions,
            settings=run.settings,
            study={"slug": study.slug, "title": study.title, "run": run.pk,
                   "code_version": run.code_version},
            progress=progress,
            trust_results=trust_results,
        )
    except Exception as exc:
        _failed(run.pk, exc)
        raise
    finished = time.perf_counter()
    document["generated_at"] = timezone.now().isoformat()
    timings = {"load_s": round(load_s + loaded - started, 4),
               "analyses_s": round(finished - loaded, 4),
               **(fanned_out or {})}
    with transaction.atomic():
        # Only the first to finish records the run: a duplicate delivery running at the same time
        # (a broker redelivering after its visibility timeout) computed the same and writes nothing.
        if AnalysisRun.objects.filter(pk=run.pk).exclude(status=AnalysisRun.Status.DONE).update(
                status=AnalysisRun.Status.DONE, progress=100, message="done", results=document,
                finished_at=timezone.now(), timings=timings, error=""):
            # The alphas served the merge; the figures stay in the timings.
            TrustChunk.objects.filter(run=run.pk).delete()
    run.refresh_from_db()
    return run


# --- Trust fan-out ----------------------------------------------------------------------------
# A run whose exact trust coefficients involve many annotators (k ≥ CONCORD_TRUST_FANOUT_MIN_K)
# computes the subset alphas as a Celery chord: one `trust_chunk_task` per chunk of subsets of
# each such (scale, items), storing its alphas in a TrustChunk row, and `finish_analysis`, which
# merges them exactly (`trust_merge`) and runs the rest of the analysis in one process.  The run
# reports 5–60 % while chunks complete and 60–100 % in the finisher.

FANOUT_PROGRESS = (5, 60)
PLAN = "trust_plan"  # key of the fan-out plan in AnalysisRun.timings while the run is going


def _trust_inputs(run: AnalysisRun, data: StudyData) -> dict[str, TrustInput]:
    study = run.study
    return {inp.key: inp for inp in trust_inputs(data, scale_values=study.scale.values,
                                                 reductions=study.scale.reductions,
                                                 settings=run.settings)}


def trust_fanout_keys(inputs: Mapping[str, TrustInput], settings: Mapping[str, Any]) -> dict[str, int]:
    """Return ``{key: k}`` of the trust computations that fan out: exact with k ≥ the minimum."""
    s = {**DEFAULTS, **settings}
    max_exact = int(s["trust_max_exact"])
    if not 2 <= max_exact <= MAX_EXACT_LIMIT:
        return {}  # trust_coefficients reports the bad setting in-process
    low = max(2, int(django_settings.CONCORD_TRUST_FANOUT_MIN_K))
    return {key: inp.k for key, inp in inputs.items()
            if inp.ratings is not None and low <= inp.k <= max_exact}


def analysis_run_begin(*, run_id: int) -> list[tuple[str, int, int]]:
    """Start a run from its task: return the trust chunks to fan out, or ``[]`` when there is
    nothing to send (the run was computed here in-process, is already done, or its chord is out).

    A fanned-out run is marked running with its plan (``timings["trust_plan"]``); the caller sends
    the chord and then calls ``analysis_run_fanned_out``.
    """
    run = AnalysisRun.objects.select_related("study", "study__scale").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return []
    plan = run.timings.get(PLAN) if isinstance(run.timings, dict) else None
    if run.status == AnalysisRun.Status.RUNNING and plan and plan.get("sent"):
        return []  # a redelivered start: the chord of the first delivery is on its way
    began = time.perf_counter()
    data = study_data(study=run.study)
    load_s = time.perf_counter() - began
    keys = trust_fanout_keys(_trust_inputs(run, data), run.settings)
    if not keys:
        _execute(run, data=data, load_s=load_s)
        return []
    n_chunks = int(django_settings.CONCORD_TRUST_CHUNKS)
    chunks = [(key, a, b) for key, k in keys.items() for a, b in plan_chunks(k, n_chunks)]
    TrustChunk.objects.filter(run=run.pk).delete()  # of an earlier attempt, maybe other ratings
    AnalysisRun.objects.filter(pk=run.pk).update(
        status=AnalysisRun.Status.RUNNING, started_at=timezone.now(), attempts=run.attempts + 1,
        error="", progress=FANOUT_PROGRESS[0],
        message=f"trust coefficients: 0 of {len(chunks)} chunks",
        timings={PLAN: {"keys": keys, "chunks": len(chunks), "started": time.time(), "sent": False}})
    return chunks


def analysis_run_fanned_out(*, run_id: int) -> None:
    """Record that the chord of a run is sent, so a redelivered start does not send it again."""
    run = AnalysisRun.objects.get(pk=run_id)
    plan = dict(run.timings.get(PLAN) or {})
    if plan and not plan.get("sent"):
        plan["sent"] = True
        AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.RUNNING).update(
            timings={**run.timings, PLAN: plan})


_CHUNK_INPUTS: dict[tuple[int, float], dict[str, TrustInput]] = {}


def _chunk_inputs(run: AnalysisRun, plan: Mapping[str, Any]) -> dict[str, TrustInput]:
    """The run's trust inputs, loaded once per worker process and plan (not once per chunk).

    A worker keeps the latest run's only.  Answers changed meanwhile are caught all the same:
    the finisher compares every chunk's fingerprint with the answers as they are then.
    """
    tag = (run.pk, float(plan.get("started", 0)))
    inputs = _CHUNK_INPUTS.get(tag)
    if inputs is None:
        inputs = _trust_inputs(run, study_data(study=run.study))
        _CHUNK_INPUTS.clear()
        _CHUNK_INPUTS[tag] = inputs
    return inputs


def _chunk_progress(run_id: int, total: int) -> None:
    """Advance the run by the number of stored chunks, in one UPDATE (never backwards)."""
    done = Coalesce(Subquery(TrustChunk.objects.filter(run=run_id).order_by()
                             .values("run").annotate(n=Count("*")).values("n")[:1]), 0)
    low, high = FANOUT_PROGRESS
    AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.RUNNING).update(
        progress=Greatest(F("progress"), Least(low + (high - low) * done / total, high)),
        message=Concat(Value("trust coefficients: "), Cast(done, CharField()),
                       Value(f" of {total} chunks"), output_field=CharField()))


def trust_chunk_compute(*, run_id: int, key: str, start: int, stop: int) -> dict[str, Any]:
    """Compute and store the alphas of one chunk (idempotent: a stored chunk is not redone).

    Returns a small summary (the chord's header result); the alphas go to a TrustChunk row.
    A chunk whose run is over, or whose ratings no longer have the planned number of annotators,
    stores nothing: the finisher then computes that trust in-process.
    """
    summary: dict[str, Any] = {"key": key, "start": start, "computed": False}
    run = (AnalysisRun.objects.select_related("study", "study__scale")
           .filter(pk=run_id).first())
    if run is None or run.status != AnalysisRun.Status.RUNNING:
        return {**summary, "skipped": "the run is not running"}
    plan = run.timings.get(PLAN) or {}
    total = int(plan.get("chunks") or 1)
    if TrustChunk.objects.filter(run=run_id, key=key, start=start).exists():
        _chunk_progress(run_id, total)
        return {**summary, "skipped": "already stored"}
    try:
        inp = _chunk_inputs(run, plan).get(key)
        if inp is None or inp.ratings is None or inp.k != plan.get("keys", {}).get(key):
            return {**summary, "skipped": "the ratings changed since the fan-out"}
        began = time.perf_counter()
        partial = trust_chunk(inp.ratings, level=inp.level, domain=inp.domain, start=start,
                              stop=stop)
        seconds = time.perf_counter() - began
        TrustChunk.objects.bulk_create([TrustChunk(
            run_id=run_id, key=key, start=start, stop=stop, k=partial.k, level=partial.level,
            fingerprint=partial.fingerprint, alphas=partial.alphas.astype("<f8").tobytes(),
            seconds=seconds)], ignore_conflicts=True)
    except Exception as exc:
        _failed(run_id, exc)
        raise
    _chunk_progress(run_id, total)
    return {**summary, "computed": True, "seconds": round(seconds, 4)}


def _merge(run: AnalysisRun, inputs: Mapping[str, TrustInput], keys: Mapping[str, int]):
    """Merge the stored chunks of each fanned-out key; keys that cannot be merged are left out."""
    variant = run.settings.get("trust_variant", DEFAULTS["trust_variant"])
    merged: dict[tuple[str, str], Any] = {}
    fallback: dict[str, str] = {}
    seconds = 0.0
    rows: dict[str, list[TrustChunk]] = {}
    for row in TrustChunk.objects.filter(run=run.pk).order_by("key", "start"):
        rows.setdefault(row.key, []).append(row)
        seconds += row.seconds
    for key, k in keys.items():
        inp = inputs.get(key)
        if inp is None or inp.ratings is None or inp.k != k:
            fallback[key] = "the annotators changed since the fan-out"
            continue
        expected = _fingerprint(inp.ratings, inp.domain, inp.level)
        partials = [TrustPartial(k=r.k, level=r.level, start=r.start, stop=r.stop,
                                 alphas=np.frombuffer(bytes(r.alphas), dtype="<f8").astype(float),
                                 fingerprint=r.fingerprint) for r in rows.get(key, [])]
        if any(p.fingerprint != expected for p in partials):
            fallback[key] = "the ratings changed since the fan-out"
            continue
        try:
            merged[(inp.scale, inp.items)] = trust_merge(partials, variant=variant, k=k)
        except ValueError as exc:  # a missing chunk (a gap), or nothing stored at all
            fallback[key] = str(exc)
    return merged, fallback, seconds


def analysis_run_finish(*, run_id: int, chunk_results: list | None = None) -> AnalysisRun:
    """Merge a fanned-out run's chunks and build its document (idempotent, like the start).

    Correct first: a key whose chunks are missing or were computed on other ratings than the
    current ones is computed here in-process (and named in ``timings["trust_fallback"]``).
    """
    run = AnalysisRun.objects.select_related("study", "study__scale").get(pk=run_id)
    if run.status in (AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED):
        return run
    plan = run.timings.get(PLAN) or {}
    if not plan:
        return run  # not a fanned-out run (its start computes it in-process)
    began, clock = time.time(), time.perf_counter()
    try:
        data = study_data(study=run.study)
        load_s = time.perf_counter() - clock
        merged, fallback, chunk_seconds = _merge(run, _trust_inputs(run, data), plan["keys"])
    except Exception as exc:
        _failed(run_id, exc)
        raise
    figures: dict[str, Any] = {
        "trust_fanout": plan["keys"],
        "trust_chunks": plan["chunks"],
        "trust_chunks_s": round(chunk_seconds, 4),
        "trust_wall_s": round(began - float(plan.get("started", began)), 4),
        "trust_merge_s": round(time.perf_counter() - clock - load_s, 4),
    }
    hosts = Counter(r.get("host") for r in chunk_results or [] if isinstance(r, dict)
                    and r.get("computed") and r.get("host"))
    if hosts:
        figures["trust_workers"] = dict(sorted(hosts.items()))
    if fallback:
        figures["trust_fallback"] = fallback
    return _execute(run, data=data, load_s=load_s, fanned_out=figures, trust_results=merged)


def analysis_run_fail(*, run_id: int, error: BaseException) -> None:
    """Mark a run failed (a chunk of its chord failed); a finished run stays as it is."""
    _failed(run_id, error)
