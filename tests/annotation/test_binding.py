"""A crowd participant cannot be taken over by someone who knows their platform id (issue 12,
point 4): the first browser is bound by a signed token in every link and form (a cookie only as
a fallback: MTurk frames the pages), and a second browser must bring the platform session
(Prolific SESSION_ID, MTurk assignmentId) or is refused with a clear page."""

from __future__ import annotations

import re
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from studies.models import Participant

pytestmark = pytest.mark.django_db


def join(client: Client, study, query: str):
    """Open the open link and, on its consent page, agree: the form posts to the same URL (a
    participant exists only from then on)."""
    url = f"/join/{study.open_token}/?{query}"
    page = client.get(url)
    if page.status_code != 200:
        return page
    entry = re.search(r'name="entry" value="([^"]+)"', page.content.decode())
    return client.post(url, {"entry": entry.group(1)} if entry else {})


def binding_of(response) -> str:
    (token,) = parse_qs(urlsplit(response["Location"]).query)["b"]
    return token


def framed() -> Client:
    """A browser inside MTurk's frame: no cookie of ours comes back (a Lax cookie is not sent
    in a cross-site frame)."""
    client = Client()
    client.cookies.clear()
    return client


@pytest.mark.parametrize("platform,first,other,proof", [
    ("prolific", "PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=sess-1", "PROLIFIC_PID=p1&STUDY_ID=s",
     "PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=sess-1"),
    ("mturk", "workerId=W1&assignmentId=A1&hitId=H", "workerId=W1&assignmentId=A2&hitId=H",
     "workerId=W1&assignmentId=A1&hitId=H"),
])
def test_a_second_browser_with_the_same_platform_id_is_refused(alice, make_study, platform, first,
                                                                other, proof):
    study = make_study(alice)
    owner = Client()
    started = join(owner, study, first)
    participant = Participant.objects.get(source=platform)
    assert started.status_code == 302 and participant.binding and participant.consented_at
    assert started["Location"].startswith(f"/a/{participant.token}/instructions/?b=")

    attacker = Client()
    for query in (other, other.split("&")[0], other + "&SESSION_ID=guess"):
        refused = join(attacker, study, query)
        assert refused.status_code == 403, query
        assert "already started this study in another browser" in refused.content.decode()
        assert participant.token not in refused.content.decode()  # nothing to follow
        assert "Location" not in refused
    # Even with the participant's token (a leaked link), the pages want the binding.
    for path in ("", "instructions/", "next/", "done/"):
        assert attacker.get(f"/a/{participant.token}/{path}").status_code == 403, path
    answer = attacker.post(f"/a/{participant.token}/answer/",
                           {"position": 0, "value": 1, "client_id": str(uuid.uuid4())})
    assert answer.status_code == 403 and not participant.responses.exists()
    forged = attacker.get(f"/a/{participant.token}/next/?b={participant.pk}.x:forged")
    assert forged.status_code == 403
    assert Participant.objects.count() == 1

    # The first browser comes back through the open link with the bare id: its cookie says so.
    again = join(owner, study, other.split("&")[0])
    assert again.status_code == 302 and binding_of(again) == binding_of(started)
    # The same platform session in another browser (the worker moved) is let in.
    moved = join(Client(), study, proof)
    assert moved.status_code == 302 and binding_of(moved) == binding_of(started)


def test_the_binding_travels_in_links_and_forms_inside_a_frame(alice, make_study):
    study = make_study(alice)
    cookie_jar = Client()
    location = join(cookie_jar, study, "workerId=W9&assignmentId=A9&hitId=H")["Location"]
    participant = Participant.objects.get()
    again = join(cookie_jar, study, "workerId=W9&assignmentId=A9&hitId=H")["Location"]
    token = binding_of(join(cookie_jar, study, "workerId=W9&assignmentId=A9&hitId=H"))
    assert again == f"/a/{participant.token}/?b={token}"
    frame = framed()  # from here on, only what the pages carry
    consented = frame.get(again)  # consent given already: on to the items
    assert consented.status_code == 302 and consented["Location"].endswith(f"/next/?b={token}")
    assert location.endswith(f"/instructions/?b={token}")
    instructions = frame.get(location).content.decode()
    start = re.search(r'href="([^"]*/next/[^"]*)"', instructions).group(1)
    assert start.endswith(f"?b={token}")
    item = frame.get(start).content.decode()
    action = re.search(r'id="answer-form"[^>]*action="([^"]+)"', item, re.S).group(1)
    assert action == f"/a/{participant.token}/answer/?b={token}"
    stored = frame.post(action, {"position": 0, "value": 1, "client_id": str(uuid.uuid4())},
                        content_type="application/json")
    assert stored.status_code == 200 and stored.json()["next"].endswith(f"?b={token}")
    assert participant.responses.count() == 1
    # Without the token the same frame is refused; a browser holding the cookie is not.
    assert frame.get(f"/a/{participant.token}/next/").status_code == 403
    assert cookie_jar.get(f"/a/{participant.token}/next/").status_code == 200


def test_the_refusal_speaks_the_study_language(alice, make_study):
    study = make_study(alice)
    type(study).objects.filter(pk=study.pk).update(language="fr")
    join(Client(), study, "PROLIFIC_PID=fr1&SESSION_ID=s")
    refused = join(Client(), study, "PROLIFIC_PID=fr1")
    assert refused.status_code == 403
    assert "a déjà commencé cette étude dans un autre navigateur" in refused.content.decode()
    assert "depuis votre page Prolific" in refused.content.decode()


def test_a_participant_from_before_bindings_is_bound_by_its_platform_session(alice, make_study):
    study = make_study(alice)
    join(Client(), study, "PROLIFIC_PID=old&SESSION_ID=s-old")
    participant = Participant.objects.get()
    Participant.objects.filter(pk=participant.pk).update(binding="")  # as stored before
    assert join(Client(), study, "PROLIFIC_PID=old").status_code == 403
    assert join(Client(), study, "PROLIFIC_PID=old&SESSION_ID=s-old").status_code == 302
    assert Participant.objects.get().binding


def test_invited_and_anonymous_participants_need_no_binding(client, participant, alice, make_study):
    assert client.get(f"/a/{participant.token}/").status_code == 200  # the link is the key
    study = make_study(alice, slug="open-one")
    location = join(client, study, "")["Location"]
    assert "?b=" not in location and Client().get(location).status_code == 200
