"""Trust fan-out: the exact trust coefficients of many annotators as a Celery chord of chunks.

A run whose exact trust computation of some ``(question, scale, items)`` involves many annotators
(``CONCORD_TRUST_FANOUT_MIN_K ≤ k ≤ trust_max_exact``) computes the subset alphas of each such
computation in ``CONCORD_TRUST_CHUNKS`` tasks, then merges them exactly (``trust_merge``) and
builds the rest of the document in one process.  The protocol, all of it here:

1. **plan** (`trust_plan_create`, from the run's task): load the answers once; without anything
   to fan out, compute the whole run in-process, or fan its sections out when the run is large
   (`analysis.sections`, ``CONCORD_ANALYSIS_FANOUT``); else store one `TrustPlan` per computation with
   the ratings matrix its chunks compute on, mark the run running (5 %) and return the chunks.
2. **send** (`trust_plan_send`): send the chord (chunks, then the finisher; an errback fails the
   run) and stamp the plans ``sent_at``, so that a redelivered start sends nothing.
3. **chunk** (`trust_chunk_compute`, one task per chunk): read the plan, compute the alphas of
   its subset range, store them in a `TrustChunk` (once: a redelivery stores nothing) and move
   the run's progress towards 60 %.  A chunk never loads the study.
4. **finish** (`trust_plan_finish`, the chord's body): load the answers as they are now, merge
   each plan's chunks when its fingerprint still matches them, compute in-process what cannot be
   merged (named with its reason in ``timings["trust_fallback"]``), build the document (60–100 %)
   and delete the plans.

Correct first: the document always describes the answers as they are when it is built.  Every
task is idempotent (acks_late + reject_on_worker_lost redeliver the task of a lost worker).
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import CharField, Count, F, Subquery, Sum, Value
from django.db.models.functions import Cast, Coalesce, Concat, Greatest, Least
from django.utils import timezone

from core.results import TrustInput, trust_inputs
from core.settings import AnalysisSettings
from core.stats.trust import TrustPartial, fingerprint, plan_chunks, trust_chunk, trust_merge
from jobs.services import job_start
from judges.selectors import study_has_judges

from .models import AnalysisRun, TrustChunk, TrustPlan
from .sections import fan_out, sections_plan_create, sections_send, sections_sent
from .selectors import QuestionData, study_judges, study_questions
from .services import analysis_run_complete, analysis_run_fail, peak_rss_reset

PROGRESS = (5, 60)  # the chunks move a run from 5 % to 60 %; the finisher from 60 % to 100 %


class Chunk(NamedTuple):
    """One task of the chord: the subsets ``start..stop-1`` of a plan."""

    plan_id: int
    start: int
    stop: int


# --------------------------------------------------------------------------- the task's entry


def analysis_run_start(*, run_id: int) -> None:
    """Start a run from its Celery task: compute it here, or plan and send its trust chord."""
    chunks = trust_plan_create(run_id=run_id)
    if chunks:
        trust_plan_send(run_id=run_id, chunks=chunks)


def _fanout_keys(inputs: Mapping[str, TrustInput], settings: AnalysisSettings) -> dict[str, int]:
    """Return ``{key: k}`` of the trust computations that fan out: exact with k ≥ the minimum."""
    low = max(2, int(django_settings.CONCORD_TRUST_FANOUT_MIN_K))
    return {key: inp.k for key, inp in inputs.items()
            if inp.ratings is not None and low <= inp.k <= settings.trust_max_exact}


def _inputs(run: AnalysisRun, data: list[QuestionData]) -> dict[str, TrustInput]:
    # The view with judges computes trust with the judges among the annotators: the plan and
    # the finisher read them both, as `analysis_run_complete` does, so the ratings agree.
    judges, answers = (study_judges(study=run.study) if run.analysis.judges_as_annotators
                       else ([], []))
    return {inp.key: inp for inp in trust_inputs(data, settings=run.analysis, judges=judges,
                                                 judge_answers=answers)}


def _pack(ratings: np.ndarray) -> bytes:
    return zlib.compress(np.ascontiguousarray(ratings, dtype="<f8").tobytes(), 1)


def _unpack(plan: TrustPlan) -> np.ndarray:
    flat = np.frombuffer(zlib.decompress(bytes(plan.ratings)), dtype="<f8")
    return flat.astype(float).reshape(plan.k, plan.n_items)


# --------------------------------------------------------------------------- 1. plan


def trust_plan_create(*, run_id: int) -> list[Chunk]:
    """Start a run: return the chunks to send, or ``[]`` when there is nothing to send (the run
    was computed here in-process, is already done, or its chord is already out).

    A fanned-out run is marked running with one `TrustPlan` per fanned-out computation; the
    caller sends the chord (`trust_plan_send`).
    """
    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    if run.status == AnalysisRun.Status.DONE:
        return []
    plans = TrustPlan.objects.filter(run=run_id)
    if run.status == AnalysisRun.Status.RUNNING and (
            plans.filter(sent_at__isnull=False).exists() or sections_sent(run_id=run_id)):
        return []  # a redelivered start: the chord of the first delivery is on its way
    began = time.perf_counter()
    peak_rss_reset()  # the run's peak memory includes loading its answers
    try:
        data = study_questions(study=run.study)
        load_s = time.perf_counter() - began
        inputs = _inputs(run, data)
        keys = _fanout_keys(inputs, run.analysis)
    except Exception as exc:
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    if not keys:
        plans.delete()  # of an earlier attempt that never sent its chord
        # The sections as tasks of their own (`analysis.sections`); a study with LLM judges
        # is built in one process (its judges section reads every question: not a group yet).
        if fan_out(data=data) and not study_has_judges(study=run.study):
            try:
                names = sections_plan_create(run=run, data=data, load_s=load_s, began=began)
            except Exception as exc:
                analysis_run_fail(run_id=run_id, error=exc)
                raise
            sections_send(run_id=run_id, names=names)
            return []
        analysis_run_complete(run=run, data=data, load_s=load_s)
        return []
    n_chunks = int(django_settings.CONCORD_TRUST_CHUNKS)
    now = timezone.now()
    with transaction.atomic():
        plans.delete()  # of an earlier attempt, maybe on other answers; their chunks go too
        created = TrustPlan.objects.bulk_create([
            TrustPlan(run=run, question=inputs[key].question, scale=inputs[key].scale,
                      items=inputs[key].items,
                      level=inputs[key].level, domain=[float(v) for v in inputs[key].domain],
                      k=k, n_items=inputs[key].ratings.shape[1], ratings=_pack(inputs[key].ratings),
                      fingerprint=fingerprint(inputs[key].ratings, inputs[key].domain,
                                              inputs[key].level),
                      n_chunks=len(plan_chunks(k, n_chunks)), started_at=now)
            for key, k in keys.items()])
        chunks = [Chunk(plan.pk, a, b) for plan in created for a, b in plan_chunks(plan.k, n_chunks)]
        job_start(model=AnalysisRun, job_id=run_id, progress=PROGRESS[0], timings={},
                  message=f"trust coefficients: 0 of {len(chunks)} chunks")
    return chunks


# --------------------------------------------------------------------------- 2. send


def trust_plan_send(*, run_id: int, chunks: list[Chunk]) -> None:
    """Send the chord of a planned run: every chunk, then the finisher (errback: the run fails)."""
    from celery import chord

    from .tasks import analysis_failed, finish_analysis, trust_chunk_task

    header = [trust_chunk_task.si(*chunk) for chunk in chunks]
    body = finish_analysis.s(run_id).on_error(analysis_failed.s(run_id))
    try:
        chord(header)(body)
    except Exception as exc:  # the broker or the result backend refused it: say so
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    trust_plan_mark_sent(run_id=run_id)


def trust_plan_mark_sent(*, run_id: int) -> None:
    """Record that the chord of a run is out, so a redelivered start does not send it again."""
    TrustPlan.objects.filter(run=run_id, sent_at__isnull=True,
                             run__status=AnalysisRun.Status.RUNNING).update(sent_at=timezone.now())


# --------------------------------------------------------------------------- 3. chunk


def _chunk_progress(run_id: int) -> None:
    """Advance the run by the number of stored chunks, in one UPDATE (never backwards)."""
    done = Coalesce(Subquery(TrustChunk.objects.filter(plan__run=run_id).order_by()
                             .values("plan__run").annotate(n=Count("*")).values("n")[:1]), 0)
    total = Coalesce(Subquery(TrustPlan.objects.filter(run=run_id).order_by().values("run")
                              .annotate(n=Sum("n_chunks")).values("n")[:1]), 1)
    low, high = PROGRESS
    AnalysisRun.objects.filter(pk=run_id, status=AnalysisRun.Status.RUNNING).update(
        heartbeat_at=timezone.now(),
        progress=Greatest(F("progress"), Least(low + (high - low) * done / total, high)),
        message=Concat(Value("trust coefficients: "), Cast(done, CharField()), Value(" of "),
                       Cast(total, CharField()), Value(" chunks"), output_field=CharField()))


def trust_chunk_compute(*, plan_id: int, start: int, stop: int) -> dict[str, Any]:
    """Compute and store the alphas of one chunk (idempotent: a stored chunk is not redone).

    Returns a small summary (the chord's header result); the alphas go to a TrustChunk row.
    A chunk whose run is over, or whose plan an attempt since replaced, stores nothing.
    """
    summary: dict[str, Any] = {"plan": plan_id, "start": start, "computed": False}
    plan = TrustPlan.objects.select_related("run").filter(pk=plan_id).first()
    if plan is None:
        return {**summary, "skipped": "the plan is gone"}
    summary["key"] = plan.key
    if plan.run.status != AnalysisRun.Status.RUNNING:
        return {**summary, "skipped": "the run is not running"}
    if TrustChunk.objects.filter(plan=plan_id, start=start).exists():
        _chunk_progress(plan.run_id)
        return {**summary, "skipped": "already stored"}
    try:
        began = time.perf_counter()
        partial = trust_chunk(_unpack(plan), level=plan.level, domain=plan.domain, start=start,
                              stop=stop)
        seconds = time.perf_counter() - began
        TrustChunk.objects.bulk_create([TrustChunk(
            plan=plan, start=start, stop=stop, alphas=partial.alphas.astype("<f8").tobytes(),
            seconds=seconds)], ignore_conflicts=True)
    except Exception as exc:
        analysis_run_fail(run_id=plan.run_id, error=exc)
        raise
    _chunk_progress(plan.run_id)
    return {**summary, "computed": True, "seconds": round(seconds, 4)}


# --------------------------------------------------------------------------- 4. finish


def _merge(plans: list[TrustPlan], inputs: Mapping[str, TrustInput], variant: str):
    """Merge the stored chunks of each plan; plans that cannot be merged are left out."""
    merged: dict[tuple[str, str, str], Any] = {}
    fallback: dict[str, str] = {}
    seconds = 0.0
    rows: dict[int, list[TrustChunk]] = {}
    for row in TrustChunk.objects.filter(plan__in=plans).order_by("plan", "start"):
        rows.setdefault(row.plan_id, []).append(row)
        seconds += row.seconds
    for plan in plans:
        inp = inputs.get(plan.key)
        if inp is None or inp.ratings is None or inp.k != plan.k:
            fallback[plan.key] = "the annotators changed since the fan-out"
            continue
        if fingerprint(inp.ratings, inp.domain, inp.level) != plan.fingerprint:
            fallback[plan.key] = "the ratings changed since the fan-out"
            continue
        partials = [TrustPartial(k=plan.k, level=plan.level, start=r.start, stop=r.stop,
                                 alphas=np.frombuffer(bytes(r.alphas), dtype="<f8").astype(float),
                                 fingerprint=plan.fingerprint) for r in rows.get(plan.pk, [])]
        try:
            merged[(plan.question, plan.scale, plan.items)] = trust_merge(partials, variant=variant, k=plan.k)
        except ValueError as exc:  # a missing chunk (a gap), or nothing stored at all
            fallback[plan.key] = str(exc)
    return merged, fallback, seconds


def trust_plan_finish(*, run_id: int, chunk_results: list | None = None) -> AnalysisRun:
    """Merge a fanned-out run's chunks and build its document (idempotent, like the start).

    Correct first: a computation whose chunks are missing or were computed on other ratings than
    the current ones is computed here in-process (and named in ``timings["trust_fallback"]``).
    """
    run = AnalysisRun.objects.select_related("study").get(pk=run_id)
    plans = list(TrustPlan.objects.filter(run=run_id))
    if run.status in (AnalysisRun.Status.DONE, AnalysisRun.Status.FAILED):
        TrustPlan.objects.filter(run=run_id).delete()  # a redelivered finisher tidies up
        return run
    if not plans:
        return run  # not a fanned-out run (its start computes it in-process)
    began, clock = timezone.now(), time.perf_counter()
    peak_rss_reset()
    try:
        data = study_questions(study=run.study)
        load_s = time.perf_counter() - clock
        variant = run.analysis.trust_variant
        merged, fallback, chunk_seconds = _merge(plans, _inputs(run, data), variant)
    except Exception as exc:
        analysis_run_fail(run_id=run_id, error=exc)
        raise
    started = min(plan.started_at for plan in plans)
    figures: dict[str, Any] = {
        "trust_fanout": {plan.key: plan.k for plan in plans},
        "trust_chunks": sum(plan.n_chunks for plan in plans),
        "trust_chunks_s": round(chunk_seconds, 4),
        "trust_wall_s": round(max(0.0, (began - started).total_seconds()), 4),
        "trust_merge_s": round(time.perf_counter() - clock - load_s, 4),
    }
    hosts = Counter(r.get("host") for r in chunk_results or [] if isinstance(r, dict)
                    and r.get("computed") and r.get("host"))
    if hosts:
        figures["trust_workers"] = dict(sorted(hosts.items()))
    if fallback:
        figures["trust_fallback"] = fallback
    run = analysis_run_complete(run=run, data=data, load_s=load_s, resume_at=PROGRESS[1],
                                trust_results=merged, timings=figures)
    if run.status == AnalysisRun.Status.DONE:
        # The alphas served the merge and the ratings are in the document; the figures stay.
        TrustPlan.objects.filter(run=run_id).delete()
    return run
