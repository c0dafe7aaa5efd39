"""The analysis reads each item's system and source and the study's system-level metric scores
(set-based: one more query, only for a study whose items name systems)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analysis.selectors import study_questions
from studies.models import Item, SystemScore

pytestmark = pytest.mark.django_db
SYSTEMS = {"i1": ("mt-b", "doc1"), "i2": ("mt-a", "doc1"), "i3": ("mt-b", "doc2"),
           "i4": ("mt-a", "")}


def _queries(study) -> int:
    with CaptureQueriesContext(connection) as queries:
        study_questions(study=study)
    return len(queries)


def test_it_reads_systems_sources_and_system_scores(make_study, alice):
    study = make_study(alice)
    _queries(study)  # the study caches its questions on the first call
    before = _queries(study)
    for external_id, (system, source) in SYSTEMS.items():
        Item.objects.filter(study=study, external_id=external_id).update(system=system,
                                                                         source=source)
    SystemScore.objects.create(study=study, system="mt-a", metric="comet", value=0.8)
    SystemScore.objects.create(study=study, system="mt-b", metric="comet", value=0.7)
    data = study_questions(study=study)[0].data
    order = list(data.item_ids)
    assert list(data.system_names) == ["mt-a", "mt-b"]
    assert list(data.source_names) == ["doc1", "doc2"]
    assert data.item_system is not None and data.item_source is not None
    assert [int(data.item_system[order.index(i)]) for i in ("i1", "i2", "i4", "i5")] == \
        [1, 0, 0, -1]
    assert [int(data.item_source[order.index(i)]) for i in ("i1", "i3", "i4")] == [0, 1, -1]
    assert data.system_scores == {"comet": {"mt-a": 0.8, "mt-b": 0.7}}
    assert _queries(study) == before + 1


def test_a_study_without_systems_reads_none(make_study, alice):
    study = make_study(alice)
    SystemScore.objects.create(study=study, system="mt-a", metric="comet", value=0.8)
    data = study_questions(study=study)[0].data
    assert data.item_system is None and data.item_source is None
    assert not data.system_scores and np.asarray(data.control).size == 5
