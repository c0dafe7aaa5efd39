"""Pseudonyms (A1, A2, …) are stored: given once at a first answer, never renumbered."""

from importlib import import_module

import pytest
from django.apps import apps

from annotation.services import responses_import
from studies.models import Participant, Study
from studies.selectors import pseudonyms
from studies.services import participant_consent, participants_invite, pseudonyms_assign
from tests.answers import submit

pytestmark = pytest.mark.django_db


def numbers(*people):
    return [Participant.objects.get(pk=p.pk).pseudonym for p in people]


def test_a_participant_gets_a_pseudonym_at_the_first_answer_and_keeps_it(make_study, alice):
    study = make_study(alice, slug="pseudo")
    a, b, c = participants_invite(study=study, count=3)
    participant_consent(participant=c)
    assert numbers(a, b, c) == ["", "", ""]  # invited or consented, not answered: none
    submit(b, position=0)
    submit(a, position=0)
    submit(b, position=1)
    submit(a, position=1)
    assert numbers(a, b, c) == ["A2", "A1", ""]
    assert Study.objects.get(pk=study.pk).pseudonyms_issued == 2
    assert pseudonyms(study=study) == {b.pk: "A1", a.pk: "A2"}


def test_a_deleted_participant_leaves_a_gap(make_study, alice):
    study = make_study(alice, slug="gap")
    a, b, c = participants_invite(study=study, count=3)
    submit(a)
    submit(b)
    Participant.objects.filter(pk=b.pk).delete()
    submit(c)
    assert pseudonyms(study=study) == {a.pk: "A1", c.pk: "A3"}


def test_assigning_twice_gives_nothing_new(make_study, alice):
    study = make_study(alice, slug="twice")
    a, b = participants_invite(study=study, count=2)
    pseudonyms_assign(study_id=study.pk, participant_ids=[b.pk, a.pk, b.pk])
    pseudonyms_assign(study_id=study.pk, participant_ids=[a.pk, b.pk])
    assert numbers(a, b) == ["A2", "A1"]
    assert Study.objects.get(pk=study.pk).pseudonyms_issued == 2


def test_an_import_continues_the_numbering_in_file_order(make_study, alice):
    study = make_study(alice, slug="imported")
    (a,) = participants_invite(study=study, count=1)
    submit(a)
    data = b"annotator,item,value\nzoe,i1,3\nadam,i2,4\nzoe,i3,5\nnone,i1,\n"
    responses_import(study=study, data=data, filename="r.csv", fmt="long")
    by_id = {p.external_id or "app": p.pseudonym for p in study.participants.all()}
    assert by_id == {"app": "A1", "zoe": "A2", "adam": "A3", "none": ""}


def test_the_migration_stores_the_pseudonyms_computed_before(make_study, alice):
    study = make_study(alice, slug="migrated")
    a, b, c = participants_invite(study=study, count=3)
    submit(c)
    submit(a)
    Participant.objects.filter(study=study).update(pseudonym_number=None)
    Study.objects.filter(pk=study.pk).update(pseudonyms_issued=0)
    import_module("studies.migrations.0006_pseudonyms").assign(apps, None)
    assert numbers(a, b, c) == ["A2", "", "A1"]
    assert Study.objects.get(pk=study.pk).pseudonyms_issued == 2
