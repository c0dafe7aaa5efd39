"""An open link enrols new participants at a bounded rate (issue 23, point 16): one client with
fresh cookies and invented platform ids no longer takes a study's places in seconds; the limit
answers a clear 429 page and enrols nobody, and someone already enrolled is never refused."""

from __future__ import annotations

import re
import threading

import pytest
import requests
from django.db import connection
from django.test import Client, RequestFactory, override_settings

from studies.models import Participant
from studies.ratelimit import client_address
from tests.conftest import require


def join(client: Client, study, query: str = "", **headers):
    url = f"/join/{study.open_token}/?{query}"
    page = client.get(url, **headers)
    if page.status_code != 200:
        return page
    entry = re.search(r'name="entry" value="([^"]+)"', page.content.decode())
    return client.post(url, {"entry": entry.group(1)} if entry else {}, **headers)


def forged_clients(base: str, open_token: str, n: int) -> list[int]:
    """n browsers at once, each with fresh cookies and an invented Prolific id, through the
    live server: the status of each consent POST."""
    statuses: list[int] = []
    lock = threading.Lock()

    def one(k: int) -> None:
        session = requests.Session()
        url = f"{base}/join/{open_token}/?PROLIFIC_PID=forged-{k}&STUDY_ID=s&SESSION_ID=x{k}"
        page = session.get(url, timeout=30)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        answer = session.post(url, data={"csrfmiddlewaretoken": csrf}, timeout=30,
                              headers={"Referer": url}, allow_redirects=False)
        with lock:
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.django_db(transaction=True)
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=10, CONCORD_JOIN_RATE_PER_STUDY=300)
def test_it_enrols_at_most_the_limit_from_one_address_under_concurrent_forged_clients(
        live_server, alice, make_study):
    require(connection.vendor == "postgresql", "concurrent enrolments are only tested on "
                                               "PostgreSQL (set DATABASE_URL)")
    study = make_study(alice, annotators_per_item=40)
    statuses = forged_clients(live_server.url, study.open_token, 24)
    assert sorted(set(statuses)) == [302, 429], statuses
    assert statuses.count(302) == 10
    assert Participant.objects.filter(study=study).count() == 10


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=2, CONCORD_JOIN_RATE_PER_STUDY=0)
def test_it_refuses_with_a_clear_page_and_enrols_nobody(alice, make_study):
    study = make_study(alice, annotators_per_item=40)
    assert join(Client(), study, "PROLIFIC_PID=a1&SESSION_ID=1").status_code == 302
    assert join(Client(), study).status_code == 302  # an anonymous browser counts too
    refused = join(Client(), study, "PROLIFIC_PID=a3&SESSION_ID=3")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "60"
    text = refused.content.decode()
    assert "try again in a minute" in text and "Nothing was recorded about you" in text
    assert not Participant.objects.filter(study=study, external_id="a3").exists()
    assert Participant.objects.filter(study=study).count() == 2


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=1, CONCORD_JOIN_RATE_PER_STUDY=0)
def test_it_never_refuses_someone_already_enrolled(alice, make_study):
    study = make_study(alice, annotators_per_item=40)
    browser = Client()
    assert join(browser, study, "PROLIFIC_PID=p1&SESSION_ID=s1").status_code == 302
    assert join(Client(), study, "PROLIFIC_PID=p2&SESSION_ID=s2").status_code == 429
    again = browser.get(f"/join/{study.open_token}/?PROLIFIC_PID=p1&SESSION_ID=s1")
    assert again.status_code == 302  # back to their own pages, not counted
    anonymous = Client()
    with override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=0):
        assert join(anonymous, study).status_code == 302
    assert anonymous.get(f"/join/{study.open_token}/").status_code == 302


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=0, CONCORD_JOIN_RATE_PER_STUDY=3)
def test_it_limits_the_study_as_a_whole(alice, make_study):
    study = make_study(alice, annotators_per_item=40)
    statuses = [join(Client(), study, f"PROLIFIC_PID=w{k}&SESSION_ID={k}",
                     REMOTE_ADDR=f"10.0.0.{k}").status_code for k in range(5)]
    assert statuses == [302, 302, 302, 429, 429]


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=1, CONCORD_JOIN_RATE_PER_STUDY=0,
                   TRUSTED_PROXY_COUNT=0)
def test_it_ignores_a_forwarded_address_the_client_wrote_without_a_proxy(alice, make_study):
    study = make_study(alice, annotators_per_item=40)
    statuses = [join(Client(), study, f"PROLIFIC_PID=f{k}&SESSION_ID={k}",
                     HTTP_X_FORWARDED_FOR=f"203.0.113.{k}").status_code for k in range(3)]
    assert statuses == [302, 429, 429]


def test_it_reads_the_client_behind_trusted_proxies(settings):
    from tests.test_auth import behind_proxy

    factory = RequestFactory()
    request = factory.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7, 10.0.0.2",
                          REMOTE_ADDR="10.0.0.3")
    behind_proxy(settings, "0")
    assert client_address(request) == "10.0.0.3"
    behind_proxy(settings, "1")
    assert client_address(request) == "10.0.0.2"
    behind_proxy(settings, "2")
    assert client_address(request) == "198.51.100.7"
    behind_proxy(settings, "9")  # a header shorter than the proxies
    assert client_address(request) == "10.0.0.3"


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=1, CONCORD_JOIN_RATE_PER_STUDY=1)
def test_it_lets_newcomers_in_when_the_cache_fails(alice, make_study, monkeypatch):
    from annotation import limits

    def down(key: str) -> int:
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(limits, "_count", down)
    study = make_study(alice, annotators_per_item=40)
    assert [join(Client(), study, f"PROLIFIC_PID=c{k}&SESSION_ID={k}").status_code
            for k in range(3)] == [302, 302, 302]


@pytest.mark.django_db
@override_settings(CONCORD_JOIN_RATE_PER_ADDRESS=1, CONCORD_JOIN_RATE_PER_STUDY=0)
def test_the_refusal_speaks_the_study_language(alice, make_study):
    study = make_study(alice, annotators_per_item=40)
    study.language = "fr"
    study.save(update_fields=["language"])
    assert join(Client(), study, "PROLIFIC_PID=l1&SESSION_ID=1").status_code == 302
    refused = join(Client(), study, "PROLIFIC_PID=l2&SESSION_ID=2")
    assert refused.status_code == 429
    assert "veuillez réessayer dans une minute" in refused.content.decode()
