"""A study whose items name systems and sources, answered through the app and analysed by a run:
its stored document has the systems sections, its planted order recovered."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.services import response_submit
from studies.models import Item, SystemScore
from studies.services import participants_invite, study_open

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/results.schema.json").read_text())
QUALITY = {"good": 6.0, "fair": 3.5, "poor": 1.0}  # on the 0–7 scale
N_SOURCES = 8


def test_a_run_of_a_study_with_systems_has_the_systems_sections(make_study, alice):
    study = make_study(alice, slug="systems-run", items=None, open=False)
    Item.objects.bulk_create([
        Item(study=study, external_id=f"{system}-{s}", position=n, text=f"{system} on {s}",
             system=system, source=f"doc{s}", metrics={"chrf": QUALITY[system] + s % 3 / 10})
        for n, (s, system) in enumerate((s, system) for s in range(N_SOURCES)
                                        for system in QUALITY)])
    SystemScore.objects.bulk_create([SystemScore(study=study, system=system, metric="bleu",
                                                 value=10 * q) for system, q in QUALITY.items()])
    study_open(study=study)
    rng = np.random.default_rng(0)
    key = study.primary_question.key
    for participant in participants_invite(study=study, count=3):
        for position in range(participant.n_assigned):
            item = participant.assignments.get(position=position).item
            value = int(np.clip(round(QUALITY[item.system] + rng.normal(0, 0.7)), 0, 7))
            response_submit(participant=participant, position=position,
                            answers={key: {"value": value}}, client_id=uuid.uuid4(),
                            active_ms=3000)
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    document = run.results
    jsonschema.validate(document, SCHEMA)
    raw = [r for r in document["systems"] if r["scale"] == "raw"]
    assert [r["system"] for r in raw] == ["good", "fair", "poor"]
    assert raw[0]["sources"] == N_SOURCES and raw[0]["answers"] == 3 * N_SOURCES
    assert {r["system_a"] + "/" + r["system_b"] for r in document["system_tests"]
            if r["scale"] == "raw"} == {"fair/good", "fair/poor", "good/poor"}
    assert any(r["metric"] == "bleu" and r["statistic"] == "pairwise_accuracy"
               and r["value"] == 1.0 for r in document["metric_meta_evaluation"])
    assert {r["name"] for r in document["mixed_model"] if r["kind"] == "variance"} == {
        "source", "annotator", "residual"}
    assert "systems" in run.timings["sections_s"]
