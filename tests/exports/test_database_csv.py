"""The responses CSV built by PostgreSQL (issue 26, point 4): byte for byte the file that
`core.formats.csv_chunks` writes from `exports.selectors.response_rows`, on studies whose cells
look like formulas, hold quotes, commas, line breaks, Unicode and Unicode digits, with revisions,
blanks, several questions, comparative judgments and items that name systems."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from annotation.models import Answer, Response
from annotation.responses_import import responses_import
from core.formats import csv_chunks
from exports.selectors import (
    RESPONSE_COLUMNS,
    response_columns,
    response_csv_plan,
    response_rows,
)
from exports.services import export_open
from studies.models import Item, Participant
from studies.services import items_import, study_create
from tests.answers import store
from tests.comparative import comparative_study
from tests.conftest import require

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    # the database writes the CSV on PostgreSQL only: a developer's SQLite run skips these,
    # CI (PostgreSQL) never does
    require(connection.vendor == "postgresql", "the database writes the CSV on PostgreSQL only")

ITEMS = (
    'id,text,control,system,source\n'
    'i1,"=HYPERLINK(""http://x"",""y"")",0,=cmd,@src\n'
    "'=1,plain,0,sys,\n"
    '"a,b",comma,1,"s,1","q""uote"\n'
    "''=2,a quote before a formula,0,,\n"
    'nl,newline,0,,\n'
    "-٣,an Arabic-Indic digit,0,+1,-1\n"
    "-1,a number,0,Ünïcödé ✓,'@home\n"
    "-2+3,a formula,0,\t tab,\n"
)
SCALE = {"values": [-2, -1, 0, 1, 2], "labels": {"-2": "very bad", "2": "very good"},
         "reductions": {}}
COMMENTS = ("", "=SUM(A1)", 'she said "no", twice', "two\nlines", "\rreturn", "'-5",
            "ça va ✓", "-0.5e3", "\t=1")
VALUES = (-1.0, None, 2.0, 0.1, 123456.789, 2.5e-7, -0.0, 1.0, 1e15 - 1)


def python_csv(study) -> bytes:
    """The responses CSV as the Python writer makes it."""
    columns = response_columns(study=study)
    return b"".join(csv_chunks(columns, response_rows(
        study=study, labels=len(columns) > len(RESPONSE_COLUMNS))))


def exported(study) -> bytes:
    return b"".join(export_open(study=study, what="responses", fmt="csv").chunks)


@pytest.fixture
def hostile(alice):
    study = study_create(owner=alice, slug="hostile-db", title="Hostile", scale=SCALE)
    items_import(study=study, data=ITEMS.encode(), filename="items.csv")
    # An id no import accepts, but a CSV cell all the same.
    Item.objects.filter(study=study, external_id="nl").update(external_id="line\nbreak")
    items = list(Item.objects.filter(study=study).order_by("position"))
    moments = (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
               datetime(2026, 1, 2, 3, 4, 5, 120, tzinfo=UTC))
    for n, name in enumerate(("zed", "=amy", "bo")):
        person = Participant.objects.create(study=study, source=Participant.Source.IMPORT,
                                            external_id=name)
        for k, item in enumerate(items):
            value = VALUES[(n + k) % len(VALUES)]
            response = store(person, item, value, presentation=1,
                             position=None if k == 3 else k, active_ms=None if k == 2 else 900 + k,
                             source=Response.Source.IMPORT)
            Answer.objects.filter(response=response).update(
                comment=COMMENTS[(n + k) % len(COMMENTS)])
            if k == 1:  # revised: revision 1 kept, revision 2 current, its own receipt time
                Response.objects.filter(pk=response.pk).update(is_current=False)
                store(person, item, 2.0, presentation=1, position=k, active_ms=5, revision=2,
                      source=Response.Source.IMPORT)
        store(person, items[0], -2.0, presentation=2, position=len(items),
              source=Response.Source.IMPORT)  # a repeat
    for response in Response.objects.filter(participant__study=study):  # with and without µs
        Response.objects.filter(pk=response.pk).update(received_at=moments[response.pk % 2])
    return study


def test_the_database_writes_the_bytes_the_python_writer_writes(hostile):
    assert response_csv_plan(study=hostile) == (True, True)  # written by PostgreSQL, labelled
    data = exported(hostile)
    assert data == python_csv(hostile)
    text = data.decode()
    assert text.startswith(",".join(response_columns(study=hostile)) + "\r\n")
    assert "'=SUM(A1)" in text and ",'=1," in text and ",-1," in text and ",'-2+3," in text
    assert ",''=2," in text and ",-٣," in text and ",'=cmd,'@src" in text and '"a,b"' in text
    assert '"two\nlines"' in text and "999999999999999" in text and "2.5e-07" in text


def test_a_value_the_database_would_print_otherwise_is_written_by_python(hostile):
    Answer.objects.filter(response__participant__study=hostile, value=2.0).update(
        value=1e15 + 0.5)
    assert response_csv_plan(study=hostile) == (False, True)
    data = exported(hostile)
    assert b",1000000000000000.5," in data and data == python_csv(hostile)


def test_a_non_finite_value_fails_the_export_as_the_python_writer_does(hostile):
    Answer.objects.filter(response__participant__study=hostile).update(value=float("nan"))
    for make in (exported, python_csv):
        with pytest.raises(ValueError, match="not a finite number"):
            make(hostile)


def test_several_questions_and_comparative_judgments(alice):
    study = comparative_study(alice, slug="judged-db", scale=True)
    responses_import(study=study, fmt="judgments", filename="j.csv", data=(
        b"annotator,items,choice,strength,comment\n"
        b"ann1,=d1-d|d1-a,=d1-d,much,\"=cmd|' /C calc\"\n"
        b"ann1,d1-b|d1-a,tie,,\n"
        b"ann2,d1-a|=d1-d,=d1-d,slightly,\n"))
    data = exported(study)
    assert data.count(b"\r\n") > 3
    assert data == python_csv(study)


def test_progress_is_reported_while_the_database_writes(hostile, monkeypatch):
    monkeypatch.setattr("exports.services.PROGRESS_EVERY", 4)
    seen: list[int] = []
    export = export_open(study=hostile, what="responses", fmt="csv", progress=seen.append)
    data = b"".join(export.chunks)
    assert export.rows == data.count(b"\r\n") - 1 == 3 * 9
    assert seen and seen == sorted(seen) and max(seen) <= export.rows

