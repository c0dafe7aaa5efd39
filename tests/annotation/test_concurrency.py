"""Many annotators at once against PostgreSQL: retries and duplicates store nothing twice."""

import random
import threading
import uuid

import pytest
import requests
from django.db import connection

from annotation.models import Answer, Response
from studies.models import Participant
from studies.services import participants_invite
from tests.conftest import require

pytestmark = pytest.mark.django_db(transaction=True)

ANNOTATORS = 20
ITEMS = 50


def annotate(base: str, token: str, seed: int, errors: list, counts: dict) -> None:
    rng = random.Random(seed)
    session = requests.Session()
    page = session.get(f"{base}/a/{token}/", timeout=30)
    csrf = session.cookies["csrftoken"]
    session.post(f"{base}/a/{token}/", data={"csrfmiddlewaretoken": csrf}, timeout=30)
    headers = {"X-CSRFToken": csrf, "Referer": page.url}
    for position in range(ITEMS):
        payload = {"position": position, "value": rng.randint(0, 7), "client_id": str(uuid.uuid4()),
                   "active_ms": rng.randint(500, 9000), "events": [["shown", 0]]}
        sends = [payload]
        if rng.random() < 0.2:  # the acknowledgement was lost: the same answer is re-sent
            sends.append(payload)
            counts["resent"] += 1
        if rng.random() < 0.1:  # a changed answer: a second answer with a new id (a revision)
            sends.append({**payload, "client_id": str(uuid.uuid4())})
            counts["duplicate"] += 1
        for body in sends:
            response = session.post(f"{base}/a/{token}/answer/", json=body, headers=headers,
                                    timeout=30)
            if response.status_code >= 500 or not response.json().get("stored"):
                errors.append((token, position, response.status_code, response.text[:200]))


def test_it_stores_exactly_one_current_response_per_presentation_under_retries(live_server, alice, make_study):
    require(connection.vendor == "postgresql", "concurrency is only tested on PostgreSQL "
                                               "(set DATABASE_URL)")
    items = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(ITEMS))
    study = make_study(alice, slug="load", items=items)
    participants = participants_invite(study=study, count=ANNOTATORS)
    errors: list = []
    counts = {"resent": 0, "duplicate": 0}
    threads = [threading.Thread(target=annotate, args=(live_server.url, p.token, n, errors, counts))
               for n, p in enumerate(participants)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:5]
    assert counts["resent"] > 100 and counts["duplicate"] > 50
    # One current response per presentation; every changed answer is kept as one revision.
    assert Response.objects.filter(is_current=True).count() == ANNOTATORS * ITEMS == 1000
    assert Response.objects.count() == 1000 + counts["duplicate"]
    assert set(Response.objects.filter(is_current=False).values_list("revision", flat=True)) == {1}
    assert Answer.objects.count() == Response.objects.count()
    assert set(Participant.objects.values_list("n_answered", flat=True)) == {ITEMS}
    assert Participant.objects.filter(completed_at__isnull=True).count() == 0
    # Twenty first answers at once: twenty pseudonyms, each given once, no gap.
    numbers = sorted(Participant.objects.values_list("pseudonym_number", flat=True))
    assert numbers == list(range(1, ANNOTATORS + 1))
    study.refresh_from_db()
    assert study.pseudonyms_issued == ANNOTATORS


def _race(participant, position: int, sends: list[tuple[uuid.UUID, int]]) -> list:
    """Submit every (answer id, value) at `position` at the same moment, one thread (and one
    database connection) each; return each thread's SubmitResult or exception."""
    from django.db import connections

    from tests.answers import submit

    barrier = threading.Barrier(len(sends))
    results: list = [None] * len(sends)

    def send(n: int, client_id: uuid.UUID, value: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[n] = submit(participant, position, value, client_id=client_id)
        except Exception as exc:  # reported by the test
            results[n] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(n, *pair)) for n, pair in enumerate(sends)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_it_numbers_concurrent_revisions_of_one_position_without_a_gap_or_a_loss(participant):
    require(connection.vendor == "postgresql", "concurrency is only tested on PostgreSQL "
                                               "(set DATABASE_URL)")
    from tests.answers import submit

    submit(participant, 0, 1)
    for _round in range(3):
        sends = [(uuid.uuid4(), value) for value in range(2, 8)]
        results = _race(participant, 0, sends)
        assert all(r is not None and not isinstance(r, Exception) and r.created
                   for r in results), results
    rows = list(Response.objects.filter(participant=participant).order_by("revision")
                .values_list("revision", "is_current", "client_id"))
    assert [r[0] for r in rows] == list(range(1, 1 + 1 + 3 * 6))
    assert [r[1] for r in rows] == [False] * 18 + [True]
    assert Answer.objects.filter(response__participant=participant).count() == 19
    participant.refresh_from_db()
    assert participant.n_answered == 1


def test_it_stores_a_revision_sent_several_times_at_once_once(participant):
    require(connection.vendor == "postgresql", "concurrency is only tested on PostgreSQL "
                                               "(set DATABASE_URL)")
    from tests.answers import submit

    submit(participant, 0, 1)
    for _round in range(3):
        first, second = uuid.uuid4(), uuid.uuid4()
        results = _race(participant, 0, [(first, 5), (first, 5), (first, 5),
                                         (second, 6), (second, 6), (second, 6)])
        assert not any(isinstance(r, Exception) for r in results), results
        for client_id in (first, second):
            mine = [r for (cid, _), r in zip([(first, 5)] * 3 + [(second, 6)] * 3, results,
                                             strict=True) if cid == client_id]
            assert sum(r.created for r in mine) == 1
            assert len({(r.response_id, r.revision) for r in mine}) == 1
            assert Response.objects.filter(client_id=client_id).count() == 1
    revisions = list(Response.objects.filter(participant=participant)
                     .order_by("revision").values_list("revision", flat=True))
    assert revisions == list(range(1, 8))
    assert Response.objects.filter(participant=participant, is_current=True).count() == 1
