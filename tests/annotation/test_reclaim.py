"""Overlap counts answers (issue 13, point 3): assignments left unanswered for
CONCORD_RECLAIM_AFTER_SECONDS are reclaimed by a periodic task and given to new participants;
the abandoned participant who comes back carries on; no answer is ever dropped; the open link
says the study is full once every item has its k answers, and enrols nobody more."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from annotation.models import Response
from annotation.selectors import study_full
from annotation.services import participants_reclaim
from studies.models import Assignment, Participant

pytestmark = pytest.mark.django_db
LATER = timedelta(seconds=settings.CONCORD_RECLAIM_AFTER_SECONDS + 60)


def enter(study, client: Client | None = None) -> tuple[Client, Participant]:
    """Open the open link in a new browser and agree on its consent page."""
    client = client or Client()
    url = f"/join/{study.open_token}/"
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    entry = re.search(r'name="entry" value="([^"]+)"', page.content.decode()).group(1)
    assert client.post(url, {"entry": entry}).status_code == 302
    return client, Participant.objects.get(token=client.session[f"concord-participant-{study.pk}"])


def item_of(participant) -> int:
    (item,) = Assignment.objects.filter(participant=participant).values_list("item_id", flat=True)
    return item


def answer(client: Client, participant, position: int = 0):
    return client.post(f"/a/{participant.token}/answer/",
                       {"position": position, "value": 1, "client_id": str(uuid.uuid4())},
                       content_type="application/json")


def test_abandoned_assignments_go_to_new_participants_and_the_study_fills(alice, make_study,
                                                                           django_assert_num_queries):
    study = make_study(alice, items_per_participant=1, annotators_per_item=1)
    browsers = {name: enter(study) for name in "ABCDE"}
    items = {name: item_of(p) for name, (_, p) in browsers.items()}
    assert sorted(items.values()) == sorted(study.items.values_list("id", flat=True))
    later = timezone.now() + LATER
    client_b, b = browsers["B"]
    assert client_b.get(f"/a/{b.token}/next/").status_code == 200
    assert answer(client_b, b).json()["stored"]  # B finished long ago
    Assignment.objects.filter(participant=browsers["C"][1]).update(
        shown_at=later - timedelta(minutes=5))  # C has their item on screen now
    Participant.objects.filter(pk=browsers["D"][1].pk).update(
        consented_at=later - timedelta(minutes=5))  # D has just consented
    with django_assert_num_queries(1):  # one set-based UPDATE, whatever the number of rows
        assert participants_reclaim(now=later) == 2  # A and E left
    assert participants_reclaim(now=later) == 0  # once
    reclaimed = set(Participant.objects.filter(reclaimed_at__isnull=False)
                    .values_list("pk", flat=True))
    assert reclaimed == {browsers["A"][1].pk, browsers["E"][1].pk}

    # The next two participants get exactly the two abandoned items (overlap counts answers).
    newcomers = [enter(study) for _ in range(2)]
    assert sorted(item_of(p) for _, p in newcomers) == sorted([items["A"], items["E"]])

    # E's outbox sends its answer late, still reclaimed: it is stored like any other.
    client_e, e = browsers["E"]
    assert answer(client_e, e).json()["stored"]
    assert Response.objects.filter(participant=e, item_id=items["E"]).count() == 1
    # A comes back: their item is theirs again, and their answer is stored too.
    client_a, a = browsers["A"]
    assert client_a.get(f"/a/{a.token}/next/").status_code == 200
    assert Participant.objects.get(pk=a.pk).reclaimed_at is None
    assert answer(client_a, a).json()["stored"]

    # Everyone answers: every item has its k = 1 answers, some two (nothing was dropped).
    assert not study_full(study=study)
    for client, participant in [browsers["C"], browsers["D"], *newcomers]:
        assert answer(client, participant).json()["stored"]
    per_item = Counter(Response.objects.filter(item__study=study).values_list("item_id", flat=True))
    assert set(per_item) == set(items.values()) and sorted(per_item.values()) == [1, 1, 1, 2, 2]
    assert study_full(study=study)

    # The open link now says so, and enrols nobody, whatever the platform.
    before = Participant.objects.count()
    for query in ("", "?PROLIFIC_PID=late&SESSION_ID=s", "?workerId=W&assignmentId=A"):
        url = f"/join/{study.open_token}/{query}"
        for response in (Client().get(url), Client().post(url)):
            assert response.status_code == 409
            assert b"all the answers it needs" in response.content
    assert Participant.objects.count() == before
    # Someone already enrolled still gets in (to their saved answers and completion page).
    assert client_a.get(f"/join/{study.open_token}/")["Location"] == f"/a/{a.token}/"


def test_reclaim_leaves_finished_closed_and_busy_participants_alone(alice, make_study):
    study = make_study(alice, slug="busy", items_per_participant=2, annotators_per_item=1)
    client, busy = enter(study)
    later = timezone.now() + LATER
    assert answer(client, busy).json()["stored"]
    Response.objects.filter(participant=busy).update(received_at=later - timedelta(minutes=1))
    assert participants_reclaim(now=later) == 0  # answered a minute ago
    closed = make_study(alice, slug="closed", items_per_participant=2, annotators_per_item=1)
    enter(closed)
    from studies.services import study_close

    study_close(study=closed)
    assert participants_reclaim(now=later) == 0  # a closed study's slots are nobody's
    researcher = Client()
    researcher.force_login(alice)
    assert b">reclaimed<" not in researcher.get("/studies/busy/participants/").content
    assert participants_reclaim(now=later + LATER) == 1  # busy went quiet
    assert researcher.get("/studies/busy/participants/").content.count(b">reclaimed<") == 1
    assert study_full(study=study) is False  # one answer of four


def test_the_reclaim_runs_on_the_beat():
    entry = settings.CELERY_BEAT_SCHEDULE["assignments-reclaim"]
    assert entry["task"] == "annotation.tasks.reclaim_assignments"
    from annotation.tasks import reclaim_assignments

    assert reclaim_assignments.name == entry["task"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_beat_reclaims_an_abandoned_participant(tmp_path, alice, make_study):
    """The real thing: `celery beat` sends the reclaim, a worker runs it (PostgreSQL + Redis)."""
    from config.celery import app
    from tests.workers import (
        require_worker_services,
        start_beat,
        start_worker,
        stop_worker,
        wait_for,
    )

    require_worker_services()
    app.control.purge()
    study = make_study(alice, slug="beat", items_per_participant=1, annotators_per_item=1)
    _, gone = enter(study)
    _, busy = enter(study)
    long_ago = timezone.now() - timedelta(hours=1)
    Participant.objects.filter(pk=gone.pk).update(created_at=long_ago, consented_at=long_ago)
    quick = {"CONCORD_RECLAIM_SWEEP_SECONDS": "0.5", "CONCORD_RECLAIM_AFTER_SECONDS": "600"}
    worker = start_worker(tmp_path, "w1", **quick)
    beat = start_beat(tmp_path, **quick)
    try:
        wait_for(lambda: Participant.objects.filter(pk=gone.pk, reclaimed_at__isnull=False)
                 .exists(), 120, "the beat's reclaim")
    finally:
        stop_worker(beat)
        stop_worker(worker)
    assert Participant.objects.get(pk=busy.pk).reclaimed_at is None  # consented just now
