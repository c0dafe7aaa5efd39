"""MTurk's open link: only MTurk's own hosts ever become the done page's submit target."""

import logging
import uuid
from urllib.parse import quote

import pytest

from studies.models import Participant

pytestmark = pytest.mark.django_db

HOSTILE_TARGETS = [
    "javascript:alert(1)//",
    "https://evil.example",
    "http://www.mturk.com",
    "https://www.mturk.com@evil.example",
    "https://worker@www.mturk.com",
    "https://www.mturk.com:8443",
    "https://www.mturk.com.evil.example",
    "https://evil.example/https://www.mturk.com",
    "https://www.mturk.com/mturk/externalSubmit?x=",
    "https://www.mturk.com#frag",
    "//www.mturk.com",
    " https://www.mturk.com",
    "https://www.mturk.com\\@evil.example",
    "https://www.mturk.com\n",
    "data:text/html,<script>alert(1)</script>",
]


def join(client, study, turk_submit_to: str, worker: str = "W1"):
    """Open the link, then agree on its consent page (the form posts to the same URL)."""
    url = (f"/join/{study.open_token}/?workerId={worker}&assignmentId=A1&hitId=H1"
           f"&turkSubmitTo={quote(turk_submit_to, safe='')}")
    assert client.get(url).status_code == 200
    return client.post(url)


def finish(client, participant) -> str:
    """Consent and answer every assigned item through the pages; return the done page's HTML."""
    client.post(f"/a/{participant.token}/")
    for position in range(participant.n_assigned):
        client.post(f"/a/{participant.token}/answer/",
                    {"position": position, "value": 1, "client_id": str(uuid.uuid4())})
    page = client.get(f"/a/{participant.token}/done/")
    assert page.status_code == 200
    return page.content.decode()


@pytest.mark.parametrize("target", ["https://www.mturk.com", "https://workersandbox.mturk.com",
                                    "https://workersandbox.mturk.com/"])
def test_it_submits_the_hit_to_mturk(client, alice, make_study, target):
    study = make_study(alice)
    join(client, study, target)
    html = finish(client, Participant.objects.get(external_id="W1"))
    host = target.rstrip("/")
    assert f'<form method="post" action="{host}/mturk/externalSubmit">' in html
    assert 'name="assignmentId" value="A1"' in html


@pytest.mark.parametrize("target", HOSTILE_TARGETS)
def test_it_drops_a_submit_target_that_is_not_mturk(client, alice, make_study, caplog, target):
    study = make_study(alice)
    with caplog.at_level(logging.WARNING, logger="annotation"):
        response = join(client, study, target)
    participant = Participant.objects.get(external_id="W1")
    assert response.status_code == 302  # the worker goes on as usual
    assert "turkSubmitTo" not in participant.meta
    assert participant.meta == {"assignmentId": "A1", "hitId": "H1"}
    assert any("turkSubmitTo" in record.getMessage() for record in caplog.records)
    html = finish(client, participant)
    assert "externalSubmit" not in html and "evil" not in html and "javascript:" not in html
    assert "turkSubmitTo" not in html  # the worker is not told
    assert study.completion_code in html


def test_it_drops_a_hostile_target_stored_before_it_was_checked(client, alice, make_study, caplog):
    study = make_study(alice)
    join(client, study, "https://www.mturk.com")
    participant = Participant.objects.get(external_id="W1")
    # A row written by an earlier version, which stored the parameter unchecked.
    participant.meta["turkSubmitTo"] = "javascript:alert(1)//"
    participant.save(update_fields=["meta"])
    with caplog.at_level(logging.WARNING, logger="annotation"):
        html = finish(client, participant)
    assert "externalSubmit" not in html and "javascript:" not in html
    assert any("turkSubmitTo" in record.getMessage() for record in caplog.records)


PROLIFIC_DONE = "https://app.prolific.com/submissions/complete"


def test_it_offers_an_mturk_worker_the_hit_submission_only(client, alice, make_study):
    study = make_study(alice)
    study.__class__.objects.filter(pk=study.pk).update(completion_url=PROLIFIC_DONE)
    join(client, study, "https://www.mturk.com")
    html = finish(client, Participant.objects.get(external_id="W1"))
    assert "Submit the HIT" in html and study.completion_code in html
    assert "Return to the platform" not in html and "prolific" not in html


def test_it_offers_a_prolific_participant_the_return_link_only(client, alice, make_study):
    study = make_study(alice)
    study.__class__.objects.filter(pk=study.pk).update(completion_url=PROLIFIC_DONE)
    url = f"/join/{study.open_token}/?PROLIFIC_PID=P1&STUDY_ID=S1&SESSION_ID=X1"
    assert client.get(url).status_code == 200
    client.post(url)
    html = finish(client, Participant.objects.get(external_id="P1"))
    assert f'href="{PROLIFIC_DONE}?cc={study.completion_code}"' in html
    assert "Return to the platform" in html and "Submit the HIT" not in html
