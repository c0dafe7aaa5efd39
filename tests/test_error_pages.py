"""A refusal is a styled page that says why (issue 23, point 2): a role that may not do
something gets the site's page naming the role, a missing or unshared page the site's 404."""

from __future__ import annotations

import pytest

from studies.services import member_add

pytestmark = pytest.mark.django_db


def test_a_viewer_pressing_an_editors_button_gets_a_page_that_says_why(alice, bob, client,
                                                                      make_study):
    study = make_study(alice)
    member_add(study=study, username="bob", role="viewer", user=alice)
    client.force_login(bob)
    refused = client.post(f"/studies/{study.slug}/invite/", {"count": 1})
    assert refused.status_code == 403
    page = refused.content.decode()
    assert '<link rel="stylesheet"' in page and "<h1>Not allowed</h1>" in page
    assert "Your role in this study (viewer) does not allow this." in page
    assert "editor role" in page


def test_a_missing_or_unshared_page_is_the_sites_404(alice, bob, client, make_study):
    study = make_study(alice)
    client.force_login(bob)
    for url in (f"/studies/{study.slug}/", "/studies/no-such-study/", "/no/such/page/"):
        missing = client.get(url)
        assert missing.status_code == 404
        page = missing.content.decode()
        assert '<link rel="stylesheet"' in page and "<h1>Page not found</h1>" in page
        assert "Study matching query" not in page  # no model name, no internals
