"""Personal access tokens: shown once, stored as a digest, refused clearly, scoped by role."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.models import AccessToken
from tokens.services import token_create, token_digest

pytestmark = pytest.mark.django_db


def create_on_the_page(client: Client, name: str = "notebook", days: int = 30) -> str:
    page = client.post("/account/tokens/", {"name": name, "days": days})
    assert page.status_code == 200
    (key,) = re.findall(r'value="(cc_[^"]+)"', page.content.decode())
    return key


def bearer(key: str) -> APIClient:
    api = APIClient(enforce_csrf_checks=True)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_it_shows_the_key_once_and_stores_only_its_digest(alice_client, alice):
    key = create_on_the_page(alice_client)
    token = AccessToken.objects.get(user=alice)
    assert token.digest == token_digest(key) and key not in str(token.__dict__.values())
    assert token.prefix == key[:10] and token.name == "notebook"
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    listing = alice_client.get("/account/tokens/")
    assert key not in listing.content.decode() and token.prefix in listing.content.decode()
    assert "no-store" in listing["Cache-Control"] or "no-cache" in listing["Cache-Control"]


def test_it_refuses_an_unknown_expiry_or_a_blank_name(alice_client, alice):
    assert alice_client.post("/account/tokens/", {"name": "x", "days": 10_000}).status_code == 400
    assert alice_client.post("/account/tokens/", {"name": "", "days": 30}).status_code == 400
    assert not AccessToken.objects.exists()


def test_it_opens_the_api_with_the_callers_role_and_without_csrf(alice, bob, make_study):
    study = make_study(alice, slug="mine")
    _, alices = token_create(user=alice, name="a", days=30)
    _, bobs = token_create(user=bob, name="b", days=30)
    assert [s["slug"] for s in bearer(alices).get("/api/studies/").json()["results"]] == ["mine"]
    assert bearer(bobs).get(f"/api/studies/{study.slug}/").status_code == 404
    # A write through a token needs no CSRF token: there is no cookie to forge.
    started = bearer(alices).post(f"/api/studies/{study.slug}/runs/", {}, format="json")
    assert started.status_code == 201, started.content
    assert bearer(bobs).post(f"/api/studies/{study.slug}/runs/", {}, format="json").status_code == 404


@pytest.mark.parametrize("state, message", [
    ("revoked", "This token was revoked."),
    ("expired", "This token has expired."),
    ("unknown", "Unknown token."),
    ("disabled", "This account is disabled."),
])
def test_it_refuses_a_token_that_no_longer_opens_the_api(alice, state, message):
    token, key = token_create(user=alice, name="a", days=7)
    if state == "revoked":
        token.revoked_at = timezone.now()
    elif state == "expired":
        token.expires_at = timezone.now() - timedelta(seconds=1)
    elif state == "unknown":
        key = key[:-2] + ("AA" if not key.endswith("AA") else "BB")
    else:
        alice.is_active = False
        alice.save()
    token.save()
    reply = bearer(key).get("/api/studies/")
    assert reply.status_code == 401 and reply.json()["detail"] == message
    assert reply["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", [b"Bearer", b"Bearer a b", b"Bearer \xff\xfe", b"Token " + b"x" * 5000])
def test_it_answers_a_malformed_header_with_401(header):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=header.decode("latin-1"))
    assert api.get("/api/studies/").status_code == 401


def test_it_records_a_use_at_most_once_a_minute(alice):
    token, key = token_create(user=alice, name="a", days=7)
    api = bearer(key)
    api.get("/api/studies/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    api.get("/api/studies/")
    token.refresh_from_db()
    assert token.last_used_at == first


def test_it_asks_before_revoking_and_only_the_owner_can(alice_client, alice, bob):
    token, key = token_create(user=alice, name="ci", days=7)
    confirm = alice_client.get(f"/account/tokens/{token.pk}/revoke/")
    assert confirm.status_code == 200 and b"Revoke the token" in confirm.content
    assert bearer(key).get("/api/studies/").status_code == 200
    other = Client()
    other.force_login(bob)
    assert other.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert alice_client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 302
    assert bearer(key).get("/api/studies/").status_code == 401
    assert alice_client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404


def test_the_token_pages_need_a_login_and_csrf(alice):
    anonymous = Client()
    assert anonymous.get("/account/tokens/").status_code == 302
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post("/account/tokens/", {"name": "x", "days": 7}).status_code == 403
    assert not AccessToken.objects.exists()


def test_the_schema_names_the_token_scheme(alice):
    _, key = token_create(user=alice, name="a", days=7)
    schema = bearer(key).get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert schema["components"]["securitySchemes"]["accessToken"]["scheme"] == "bearer"
