"""The study page's copy buttons copy the open link and the ready-made Prolific URL, under the
strict CSP (a static script, no inline one)."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_copy_buttons_copy_the_links(live_server, page, alice, make_study):
    study = make_study(alice)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"],
                                   origin=live_server.url)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/s1/")
    button = page.locator("button[data-copy=prolific-link]")
    expect(button).to_be_visible()
    button.click()
    expect(button).to_have_text("Copied")
    link = live_server.url + reverse("annotation:join", args=[study.open_token])
    assert page.evaluate("navigator.clipboard.readText()") == (
        link + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
        "&SESSION_ID={{%SESSION_ID%}}")
    page.locator("button[data-copy=open-link]").click()
    expect(page.locator("button[data-copy=open-link]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == link
    assert page.csp_violations == []
