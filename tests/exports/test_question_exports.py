"""Exports and imports of a study of several questions (SummEval's four, with "can't judge",
comments and revisions): the long export has a `question` column, the matrix `item:question`
headers, every revision is exported, `import_responses` reads both files back, and the bundle
round-trips: the same results per question in a fresh study."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Answer, Response
from annotation.services import responses_import
from core.problems import InputError
from exports.selectors import RESPONSE_COLUMNS, REVISION_COLUMNS
from exports.services import export_open
from studies.selectors import pseudonyms
from tests.analysis.test_questions import ITEMS, QUESTIONS, REVISED_MS, Summeval

pytestmark = pytest.mark.django_db
FORMULA = '=HYPERLINK("http://x","y")'


@pytest.fixture
def summeval(make_study, alice):
    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=ITEMS)
    seeded = Summeval(study)
    # One comment that a spreadsheet would run as a formula: neutralised in CSV, read back whole.
    Answer.objects.filter(response__participant=seeded.participants[1], response__is_current=True,
                          question__key="coherence", missing="").update(comment=FORMULA)
    return seeded


def export_bytes(study, what, fmt=None) -> bytes:
    return b"".join(export_open(study=study, what=what, fmt=fmt).chunks)


def read_csv(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode(), newline="")))


def analysed(study) -> dict:
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    return run.results


def names_of(seeded) -> dict[int, str]:
    return pseudonyms(study=seeded.study)


def current_answers(study) -> list[tuple]:
    """Every current answer as (pseudonym, item, presentation, question, value, missing, comment)."""
    names = pseudonyms(study=study)
    rows = Answer.objects.filter(response__participant__study=study, response__is_current=True)
    return sorted((names[p], i, n, q, v, m, c) for p, i, n, q, v, m, c in rows.values_list(
        "response__participant_id", "response__item__external_id", "response__presentation",
        "question__key", "value", "missing", "comment"))


def test_the_long_export_has_one_row_per_question_of_each_current_answer(summeval):
    rows = read_csv(export_bytes(summeval.study, "responses"))
    assert tuple(rows[0]) == RESPONSE_COLUMNS
    names = names_of(summeval)
    assert len(rows) == 6 * 8 * len(QUESTIONS)
    assert [r["question"] for r in rows[:4]] == list(QUESTIONS)  # questions in order
    items = {f"s{n}": n for n in range(8)}
    for r in rows:
        pk = next(pk for pk, name in names.items() if name == r["annotator"])
        expected = summeval.expected[r["question"]][pk][items[r["item"]]]
        if np.isnan(expected):
            assert (r["value"], r["missing"]) == ("", "cant_judge")
        else:
            assert (float(r["value"]), r["missing"]) == (expected, "")
        assert int(r["active_ms"]) == summeval.first_ms[(pk, items[r["item"]])]
    revised = [r for r in rows if r["revision"] == "2"]
    assert len(revised) == 2 * len(QUESTIONS)
    assert {r["annotator"] for r in revised} == {names[summeval.participants[0].pk],
                                                 names[summeval.participants[3].pk]}
    assert sum(r["comment"] == "not enough context" for r in rows) > 0
    assert "'" + FORMULA in {r["comment"] for r in rows}  # neutralised, never run


def test_every_revision_is_exported_with_its_number_time_and_values(summeval):
    rows = read_csv(export_bytes(summeval.study, "revisions"))
    assert tuple(rows[0]) == REVISION_COLUMNS
    assert len(rows) == (6 * 8 + 2) * len(QUESTIONS)
    first = summeval.participants[0]
    item = first.assignments.get(position=1).item.external_id
    name = names_of(summeval)[first.pk]
    mine = [r for r in rows if (r["annotator"], r["item"]) == (name, item)]
    assert [(r["revision"], r["current"]) for r in mine] == [("1", "0")] * 4 + [("2", "1")] * 4
    assert [r["active_ms"] for r in mine[4:]] == [str(REVISED_MS)] * 4
    assert mine[4:][QUESTIONS.index("fluency")]["missing"] == "cant_judge"
    assert [r["value"] for r in mine[4:]] == ["5", "5", "", "1"]
    assert mine[0]["submitted_at"] <= mine[4]["submitted_at"]
    jsonl = [json.loads(line) for line in
             export_bytes(summeval.study, "revisions", "jsonl").decode().splitlines()]
    assert len(jsonl) == len(rows) and jsonl[0]["current"] in (True, False)


def test_the_matrix_has_item_question_columns_split_on_the_last_colon(summeval):
    rows = list(csv.reader(io.StringIO(export_bytes(summeval.study, "matrix").decode())))
    header = rows[0]
    assert header[:5] == ["annotator", "s0:coherence", "s0:consistency", "s0:fluency",
                          "s0:relevance"]
    assert len(header) == 1 + 8 * len(QUESTIONS)
    names = names_of(summeval)
    for row in rows[1:]:
        pk = next(pk for pk, name in names.items() if name == row[0])
        for column, cell in zip(header[1:], row[1:], strict=True):
            item, _, question = column.rpartition(":")
            expected = summeval.expected[question][pk][int(item[1:])]
            assert cell == ("" if np.isnan(expected) else str(int(expected)))


def test_the_matrix_imports_back_question_by_question(summeval, make_study, alice, tmp_path):
    copy = make_study(alice, slug="copy", preset="summeval-4x5", items=ITEMS)
    matrix = tmp_path / "matrix.csv"
    matrix.write_bytes(export_bytes(summeval.study, "matrix"))
    call_command("import_responses", "copy", str(matrix), "--format", "wide",
                 "--annotator-column", "annotator", stdout=io.StringIO())
    original = {(a, i, n, q, v) for a, i, n, q, v, *_ in current_answers(summeval.study)
                if v is not None}
    imported = current_answers(copy)
    assert {(a, i, n, q, v) for a, i, n, q, v, *_ in imported if v is not None} == original
    # the matrix carries values only: "can't judge" comes back as "not answered"
    assert {m for *_, v, m, _ in imported if v is None} == {"skipped"}


def test_the_bundle_round_trips_the_results_of_every_question(summeval, make_study, alice):
    document = analysed(summeval.study)
    with zipfile.ZipFile(io.BytesIO(export_bytes(summeval.study, "bundle"))) as archive:
        responses = archive.read("responses.csv")
        items = archive.read("items.csv").decode()
        settings = json.loads(archive.read("settings.json"))
        assert len(read_csv(archive.read("revisions.csv"))) == (6 * 8 + 2) * len(QUESTIONS)
    assert [q["key"] for q in settings["questions"]] == list(QUESTIONS)
    copy = make_study(alice, slug="copy", preset="summeval-4x5", items=items)
    summary = responses_import(study=copy, data=responses, filename="responses.csv", fmt="long")
    assert (summary.answers, summary.blanks, len(summary.annotators)) == (6 * 8, 0, 6)
    assert current_answers(copy) == current_answers(summeval.study)  # comments, reasons too
    again = analysed(copy)
    for key in ("generated_at", "study"):
        document.pop(key), again.pop(key)
    assert again == document
    counts = {q["key"]: q["counts"]["cant_judge"] for q in again["questions"]}
    assert counts == summeval.cant_judge and sum(counts.values()) > 0


def rejected(study, data: bytes, **options) -> InputError:
    before = (Response.objects.count(), Answer.objects.count())
    with pytest.raises(InputError) as caught:
        responses_import(study=study, data=data, filename="answers.csv", **options)
    assert (Response.objects.count(), Answer.objects.count()) == before
    return caught.value


def test_an_unknown_question_is_named_with_its_file_line_and_column(summeval):
    study = summeval.study
    error = rejected(study, b"annotator,item,question,value\nx,s1,coherence,3\nx,s1,clarity,4\n"
                            b"x,s2,,4\n", fmt="long")
    message = error.render()
    assert ("answers.csv:3: column question: 'clarity' is not a question of this study (its "
            "questions: coherence, consistency, fluency, relevance)") in message
    assert "answers.csv:4: column question: empty question" in message
    error = rejected(study, b"who,s1:coherence,s1:clarity,s2\nx,3,4,5\n", fmt="wide",
                     annotator_column="who")
    message = error.render()
    assert "answers.csv:1: column 3: column 's1:clarity': 'clarity' is not a question" in message
    assert "answers.csv:1: column 4: column 's2' names an item but no question" in message
    error = rejected(study, b"annotator,item,value\nx,s1,3\n", fmt="long")
    assert "the required column 'question' is missing" in error.render()


def test_a_long_file_checks_reasons_and_duplicate_answers(summeval):
    error = rejected(summeval.study, (
        b"annotator,item,question,value,missing,position\n"
        b"x,s1,coherence,3,cant_judge,0\n"
        b"x,s1,fluency,,maybe,0\n"
        b"x,s1,relevance,2,,0\n"
        b"x,s1,relevance,4,,0\n"), fmt="long")
    message = error.render()
    assert "answers.csv:2: column missing: a value and a missing reason (cant_judge)" in message
    assert "answers.csv:3: column missing: 'maybe' is not a reason for a missing value" in message
    assert ("answers.csv:5: duplicate row: annotator 'x' already has item 's1' at position 0 "
            "(question 'relevance') on line 4") in message


def test_a_long_file_of_several_questions_imports_one_response_per_presentation(summeval,
                                                                                make_study,
                                                                                alice):
    study = make_study(alice, slug="fresh", preset="summeval-4x5", items=ITEMS)
    summary = responses_import(study=study, data=(
        b"annotator,item,question,value,missing,comment,position\n"
        b"x,s1,coherence,3,,,0\n"
        b"x,s1,fluency,,cant_judge,too short,0\n"
        b"x,s2,coherence,,,,1\n"  # a blank presentation: nothing stored
        b"x,s1,relevance,5,,,4\n"), fmt="long", filename="f.csv")  # s1 again: its repeat
    assert (summary.answers, summary.blanks, summary.duplicates) == (2, 1, 1)
    stored = current_answers(study)
    assert stored[:4] == [("A1", "s1", 1, "coherence", 3.0, "", ""),
                          ("A1", "s1", 1, "consistency", None, "skipped", ""),
                          ("A1", "s1", 1, "fluency", None, "cant_judge", "too short"),
                          ("A1", "s1", 1, "relevance", None, "skipped", "")]
    assert stored[4:] == [("A1", "s1", 2, q, 5.0 if q == "relevance" else None,
                           "" if q == "relevance" else "skipped", "") for q in QUESTIONS]


def test_the_command_reads_the_exported_long_file(summeval, make_study, alice, tmp_path):
    make_study(alice, slug="copy", preset="summeval-4x5", items=ITEMS)
    path = tmp_path / "responses.csv"
    path.write_bytes(export_bytes(summeval.study, "responses"))
    out = io.StringIO()
    call_command("import_responses", "copy", str(path), "--format", "long", stdout=out)
    assert "Imported 48 answers of 6 annotators" in out.getvalue()
    with pytest.raises(CommandError, match="already imported"):
        call_command("import_responses", "copy", str(path), "--format", "long",
                     stdout=io.StringIO())


def test_the_upload_page_names_the_questions_and_imports_an_item_question_file(
        summeval, make_study, alice, alice_client, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.IMPORTS_DIR = tmp_path / "imports"
    study = make_study(alice, slug="browser", preset="summeval-4x5", items=ITEMS)
    url = f"/studies/{study.slug}/responses/import/"
    page = alice_client.get(url)
    assert b'id="import-questions"' in page.content and b"<code class=\"term\">fluency</code>" in page.content

    def post(data: bytes):
        return alice_client.post(url, {"file": SimpleUploadedFile("wide.csv", data),
                                       "format": "wide", "annotator_column": "who"})

    bad = post(b"who,s1:coherence,s1:clarity\nx,3,4\n")
    assert bad.status_code == 400 and b"&#x27;clarity&#x27; is not a question" in bad.content
    assert not Response.objects.filter(participant__study=study).exists()
    good = post(b"who,s1:coherence,s1:fluency,s2:coherence\nx,3,,\ny,4,5,2\n")
    assert good.status_code == 302
    assert alice_client.post(good["Location"] + "confirm/").status_code == 302
    assert current_answers(study) == sorted(
        [("A1", "s1", 1, q, 3.0 if q == "coherence" else None,
          "" if q == "coherence" else "skipped", "") for q in QUESTIONS]
        + [("A2", "s1", 1, q, {"coherence": 4.0, "fluency": 5.0}.get(q),
            "" if q in ("coherence", "fluency") else "skipped", "") for q in QUESTIONS]
        + [("A2", "s2", 1, q, 2.0 if q == "coherence" else None,
            "" if q == "coherence" else "skipped", "") for q in QUESTIONS])
