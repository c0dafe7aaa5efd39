"""Live quality while collecting: the periodic task flags a fast clicker before any run."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from analysis.live import live_quality_refresh, live_quality_study
from analysis.models import AnalysisRun, LiveQuality
from annotation.models import Response
from demo.services import demo_seed
from studies.models import Study
from tests.workers import start_beat, start_worker, stop_worker, wait_for

from .test_dashboard import planted  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture
def demos():
    # Seeded for each test, not once for the module (`demo_studies`): the last test here commits.
    _, created = demo_seed()
    return {d.study.slug: d for d in created}


@pytest.fixture
def coref(demos):
    demo = demos["demo-coref"]
    Study.objects.filter(pk=demo.study.pk).update(status=Study.Status.OPEN)
    demo.study.refresh_from_db()
    return demo


def pk_of(demo, behaviour):
    (pk,) = [pk for pk, b in demo.behaviours.items() if b == behaviour]
    return pk


def test_it_flags_the_planted_fast_clicker_after_the_task_runs(coref):
    assert not LiveQuality.objects.exists()
    report = live_quality_refresh()
    assert report["participants"] >= len(coref.behaviours)
    rows = LiveQuality.objects.filter(participant__study=coref.study)
    flagged = set(rows.filter(too_fast=True).values_list("participant_id", flat=True))
    assert flagged == {pk_of(coref, "random")}
    assert pk_of(coref, "constant") in set(
        rows.filter(straight_lining=True).values_list("participant_id", flat=True))
    assert not AnalysisRun.objects.exists()  # no run was needed


def test_its_counts_match_the_stored_times(coref):
    live_quality_refresh()
    bot = pk_of(coref, "random")
    row = LiveQuality.objects.get(participant_id=bot)
    times = list(Response.objects.filter(participant_id=bot, revision=1,
                                         active_ms__isnull=False)
                 .values_list("active_ms", flat=True))
    assert row.n_timed == len(times)
    assert row.n_fast == sum(1 for ms in times if ms < 1000 * row.floor_s)
    assert row.fast_share == pytest.approx(row.n_fast / row.n_timed)


def test_it_uses_the_studys_floor_and_a_second_run_updates_in_place(coref):
    live_quality_refresh()
    before = LiveQuality.objects.count()
    study = coref.study
    Study.objects.filter(pk=study.pk).update(
        analysis_settings={**study.analysis_settings,
                           "quality": {"too_fast": {"floor_s": 0.0}}})
    live_quality_study(study_id=study.pk,
                       stored_settings=Study.objects.get(pk=study.pk).analysis_settings)
    assert LiveQuality.objects.count() == before
    rows = LiveQuality.objects.filter(participant__study=study)
    assert rows.exists() and not rows.filter(too_fast=True).exists()
    assert set(rows.values_list("floor_s", flat=True)) == {0.0}


def test_it_leaves_a_study_that_is_not_open_alone(coref):
    Study.objects.update(status=Study.Status.CLOSED)
    assert live_quality_refresh() == {"studies": 0, "participants": 0}


def test_the_participants_page_shows_the_flags_and_when_they_were_computed(coref,
                                                                           django_assert_num_queries):
    live_quality_refresh()
    client = Client()
    client.force_login(coref.study.owner)
    html = client.get(reverse("studies:participants", kwargs={"slug": coref.study.slug})
                      ).content.decode()
    bot = pk_of(coref, "random")
    row = html[html.index(f'data-participant="{bot}"'):]
    row = row[:row.index("</tr>")]
    computed = LiveQuality.objects.get(participant_id=bot).computed_at
    assert 'data-live-quality="too fast' in row and f"· {computed:%H:%M}" in row
    honest = next(pk for pk, b in coref.behaviours.items() if b == "reliable")
    other = html[html.index(f'data-participant="{honest}"'):]
    assert 'data-live-quality=""' in other[:other.index("</tr>")]


def test_beat_schedules_the_task_every_live_quality_interval():
    from analysis.tasks import live_quality

    entry = settings.CELERY_BEAT_SCHEDULE["live-quality"]
    assert entry["schedule"] == settings.CONCORD_LIVE_QUALITY_SECONDS
    assert entry["task"] == live_quality.name


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_beat_and_a_worker_store_the_flags_without_a_request(tmp_path, coref):
    from tests.workers import require_worker_services

    require_worker_services()
    worker = start_worker(tmp_path, "w1")
    beat = start_beat(tmp_path, CONCORD_LIVE_QUALITY_SECONDS="1")
    try:
        wait_for(lambda: LiveQuality.objects.filter(participant_id=pk_of(coref, "random"),
                                                    too_fast=True).exists(),
                 120, "the beat-sent task to flag the clicker")
    finally:
        stop_worker(beat)
        stop_worker(worker)
