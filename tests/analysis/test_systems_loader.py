"""The analysis reads each item's system and source and the study's system-level metric scores
(set-based: one more query, only for a study whose items name systems)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.selectors import study_questions
from studies.models import Item, SystemScore

pytestmark = pytest.mark.django_db
# external id → (system, source); "i5" names neither.
ITEMS = {"i1": ("mt-b", "doc1"), "i2": ("mt-a", "doc1"), "i3": ("mt-b", "doc2"),
         "i4": ("mt-a", ""), "i5": ("", "")}


def _study(make_study, owner, *, systems: bool):
    # The items are written here rather than imported, so that this test reads what the
    # selector does with the columns whatever the import path writes.
    study = make_study(owner, slug="with-systems" if systems else "without-systems", items=None, open=False)
    Item.objects.bulk_create([
        Item(study=study, external_id=external_id, position=n, text=f"Output {n}",
             system=system if systems else "", source=source if systems else "")
        for n, (external_id, (system, source)) in enumerate(ITEMS.items())])
    SystemScore.objects.create(study=study, system="mt-a", metric="comet", value=0.8)
    SystemScore.objects.create(study=study, system="mt-b", metric="comet", value=0.7)
    return study


def _queries(study) -> int:
    with CaptureQueriesContext(connection) as queries:
        study_questions(study=study)
    return len(queries)


def test_it_reads_systems_sources_and_system_scores(make_study, alice):
    study = _study(make_study, alice, systems=True)
    data = study_questions(study=study)[0].data
    assert list(data.item_ids) == list(ITEMS)
    assert list(data.system_names) == ["mt-a", "mt-b"]
    assert list(data.source_names) == ["doc1", "doc2"]
    assert data.item_system is not None and data.item_source is not None
    assert data.item_system.tolist() == [1, 0, 1, 0, -1]
    assert data.item_source.tolist() == [0, 0, 1, -1, -1]
    assert data.system_scores == {"comet": {"mt-a": 0.8, "mt-b": 0.7}}


def test_only_a_study_with_systems_reads_its_system_scores(make_study, alice, bob):
    with_systems = _study(make_study, alice, systems=True)
    without = _study(make_study, bob, systems=False)
    data = study_questions(study=without)[0].data
    assert data.item_system is None and data.item_source is None and not data.system_scores
    _queries(with_systems), _queries(without)  # each study caches its questions on first use
    assert _queries(with_systems) == _queries(without) + 1
