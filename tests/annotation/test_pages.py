"""The annotator's pages: consent, instructions, resume, completion, platform links, language."""

import re
import uuid

import pytest
from django.test import Client

from annotation.models import Response
from studies.models import Participant
from studies.services import participants_invite, study_create

pytestmark = pytest.mark.django_db


def consent(client, participant):
    return client.post(f"/a/{participant.token}/", follow=True)


def test_it_walks_from_consent_to_the_first_item(client, participant):
    page = consent(client, participant)
    assert page.redirect_chain[-1][0] == f"/a/{participant.token}/instructions/"
    assert b"significant errors on key elements" in page.content
    item = client.get(f"/a/{participant.token}/next/")
    assert b"Item 1 of 5" in item.content and b'aria-keyshortcuts="7"' in item.content


def test_it_resumes_at_the_first_unanswered_item(client, participant):
    consent(client, participant)
    for position in (0, 1):
        client.post(f"/a/{participant.token}/answer/",
                    {"position": position, "value": 2, "client_id": str(uuid.uuid4())})
    page = client.get(f"/a/{participant.token}/")
    assert page.status_code == 302 and page["Location"].endswith("/next/")
    assert b"Item 3 of 5" in client.get(page["Location"]).content


def test_it_shows_the_completion_code_at_the_end(client, participant):
    consent(client, participant)
    for position in range(participant.n_assigned):
        last = client.post(f"/a/{participant.token}/answer/",
                           {"position": position, "value": 1, "client_id": str(uuid.uuid4())})
    assert last["Location"].endswith("/done/")
    done = client.get(last["Location"])
    assert participant.study.completion_code.encode() in done.content


def test_it_answers_the_script_with_json(client, participant):
    consent(client, participant)
    body = {"position": 0, "value": "4", "client_id": str(uuid.uuid4()), "active_ms": 2500,
            "events": [["shown", 0], ["hidden", 100], ["visible", 900], ["answer", 2600]]}
    first = client.post(f"/a/{participant.token}/answer/", body, content_type="application/json")
    again = client.post(f"/a/{participant.token}/answer/", body, content_type="application/json")
    assert first.json()["created"] is True and again.json()["created"] is False
    assert again.json()["next"] == f"/a/{participant.token}/next/"
    assert Response.objects.get().events[1] == ["hidden", 100]


def test_it_speaks_the_study_language(client, alice):
    from studies.services import items_import, study_open

    study = study_create(owner=alice, slug="fr", title="Étude", preset="likert-0-7-coref",
                         language="fr")
    items_import(study=study, data=b"id,text\na,Texte\n", filename="i.csv")
    study_open(study=study)
    participant = participants_invite(study=study, count=1)[0]
    page = consent(client, participant)
    assert b"Consignes" in page.content and b"aucune erreur" in page.content
    item = client.get(f"/a/{participant.token}/next/")
    assert "Élément 1 sur 1".encode() in item.content
    assert "Pas encore enregistré".encode() in item.content


def entry_of(page) -> dict:
    """The consent form's fields (an anonymous browser's signed entry), as the browser posts."""
    found = re.search(r'name="entry" value="([^"]+)"', page.content.decode())
    return {"entry": found.group(1)} if found else {}


def test_the_open_link_enrols_a_prolific_participant_once(client, alice, make_study):
    study = make_study(alice)
    url = f"/join/{study.open_token}/?PROLIFIC_PID=p123&STUDY_ID=s9&SESSION_ID=x1"
    page = client.get(url)
    assert page.status_code == 200 and b"I agree, continue" in page.content
    assert not Participant.objects.exists()  # opening the link is no consent
    first = client.post(url)
    second = client.post(url)  # the form posted twice
    participant = Participant.objects.get(study=study, external_id="p123")
    assert participant.source == "prolific" and participant.meta == {"STUDY_ID": "s9", "SESSION_ID": "x1"}
    assert participant.consented_at is not None and participant.binding
    assert first["Location"].startswith(f"/a/{participant.token}/instructions/?b=")
    # The same browser again: on to its pages, with the same binding.
    assert second["Location"] == f"/a/{participant.token}/?b=" + first["Location"].split("?b=")[1]
    assert client.get(url)["Location"] == second["Location"]
    assert participant.n_assigned == 5 and Participant.objects.count() == 1


@pytest.mark.parametrize("query", ["", "?PROLIFIC_PID=p1&SESSION_ID=s", "?workerId=W1&assignmentId=A1"])
def test_opening_the_open_link_creates_no_participant(client, alice, make_study, query):
    """A chat app's link preview fetches the link (GET, sometimes HEAD): nobody is enrolled, so
    the completion rate counts consenting people only."""
    study = make_study(alice)
    url = f"/join/{study.open_token}/{query}"
    for _ in range(3):
        page = client.get(url)
        assert page.status_code == 200 and b"I agree, continue" in page.content
        assert Client().get(url).status_code == 200  # another browser, no cookie
    head = Client().head(url)
    assert head.status_code == 200 and head.content == b""
    assert not Participant.objects.exists()
    consented = client.post(url, entry_of(page))
    participant = Participant.objects.get()
    assert consented.status_code == 302 and participant.consented_at is not None
    assert consented["Location"].startswith(f"/a/{participant.token}/instructions/")
    assert client.get(consented["Location"]).status_code == 200


def test_the_open_link_shows_a_preview_to_mturk_workers_before_they_accept(client, alice, make_study):
    study = make_study(alice)
    page = client.get(f"/join/{study.open_token}/?workerId=W1&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
    assert b"Accept the HIT" in page.content and not Participant.objects.exists()
    client.post(f"/join/{study.open_token}/?workerId=W1&assignmentId=A1&hitId=H1")
    assert Participant.objects.get().source == "mturk"


def test_the_open_link_keeps_one_anonymous_participant_per_browser(client, alice, make_study):
    study = make_study(alice)
    url = f"/join/{study.open_token}/"
    page = client.get(url)
    first = client.post(url, entry_of(page))
    second = client.post(url, entry_of(page))  # the consent form posted twice
    participant = Participant.objects.get()
    assert first["Location"] == f"/a/{participant.token}/instructions/"
    assert second["Location"] == f"/a/{participant.token}/"  # the same participant
    assert client.get(url)["Location"] == f"/a/{participant.token}/"
    # The same form posted twice from a browser that lost its session: still one participant.
    assert Client().post(url, entry_of(page))["Location"] == f"/a/{participant.token}/instructions/"
    assert Participant.objects.count() == 1
    # Another browser is another participant; a forged or missing entry enrols nobody.
    other = Client()
    other.post(url, entry_of(other.get(url)))
    assert Participant.objects.count() == 2
    for forged in ({}, {"entry": "abc"}, {"entry": entry_of(page)["entry"] + "x"}):
        refused = Client().post(url, forged)
        assert refused.status_code == 400 and b"open the study" in refused.content
        assert f'href="{url}"'.encode() in refused.content  # back to the consent page
    assert Participant.objects.count() == 2


def test_a_closed_study_turns_annotators_away(client, alice, make_study):
    study = make_study(alice, open=False)
    participant = participants_invite(study=study, count=1)[0]
    assert client.get(f"/a/{participant.token}/").status_code == 409
    assert client.get(f"/join/{study.open_token}/?PROLIFIC_PID=x").status_code == 409


def test_annotator_pages_may_be_framed_by_mturk_only(client, participant):
    page = client.get(f"/a/{participant.token}/")
    assert "https://www.mturk.com" in page["Content-Security-Policy"]
    assert "X-Frame-Options" not in page
    assert client.get("/accounts/login/")["X-Frame-Options"] == "DENY"


def test_the_researcher_previews_items_without_storing_anything(alice_client, make_study, alice):
    make_study(alice)
    page = alice_client.get("/studies/s1/preview/?n=2")
    assert b"Third passage" in page.content and b'data-preview="1"' in page.content
    assert not Response.objects.exists()


def test_the_researcher_opens_invites_and_follows_progress(alice_client, make_study, alice):
    study = make_study(alice, open=False)
    alice_client.post("/studies/s1/open/", {"confirm": "open"})
    study.refresh_from_db()
    assert study.status == "open"
    alice_client.post("/studies/s1/invite/", {"count": 3, "label": "lab"})
    page = alice_client.get("/studies/s1/")
    assert page.content.count(b"data-participant=") == 3 and b"not started" in page.content
