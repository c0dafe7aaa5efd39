"""No answer is lost by a pause or a close: an item on screen before the change is still
answered within the grace period, and the annotator is then told their answers are saved."""

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Response
from studies.models import Study
from studies.services import participant_revoke, participants_invite, study_transition

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotator(alice, make_study, client):
    """A consented participant of an open study, and a client on their link."""
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    client.post(f"/a/{participant.token}/")  # consent
    return participant, client


def answer(client, participant, position, value=3):
    return client.post(f"/a/{participant.token}/answer/", json.dumps({
        "position": position, "client_id": str(uuid.uuid4()),
        "answers": {"rating": {"value": value}}, "active_ms": 900}),
        content_type="application/json")


def change(participant, action):
    study = Study.objects.get(pk=participant.study_id)
    study_transition(study=study, action=action)
    return study


@pytest.mark.parametrize("action", ["close", "pause"])
def test_an_item_on_screen_before_the_change_is_answered_then_saved_page(annotator, action):
    participant, client = annotator
    assert client.get(f"/a/{participant.token}/next/").status_code == 200  # item 0 on screen
    change(participant, action)
    # A reload still shows the item that was on screen.
    assert b'id="answer-form"' in client.get(f"/a/{participant.token}/next/").content
    stored = answer(client, participant, 0)
    assert stored.status_code == 200 and stored.json()["stored"] is True
    assert Response.objects.filter(participant=participant).count() == 1
    # The next page is the "your answers are saved" page, not another item.
    page = client.get(stored.json()["next"])
    assert page.status_code == 200 and b'id="saved"' in page.content
    assert b"Your answer is saved." in page.content
    said = b"paused" if action == "pause" else b"closed"
    assert said in page.content and b'id="answer-form"' not in page.content


def test_an_item_not_yet_shown_is_refused_with_where_to_go(annotator):
    participant, client = annotator
    client.get(f"/a/{participant.token}/next/")
    answer(client, participant, 0)
    change(participant, "close")
    refused = answer(client, participant, 1)  # item 1 was never shown
    assert refused.status_code == 409
    body = refused.json()
    assert body["stored"] is False and body["study_status"] == "closed"
    assert body["next"] == f"/a/{participant.token}/next/"
    assert Response.objects.filter(participant=participant).count() == 1


def test_the_grace_period_runs_out(annotator, settings):
    participant, client = annotator
    client.get(f"/a/{participant.token}/next/")
    study = change(participant, "close")
    Study.objects.filter(pk=study.pk).update(
        status_changed_at=timezone.now()
        - timedelta(seconds=settings.CONCORD_ANSWER_GRACE_SECONDS + 1))
    assert answer(client, participant, 0).status_code == 409
    assert b'id="saved"' in client.get(f"/a/{participant.token}/next/").content
    assert not Response.objects.exists()


def test_an_item_shown_after_the_change_gets_no_grace(annotator):
    participant, client = annotator
    change(participant, "pause")
    # Shown after the pause: the next page is the saved page, and a forged answer is refused.
    assert b'id="saved"' in client.get(f"/a/{participant.token}/next/").content
    assert answer(client, participant, 0).status_code == 409


def test_a_form_post_without_script_too_late_says_so(annotator):
    participant, client = annotator
    change(participant, "close")
    page = client.post(f"/a/{participant.token}/answer/",
                       {"position": 0, "value": 3, "client_id": str(uuid.uuid4())})
    assert page.status_code == 409 and b'id="saved"' in page.content
    assert b"could not be saved" in page.content


def test_a_paused_study_resumes_where_the_annotator_left_off(annotator):
    participant, client = annotator
    client.get(f"/a/{participant.token}/next/")
    answer(client, participant, 0)
    change(participant, "pause")
    page = client.get(f"/a/{participant.token}/next/")
    assert b"come back later with the same link" in page.content
    change(participant, "open")
    page = client.get(f"/a/{participant.token}/next/")
    assert b'id="answer-form"' in page.content and b'name="position" value="1"' in page.content


def test_an_annotator_who_finished_sees_the_completion_code(annotator):
    participant, client = annotator
    for position in range(participant.n_assigned - 1):
        client.get(f"/a/{participant.token}/next/")
        answer(client, participant, position)
    client.get(f"/a/{participant.token}/next/")  # the last item on screen
    study = change(participant, "close")
    stored = answer(client, participant, participant.n_assigned - 1)
    assert stored.json()["next"].endswith("/done/")
    page = client.get(stored.json()["next"])
    assert study.completion_code.encode() in page.content


def test_a_revoked_link_shows_a_polite_page(annotator):
    participant, client = annotator
    participant_revoke(participant=participant)
    page = client.get(f"/a/{participant.token}/next/")
    assert page.status_code == 410 and b"withdrawn by the researcher" in page.content


def test_the_saved_page_speaks_the_study_language(annotator):
    participant, client = annotator
    Study.objects.filter(pk=participant.study_id).update(language="fr")
    change(participant, "pause")
    page = client.get(f"/a/{participant.token}/next/").content.decode()
    assert "L'étude est en pause pour le moment." in page or \
        "L&#x27;étude est en pause pour le moment." in page
    assert "Aucune réponse de votre part" in page
