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


def test_a_viewer_sees_only_what_a_viewer_may_do(alice, bob, client, make_study):
    from studies.services import participants_invite

    study = make_study(alice)
    invited = participants_invite(study=study, count=2)
    member_add(study=study, username="bob", role="viewer", user=alice)
    client.force_login(bob)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    for hidden in (f"/studies/{study.slug}/invite/", "/responses/import/", "Import responses",
                   "/pseudonyms", *(p.token for p in invited)):
        assert hidden not in page, hidden
    assert "shown to the study's editors only" in page
    client.force_login(alice)  # the editor (owner) still has all of it
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert "Import responses" in page and all(p.token in page for p in invited)
