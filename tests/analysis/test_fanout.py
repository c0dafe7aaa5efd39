"""Trust coefficients of many annotators fan out as a Celery chord of subset chunks, merged exactly.

The chord runs eagerly here (in this process); tests/analysis/test_worker.py runs it on real
worker processes.  The chunk and finisher tasks are also called one by one, as a broker would
deliver (or redeliver) them.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from django.core.management import call_command

from analysis import services, tasks
from analysis.models import AnalysisRun, TrustChunk
from analysis.results import trust_inputs
from analysis.selectors import study_data
from analysis.services import analysis_run_begin, analysis_run_create, analysis_run_execute
from analysis.stats.trust import plan_chunks, trust_coefficients
from annotation.models import Response
from studies.services import participants_invite

pytestmark = pytest.mark.django_db


def rated_study(make_study, owner, *, annotators=16, items=24, slug="fanout", seed=1):
    """A study where every annotator rates every item: a seeded truth plus per-annotator noise."""
    from annotation.services import response_submit

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 8, size=items)
    rows = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(items))
    study = make_study(owner, slug=slug, items=rows)
    for j, participant in enumerate(participants_invite(study=study, count=annotators)):
        sd = 0.3 + 0.25 * j
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item.position
            value = None if rng.random() < 0.05 else int(np.clip(round(truth[item] + rng.normal(0, sd)), 0, 7))
            response_submit(participant=participant, position=position, value=value,
                            client_id=uuid.uuid4(), active_ms=1000 + 10 * position)
    return study


@pytest.fixture
def eager():
    """Run Celery tasks (and the chord) in this process, propagating errors."""
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture
def chunk_calls(monkeypatch):
    """Record every chunk the chunk task is asked for, as (key, start, stop)."""
    calls = []
    real = services.trust_chunk_compute

    def spy(*, run_id, key, start, stop):
        calls.append((key, start, stop))
        return real(run_id=run_id, key=key, start=start, stop=stop)

    monkeypatch.setattr(services, "trust_chunk_compute", spy)
    return calls


@pytest.fixture
def study16(make_study, alice):
    return rated_study(make_study, alice, annotators=16)


def inputs_of(study, settings=None):
    run_settings = services.analysis_settings(study=study, overrides=settings)
    return {i.key: i for i in trust_inputs(study_data(study=study), scale_values=study.scale.values,
                                           reductions=study.scale.reductions,
                                           settings=run_settings)}, run_settings


def expected_chunks(study, n_chunks=8, minimum=15):
    inputs, s = inputs_of(study)
    return [(key, a, b) for key, inp in inputs.items()
            if inp.ratings is not None and minimum <= inp.k <= s["trust_max_exact"]
            for a, b in plan_chunks(inp.k, n_chunks)]


def comparable(document):
    """The document without what differs between two runs of the same data (run id, time)."""
    return {**document, "study": {**document["study"], "run": None}, "generated_at": None}


def in_process(study, **overrides):
    run = analysis_run_create(study=study, overrides=overrides, enqueue=False)
    return analysis_run_execute(run_id=run.pk)


def assert_exact_trust(document, study):
    inputs, s = inputs_of(study)
    names = document["annotators"]
    for record in document["trust"]:
        inp = inputs[f"{record['scale']}:{record['items']}"]
        expected = trust_coefficients(inp.ratings, level=s["level"], domain=inp.domain,
                                      variant=s["trust_variant"], max_exact=s["trust_max_exact"])
        got = [record["coefficients"][names[a]] for a in inp.present]
        assert len(got) == len(expected.coefficients) == inp.k
        for g, e in zip(got, expected.coefficients, strict=True):
            assert (g is None and e is None) or abs(g - e) <= 1e-12


def test_a_run_with_16_annotators_fans_out_and_merges_exactly(eager, chunk_calls, study16):
    expected = expected_chunks(study16)
    assert {key for key, *_ in expected} >= {"raw:all", "reduced:all"}
    run = analysis_run_create(study=study16, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and run.progress == 100 and run.attempts == 1
    assert sorted(chunk_calls) == sorted(expected)
    t = run.timings
    assert t["trust_chunks"] == len(expected) and set(t["trust_fanout"]) == {k for k, *_ in expected}
    assert t["trust_chunks_s"] > 0 and t["trust_wall_s"] >= 0 and "trust_fallback" not in t
    assert not TrustChunk.objects.filter(run=run).exists()  # the alphas served the merge
    raw = next(r for r in run.results["trust"] if r["scale"] == "raw" and r["items"] == "all")
    assert raw["method"] == "exact" and raw["n_subsets"] == 2**16 - 16 - 1
    assert_exact_trust(run.results, study16)
    assert comparable(run.results) == comparable(in_process(study16).results)


def test_15_annotators_fan_out_and_14_do_not(eager, chunk_calls, make_study, alice, settings):
    settings.CONCORD_TRUST_CHUNKS = 3
    study = rated_study(make_study, alice, annotators=15)
    run = analysis_run_create(study=study, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and sorted(chunk_calls) == sorted(expected_chunks(study, 3))
    assert chunk_calls and {a for _, a, _ in chunk_calls} == {a for a, _ in plan_chunks(15, 3)}
    assert comparable(run.results) == comparable(in_process(study).results)

    chunk_calls.clear()
    settings.CONCORD_TRUST_FANOUT_MIN_K = 16  # now 15 annotators is below the minimum
    run = analysis_run_create(study=study, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and chunk_calls == [] and "trust_fanout" not in run.timings


def test_sampled_trust_and_the_analyze_command_stay_in_process(eager, chunk_calls, study16, tmp_path):
    run = analysis_run_create(study=study16, overrides={"trust_max_exact": 15}, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and chunk_calls == []
    raw = next(r for r in run.results["trust"] if r["scale"] == "raw" and r["items"] == "all")
    assert raw["method"] == "sampled"

    call_command("analyze", study16.slug, "--output", str(tmp_path / "r.json"))
    assert chunk_calls == []
    latest = AnalysisRun.objects.latest("id")
    assert latest.status == "done" and "trust_fanout" not in latest.timings


def deliver_all(run_id, chunks):
    return [tasks.trust_chunk_task(run_id, key, a, b) for key, a, b in chunks]


def test_progress_rises_with_each_chunk_then_to_100(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 4
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = analysis_run_begin(run_id=run.pk)
    assert len(chunks) == len(expected_chunks(study16, 4))
    run.refresh_from_db()
    assert (run.status, run.progress, run.message) == (
        "running", 5, f"trust coefficients: 0 of {len(chunks)} chunks")
    seen = []
    for n, chunk in enumerate(chunks, 1):
        deliver_all(run.pk, [chunk])
        run.refresh_from_db()
        seen.append(run.progress)
        assert run.message == f"trust coefficients: {n} of {len(chunks)} chunks"
    assert seen == sorted(seen) and seen[0] > 5 and seen[-1] == 60
    assert seen == [5 + 55 * n // len(chunks) for n in range(1, len(chunks) + 1)]
    done = tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert done is None and run.status == "done" and run.progress == 100


def test_a_redelivered_chunk_stores_nothing_twice(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 2
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = analysis_run_begin(run_id=run.pk)
    first = deliver_all(run.pk, chunks)
    rows = {(c.key, c.start): (bytes(c.alphas), c.fingerprint, c.pk)
            for c in TrustChunk.objects.filter(run=run)}
    again = deliver_all(run.pk, chunks)  # the broker redelivers every chunk
    assert all(r["computed"] for r in first) and not any(r["computed"] for r in again)
    assert {r["skipped"] for r in again} == {"already stored"}
    assert {(c.key, c.start): (bytes(c.alphas), c.fingerprint, c.pk)
            for c in TrustChunk.objects.filter(run=run)} == rows
    assert len(rows) == len(chunks)
    # a redelivered start does not send a second chord once the first one is out
    services.analysis_run_fanned_out(run_id=run.pk)
    assert analysis_run_begin(run_id=run.pk) == []
    tasks.finish_analysis(first, run.pk)
    run.refresh_from_db()
    finished = (run.status, run.results, run.timings, run.attempts, run.finished_at)
    assert run.status == "done" and run.attempts == 1
    tasks.finish_analysis(first, run.pk)  # a redelivered finisher changes nothing
    assert deliver_all(run.pk, chunks[:1])[0]["skipped"] == "the run is not running"
    run.refresh_from_db()
    assert (run.status, run.results, run.timings, run.attempts, run.finished_at) == finished
    assert not TrustChunk.objects.filter(run=run).exists()
    assert_exact_trust(run.results, study16)


def test_changed_ratings_or_a_missing_chunk_fall_back_to_in_process(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 3
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = analysis_run_begin(run_id=run.pk)
    deliver_all(run.pk, chunks)
    # An answer changes after the chunks were computed (same annotators, another value; 0 ↔ 7
    # differs on the raw scale and on every reduction).
    answer = Response.objects.filter(participant__study=study16, value__in=[0, 7]).first()
    Response.objects.filter(pk=answer.pk).update(value=7 - answer.value)
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    fallback = run.timings["trust_fallback"]
    assert set(fallback) == set(run.timings["trust_fanout"])  # every key saw the raw answer
    assert set(fallback.values()) == {"the ratings changed since the fan-out"}
    assert_exact_trust(run.results, study16)  # on the new answers
    assert comparable(run.results) == comparable(in_process(study16).results)

    run = analysis_run_create(study=study16, enqueue=False)
    chunks = analysis_run_begin(run_id=run.pk)
    deliver_all(run.pk, chunks)
    TrustChunk.objects.filter(run=run, key="raw:all", start=chunks[1][1]).delete()
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done" and list(run.timings["trust_fallback"]) == ["raw:all"]
    assert "gap" in run.timings["trust_fallback"]["raw:all"]
    assert_exact_trust(run.results, study16)


def test_a_chunk_computed_on_other_annotators_stores_nothing(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 2
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = analysis_run_begin(run_id=run.pk)
    Response.objects.filter(participant__study=study16,
                            participant=study16.participants.order_by("id").last()).delete()
    result = deliver_all(run.pk, chunks[:1])[0]
    assert result == {**result, "computed": False, "skipped": "the ratings changed since the fan-out"}
    assert not TrustChunk.objects.filter(run=run).exists()
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done" and run.results["counts"]["annotators"] == 15
    assert set(run.timings["trust_fallback"].values()) == {"the annotators changed since the fan-out"}
    assert_exact_trust(run.results, study16)


def test_a_failed_chunk_fails_the_run(eager, study16, monkeypatch):
    def broken(*args, **kwargs):
        raise MemoryError("no room for the alphas")

    monkeypatch.setattr(services, "trust_chunk", broken)
    run = analysis_run_create(study=study16, enqueue=False)
    with pytest.raises(MemoryError):
        tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "MemoryError: no room for the alphas"
    assert run.finished_at is not None and run.results is None


def test_the_chord_errback_fails_the_run_but_never_a_finished_one(study16):
    run = analysis_run_create(study=study16, enqueue=False)
    analysis_run_begin(run_id=run.pk)
    tasks.analysis_failed(None, RuntimeError("chunk lost"), None, run.pk)
    run.refresh_from_db()
    assert (run.status, run.error, run.message) == ("failed", "RuntimeError: chunk lost", "failed")
    assert tasks.finish_analysis(None, run.pk) is None  # a late finisher leaves it failed
    run.refresh_from_db()
    assert run.status == "failed"

    done = in_process(study16)
    tasks.analysis_failed(None, RuntimeError("late"), None, done.pk)
    done.refresh_from_db()
    assert done.status == "done" and done.error == ""


def test_the_chord_carries_an_errback_and_tiny_header_results(study16, monkeypatch):
    sent = {}

    def capture(self, body, **options):
        sent["header"], sent["body"] = self.tasks, body

    monkeypatch.setattr("celery.canvas._chord.__call__", capture)
    run = analysis_run_create(study=study16, enqueue=False)
    tasks.run_analysis(run.pk)
    header, body = sent["header"], sent["body"]
    assert len(header) == len(expected_chunks(study16))
    assert all(sig.task == "analysis.tasks.trust_chunk_task" and sig.immutable for sig in header)
    assert body.task == "analysis.tasks.finish_analysis" and tuple(body.args) == (run.pk,)
    (errback,) = body.options["link_error"]
    assert errback["task"] == "analysis.tasks.analysis_failed" and tuple(errback["args"]) == (run.pk,)
    run.refresh_from_db()
    assert run.timings["trust_plan"]["sent"] is True
    for task in (tasks.run_analysis, tasks.trust_chunk_task, tasks.finish_analysis,
                 tasks.analysis_failed):
        assert task.acks_late and task.reject_on_worker_lost
    key, a, b = header[0].args[1:]
    summary = tasks.trust_chunk_task(run.pk, key, a, b)
    assert len(repr(summary)) < 200
