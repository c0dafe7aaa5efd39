"""The exports of comparative questions (issue 25, point 4): the judgments (CSV, JSONL, Parquet:
one row per current comparative answer, formulas neutralised, read back by the judgments import)
and the `comparison_scores` section of the results document, written from a hand-made run."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.urls import reverse
from django.utils import timezone

from analysis.models import AnalysisRun
from annotation.models import Answer
from annotation.responses_import import responses_import
from exports.comparisons import SCORE_COLUMNS
from exports.selectors import JUDGMENT_COLUMNS
from exports.services import WHATS, ExportError, export_open
from tests.comparative import comparative_study

pytestmark = pytest.mark.django_db

JUDGMENTS = (b"annotator,items,choice,strength,comment\n"
             b"ann1,=d1-d|d1-a,=d1-d,much,\"=cmd|' /C calc\"\n"
             b"ann1,d1-b|d1-a,tie,,\n"
             b"ann2,d1-a|=d1-d,=d1-d,slightly,\n")


@pytest.fixture
def study(alice):
    study = comparative_study(alice, slug="judged", scale=True)
    responses_import(study=study, data=JUDGMENTS, filename="j.csv", fmt="judgments")
    return study


def export_bytes(study, what: str, fmt: str) -> bytes:
    return b"".join(export_open(study=study, what=what, fmt=fmt).chunks)


def test_the_two_exports_come_in_three_formats():
    assert WHATS["judgments"] == WHATS["comparison_scores"] == ("csv", "jsonl", "parquet")


def test_the_csv_has_one_row_per_judgment_with_formulas_neutralised(study):
    text = export_bytes(study, "judgments", "csv").decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == JUDGMENT_COLUMNS
    body = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    assert [(r["annotator"], r["item"], r["question"], r["kind"], r["shown"], r["choice"],
             r["strength"], r["value"], r["left"], r["missing"]) for r in body] == [
        ("A1", "cmp-doc-1-1", "better", "pairwise", "'=d1-d|d1-a", "'=d1-d", "much", "0", "1",
         ""),
        ("A1", "cmp-doc-1-2", "better", "pairwise", "d1-b|d1-a", "tie", "", "0.5", "", ""),
        ("A2", "cmp-doc-1-1", "better", "pairwise", "d1-a|=d1-d", "'=d1-d", "slightly", "0",
         "0", ""),
    ]
    assert body[0]["comment"] == "'=cmd|' /C calc"
    assert "\n=" not in text and ",=" not in text  # no cell starts a formula


def test_the_jsonl_keeps_the_text_as_it_is(study):
    lines = [json.loads(line) for line in
             export_bytes(study, "judgments", "jsonl").decode().splitlines()]
    assert list(lines[0]) == list(JUDGMENT_COLUMNS)
    assert (lines[0]["shown"], lines[0]["choice"], lines[0]["left"], lines[0]["value"]) == (
        "=d1-d|d1-a", "=d1-d", True, 0.0)
    assert lines[1]["left"] is None and lines[2]["left"] is False


def test_the_parquet_has_its_schema_and_rows(study):
    table = pq.read_table(io.BytesIO(export_bytes(study, "judgments", "parquet")))
    assert table.column_names == list(JUDGMENT_COLUMNS)
    assert table.column("choice").to_pylist() == ["=d1-d", "tie", "=d1-d"]
    assert table.column("left").to_pylist() == [True, None, False]
    assert str(table.schema.field("received_at").type) == "timestamp[us, tz=UTC]"


def test_the_judgments_export_reads_back_into_another_study(study, alice):
    again = comparative_study(alice, slug="again", scale=True)
    summary = responses_import(study=again, data=export_bytes(study, "judgments", "csv"),
                               filename="judgments.csv", fmt="judgments")
    assert summary.answers == 3

    def judged(s):
        return sorted((a.response.participant.external_id if s is again else
                       f"A{a.response.participant.pseudonym_number}",
                       json.dumps(a.choice, sort_keys=True), a.value, a.comment)
                      for a in Answer.objects.filter(response__participant__study=s,
                                                     choice__isnull=False)
                      .select_related("response__participant"))

    assert judged(again) == judged(study)


def test_a_study_without_judgments_exports_a_header(alice, make_study):
    plain = make_study(alice, slug="plain")
    assert export_bytes(plain, "judgments", "csv").decode().splitlines() == [
        ",".join(JUDGMENT_COLUMNS)]


SCORES = [
    {"question": "better", "kind": "pairwise", "level": "system", "name": "=sys-D",
     "judgments": 3, "wins": 2, "losses": 0, "ties": 1, "score": 0.8333, "strength": 0.7,
     "strength_low": 0.1, "strength_high": 1.3, "rank": 1, "rank_low": 1, "rank_high": 2,
     "model": "davidson", "reason": ""},
    {"question": "better", "kind": "pairwise", "level": "system", "name": "sys-A",
     "judgments": 3, "wins": 0, "losses": 2, "ties": 1, "score": 0.1667, "strength": -0.7,
     "strength_low": None, "strength_high": None, "rank": 2, "rank_low": 1, "rank_high": 2,
     "model": "davidson", "reason": "too few judgments for an interval", "extra": [1, 2]},
]


@pytest.fixture
def scored(study):
    AnalysisRun.objects.create(study=study, status=AnalysisRun.Status.DONE,
                               finished_at=timezone.now(),
                               results={"schema": "concord.results/3",
                                        "comparison_scores": SCORES})
    return study


def test_the_scores_csv_holds_the_sections_records(scored):
    rows = list(csv.DictReader(io.StringIO(
        export_bytes(scored, "comparison_scores", "csv").decode())))
    assert list(rows[0]) == [*SCORE_COLUMNS, "extra"]
    assert rows[0]["name"] == "'=sys-D"  # neutralised
    assert (rows[1]["strength_low"], rows[1]["reason"], rows[1]["extra"]) == (
        "", "too few judgments for an interval", "[1, 2]")


def test_the_scores_jsonl_and_parquet(scored):
    lines = [json.loads(line) for line in
             export_bytes(scored, "comparison_scores", "jsonl").decode().splitlines()]
    assert lines == SCORES
    table = pq.read_table(io.BytesIO(export_bytes(scored, "comparison_scores", "parquet")))
    assert table.column_names == list(SCORE_COLUMNS)
    assert table.column("name").to_pylist() == ["=sys-D", "sys-A"]
    assert table.column("strength_low").to_pylist() == [0.1, None]
    assert table.column("rank").to_pylist() == [1, 2]


def test_the_scores_need_a_finished_run(study):
    with pytest.raises(ExportError, match="no completed analysis run"):
        export_open(study=study, what="comparison_scores", fmt="csv")


def test_the_download_page_streams_the_judgments(study, alice_client):
    page = alice_client.get(reverse("exports:download", args=[study.slug, "judgments", "csv"]))
    assert page.status_code == 200
    assert b"".join(page.streaming_content).startswith(b"annotator,item,question,kind")


def test_the_export_links_offer_the_judgments_and_the_scores(scored, alice, make_study):
    from django.template.loader import render_to_string

    html = render_to_string("exports/_links.html", {
        "study": scored, "document": {"comparison_scores": SCORES}})
    assert html.count('id="judgment-exports"') == 1
    assert reverse("exports:download", args=[scored.slug, "judgments", "parquet"]) in html
    assert reverse("exports:download", args=[scored.slug, "comparison_scores", "csv"]) in html
    plain = make_study(alice, slug="plain-links")
    html = render_to_string("exports/_links.html", {"study": plain, "document": {"x": 1}})
    assert "judgment-exports" not in html and "comparison-score-exports" not in html


def test_the_matrix_has_a_column_per_question_asked_about_each_item(study):
    header = export_bytes(study, "matrix", "csv").decode().splitlines()[0].split(",")
    scale = next(q.key for q in study.question_list if not q.is_comparative)
    assert f"d1-a:{scale}" in header and "d1-a:better" not in header
    assert "cmp-doc-1-1:better" in header and f"cmp-doc-1-1:{scale}" not in header
    rows = list(csv.DictReader(io.StringIO(export_bytes(study, "matrix", "csv").decode())))
    assert rows[0]["cmp-doc-1-1:better"] == "0"  # A1 chose =d1-d, the comparison's first
