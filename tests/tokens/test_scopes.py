"""Read-only and read-write tokens (issue 23, point 19): a read-only token reads whatever its
owner's role allows and can change nothing; tokens made before scopes keep writing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tokens.models import AccessToken
from tokens.services import token_create

pytestmark = pytest.mark.django_db


def api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_a_read_only_token_reads_and_cannot_write(alice, make_study):
    study = make_study(alice)
    _, key = token_create(user=alice, name="notebook", days=7, scope="read")
    client = api(key)
    assert client.get("/api/studies/").status_code == 200
    assert client.get(f"/api/studies/{study.slug}/").status_code == 200
    refused = client.patch(f"/api/studies/{study.slug}/", {"title": "Changed"}, format="json")
    assert refused.status_code == 403 and "read-only" in refused.json()["detail"]
    refused = client.post(f"/api/studies/{study.slug}/participants/", {"count": 1},
                          format="json")
    assert refused.status_code == 403
    study.refresh_from_db()
    assert study.title == "S1" and not study.participants.exists()


def test_a_read_write_token_writes_as_before(alice, make_study):
    study = make_study(alice)
    _, key = token_create(user=alice, name="script", days=7, scope="write")
    reply = api(key).patch(f"/api/studies/{study.slug}/", {"title": "Changed"}, format="json")
    assert reply.status_code == 200


def test_the_token_page_makes_read_only_tokens_by_default(alice_client, alice):
    page = alice_client.get("/account/tokens/").content.decode()
    assert '<option value="read" selected>Read only</option>' in page
    alice_client.post("/account/tokens/", {"name": "n", "days": 7, "scope": "read"})
    alice_client.post("/account/tokens/", {"name": "w", "days": 7, "scope": "write"})
    assert dict(AccessToken.objects.values_list("name", "scope")) == {"n": "read", "w": "write"}
    listed = alice_client.get("/account/tokens/").content.decode()
    assert "Read only" in listed and "Read and write" in listed


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope"):
        token_create(user=None, name="x", days=7, scope="admin")  # type: ignore[arg-type]
