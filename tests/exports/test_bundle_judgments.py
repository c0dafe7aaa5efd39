"""A methods bundle of a study with comparative questions replays its judgments exactly: the
questions' kinds and options (definition.json), the comparisons' outputs (items.csv), and every
answer's judgment (revisions.csv's `choice`) come back, choice for choice."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.utils import timezone

from analysis.models import AnalysisRun
from annotation.models import Answer
from annotation.responses_import import responses_import
from exports.services import export_open
from imports.bundles import bundle_import
from studies.models import Study
from tests.comparative import comparative_study

pytestmark = pytest.mark.django_db

JUDGMENTS = (b"annotator,items,choice,question,comment\n"
             b"ann1,d1-a|d1-b,d1-b,better,\n"
             b"ann1,d1-c|d1-a|d1-b,d1-c|d1-b=d1-a,rank,\"=2+2\"\n"
             b"ann2,d1-b|d1-a,tie,better,\n"
             b"ann2,d1-a|d1-c|d1-b,,rank,ask me later\n")


@pytest.fixture
def bundle(alice) -> bytes:
    study = comparative_study(alice, slug="judged", scale=True, questions=(
        ("better", "pairwise", {"ties": True, "strength": True}),
        ("rank", "ranking", {"ties": True})))
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    responses_import(study=study, data=b"annotator,item,value\nann3,d1-a,4\n",
                     filename="r.csv", fmt="long")
    # a finished run whose document the bundle carries (the analysis is another helper's)
    AnalysisRun.objects.create(study=study, status=AnalysisRun.Status.DONE,
                               finished_at=timezone.now(),
                               results={"schema": "concord.results/3", "study": {}})
    return b"".join(export_open(study=study, what="bundle").chunks)


def stored(study: Study) -> list[tuple]:
    return sorted(
        (f"A{a.response.participant.pseudonym_number}", a.response.item.external_id,
         tuple(a.response.item.outputs), a.question.key, a.question.kind,
         json.dumps(a.question.comparison, sort_keys=True), a.value, a.missing, a.comment,
         json.dumps(a.choice, sort_keys=True))
        for a in Answer.objects.filter(response__participant__study=study)
        .select_related("response__participant", "response__item", "question"))


def test_the_bundle_carries_the_judgments_and_the_outputs(bundle):
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        revisions = list(csv.DictReader(io.StringIO(archive.read("revisions.csv").decode())))
        items = list(csv.DictReader(io.StringIO(archive.read("items.csv").decode())))
        judgments = archive.read("judgments.csv").decode()
    picked = [json.loads(r["choice"]) for r in revisions if r["question"] == "better"
              and r["choice"]]
    assert {"shown": ["d1-a", "d1-b"], "pick": "d1-b", "strength": ""} in picked
    assert all(r["choice"] == "" for r in revisions if r["question"] not in ("better", "rank"))
    assert {r["id"]: r["outputs"] for r in items if r["outputs"]} == {
        "cmp-doc-1-1": "d1-a|d1-b", "cmp-doc-1-2": "d1-c|d1-a|d1-b"}
    assert judgments.startswith("annotator,item,question,kind,shown,choice")


def test_a_replayed_bundle_reproduces_every_judgment(bundle, alice):
    original = stored(Study.objects.get(slug="judged"))
    done = bundle_import(data=bundle, filename="judged-bundle.zip", owner=alice,
                         slug="replayed")
    assert stored(done.study) == original
    assert any(row[-1] != "null" for row in original)  # judgments, not only blanks


def test_the_bundles_settings_and_readme_name_the_comparative_questions(bundle):
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        settings = json.loads(archive.read("settings.json"))
        readme = archive.read("README.md").decode()
    kinds = {q["key"]: (q["kind"], q.get("options")) for q in settings["questions"]}
    assert kinds["better"] == ("pairwise", {"ties": True, "strength": True})
    assert kinds["rank"] == ("ranking", {"ties": True})
    # two annotators × (the pair: both questions; the triple: the ranking only, a pairwise
    # question judges two outputs)
    assert "| `judgments.csv` | 6 |" in readme
