"""Exports: every export and format, round trips through the importers, formula injection,
the command, the download views (owner-scoped, streamed, background jobs) and their query counts."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.models import AnalysisRun
from analysis.selectors import full_document
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Answer, Response
from annotation.services import responses_import
from exports.models import ExportJob
from exports.selectors import RESPONSE_COLUMNS, export_job_file
from exports.services import ExportError, export_job_create, export_job_execute, export_open
from exports.tasks import run_export
from studies.models import Item, Participant
from studies.selectors import pseudonyms as stored_pseudonyms
from studies.services import items_import, study_create
from tests.answers import store, values
from tests.workers import require_worker_services, start_worker, stop_worker, wait_for

pytestmark = pytest.mark.django_db

HOSTILE_ITEMS = (
    'id,text,control,metric:bleu,feature:border,meta:source\n'
    'i1,"=HYPERLINK(""http://x"",""y"")",0,0.5,1,=cmd\n'
    'i2,@SUM(1),0,0.25,-2,wiki\n'
    "i3,'-2+3,0,0.75,0,news\n"
    'i4,"\'\tx",0,,,\n'
    "i5,Ünïcödé ✓ 'quoted,1,0.9,1,'@home\n"
)
SCALE = {"values": [-2, -1, 0, 1, 2], "labels": {"-2": "very bad", "2": "very good"},
         "reductions": {"sign": {"-2": -1, "-1": -1, "0": 0, "1": 1, "2": 1}}}


def export_bytes(study, what, fmt=None) -> bytes:
    return b"".join(export_open(study=study, what=what, fmt=fmt).chunks)


def add_answers(study, answers):
    """Store answers [(annotator id, item id, presentation, position, value, active_ms)]."""
    items = dict(study.items.values_list("external_id", "pk"))
    people = {}
    for external, item, presentation, position, value, active_ms in answers:
        if external not in people:
            people[external] = Participant.objects.create(
                study=study, source=Participant.Source.IMPORT, external_id=external)
        store(people[external], Item(pk=items[item]), value, presentation=presentation,
              position=position, active_ms=active_ms, source=Response.Source.IMPORT)
    return people


@pytest.fixture
def hostile(alice):
    """A study on a -2..2 scale whose item texts are spreadsheet formulas."""
    study = study_create(owner=alice, slug="hostile", title="Hostile", scale=SCALE)
    items_import(study=study, data=HOSTILE_ITEMS.encode(), filename="items.csv")
    add_answers(study, [
        ("zed@example.org", "i1", 1, 0, -1.0, 1200),
        ("zed@example.org", "i2", 1, 1, None, None),  # a blank answer
        ("zed@example.org", "i1", 2, 2, -2.0, 900),  # the repeat of i1
        ("amy@example.org", "i3", 1, 0, 2.0, 3000),
        ("amy@example.org", "i5", 1, 1, 0.0, None),
    ])
    return study


@pytest.fixture
def annotated(alice, make_study):
    """A 0–7 study: 4 annotators, 5 items, duplicates, a blank and a control item."""
    study = make_study(alice, slug="annotated")
    answers = []
    for a, b in itertools.product(range(4), range(5)):
        answers.append((f"ann{a}", f"i{b + 1}", 1, b, float((a + b) % 8), 1000 * (b + 1)))
    answers += [("ann0", "i2", 2, 5, 3.0, 800), ("ann2", "i4", 2, 5, 6.0, None)]
    add_answers(study, answers)
    Answer.objects.filter(response__participant__external_id="ann3",
                          response__item__external_id="i5").update(value=None, missing="skipped")
    return study


def analysed(study):
    analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    return study


def stored(study) -> list[tuple]:
    """Every stored answer as (pseudonym, item id, presentation, value)."""
    names = stored_pseudonyms(study=study)
    return sorted((names[p], i, n, v) for p, i, n, v in values(Response.objects.filter(
        participant__study=study), "participant_id", "item__external_id", "presentation"))


def read_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline="")))


# --- responses ----------------------------------------------------------------------------------


def test_it_exports_responses_in_long_format(hostile):
    rows = read_csv(export_bytes(hostile, "responses"))
    assert tuple(rows[0]) == RESPONSE_COLUMNS
    body = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert [(r["annotator"], r["item"], r["presentation"], r["position"], r["duplicate"],
             r["value"], r["active_ms"], r["source"], r["control"]) for r in body] == [
        ("A1", "i1", "1", "0", "0", "-1", "1200", "import", "0"),
        ("A1", "i2", "1", "1", "0", "", "", "import", "0"),
        ("A1", "i1", "2", "2", "1", "-2", "900", "import", "0"),
        ("A2", "i3", "1", "0", "0", "2", "3000", "import", "0"),
        ("A2", "i5", "1", "1", "0", "0", "", "import", "1"),
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00", r["submitted_at"]) for r in body)


def test_it_orders_annotators_as_their_pseudonyms(alice, make_study):
    study = make_study(alice, slug="order")
    late, early = (Participant.objects.create(study=study, source="import", external_id=x)
                   for x in ("late", "early"))
    item = study.items.get(external_id="i1")
    store(early, item, 1)  # first response: A1
    store(late, item, 2)
    rows = read_csv(export_bytes(study, "responses"))
    assert [(r[0], r[5]) for r in rows[1:]] == [("A1", "1"), ("A2", "2")]


def test_it_never_exports_tokens_or_real_annotator_ids(hostile):
    secrets = list(Participant.objects.filter(study=hostile).values_list("token", "external_id"))
    for what, fmt in (("responses", "csv"), ("responses", "jsonl"), ("responses", "parquet"),
                      ("matrix", "csv"), ("items", "csv"), ("items", "jsonl")):
        data = export_bytes(hostile, what, fmt)
        for token, external in secrets:
            assert token.encode() not in data and external.encode() not in data, (what, fmt)
    analysed(hostile)
    bundle = export_bytes(hostile, "bundle")
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        for name in archive.namelist():
            content = archive.read(name)
            for token, external in secrets:
                assert token.encode() not in content and external.encode() not in content, name


def test_jsonl_responses_round_trip_exactly(hostile):
    lines = export_bytes(hostile, "responses", "jsonl").decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[1] == {**records[1], "value": None, "active_ms": None, "duplicate": False}
    assert records[2]["duplicate"] is True and records[2]["value"] == -2.0
    assert [(r["annotator"], r["item"], r["presentation"], r["value"]) for r in records] == [
        ("A1", "i1", 1, -1.0), ("A1", "i2", 1, None), ("A1", "i1", 2, -2.0), ("A2", "i3", 1, 2.0),
        ("A2", "i5", 1, 0.0)]
    assert records[4]["control"] is True


def test_parquet_responses_round_trip_exactly(hostile):
    data = export_bytes(hostile, "responses", "parquet")
    jsonl = [json.loads(line) for line in
             export_bytes(hostile, "responses", "jsonl").decode().splitlines()]
    table = pq.read_table(io.BytesIO(data))
    assert table.schema.names == list(RESPONSE_COLUMNS)
    rows = table.to_pylist()
    for row in rows:
        row["submitted_at"] = row["submitted_at"].isoformat()
    assert rows == jsonl


ITEM_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1,
                    max_size=20).filter(lambda t: t.strip())
# Item ids never hold control, format or line-separator characters (they are refused on
# import: a U+2028 in an id would split every later export's line).
ITEM_ID = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Zl", "Zp", "Cs")),
                  min_size=1, max_size=12).map(str.strip).filter(bool)
slugs = itertools.count()


@given(st.lists(st.tuples(ITEM_ID, ITEM_TEXT, st.booleans(),
                          st.none() | st.floats(-1e6, 1e6, allow_nan=False),
                          st.none() | ITEM_TEXT),
                min_size=1, max_size=6, unique_by=lambda r: r[0]),
       st.sampled_from(["csv", "jsonl"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_items_round_trip_through_import_items(alice, rows, fmt):
    source = study_create(owner=alice, slug=f"src-{next(slugs)}", title="S", scale=SCALE)
    Item.objects.bulk_create(Item(
        study=source, external_id=external, position=n, text=text, is_control=control,
        metrics={} if metric is None else {"m": metric}, features={"f": float(n)},
        meta={} if meta is None else {"note": meta}) for n, (external, text, control, metric, meta)
        in enumerate(rows))
    target = study_create(owner=alice, slug=f"dst-{next(slugs)}", title="T", scale=SCALE)
    items_import(study=target, data=export_bytes(source, "items", fmt), filename=f"items.{fmt}")
    assert snapshot(target) == snapshot(source)


def snapshot(study) -> list[tuple]:
    return list(study.items.order_by("position").values_list(
        "external_id", "text", "text_a", "text_b", "is_control", "metrics", "features", "meta"))


def test_hostile_items_round_trip_through_the_import_items_command(hostile, alice, tmp_path):
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"items.{fmt}"
        call_command("export", "hostile", "--what", "items", "--format", fmt, "--output", str(out),
                     stderr=io.StringIO())
        target = study_create(owner=alice, slug=f"copy-{fmt}", title="C", scale=SCALE)
        call_command("import_items", target.slug, str(out), stdout=io.StringIO())
        assert snapshot(target) == snapshot(hostile), fmt


def test_pair_items_round_trip_with_computed_and_imported_sentiment(alice):
    data = (b"id,text_a,text_b,control,meta:sentiment_a,meta:sentiment_b\n"
            b"p1,A happy cat.,A sad cat.,0,,\n"
            b"p2,=1+1,-rain,1,0.5,-0.25\n")
    source = study_create(owner=alice, slug="pairs", title="P", preset="similarity-1-5")
    items_import(study=source, data=data, filename="pairs.csv")
    assert source.items.get(external_id="p1").meta["sentiment_source"] == "vader"
    header = read_csv(export_bytes(source, "items"))[0]
    assert "meta:sentiment_source" not in header
    for fmt in ("csv", "jsonl"):
        target = study_create(owner=alice, slug=f"pairs-{fmt}", title="P", preset="similarity-1-5")
        items_import(study=target, data=export_bytes(source, "items", fmt), filename=f"x.{fmt}")
        assert snapshot(target) == snapshot(source), fmt


# --- formula injection end to end ---------------------------------------------------------------


def test_csv_exports_neutralise_formulas_and_keep_numbers(hostile):
    items = read_csv(export_bytes(hostile, "items"))
    texts = {row[0]: row[1] for row in items[1:]}
    assert texts == {"i1": '\'=HYPERLINK("http://x","y")', "i2": "'@SUM(1)", "i3": "'-2+3",
                     "i4": "'\tx", "i5": "Ünïcödé ✓ 'quoted"}
    meta = {row[0]: row[-1] for row in items[1:]}
    assert meta["i1"] == "'=cmd" and meta["i5"] == "'@home"
    assert {row[0]: row[4] for row in items[1:]}["i2"] == "-2"  # a number, not neutralised
    raw = export_bytes(hostile, "responses")
    assert b"\r\nA1,i1,1,0,0,-1,1200," in raw  # the value -1 is a bare number
    for what in ("responses", "matrix", "items"):
        for row in read_csv(export_bytes(hostile, what)):
            for cell in row:
                assert cell[:1] not in ("=", "+", "@", "\t", "\r", "\0") and (
                    not cell.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", cell)), (what, cell)


# --- the matrix ---------------------------------------------------------------------------------


def test_it_exports_the_annotator_by_item_matrix(annotated):
    rows = read_csv(export_bytes(annotated, "matrix"))
    assert rows[0] == ["annotator", "i1", "i2", "i3", "i4", "i5", "i2", "i4"]
    assert rows[1] == ["A1", "0", "1", "2", "3", "4", "3", ""]
    assert rows[3] == ["A3", "2", "3", "4", "5", "6", "", "6"]
    assert rows[4][5] == ""  # a blank answer
    assert len(rows) == 5


def test_the_matrix_imports_back_with_import_responses(annotated, alice, make_study, tmp_path):
    items = tmp_path / "items.csv"
    items.write_bytes(export_bytes(annotated, "items"))
    copy = make_study(alice, slug="copy", items=items.read_text())
    matrix = tmp_path / "matrix.csv"
    matrix.write_bytes(export_bytes(annotated, "matrix"))
    call_command("import_responses", "copy", str(matrix), "--format", "wide",
                 "--annotator-column", "annotator", stdout=io.StringIO())
    answered = [row for row in stored(annotated) if row[3] is not None]
    assert stored(copy) == answered  # blanks are not stored by import_responses


# --- results and the bundle ---------------------------------------------------------------------


def test_the_results_export_needs_a_completed_run(annotated):
    with pytest.raises(ExportError, match="no completed analysis run"):
        export_open(study=annotated, what="results")
    analysed(annotated)
    document = json.loads(export_bytes(annotated, "results"))
    assert document["schema"] == "concord.results/3"


def test_the_labels_export_writes_each_items_aggregated_label_from_the_results(annotated):
    with pytest.raises(ExportError, match="no completed analysis run"):
        export_open(study=annotated, what="labels")
    analysed(annotated)
    document = full_document(document=json.loads(export_bytes(annotated, "results")))
    rows = read_csv(export_bytes(annotated, "labels"))
    assert rows[0] == ["item", "question", "scale", "method", "label", "probability", "entropy",
                       "n_answers"]
    scales = [s["name"] for s in document["scales"]]
    assert len(rows) - 1 == len(document["item_labels"]) == 5 * len(scales) * 2
    for row, record in zip(rows[1:], document["item_labels"], strict=True):
        assert row[:4] == [record["item"], record["question"], record["scale"], record["method"]]
        assert float(row[4]) == record["label"] and float(row[5]) == record["probability"]
        assert int(row[7]) == record["n"]
    lines = export_bytes(annotated, "labels", "jsonl").decode().splitlines()
    assert [json.loads(line)["label"] for line in lines] == [r["label"]
                                                            for r in document["item_labels"]]


def test_the_labels_export_neutralises_a_formula_in_any_text_cell(annotated, monkeypatch):
    from exports import services

    document = {"item_labels": [{"question": "=q", "scale": "raw", "method": "mace",
                                 "item": "=HYPERLINK(1)", "label": 2.0, "probability": 0.9,
                                 "entropy": 0.1, "n": 3}]}
    monkeypatch.setattr(services, "_results_document", lambda study: document)
    rows = read_csv(export_bytes(annotated, "labels"))
    assert rows[1] == ["'=HYPERLINK(1)", "'=q", "raw", "mace", "2", "0.9", "0.1", "3"]


def test_the_bundle_holds_data_settings_results_version_and_readme(annotated):
    analysed(annotated)
    data = export_bytes(annotated, "bundle")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        names = archive.namelist()
        assert sorted(names) == sorted(["responses.csv", "revisions.csv", "matrix.csv",
                                        "items.csv", "results.json", "settings.json", "VERSION",
                                        "definition.json", "README.md", "labels.csv",
                                        "item_gaps.csv", "participants.csv"])
        definition = json.loads(archive.read("definition.json"))
        assert archive.read("responses.csv") == export_bytes(annotated, "responses")
        assert archive.read("revisions.csv") == export_bytes(annotated, "revisions")
        assert archive.read("matrix.csv") == export_bytes(annotated, "matrix")
        assert archive.read("items.csv") == export_bytes(annotated, "items")
        assert json.loads(archive.read("results.json")) == json.loads(
            export_bytes(annotated, "results"))
        meta = json.loads(archive.read("settings.json"))
        readme = archive.read("README.md").decode()
        version = archive.read("VERSION").decode()
    assert meta["analysis"]["level"] == "ordinal" and meta["scale"]["values"] == list(range(8))
    assert meta["code_version"]["results"] in version
    # the definition create_study reads, with the settings of the run that made results.json
    assert definition["slug"] == annotated.slug
    assert definition["analysis"] == AnalysisRun.objects.filter(study=annotated).latest(
        "pk").settings
    assert "| `responses.csv` | 22 |" in readme and "| `matrix.csv` | 4 |" in readme
    assert "| `revisions.csv` | 22 |" in readme and "last revision" in readme
    assert [q["key"] for q in meta["questions"]] == [annotated.primary_question.key]
    assert "| `items.csv` | 5 |" in readme
    assert "| 7 | no errors |" in readme and "`gravity` | 0, 1, 2 → 0; 3, 4, 5, 6 → 1; 7 → 2" in readme
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "error_weights",
                    "heuristics", "correlations", "noise"):
        assert f"**`{section}" in readme, section
    for reference in ("Krippendorff (2011)", "Borovikova et al. 2022, §4",
                      "Borovikova et al. 2022, Algorithm 1", "Solomon et al. 2021, §5.1",
                      "Beigman Klebanov and Beigman 2009: per scale"):
        assert reference in readme, reference


# --- the command --------------------------------------------------------------------------------


def test_the_command_writes_each_export(annotated, tmp_path):
    analysed(annotated)
    for what, fmt in (("responses", None), ("responses", "jsonl"), ("responses", "parquet"),
                      ("matrix", None), ("items", "jsonl"), ("results", None), ("bundle", None)):
        out = tmp_path / f"{what}.{fmt}"
        args = ["--format", fmt] if fmt else []
        err = io.StringIO()
        call_command("export", "annotated", "--what", what, *args, "--output", str(out),
                     stderr=err)
        if what == "bundle":  # stamped with the time of the export
            assert zipfile.ZipFile(out).namelist()[-1] == "README.md"
        else:
            assert out.read_bytes() == export_bytes(annotated, what, fmt), (what, fmt)
        assert "Wrote" in err.getvalue()
    assert list(tmp_path.glob(".*")) == []


def test_the_command_writes_text_to_stdout(annotated):
    out = io.StringIO()
    call_command("export", "annotated", "--what", "responses", "--output", "-", stdout=out)
    assert out.getvalue().encode() == export_bytes(annotated, "responses")


@pytest.mark.parametrize(("args", "message"), [
    (["--what", "everything"], "--what: 'everything' is not an export"),
    (["--what", "matrix", "--format", "parquet"], "--format: matrix is exported as csv, not 'parquet'"),
    (["--what", "results", "--format", "csv"], "--format: results is exported as json"),
    (["--what", "responses", "--format", "parquet", "--output", "-"], "--output -: parquet is binary"),
    (["--what", "bundle", "--output", "-"], "--output -: zip is binary"),
    (["--what", "results"], "no completed analysis run"),
    (["--what", "items", "--output", "/no/such/folder/x.csv"], "--output /no/such/folder/x.csv"),
])
def test_the_command_rejects_bad_combinations(annotated, tmp_path, args, message):
    if "--output" not in args:
        args = [*args, "--output", str(tmp_path / "out")]
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("export", "annotated", *args)
    assert list(tmp_path.iterdir()) == []


def test_the_command_names_an_unknown_study(tmp_path):
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("export", "nope", "--what", "items", "--output", str(tmp_path / "x"))


def test_a_failed_export_leaves_no_file(annotated, tmp_path, monkeypatch):
    import exports.management.commands.export as command

    def broken(**kwargs):
        export = export_open(**kwargs)
        first = next(export.chunks)

        def chunks():
            yield first
            raise RuntimeError("the disk is on fire")

        export.chunks = chunks()
        return export

    monkeypatch.setattr(command, "export_open", broken)
    target = tmp_path / "responses.csv"
    target.write_text("the previous export\n")
    with pytest.raises(RuntimeError):
        call_command("export", "annotated", "--what", "responses", "--output", str(target))
    assert target.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["responses.csv"]


# --- background jobs ----------------------------------------------------------------------------


@pytest.fixture
def exports_dir(settings, tmp_path):
    settings.EXPORTS_DIR = tmp_path / "exports"
    return settings.EXPORTS_DIR


def test_a_job_writes_its_file_and_reports_progress(annotated, exports_dir):
    job = export_job_create(study=annotated, what="responses", fmt="parquet", enqueue=False)
    assert job.status == "queued"
    job = export_job_execute(job_id=job.pk)
    assert (job.status, job.progress, job.rows, job.attempts) == ("done", 100, 22, 1)
    path = Path(exports_dir) / job.path
    assert path.read_bytes() == export_bytes(annotated, "responses", "parquet")
    assert job.size_bytes == path.stat().st_size
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial file left


def test_a_job_is_idempotent_and_restarts_after_a_killed_worker(annotated, exports_dir):
    job = export_job_create(study=annotated, what="matrix", enqueue=False)
    ExportJob.objects.filter(pk=job.pk).update(status="running", attempts=1, progress=40)
    job = export_job_execute(job_id=job.pk)  # the redelivered task
    assert (job.status, job.attempts) == ("done", 2)
    again = export_job_execute(job_id=job.pk)  # a third delivery changes nothing
    assert (again.status, again.attempts, again.finished_at) == ("done", 2, job.finished_at)


def test_a_job_without_results_fails_with_the_reason(annotated, exports_dir):
    job = export_job_execute(job_id=export_job_create(study=annotated, what="bundle",
                                                      enqueue=False).pk)
    assert job.status == "failed" and "no completed analysis run" in job.error
    assert [p for p in Path(exports_dir).rglob("*") if p.is_file()] == []


def test_a_double_click_starts_one_job(annotated, exports_dir):
    first = export_job_create(study=annotated, what="responses", enqueue=False)
    assert export_job_create(study=annotated, what="responses", enqueue=False) == first
    assert export_job_create(study=annotated, what="responses", fmt="jsonl", enqueue=False) != first


def test_the_task_runs_the_job(annotated, exports_dir, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        job = export_job_create(study=annotated, what="items")
    assert len(callbacks) == 1  # enqueued only once the transaction commits
    run_export.apply(args=[job.pk]).get()
    assert ExportJob.objects.get(pk=job.pk).status == "done"
    assert run_export.acks_late and run_export.reject_on_worker_lost


# --- views --------------------------------------------------------------------------------------


def url(study, tail=""):
    return f"/studies/{study.slug}/exports/{tail}"


def test_it_streams_a_download_to_the_owner(alice_client, annotated):
    for what, fmt, content_type in (
            ("responses", "csv", "text/csv; charset=utf-8"),
            ("responses", "jsonl", "application/x-ndjson; charset=utf-8"),
            ("responses", "parquet", "application/vnd.apache.parquet"),
            ("matrix", "csv", "text/csv; charset=utf-8"),
            ("items", "jsonl", "application/x-ndjson; charset=utf-8")):
        response = alice_client.get(url(annotated, f"{what}.{fmt}"))
        assert response.status_code == 200 and response.streaming, (what, fmt)
        assert response["Content-Type"] == content_type
        assert response["Content-Disposition"] == f'attachment; filename="annotated-{what}.{fmt}"'
        assert b"".join(response.streaming_content) == export_bytes(annotated, what, fmt)


def test_it_explains_a_missing_results_document(alice_client, annotated):
    response = alice_client.get(url(annotated, "results.json"))
    assert response.status_code == 409 and b"no completed analysis run" in response.content
    analysed(annotated)
    response = alice_client.get(url(annotated, "bundle.zip"))
    assert response["Content-Type"] == "application/zip"
    assert zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).testzip() is None


def test_an_unknown_export_is_404(alice_client, annotated):
    for tail in ("matrix.parquet", "everything.csv", "responses.exe"):
        assert alice_client.get(url(annotated, tail)).status_code == 404, tail


def test_another_researcher_gets_404_everywhere(client, bob, annotated, exports_dir):
    job = export_job_execute(job_id=export_job_create(study=annotated, what="items",
                                                      enqueue=False).pk)
    client.force_login(bob)
    for tail in ("responses.csv", f"jobs/{job.pk}/", f"jobs/{job.pk}/status.json",
                 f"jobs/{job.pk}/download/"):
        assert client.get(url(annotated, tail)).status_code == 404, tail
    assert client.post(url(annotated, "responses.csv")).status_code == 404
    assert ExportJob.objects.count() == 1


def test_a_job_of_another_study_is_404_even_to_its_owner(alice_client, alice, make_study,
                                                         annotated, exports_dir):
    other = make_study(alice, slug="other")
    job = export_job_execute(job_id=export_job_create(study=other, what="items",
                                                      enqueue=False).pk)
    assert alice_client.get(url(annotated, f"jobs/{job.pk}/download/")).status_code == 404


def test_anonymous_users_are_sent_to_log_in(client, annotated):
    response = client.get(url(annotated, "responses.csv"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_large_study_exports_in_the_background(alice_client, annotated, exports_dir, settings,
                                                 django_capture_on_commit_callbacks):
    settings.CONCORD_EXPORT_SYNC_MAX = 10
    page = alice_client.get(url(annotated, "responses.csv"))
    assert page.status_code == 200 and not page.streaming
    assert b'method="post"' in page.content and b"csrfmiddlewaretoken" in page.content
    assert ExportJob.objects.count() == 0  # a GET never starts a job
    assert alice_client.get(url(annotated, "items.csv")).streaming  # small whatever the study
    with django_capture_on_commit_callbacks():
        started = alice_client.post(url(annotated, "responses.csv"))
    job = ExportJob.objects.get()
    assert started.status_code == 302 and started["Location"] == url(annotated, f"jobs/{job.pk}/")
    waiting = alice_client.get(started["Location"])
    assert b'data-job-part="refresh"' in waiting.content and b"js/jobs." in waiting.content
    assert alice_client.get(url(annotated, f"jobs/{job.pk}/download/")).status_code == 404
    assert alice_client.get(url(annotated, f"jobs/{job.pk}/status.json")).json()["status"] == "queued"
    export_job_execute(job_id=job.pk)
    status = alice_client.get(url(annotated, f"jobs/{job.pk}/status.json")).json()
    assert status["status"] == "done" and status["progress"] == 100 and status["rows"] == 22
    done = alice_client.get(url(annotated, f"jobs/{job.pk}/"))
    assert status["download_url"].encode() in done.content and b"js/jobs." not in done.content
    download = alice_client.get(status["download_url"])
    assert download["Content-Disposition"] == 'attachment; filename="annotated-responses.csv"'
    assert b"".join(download.streaming_content) == export_bytes(annotated, "responses")


def test_background_is_available_on_request(alice_client, annotated):
    page = alice_client.get(url(annotated, "items.csv") + "?background=1")
    assert page.status_code == 200 and b"Prepare the file" in page.content


def test_the_job_page_has_no_inline_script_or_style(alice_client, annotated, exports_dir):
    job = export_job_create(study=annotated, what="items", enqueue=False)
    page = alice_client.get(url(annotated, f"jobs/{job.pk}/")).content.decode()
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == []
    assert "<style" not in page and " style=" not in page
    assert not re.search(r"<[^>]+\son\w+=", page)  # no inline event handlers


def test_it_tells_when_no_worker_picks_the_job_up(alice_client, annotated, settings, exports_dir):
    settings.CONCORD_WORKER_WAIT_SECONDS = 0
    job = export_job_create(study=annotated, what="items", enqueue=False)
    ExportJob.objects.filter(pk=job.pk).update(sent_at=job.created_at)  # in the queue
    status = alice_client.get(url(annotated, f"jobs/{job.pk}/status.json")).json()
    assert status["stalled"] and "Is a Celery worker running" in status["stalled_message"]
    page = alice_client.get(url(annotated, f"jobs/{job.pk}/")).content.decode()
    alert = re.search(r'<p class="job-alert error" role="alert" data-job-part="alert"( hidden)?>'
                      r'([^<]*)<', page)
    assert alert.group(1) is None and "No worker has picked this export up" in alert.group(2)


def test_job_creation_needs_a_csrf_token(alice, annotated):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(url(annotated, "responses.csv")).status_code == 403
    assert ExportJob.objects.count() == 0


def test_a_job_file_outside_the_exports_folder_is_never_served(alice_client, annotated,
                                                               exports_dir, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    job = export_job_create(study=annotated, what="items", enqueue=False)
    for path in ("../secret.txt", str(secret), "../../../../etc/passwd"):
        ExportJob.objects.filter(pk=job.pk).update(status="done", path=path)
        assert alice_client.get(url(annotated, f"jobs/{job.pk}/download/")).status_code == 404


@pytest.mark.parametrize(("tail", "queries"), [
    # session, user, study, [the size check]; then the export's own reads: responses and
    # revisions = whether items name systems + pseudonyms + answers (with their questions);
    # matrix = the questions + items + repeated items + pseudonyms + answers; items = text
    # columns + prefixed columns + items.
    ("responses.csv", 7), ("responses.parquet", 7), ("revisions.csv", 7), ("matrix.csv", 9),
    ("items.csv", 6),
])
def test_a_download_makes_a_fixed_number_of_queries(alice_client, alice, make_study,
                                                    django_assert_num_queries, tail, queries):
    for size, slug in ((1, "small"), (6, "large")):
        study = make_study(alice, slug=slug)
        add_answers(study, [(f"a{n}", f"i{b}", 1, b, 1.0, 10)
                            for n in range(size) for b in range(1, 6)]
                    + [(f"a{n}", "i3", 2, 9, 2.0, 10) for n in range(size)])
        with django_assert_num_queries(queries):
            response = alice_client.get(url(study, tail))
            body = b"".join(response.streaming_content)
        assert body


def test_a_job_page_makes_a_fixed_number_of_queries(alice_client, annotated, exports_dir,
                                                   django_assert_num_queries):
    job = export_job_execute(job_id=export_job_create(study=annotated, what="items",
                                                      enqueue=False).pk)
    for tail in (f"jobs/{job.pk}/", f"jobs/{job.pk}/status.json", f"jobs/{job.pk}/download/"):
        with django_assert_num_queries(4):  # session, user, study, job
            alice_client.get(url(annotated, tail))


def test_the_researcher_downloads_the_pseudonym_mapping(alice_client, alice, bob, make_study):
    study = make_study(alice, slug="mapped")
    responses_import(study=study, data=b"annotator,item,value\n=cmd,i1,1\nzed,i1,2\n",
                     filename="f.csv", fmt="long")
    response = alice_client.get(f"/studies/{study.slug}/participants/pseudonyms.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["pseudonym", "source", "external_id", "label"]
    assert [r[:3] for r in rows[1:]] == [["A1", "import", "'=cmd"], ["A2", "import", "zed"]]
    other = Client()
    other.force_login(bob)
    assert other.get(f"/studies/{study.slug}/participants/pseudonyms.csv").status_code == 404


def test_the_pseudonym_mapping_makes_a_fixed_number_of_queries(alice_client, alice, make_study,
                                                              django_assert_num_queries):
    for size, slug in ((1, "few"), (6, "many")):
        study = make_study(alice, slug=slug)
        add_answers(study, [(f"a{n}", "i1", 1, 0, 1.0, 10) for n in range(size)])
        with django_assert_num_queries(5):  # session, user, study, pseudonyms, participants
            assert alice_client.get(f"/studies/{slug}/participants/pseudonyms.csv").content


def test_imported_responses_export_with_source_import(alice, make_study):
    study = make_study(alice, slug="imported")
    responses_import(study=study, data=b"annotator,item,value\nx,i1,3\ny,i1,4\n",
                     filename="long.csv", fmt="long")
    rows = read_csv(export_bytes(study, "responses"))
    assert [(r[0], r[1], r[5], r[8]) for r in rows[1:]] == [("A1", "i1", "3", "import"),
                                                            ("A2", "i1", "4", "import")]


# --- a real worker ------------------------------------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_writes_an_export(tmp_path, alice, make_study):
    """The task is registered in the worker (AnalysisConfig.ready) and writes the file."""
    require_worker_services()
    from config.celery import app

    app.control.purge()  # nothing left over from an earlier run
    study = make_study(alice, slug="worker-export")
    add_answers(study, [("w1", "i1", 1, 0, 3.0, 100), ("w2", "i2", 1, 0, 4.0, 200)])
    worker = start_worker(tmp_path, "exporter")
    try:
        job = export_job_create(study=study, what="responses", fmt="parquet")
        done = wait_for(lambda: ExportJob.objects.filter(pk=job.pk, status="done").first(), 120,
                        "the export job to finish")
        assert done.rows == 2 and done.attempts == 1
        path = export_job_file(job=done)
        assert pq.read_table(path).num_rows == 2
        path.unlink()
    finally:
        stop_worker(worker)
