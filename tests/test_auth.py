"""Researcher log-in: a lock-out that stops guessing without locking out colleagues, and a
password reset by e-mail."""

import re

import pytest
from django.test import Client

from tests.conftest import settings_from_env

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.2"  # the reverse proxy every request comes from, as gunicorn sees it


def login(client: Client, username: str, password: str, **meta):
    return client.post("/accounts/login/", {"username": username, "password": password}, **meta)


def behind_proxy(settings, count: str) -> None:
    """Apply the client-address settings that TRUSTED_PROXY_COUNT=count produces."""
    built = settings_from_env(TRUSTED_PROXY_COUNT=count)
    for name, value in built.items():
        if name.startswith(("AXES_IPWARE_", "IPWARE_")):
            setattr(settings, name, value)


def test_it_locks_out_the_guessed_user_not_everyone_at_the_address(alice, bob, settings):
    attacker = Client()
    statuses = [login(attacker, "bob", "wrong").status_code
                for _ in range(settings.AXES_FAILURE_LIMIT)]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert login(attacker, "bob", "bob-password-1").status_code == 429
    # Alice works behind the same address (one office, one proxy): she still gets in.
    assert login(Client(), "alice", "alice-password-1").status_code == 302


def test_it_ignores_x_forwarded_for_unless_a_proxy_is_configured(bob, settings):
    # Without TRUSTED_PROXY_COUNT the header is the client's to invent: a new value per guess
    # must not buy new guesses.
    behind_proxy(settings, "0")
    attacker = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(attacker, "bob", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    assert login(attacker, "bob", "bob-password-1",
                 HTTP_X_FORWARDED_FOR="198.51.100.200").status_code == 429


def test_it_tells_clients_behind_one_proxy_apart(bob, settings):
    behind_proxy(settings, "1")
    attacker, owner = Client(REMOTE_ADDR=PROXY), Client(REMOTE_ADDR=PROXY)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login(attacker, "bob", "wrong", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert login(attacker, "bob", "bob-password-1",
                 HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429
    # What the attacker writes into the header himself lands left of what the proxy appends.
    assert login(attacker, "bob", "bob-password-1",
                 HTTP_X_FORWARDED_FOR="203.0.113.9, 198.51.100.7").status_code == 429
    assert login(owner, "bob", "bob-password-1",
                 HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 302


def test_the_login_page_links_to_the_password_reset(client):
    assert b'href="/accounts/password-reset/"' in client.get("/accounts/login/").content


def test_a_forgotten_password_is_reset_through_a_mailed_link(client, alice, mailoutbox, settings):
    sent = client.post("/accounts/password-reset/", {"email": "alice@example.org"})
    assert sent.status_code == 302
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["alice@example.org"] and mail.from_email == settings.DEFAULT_FROM_EMAIL
    link = re.search(r"https?://testserver(/accounts/reset/\S+/)", mail.body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200 and b"new_password1" in form.content
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-n3w-Secret-phrase",
                                                     "new_password2": "a-n3w-Secret-phrase"})
    assert done.status_code == 302
    assert client.get(done["Location"]).status_code == 200
    assert login(Client(), "alice", "a-n3w-Secret-phrase").status_code == 302
    assert login(Client(), "alice", "alice-password-1").status_code == 200
    # The link works once.
    assert b"new_password1" not in client.get(link, follow=True).content


def test_a_reset_for_an_unknown_address_looks_the_same_and_sends_nothing(client, mailoutbox):
    sent = client.post("/accounts/password-reset/", {"email": "nobody@example.org"})
    assert sent.status_code == 302 and mailoutbox == []


def test_it_sends_one_address_only_a_few_reset_mails_an_hour(alice, mailoutbox, settings):
    settings.CONCORD_PASSWORD_RESET_PER_EMAIL = 3
    settings.CONCORD_PASSWORD_RESET_PER_ADDRESS = 0
    answers = [Client(REMOTE_ADDR=f"192.0.2.{n}").post("/accounts/password-reset/",
                                                      {"email": "alice@example.org"})
               for n in range(30)]
    # Every request gets the usual answer (nothing tells which addresses have accounts) ...
    assert {(a.status_code, a["Location"]) for a in answers} == {
        (302, "/accounts/password-reset/sent/")}
    # ... and the inbox gets three mails, not thirty.
    assert len(mailoutbox) == 3


def test_it_refuses_a_client_asking_for_too_many_reset_links(alice, bob, mailoutbox, settings):
    settings.CONCORD_PASSWORD_RESET_PER_ADDRESS = 2
    settings.CONCORD_PASSWORD_RESET_PER_EMAIL = 0
    client = Client(REMOTE_ADDR="198.51.100.9")
    first = client.post("/accounts/password-reset/", {"email": "alice@example.org"})
    second = client.post("/accounts/password-reset/", {"email": "bob@example.org"})
    third = client.post("/accounts/password-reset/", {"email": "alice@example.org"})
    assert first.status_code == second.status_code == 302
    assert third.status_code == 429 and third["Retry-After"] == "3600"
    assert "Too many reset links" in third.content.decode()
    assert len(mailoutbox) == 2
    # Another client is not affected.
    other = Client(REMOTE_ADDR="198.51.100.10").post("/accounts/password-reset/",
                                                     {"email": "bob@example.org"})
    assert other.status_code == 302 and len(mailoutbox) == 3
