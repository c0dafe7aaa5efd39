"""Pagination bounds: no number from a query string reaches SQL unchecked."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("query, status", [
    ("limit=4142759045496630717431414784", 200),  # capped at 1000
    ("offset=-177", 400),
    ("offset=99999999999999999999999", 400),
    ("offset=abc", 400),
    ("limit=2&offset=1", 200),
])
def test_it_bounds_limit_and_offset(alice_client, make_study, alice, query, status):
    make_study(alice, slug="s1")
    reply = alice_client.get(f"/api/studies/s1/items/?{query}")
    assert reply.status_code == status, reply.content
    if "limit=2" in query:
        assert [i["id"] for i in reply.json()["results"]] == ["i2", "i3"]
