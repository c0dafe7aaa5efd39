"""Trust coefficients of many annotators fan out as a Celery chord of subset chunks, merged exactly.

The chord runs eagerly here (in this process); tests/analysis/test_worker.py runs it on real
worker processes.  The chunk and finisher tasks are also called one by one, as a broker would
deliver (or redeliver) them.  The protocol is analysis/fanout.py.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from django.core.management import call_command

from analysis import fanout, services, tasks
from analysis.fanout import trust_plan_create
from analysis.models import AnalysisRun, TrustChunk, TrustPlan
from analysis.selectors import study_questions
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Answer, Response
from core.results import trust_inputs
from core.stats.trust import fingerprint, plan_chunks, trust_coefficients
from studies.models import Study
from studies.services import participants_invite
from tests.conftest import study_make

pytestmark = pytest.mark.django_db


def rated_study(make_study, owner, *, annotators=16, items=24, slug="fanout", seed=1):
    """A study where every annotator rates every item: a seeded truth plus per-annotator noise
    (5 % of the answers left blank: the question is optional)."""
    from tests.answers import submit

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 8, size=items)
    rows = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(items))
    study = make_study(owner, slug=slug, items=rows)
    study.questions.update(required=False)
    for j, participant in enumerate(participants_invite(study=study, count=annotators)):
        sd = 0.3 + 0.25 * j
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item.position
            value = None if rng.random() < 0.05 else int(np.clip(round(truth[item] + rng.normal(0, sd)), 0, 7))
            submit(participant, position, value, client_id=uuid.uuid4(),
                   active_ms=1000 + 10 * position)
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
    real = fanout.trust_chunk_compute

    def spy(*, plan_id, start, stop):
        calls.append((TrustPlan.objects.get(pk=plan_id).key, start, stop))
        return real(plan_id=plan_id, start=start, stop=stop)

    monkeypatch.setattr(fanout, "trust_chunk_compute", spy)
    return calls


@pytest.fixture(scope="module")
def rated16(module_db):
    """The 16-annotator study, answered once for the module (see module_db): its 384 answers
    each go through the app's answer path, the costliest part of every test here."""
    from django.contrib.auth import get_user_model

    with module_db.unblock():
        # not "alice": tests here create her
        owner = get_user_model().objects.create_user("owner16", "owner16@example.org", "pw-16")
        return rated_study(study_make, owner, annotators=16, slug="fanout16").pk


@pytest.fixture
def study16(rated16, db):
    from annotation.selectors import questions_forget

    yield Study.objects.get(pk=rated16)
    questions_forget(study_id=rated16)


def inputs_of(study, settings=None):
    run_settings = services.analysis_settings(study=study, overrides=settings)
    return {i.key: i for i in trust_inputs(study_questions(study=study),
                                           settings=run_settings)}, run_settings


def expected_chunks(study, n_chunks=8, minimum=15):
    inputs, s = inputs_of(study)
    return [(key, a, b) for key, inp in inputs.items()
            if inp.ratings is not None and minimum <= inp.k <= s.trust_max_exact
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
        inp = inputs[f"{record['question']}:{record['scale']}:{record['items']}"]
        expected = trust_coefficients(inp.ratings, level=s.level, domain=inp.domain,
                                      variant=s.trust_variant, max_exact=s.trust_max_exact)
        got = [record["coefficients"][names[a]] for a in inp.present]
        assert len(got) == len(expected.coefficients) == inp.k
        for g, e in zip(got, expected.coefficients, strict=True):
            assert (g is None and e is None) or abs(g - e) <= 1e-12


def test_a_run_with_16_annotators_fans_out_and_merges_exactly(eager, chunk_calls, study16):
    expected = expected_chunks(study16)
    assert {key for key, *_ in expected} >= {"rating:raw:all", "rating:reduced:all"}
    run = analysis_run_create(study=study16, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and run.progress == 100 and run.attempts == 1
    assert sorted(chunk_calls) == sorted(expected)
    t = run.timings
    assert t["trust_chunks"] == len(expected) and set(t["trust_fanout"]) == {k for k, *_ in expected}
    assert t["trust_chunks_s"] > 0 and t["trust_wall_s"] >= 0 and "trust_fallback" not in t
    # the alphas served the merge, and the plan is not kept in the timings
    assert not TrustPlan.objects.filter(run=run).exists() and not TrustChunk.objects.exists()
    assert "trust_plan" not in t
    raw = next(r for r in run.results["trust"] if r["scale"] == "raw" and r["items"] == "all")
    assert raw["method"] == "exact" and raw["n_subsets"] == 2**16 - 16 - 1
    assert_exact_trust(run.results, study16)
    assert comparable(run.results) == comparable(in_process(study16).results)


def test_every_question_fans_out_under_its_own_key(eager, chunk_calls, alice, settings):
    """Two questions per item, one with a reduction: each question's trust fans out apart, keyed
    ``question:scale:items``, and merges into the document computed in-process."""
    from annotation.services import response_submit
    from studies.services import items_import, study_create, study_open

    settings.CONCORD_TRUST_CHUNKS = 2
    study = study_create(owner=alice, slug="two-questions", title="Two questions", questions=[
        {"key": "coherence", "prompt": "Coherent?", "scale": "likert-1-5", "cant_judge": True},
        {"key": "similarity", "prompt": "Similar?", "scale": "similarity-1-5"}])
    items_import(study=study, data=("id,text\n" + "".join(
        f"i{n},Pair {n}\n" for n in range(12))).encode(), filename="items.csv")
    study_open(study=study)
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, size=(2, 12))
    for j, participant in enumerate(participants_invite(study=study, count=16)):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item.position
            noisy = np.clip(truth[:, item] + rng.integers(-1, 2, size=2) * (j % 3), 1, 5)
            coherence = {"cant_judge": True} if (item + j) % 9 == 0 else {"value": int(noisy[0])}
            response_submit(participant=participant, position=position,
                            answers={"coherence": coherence, "similarity": {"value": int(noisy[1])}},
                            client_id=uuid.uuid4(), active_ms=1000)
    overrides = {"bootstrap_samples": 20}
    run = analysis_run_create(study=study, overrides=overrides, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and "trust_fallback" not in run.timings
    keys = set(run.timings["trust_fanout"])
    assert {"coherence:raw:all", "similarity:raw:all", "similarity:reduced:all"} <= keys
    assert {key for key, *_ in chunk_calls} == keys
    assert_exact_trust(run.results, study)
    assert comparable(run.results) == comparable(in_process(study, **overrides).results)


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


def test_a_fan_out_leaves_out_the_excluded_annotators_as_in_process(eager, chunk_calls, study16):
    overrides = {"excluded_annotators": ["A16"]}
    run = analysis_run_create(study=study16, overrides=overrides, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and chunk_calls and "trust_fallback" not in run.timings
    assert set(run.timings["trust_fanout"].values()) == {15}
    assert "A16" not in run.results["annotators"] and len(run.results["annotators"]) == 15
    assert comparable(run.results) == comparable(in_process(study16, **overrides).results)


def test_sampled_trust_and_the_analyze_command_stay_in_process(eager, chunk_calls, study16, tmp_path):
    run = analysis_run_create(study=study16, overrides={"trust_max_exact": 15}, enqueue=False)
    tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    sampled = {f"{r['question']}:{r['scale']}:{r['items']}" for r in run.results["trust"]
               if r["method"] == "sampled"}
    assert "rating:raw:all" in sampled
    # A key with more annotators than the exact limit is sampled in-process, never in chunks
    # (a key whose items leave 15 annotators may still fan out: that depends on the ratings).
    assert not sampled & {key for key, *_ in chunk_calls}

    chunk_calls.clear()
    call_command("analyze", study16.slug, "--output", str(tmp_path / "r.json"))
    assert chunk_calls == []
    latest = AnalysisRun.objects.latest("id")
    assert latest.status == "done" and "trust_fanout" not in latest.timings


def deliver_all(chunks):
    return [tasks.trust_chunk_task(plan_id, a, b) for plan_id, a, b in chunks]


def test_progress_rises_with_each_chunk_then_to_100(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 4
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    assert len(chunks) == len(expected_chunks(study16, 4))
    run.refresh_from_db()
    assert (run.status, run.progress, run.message) == (
        "running", 5, f"trust coefficients: 0 of {len(chunks)} chunks")
    seen = []
    for n, chunk in enumerate(chunks, 1):
        deliver_all([chunk])
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
    chunks = trust_plan_create(run_id=run.pk)
    first = deliver_all(chunks)
    rows = {(c.plan.key, c.start): (bytes(c.alphas), c.plan.fingerprint, c.pk)
            for c in TrustChunk.objects.filter(plan__run=run).select_related("plan")}
    again = deliver_all(chunks)  # the broker redelivers every chunk
    assert all(r["computed"] for r in first) and not any(r["computed"] for r in again)
    assert {r["skipped"] for r in again} == {"already stored"}
    assert {(c.plan.key, c.start): (bytes(c.alphas), c.plan.fingerprint, c.pk)
            for c in TrustChunk.objects.filter(plan__run=run).select_related("plan")} == rows
    assert len(rows) == len(chunks)
    # a redelivered start does not send a second chord once the first one is out
    fanout.trust_plan_mark_sent(run_id=run.pk)
    assert trust_plan_create(run_id=run.pk) == []
    tasks.finish_analysis(first, run.pk)
    run.refresh_from_db()
    finished = (run.status, run.results, run.timings, run.attempts, run.finished_at)
    assert run.status == "done" and run.attempts == 1
    tasks.finish_analysis(first, run.pk)  # a redelivered finisher changes nothing
    assert deliver_all(chunks[:1])[0]["skipped"] == "the plan is gone"
    run.refresh_from_db()
    assert (run.status, run.results, run.timings, run.attempts, run.finished_at) == finished
    assert not TrustPlan.objects.filter(run=run).exists() and not TrustChunk.objects.exists()
    assert_exact_trust(run.results, study16)


def test_changed_ratings_or_a_missing_chunk_fall_back_to_in_process(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 3
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    deliver_all(chunks)
    # An answer changes after the chunks were computed (same annotators, another value; 0 ↔ 7
    # differs on the raw scale and on every reduction).
    before, _ = inputs_of(study16)
    answer = Answer.objects.filter(response__participant__study=study16, value__in=[0, 7]).first()
    Answer.objects.filter(pk=answer.pk).update(value=7 - answer.value)
    after, _ = inputs_of(study16)
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    fallback = run.timings["trust_fallback"]
    # Every key saw the raw answer over all items; over the simple items, only when the answer's
    # item is (or was) simple, which depends on the generated answers (participant pks seed them).
    changed = {key for key in run.timings["trust_fanout"]
               if not np.array_equal(before[key].ratings, after[key].ratings, equal_nan=True)}
    assert {key for key in run.timings["trust_fanout"] if key.endswith(":all")} <= changed
    assert set(fallback) == changed
    assert {fallback[key] for key in fallback if key.endswith(":all")} == {
        "the ratings changed since the fan-out"}
    # Over simple items the changed answer may also change who is present (the simple set moves).
    assert set(fallback.values()) <= {"the ratings changed since the fan-out",
                                      "the annotators changed since the fan-out"}
    assert_exact_trust(run.results, study16)  # on the new answers
    assert comparable(run.results) == comparable(in_process(study16).results)

    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    deliver_all(chunks)
    raw_all = TrustPlan.objects.get(run=run, scale="raw", items="all")
    second = [start for plan_id, start, _ in chunks if plan_id == raw_all.pk][1]
    TrustChunk.objects.filter(plan=raw_all, start=second).delete()
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done" and list(run.timings["trust_fallback"]) == ["rating:raw:all"]
    assert "gap" in run.timings["trust_fallback"]["rating:raw:all"]
    assert_exact_trust(run.results, study16)


def test_chunks_compute_on_the_planned_ratings_and_never_load_the_study(study16, settings,
                                                                        monkeypatch):
    settings.CONCORD_TRUST_CHUNKS = 2
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    inputs, _ = inputs_of(study16)
    for plan in TrustPlan.objects.filter(run=run):
        inp = inputs[plan.key]
        stored = fanout._unpack(plan)  # what the chunks compute on: the ratings when planned
        assert np.array_equal(stored, inp.ratings, equal_nan=True)
        assert plan.fingerprint == fingerprint(stored, plan.domain, plan.level)
        assert (plan.k, plan.level, tuple(plan.domain)) == (inp.k, inp.level, inp.domain)
        assert plan.started_at is not None and plan.sent_at is None
    monkeypatch.setattr(fanout, "study_questions", lambda **kwargs: pytest.fail("a chunk loaded the study"))
    assert all(r["computed"] for r in deliver_all(chunks))


def test_answers_of_other_annotators_fall_back_to_in_process(study16, settings):
    settings.CONCORD_TRUST_CHUNKS = 2
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    Response.objects.filter(participant__study=study16,
                            participant=study16.participants.order_by("id").last()).delete()
    # The chunks compute on the planned ratings (16 annotators); the finisher sees 15 now.
    assert all(r["computed"] for r in deliver_all(chunks))
    tasks.finish_analysis(None, run.pk)
    run.refresh_from_db()
    assert run.status == "done" and run.results["counts"]["annotators"] == 15
    fallback = run.timings["trust_fallback"]
    assert fallback["rating:raw:all"] == "the annotators changed since the fan-out"
    # A key of simple items may keep as many annotators after the deletion (its ratings changed):
    # which reason it gets depends on the generated ratings; either way it is computed here.
    assert set(fallback.values()) <= {"the annotators changed since the fan-out",
                                      "the ratings changed since the fan-out"}
    assert_exact_trust(run.results, study16)


def test_a_failed_chunk_fails_the_run(eager, study16, monkeypatch):
    def broken(*args, **kwargs):
        raise MemoryError("no room for the alphas")

    monkeypatch.setattr(fanout, "trust_chunk", broken)
    run = analysis_run_create(study=study16, enqueue=False)
    with pytest.raises(MemoryError):
        tasks.run_analysis.delay(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "MemoryError: no room for the alphas"
    assert run.finished_at is not None and run.results is None


def test_the_chord_errback_fails_the_run_but_never_a_finished_one(study16):
    run = analysis_run_create(study=study16, enqueue=False)
    chunks = trust_plan_create(run_id=run.pk)
    tasks.analysis_failed(None, RuntimeError("chunk lost"), None, run.pk)
    run.refresh_from_db()
    assert (run.status, run.error, run.message) == ("failed", "RuntimeError: chunk lost", "failed")
    late = deliver_all(chunks[:1])[0]  # a chunk of a failed run computes nothing
    assert (late["computed"], late["skipped"]) == (False, "the run is not running")
    assert tasks.finish_analysis(None, run.pk) is None  # a late finisher leaves it failed
    run.refresh_from_db()
    assert run.status == "failed" and not TrustPlan.objects.filter(run=run).exists()

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
    plans = TrustPlan.objects.filter(run=run)
    assert plans.exists() and not plans.filter(sent_at__isnull=True).exists()  # the chord is out
    assert "trust_plan" not in run.timings
    for task in (tasks.run_analysis, tasks.trust_chunk_task, tasks.finish_analysis,
                 tasks.analysis_failed):
        assert task.acks_late and task.reject_on_worker_lost
    plan_id, a, b = header[0].args
    assert TrustPlan.objects.filter(pk=plan_id, run=run).exists()
    summary = tasks.trust_chunk_task(plan_id, a, b)
    assert summary["computed"] and len(repr(summary)) < 200
