"""Closing a study while an annotator has an item on screen loses nothing: the researcher
closes it through its confirmation page, the annotator presses Confirm, the answer is stored
and the "your answers are saved" page follows. Too late (the grace period over), the page says
the answer was not stored instead of dropping it silently."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Response
from studies.models import Study
from studies.services import participants_invite, study_close, study_transition

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def begin(page, base, participant):
    page.goto(f"{base}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")


def test_closing_while_an_item_is_on_screen_stores_its_answer(live_server, browser, page, alice,
                                                              make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    begin(page, live_server.url, participant)
    # The researcher closes the study in another browser, through the confirmation page.
    researcher = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    login(researcher, live_server.url, "alice", "alice-password-1")
    researcher.goto(f"{live_server.url}/studies/{study.slug}/")
    researcher.locator("#action-close").click()
    expect(researcher.get_by_role("heading", name="Close the study?")).to_be_visible()
    researcher.locator("#confirm-button").click()
    expect(researcher.locator("#study-status")).to_have_text("Closed")
    # The annotator, with the item still on screen, answers it.
    page.keyboard.press("4")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#saved")).to_contain_text("Your answer is saved.")
    expect(page.locator("#saved")).to_contain_text("The study is closed.")
    row = Response.objects.get(participant=participant)
    assert row.answers.get().value == 4
    assert page.csp_violations == []
    researcher.context.close()


def test_an_answer_after_the_grace_period_is_not_dropped_silently(live_server, page, alice,
                                                                  make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    begin(page, live_server.url, participant)
    study_close(study=study)
    Study.objects.filter(pk=study.pk).update(status_changed_at=timezone.now() - timedelta(
        seconds=settings.CONCORD_ANSWER_GRACE_SECONDS + 60))
    page.keyboard.press("2")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#save-status")).to_have_attribute("data-state", "msg-closed")
    expect(page.locator("#save-status")).to_contain_text("was not stored")
    outbox = page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('concord-outbox'))"
                           ".map(k => localStorage.getItem(k))")
    assert outbox in ([], ["{}"])
    page.locator("#saved-link").click()
    expect(page.locator("#saved")).to_contain_text("The study is closed.")
    assert not Response.objects.exists()


def test_an_answer_refused_by_a_pause_is_kept_and_sent_once_reopened(live_server, page, alice,
                                                                     make_study):
    study = make_study(alice)
    participant = participants_invite(study=study, count=1)[0]
    begin(page, live_server.url, participant)
    study_transition(study=study, action="pause")
    Study.objects.filter(pk=study.pk).update(status_changed_at=timezone.now() - timedelta(
        seconds=settings.CONCORD_ANSWER_GRACE_SECONDS + 60))
    page.keyboard.press("5")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#save-status")).to_have_attribute("data-state", "msg-paused")
    kept = page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('concord-outbox'))"
                         ".map(k => Object.keys(JSON.parse(localStorage.getItem(k))).length)")
    assert kept == [1] and not Response.objects.exists()
    page.locator("#saved-link").click()  # no "leave the page?" prompt: the answer is kept
    expect(page.locator("#saved")).to_contain_text("The study is paused")
    study_transition(study=Study.objects.get(pk=study.pk), action="open")
    page.goto(f"{live_server.url}/a/{participant.token}/next/")
    # The reopened study's item page sends the kept answer first, then moves on.
    expect(page.locator(".progress-text")).to_contain_text("Item 2 of")
    assert Response.objects.get(participant=participant).answers.get().value == 5
