"""Sharing a study: owners add researchers by user name, change roles, remove them; the last
owner stays; every change is recorded."""

import pytest

from core.problems import InputError
from studies.models import Membership, StudyEvent
from studies.services import member_add, member_change, member_remove

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(make_study, alice):
    return make_study(alice, slug="shared", open=False)


def owner_of(study, user):
    return Membership.objects.get(study=study, user=user)


def test_an_owner_shares_changes_and_removes(study, alice, bob):
    membership = member_add(study=study, username=" bob ", role="viewer", user=alice)
    assert (membership.user, membership.role, membership.added_by) == (bob, "viewer", alice)
    member_change(membership=membership, role="owner", user=alice)
    member_remove(membership=owner_of(study, alice), user=bob)  # two owners: alice may go
    assert list(study.memberships.values_list("user__username", "role")) == [("bob", "owner")]
    events = list(StudyEvent.objects.filter(study=study).exclude(action="items").order_by("id")
                  .values_list("action", "detail"))
    assert events == [("member_add", {"researcher": "bob", "role": "viewer"}),
                      ("member_change", {"researcher": "bob", "from": "viewer", "to": "owner"}),
                      ("member_remove", {"researcher": "alice", "role": "owner"})]


def test_the_last_owner_stays(study, alice):
    with pytest.raises(InputError, match="last owner"):
        member_remove(membership=owner_of(study, alice), user=alice)
    with pytest.raises(InputError, match="last owner"):
        member_change(membership=owner_of(study, alice), role="editor", user=alice)
    assert owner_of(study, alice).role == "owner"


def test_it_refuses_unknown_people_twice_added_and_unknown_roles(study, alice, bob):
    with pytest.raises(InputError, match="no researcher account"):
        member_add(study=study, username="nobody", role="viewer", user=alice)
    with pytest.raises(InputError, match="already has a role"):
        member_add(study=study, username="alice", role="viewer", user=alice)
    with pytest.raises(InputError, match="role must be"):
        member_add(study=study, username="bob", role="admin", user=alice)


def test_the_page_is_for_owners(study, client, alice, bob):
    member_add(study=study, username="bob", role="editor", user=alice)
    client.force_login(bob)
    assert client.get("/studies/shared/sharing/").status_code == 403
    assert client.post("/studies/shared/sharing/", {"username": "bob", "role": "owner"}
                       ).status_code == 403
    client.force_login(alice)
    page = client.get("/studies/shared/sharing/")
    assert page.status_code == 200 and b"bob" in page.content and b"last owner" in page.content
    bad = client.post("/studies/shared/sharing/", {"username": "ghost", "role": "viewer"})
    assert bad.status_code == 400 and b"no researcher account" in bad.content
    bob_membership = owner_of(study, bob)
    assert client.post(f"/studies/shared/sharing/{bob_membership.pk}/role/",
                       {"role": "viewer"}).status_code == 302
    assert owner_of(study, bob).role == "viewer"
    mine = owner_of(study, alice)
    refused = client.post(f"/studies/shared/sharing/{mine.pk}/role/", {"role": "viewer"})
    assert refused.status_code == 400 and b"last owner" in refused.content
    assert client.post(f"/studies/shared/sharing/{mine.pk}/role/", {"role": "god"}
                       ).status_code == 400
    remove = f"/studies/shared/sharing/{bob_membership.pk}/remove/"
    assert b"Remove bob?" in client.get(remove).content
    assert client.post(remove).status_code == 400  # not confirmed
    assert client.post(remove, {"confirm": "remove"}).status_code == 302
    assert not study.memberships.filter(user=bob).exists()
    assert client.get(remove).status_code == 404
    client.force_login(bob)
    assert client.get("/studies/shared/").status_code == 404


def test_the_api(study, client, alice, bob):
    client.force_login(alice)
    url = "/api/studies/shared/members/"
    added = client.post(url, {"username": "bob", "role": "editor"},
                        content_type="application/json")
    assert added.status_code == 201 and added.json()["username"] == "bob"
    pk = added.json()["id"]
    assert [m["username"] for m in client.get(url).json()["results"]] == ["alice", "bob"]
    changed = client.patch(f"{url}{pk}/", {"role": "owner"}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["role"] == "owner"
    assert client.patch(f"{url}{pk}/", {"role": "x"}, content_type="application/json"
                        ).status_code == 400
    client.force_login(bob)
    mine = owner_of(study, alice).pk
    assert client.post(f"{url}{mine}/remove/").status_code == 204
    last = client.post(f"{url}{pk}/remove/")
    assert last.status_code == 400 and "last owner" in last.json()["detail"]
