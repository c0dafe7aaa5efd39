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


# --- tokens limited to one study ----------------------------------------------------------------

@pytest.fixture
def two_studies(alice, make_study):
    return make_study(alice, slug="mine"), make_study(alice, slug="other")


def test_a_token_for_one_study_reaches_only_that_study(alice, two_studies):
    mine, other = two_studies
    _, key = token_create(user=alice, name="one", days=7, scope="write", study=mine)
    client = api(key)
    listed = client.get("/api/studies/").json()
    assert [s["slug"] for s in listed["results"]] == ["mine"]
    assert client.get("/api/studies/mine/").status_code == 200
    assert client.get("/api/studies/mine/items/").status_code == 200
    for path in ("/api/studies/other/", "/api/studies/other/items/",
                 "/api/studies/other/participants/", "/api/studies/other/members/",
                 "/api/studies/other/results/", "/api/studies/other/runs/",
                 "/api/studies/other/exports/", "/api/studies/other/responses/",
                 "/api/studies/other/definition/", "/api/studies/nowhere/"):
        reply = client.get(path)
        assert reply.status_code == 404, path
    # The same 404 as for a study nobody gave alice a role in: nothing tells them apart.
    assert client.get("/api/studies/other/").json() == client.get("/api/studies/nowhere/").json()
    changed = client.patch("/api/studies/other/", {"title": "Changed"}, format="json")
    assert changed.status_code == 404
    before = other.title
    other.refresh_from_db()
    assert other.title == before
    assert client.patch("/api/studies/mine/", {"title": "Mine"}, format="json").status_code == 200


def test_a_token_for_one_study_creates_no_study(alice, two_studies):
    _, key = token_create(user=alice, name="one", days=7, scope="write", study=two_studies[0])
    client = api(key)
    made = client.post("/api/studies/", {"slug": "new-one", "title": "New"}, format="json")
    assert made.status_code == 403 and "limited to one study" in made.json()["detail"]
    cloned = client.post("/api/studies/mine/clone/", {"slug": "copy"}, format="json")
    assert cloned.status_code == 403
    from studies.models import Study
    assert not Study.objects.filter(slug__in=["new-one", "copy"]).exists()


def test_a_token_for_all_studies_still_reaches_all(alice, two_studies):
    _, key = token_create(user=alice, name="all", days=7, scope="read")
    listed = api(key).get("/api/studies/").json()
    assert sorted(s["slug"] for s in listed["results"]) == ["mine", "other"]
    assert api(key).get("/api/studies/other/").status_code == 200


def test_the_token_page_limits_a_token_to_a_study_of_the_user(alice_client, alice, bob,
                                                               two_studies, make_study):
    make_study(bob, slug="bobs")
    page = alice_client.get("/account/tokens/").content.decode()
    assert '<option value="" selected>All my studies</option>' in page
    assert 'value="mine"' in page and 'value="bobs"' not in page
    made = alice_client.post("/account/tokens/", {"name": "n", "days": 7, "scope": "read",
                                                  "study": "mine"})
    assert made.status_code == 200
    assert AccessToken.objects.get(name="n").study == two_studies[0]
    assert f">{two_studies[0].title}</a>" in alice_client.get("/account/tokens/").content.decode()
    refused = alice_client.post("/account/tokens/", {"name": "b", "days": 7, "scope": "read",
                                                     "study": "bobs"})
    assert refused.status_code == 400 and not AccessToken.objects.filter(name="b").exists()


def test_a_study_someone_has_no_role_in_cannot_limit_their_token(alice, bob, make_study):
    with pytest.raises(ValueError, match="no role"):
        token_create(user=bob, name="x", days=7, study=make_study(alice, slug="hers"))


def test_deleting_the_study_deletes_its_tokens(alice, two_studies):
    from studies.services import study_delete

    mine, _ = two_studies
    token, key = token_create(user=alice, name="one", days=7, study=mine)
    study_delete(study=mine, confirm_slug="mine", user=alice)
    assert not AccessToken.objects.filter(pk=token.pk).exists()
    assert api(key).get("/api/studies/").status_code == 401
