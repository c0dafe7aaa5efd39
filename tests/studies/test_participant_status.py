"""A participant who will answer no more is never "in progress" on the study's pages (issue 23,
point 3): screened out, stopped by the attention checks, or left unfinished by the close."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from studies.models import Participant
from studies.services import participants_invite, study_close

pytestmark = pytest.mark.django_db


def statuses(client, study) -> list[str]:
    page = client.get(f"/studies/{study.slug}/").content.decode()
    return re.findall(r'<td class="status">([^<]*)</td>', page)


def test_it_names_the_state_of_each_participant(alice_client, alice, make_study):
    study = make_study(alice, annotators_per_item=10)
    fresh, consented, working, screened, stopped, done = participants_invite(study=study, count=6)
    now = timezone.now()
    Participant.objects.filter(pk=consented.pk).update(consented_at=now)
    Participant.objects.filter(pk=working.pk).update(consented_at=now, n_answered=2)
    Participant.objects.filter(pk=screened.pk).update(consented_at=now, n_answered=1,
                                                      screening=Participant.Screening.FAILED)
    Participant.objects.filter(pk=stopped.pk).update(consented_at=now, n_answered=3,
                                                     stopped_at=now)
    Participant.objects.filter(pk=done.pk).update(consented_at=now, n_answered=5,
                                                  completed_at=now)
    assert statuses(alice_client, study) == [
        "not started", "started", "in progress", "screened out",
        "stopped by the attention checks", "complete"]

    study_close(study=study)
    assert statuses(alice_client, study) == [
        "did not start", "did not start", "unfinished when the study closed", "screened out",
        "stopped by the attention checks", "complete"]


def test_the_participants_list_flags_the_screened_out_and_the_stopped(alice_client, alice,
                                                                      make_study):
    study = make_study(alice)
    screened, stopped = participants_invite(study=study, count=2)
    Participant.objects.filter(pk=screened.pk).update(screening=Participant.Screening.FAILED)
    Participant.objects.filter(pk=stopped.pk).update(stopped_at=timezone.now())
    page = alice_client.get(f"/studies/{study.slug}/participants/").content.decode()
    assert page.count('badge closed">screened out<') == 1
    assert page.count('>stopped</span>') == 1
