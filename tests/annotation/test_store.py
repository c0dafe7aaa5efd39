"""One owner of answer rows: nothing outside `annotation` creates a response or an answer (a
replayed bundle and the demo store theirs through `annotation.store.responses_store`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from annotation.models import Answer, Response
from annotation.store import AnnotatorRow, ResponseRow, responses_store
from core.responses import Cell
from studies.models import Participant

ROOT = Path(__file__).resolve().parents[2]
OWNER = "annotation"
MODELS = {"Response", "Answer"}
WRITES = {"create", "bulk_create", "get_or_create", "update_or_create"}
TABLES = ("annotation_response", "annotation_answer")


def writes(source: str) -> list[str]:
    """Where a module's source creates a Response or an Answer: the model called, a write of
    its manager, or SQL inserting into its table."""
    tree = ast.parse(source)
    names: set[str] = set()  # local names of annotation.models.Response / Answer
    modules: set[str] = set()  # local names of the module annotation.models
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("annotation.models", "models") \
                and (node.module != "models" or node.level == 0):
            names |= {a.asname or a.name for a in node.names if a.name in MODELS}
        elif isinstance(node, ast.ImportFrom) and node.module == "annotation":
            modules |= {a.asname or a.name for a in node.names if a.name == "models"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "annotation.models"}

    def model(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in names
        return (isinstance(expr, ast.Attribute) and expr.attr in MODELS
                and ast.unparse(expr.value) in modules)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if model(func):
                found.append(f"line {node.lineno}: {ast.unparse(func)}(…)")
            elif (isinstance(func, ast.Attribute) and func.attr in WRITES
                  and isinstance(func.value, ast.Attribute) and func.value.attr == "objects"
                  and model(func.value.value)):
                found.append(f"line {node.lineno}: {ast.unparse(func)}(…)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = " ".join(node.value.lower().split())
            if any(f"insert into {table}" in text for table in TABLES):
                found.append(f"line {node.lineno}: SQL inserting into an answer table")
    return found


def app_modules() -> list[Path]:
    """Every module of the project's packages but `annotation`'s (tests, bench and migrations
    aside)."""
    packages = [p.parent for p in ROOT.glob("*/__init__.py")
                if p.parent.name not in {OWNER, "tests", "bench"}]
    return sorted(path for package in packages for path in package.rglob("*.py")
                  if "migrations" not in path.parts)


def test_it_finds_nothing_outside_annotation_that_creates_a_response_or_an_answer():
    modules = app_modules()
    assert any(path.parts[-2:] == ("imports", "bundles.py") for path in modules)
    assert any(path.parts[-2:] == ("demo", "services.py") for path in modules)
    found = {str(path.relative_to(ROOT)): where for path in modules
             if (where := writes(path.read_text()))}
    assert found == {}


@pytest.mark.parametrize("source", [
    "from annotation.models import Response\nResponse(item_id=1)",
    "from annotation.models import Answer as A\nA.objects.bulk_create([])",
    "from annotation import models\nmodels.Response.objects.create(item_id=1)",
    "import annotation.models\nannotation.models.Answer(value=1)",
    "SQL = 'INSERT INTO annotation_answer (response_id) VALUES (%s)'",
])
def test_the_check_catches_every_way_of_creating_one(source):
    assert writes(source)


def test_the_check_leaves_the_api_response_and_reads_alone():
    assert writes("from rest_framework.response import Response\nResponse({})") == []
    assert writes("from annotation.models import Response\n"
                  "Response.objects.filter(pk=1).count()") == []


@pytest.mark.django_db
def test_it_stores_a_new_annotator_and_an_invited_one_with_checks_and_pseudonyms(
        make_study, alice):
    probe = make_study(alice, slug="probe", items="", open=False)
    q = probe.primary_question.key
    study = make_study(alice, slug="stored", items=(
        f"id,text,role,gold:{q},tolerance:{q}\ni1,One,main,,\ni2,Two,main,,\nc1,Check,check,2,0\n"))
    study.check_stop_after = 1
    study.save(update_fields=["check_stop_after"])
    key = study.primary_question.key
    items = dict(study.items.values_list("external_id", "pk"))
    invited = Participant.objects.create(study=study, n_assigned=2)

    def row(annotator: int, item: str, value: float | None, **more) -> ResponseRow:
        return ResponseRow(annotator=annotator, item_id=items[item], presentation=1,
                           position=None, cells={key: Cell(value)} if value is not None else {},
                           **more)

    stored = responses_store(
        study=study, label="from a test", consented=True, checks_scored=True,
        annotators=[AnnotatorRow(external_id="x", meta={"lang": "fr"}, presented=3),
                    AnnotatorRow(participant=invited)],
        responses=[row(0, "i1", 3.0), row(0, "i2", None), row(0, "c1", 5.0),
                   row(1, "i1", 4.0, current=False), row(1, "i1", 5.0, revision=2)])
    assert (stored.participants, stored.presentations, stored.responses,
            stored.answers) == (2, 4, 5, 5)
    new = Participant.objects.get(study=study, external_id="x")
    invited.refresh_from_db()
    # the new annotator answered the check wrong (5, not 2): stopped, so not complete
    assert (new.source, new.label, new.meta, new.n_assigned, new.n_answered) == \
        (Participant.Source.IMPORT, "from a test", {"lang": "fr"}, 3, 3)
    assert (new.checks_answered, new.checks_failed) == (1, 1)
    assert new.stopped_at is not None and new.completed_at is None
    assert (invited.n_assigned, invited.n_answered, invited.checks_answered) == (2, 1, 0)
    assert invited.consented_at is not None and invited.completed_at is not None
    assert (new.pseudonym_number, invited.pseudonym_number) == (1, 2)
    # a question the response leaves out is stored as not answered (skipped)
    blank = Answer.objects.get(response__participant=new, response__item__external_id="i2")
    assert (blank.value, blank.missing) == (None, Answer.Missing.SKIPPED)
    assert list(Response.objects.filter(participant=invited).values_list(
        "revision", flat=True)) == [1, 2]
