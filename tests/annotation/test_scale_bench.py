"""bench.scale's generated study imports as it is: the bench itself never runs in the test suite."""

import pytest

from annotation.models import Answer, Response
from annotation.services import responses_import
from bench.scale import generate
from studies.models import Participant
from studies.services import items_import, study_create

pytestmark = pytest.mark.django_db


def test_it_imports_the_generated_study_of_two_thousand_answers(alice, tmp_path):
    items, responses, n_items, n_annotators = generate(tmp_path, 2000)
    study = study_create(owner=alice, slug="scale", title="Scale", preset="similarity-1-5")
    assert items_import(study=study, data=items.read_bytes(), filename="items.csv") == n_items == 200
    summary = responses_import(study=study, data=responses.read_bytes(),
                               filename="responses.csv", fmt="long")
    assert (summary.answers, len(summary.annotators), summary.items) == (2000, n_annotators, 200)
    assert Response.objects.filter(participant__study=study).count() == 2000
    assert Answer.objects.filter(response__participant__study=study).count() == 2000
    # Ten ratings per item, by ten different annotators.
    per_item = set(Response.objects.filter(participant__study=study).values_list(
        "item_id", "participant_id"))
    assert len(per_item) == 2000
    assert Participant.objects.filter(study=study, pseudonym_number__isnull=False).count() == 10
