"""An owner invites a colleague by e-mail in the browser, by keyboard; the colleague follows the
mailed link on a phone, chooses a password, logs in and finds the study."""

import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_invited_colleague_sets_a_password_and_finds_the_study(live_server, page, sized,
                                                                  alice, make_study):
    study = make_study(alice, slug="shared", open=False)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/shared/sharing/")
    page.get_by_label("E-mail address").focus()
    page.keyboard.type("mia.ross@example.org")
    page.keyboard.press("Tab")  # the role
    page.keyboard.press("ArrowDown")  # viewer -> editor
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("Account mia.ross made")
    expect(page.locator("#members")).to_contain_text("mia.ross")
    assert page.csp_violations == []

    [message] = mail.outbox
    path = re.search(r"https?://[^/\s]+(/accounts/reset/\S+/)", message.body).group(1)
    phone = sized(390, 844)
    phone.goto(live_server.url + path)
    expect(phone.get_by_role("heading", name="Choose your password")).to_be_visible()
    expect(phone.locator("#account-username")).to_have_text("mia.ross")
    phone.get_by_label("Password", exact=True).fill("lantern-orchid-58")
    phone.get_by_label("Password again").fill("lantern-orchid-58")
    phone.get_by_role("button", name="Set the password").tap()
    expect(phone.get_by_role("heading", name="Password set")).to_be_visible()
    login(phone, live_server.url, "mia.ross", "lantern-orchid-58")
    expect(phone.get_by_role("link", name=study.title)).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
