"""Sharing by e-mail address (issue 23, point 1): an owner invites a colleague who has no
account; the colleague chooses a password through the mailed link, logs in and sees the study
with the role given. An address with an account is added; only owners invite; invitations are
limited per owner and hour; the open sign-up exists only when the site allows it."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from studies.models import Membership, StudyEvent
from studies.services import member_add

pytestmark = pytest.mark.django_db

INVITE = "/studies/shared/sharing/invite/"


@pytest.fixture
def study(make_study, alice):
    return make_study(alice, slug="shared", open=False)


def link_in(message) -> str:
    found = re.search(r"https?://[^/\s]+(/accounts/reset/[^\s]+/)", message.body)
    assert found, message.body
    return found.group(1)


def test_it_invites_a_new_address_who_sets_a_password_logs_in_and_sees_the_study(
        study, alice_client):
    reply = alice_client.post(INVITE, {"email": "Carla.Diaz@Example.org", "role": "editor"})
    assert reply.status_code == 302
    carla = get_user_model().objects.get(email__iexact="carla.diaz@example.org")
    assert carla.username == "carla.diaz" and not carla.has_usable_password()
    assert Membership.objects.get(study=study, user=carla).role == "editor"
    [message] = mail.outbox
    assert message.to == ["Carla.Diaz@example.org"]
    assert "alice" in message.subject and study.title in message.subject
    assert "as an editor" in message.body and "Your user name is carla.diaz" in message.body
    shown = alice_client.get("/studies/shared/sharing/").content.decode()
    assert "Account carla.diaz made for Carla.Diaz@example.org" in shown
    assert "invited, no password chosen yet" in shown

    colleague = Client()
    page = colleague.get(link_in(message), follow=True)
    assert page.status_code == 200 and "Choose your password" in page.content.decode()
    assert "carla.diaz" in page.content.decode()
    done = colleague.post(page.redirect_chain[-1][0], {"new_password1": "tulip-harbour-93",
                                                      "new_password2": "tulip-harbour-93"})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    # The link works once.
    assert "has been used already" in colleague.get(link_in(message), follow=True
                                                    ).content.decode()
    assert colleague.post("/accounts/login/", {"username": "carla.diaz",
                                               "password": "tulip-harbour-93"}).status_code == 302
    listed = colleague.get("/studies/").content.decode()
    assert "/studies/shared/" in listed
    assert colleague.get("/studies/shared/").status_code == 200
    assert colleague.get("/studies/shared/sharing/").status_code == 403  # an editor, no owner
    assert "no password chosen yet" not in alice_client.get("/studies/shared/sharing/"
                                                           ).content.decode()


def test_it_records_the_invitation_in_the_history(study, alice_client, alice, bob):
    alice_client.post(INVITE, {"email": "dora@example.org", "role": "viewer"})
    alice_client.post(INVITE, {"email": "BOB@example.org", "role": "owner"})
    events = list(StudyEvent.objects.filter(study=study, action="member_add").order_by("id")
                  .values_list("user__username", "detail"))
    assert events == [
        ("alice", {"researcher": "dora", "role": "viewer", "invited": "new account"}),
        ("alice", {"researcher": "bob", "role": "owner", "invited": "existing account"})]


def test_an_address_with_an_account_is_added_and_told(study, alice_client, bob):
    reply = alice_client.post(INVITE, {"email": "Bob@Example.org", "role": "viewer"},
                              follow=True)
    assert "already exists (bob) and was added" in reply.content.decode()
    assert Membership.objects.get(study=study, user=bob).role == "viewer"
    assert get_user_model().objects.count() == 2  # no second account
    [message] = mail.outbox
    assert "Log in as bob" in message.body and "/accounts/reset/" not in message.body
    again = alice_client.post(INVITE, {"email": "bob@example.org", "role": "editor"})
    assert again.status_code == 400 and "already has a role" in again.content.decode()
    assert Membership.objects.get(study=study, user=bob).role == "viewer"


def test_a_taken_user_name_gets_a_number(study, alice_client, django_user_model):
    django_user_model.objects.create_user("erin", "erin@elsewhere.org", "erin-password-1")
    alice_client.post(INVITE, {"email": "erin@example.org", "role": "viewer"})
    assert django_user_model.objects.get(email="erin@example.org").username == "erin2"


def test_it_refuses_bad_addresses_and_roles(study, alice_client):
    for body in ({"email": "not-an-address", "role": "viewer"},
                 {"email": "x@example.org\x00", "role": "viewer"},
                 {"email": "x@example.org", "role": "admin"}, {}):
        reply = alice_client.post(INVITE, body)
        assert reply.status_code == 400
        assert 'class="error"' in reply.content.decode()
    assert not mail.outbox and get_user_model().objects.count() == 1


def test_only_owners_invite(study, client, alice, bob):
    member_add(study=study, username="bob", role="editor", user=alice)
    client.force_login(bob)
    refused = client.post(INVITE, {"email": "mallory@example.org", "role": "owner"})
    assert refused.status_code == 403
    page = refused.content.decode()
    assert "Not allowed" in page and "does not allow this" in page and "<html" in page
    assert not get_user_model().objects.filter(email="mallory@example.org").exists()
    assert not mail.outbox
    stranger = Client()
    stranger.force_login(get_user_model().objects.create_user("zed", "z@example.org", "z-pw-123"))
    assert stranger.post(INVITE, {"email": "m@example.org", "role": "viewer"}).status_code == 404
    assert Client().post(INVITE, {"email": "m@example.org", "role": "viewer"}).status_code == 302
    assert alice_client_get(client, alice).status_code == 405  # GET: only a POST invites


def alice_client_get(client: Client, alice):
    client.force_login(alice)
    return client.get(INVITE)


def test_it_needs_the_csrf_token(study, alice):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(INVITE, {"email": "c@example.org", "role": "viewer"}).status_code == 403
    assert not mail.outbox


def test_invitations_are_limited_per_owner_and_hour(study, alice_client, settings):
    settings.CONCORD_INVITES_PER_HOUR = 2
    for n in range(2):
        assert alice_client.post(INVITE, {"email": f"p{n}@example.org", "role": "viewer"}
                                 ).status_code == 302
    refused = alice_client.post(INVITE, {"email": "p9@example.org", "role": "viewer"})
    assert refused.status_code == 429 and refused["Retry-After"] == "3600"
    assert "2 invitations in the last hour" in refused.content.decode()
    assert len(mail.outbox) == 2
    assert not get_user_model().objects.filter(email="p9@example.org").exists()


def test_a_failed_mail_keeps_the_membership_and_says_so(study, alice_client):
    with mock.patch("studies.services.sharing.send_mail", side_effect=OSError("no server")):
        reply = alice_client.post(INVITE, {"email": "fay@example.org", "role": "viewer"},
                                  follow=True)
    assert "could not be sent" in reply.content.decode()
    assert study.memberships.filter(user__email="fay@example.org").exists()


def test_an_invited_colleague_whose_link_expired_asks_for_a_new_one(study, alice_client):
    alice_client.post(INVITE, {"email": "gil@example.org", "role": "viewer"})
    mail.outbox.clear()
    assert Client().post("/accounts/password-reset/", {"email": "gil@example.org"}
                         ).status_code == 302
    [message] = mail.outbox
    assert "/accounts/reset/" in message.body


def test_the_sharing_page_offers_the_invitation(study, alice_client):
    page = alice_client.get("/studies/shared/sharing/").content.decode()
    assert 'action="/studies/shared/sharing/invite/"' in page
    assert 'type="email" name="email"' in page and "csrfmiddlewaretoken" in page
    assert "create_researcher" not in page


# --- the open sign-up ---------------------------------------------------------------------------

SIGNUP = {"username": "hana", "email": "hana@example.org", "password1": "quartz-meadow-71",
          "password2": "quartz-meadow-71"}


def test_sign_up_is_closed_by_default(client, settings):
    assert settings.CONCORD_OPEN_SIGNUP is False
    assert client.get("/accounts/signup/").status_code == 404
    assert client.post("/accounts/signup/", SIGNUP).status_code == 404
    assert "/accounts/signup/" not in client.get("/accounts/login/").content.decode()
    assert not get_user_model().objects.filter(username="hana").exists()


def test_open_sign_up_makes_an_account_and_logs_it_in(client, settings):
    settings.CONCORD_OPEN_SIGNUP = True
    assert 'href="/accounts/signup/"' in client.get("/accounts/login/").content.decode()
    form = client.get("/accounts/signup/")
    assert form.status_code == 200 and "csrfmiddlewaretoken" in form.content.decode()
    reply = client.post("/accounts/signup/", SIGNUP)
    assert reply.status_code == 302 and reply["Location"] == "/studies/"
    hana = get_user_model().objects.get(username="hana")
    assert hana.email == "hana@example.org" and not hana.is_staff
    assert client.get("/studies/").status_code == 200
    assert Client().post("/accounts/login/", {"username": "hana",
                                              "password": "quartz-meadow-71"}).status_code == 302


def test_sign_up_checks_passwords_names_and_addresses(client, settings, alice):
    settings.CONCORD_OPEN_SIGNUP = True
    weak = client.post("/accounts/signup/", {**SIGNUP, "password1": "12345678",
                                             "password2": "12345678"})
    assert weak.status_code == 400 and "too common" in weak.content.decode()
    assert client.post("/accounts/signup/", {**SIGNUP, "password2": "other-meadow-71"}
                       ).status_code == 400
    taken = client.post("/accounts/signup/", {**SIGNUP, "username": "Alice"})
    assert taken.status_code == 400 and "already exists" in taken.content.decode()
    used = client.post("/accounts/signup/", {**SIGNUP, "email": "ALICE@example.org"})
    assert used.status_code == 400 and "already uses this e-mail" in used.content.decode()
    assert client.post("/accounts/signup/", {**SIGNUP, "email": ""}).status_code == 400
    assert client.post("/accounts/signup/", {**SIGNUP, "username": "ha\x00na"}).status_code == 400
    assert get_user_model().objects.count() == 1


def test_sign_up_is_limited_per_client_address(settings):
    settings.CONCORD_OPEN_SIGNUP = True
    settings.CONCORD_SIGNUP_PER_ADDRESS = 1
    assert Client().post("/accounts/signup/", SIGNUP).status_code == 302
    refused = Client().post("/accounts/signup/", {**SIGNUP, "username": "ivo",
                                                  "email": "ivo@example.org"})
    assert refused.status_code == 429 and "Too many accounts" in refused.content.decode()
    assert not get_user_model().objects.filter(username="ivo").exists()


def test_the_api_invites_by_address_for_owners(study, alice, bob, settings):
    from rest_framework.test import APIClient

    settings.CONCORD_INVITES_PER_HOUR = 2
    owner = APIClient()
    owner.force_authenticate(alice)
    made = owner.post("/api/studies/shared/members/invite/",
                      {"email": "jo@example.org", "role": "viewer"}, format="json")
    assert made.status_code == 201
    assert {k: made.json()[k] for k in ("username", "role", "new_account", "mailed")} == {
        "username": "jo", "role": "viewer", "new_account": True, "mailed": True}
    assert "/accounts/reset/" in mail.outbox[0].body
    added = owner.post("/api/studies/shared/members/invite/",
                       {"email": "bob@example.org", "role": "editor"}, format="json")
    assert added.status_code == 201 and added.json()["new_account"] is False
    over = owner.post("/api/studies/shared/members/invite/",
                      {"email": "kim@example.org", "role": "viewer"}, format="json")
    assert over.status_code == 429 and over["Retry-After"] == "3600"
    assert owner.post("/api/studies/shared/members/invite/", {"email": "nope", "role": "viewer"},
                      format="json").status_code == 400
    editor = APIClient()
    editor.force_authenticate(bob)
    assert editor.post("/api/studies/shared/members/invite/",
                       {"email": "lee@example.org", "role": "owner"},
                       format="json").status_code == 403
    assert not get_user_model().objects.filter(email__in=["kim@example.org", "lee@example.org"]
                                               ).exists()


def test_an_account_never_given_a_password_gets_the_link_again(study, alice_client, alice,
                                                                make_study):
    make_study(alice, slug="second", open=False)
    alice_client.post(INVITE, {"email": "noa@example.org", "role": "viewer"})
    alice_client.post("/studies/second/sharing/invite/", {"email": "noa@example.org",
                                                          "role": "editor"})
    first, second = mail.outbox
    assert get_user_model().objects.filter(email="noa@example.org").count() == 1
    assert "/accounts/reset/" in first.body and "/accounts/reset/" in second.body


def test_a_user_name_taken_meanwhile_is_a_clear_refusal(study, alice_client):
    from django.db import IntegrityError

    with mock.patch("django.contrib.auth.models.UserManager.create_user",
                    side_effect=IntegrityError("duplicate key")):
        reply = alice_client.post(INVITE, {"email": "ole@example.org", "role": "viewer"})
    assert reply.status_code == 400 and "send the invitation again" in reply.content.decode()
    assert not study.memberships.filter(user__email="ole@example.org").exists()
