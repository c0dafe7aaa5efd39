"""The systems analysis' exports and API (issue 24, point 4): each section of the results
document (`systems`, `system_tests`, `system_clusters`, `mixed_model`,
`metric_meta_evaluation`) as CSV and JSONL, in the bundle when the run has them, and through the
results API; formulas in a system's name neutralised; a study without systems gives empty files."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.test import Client
from django.urls import reverse

from exports.models import ExportJob
from exports.selectors import SYSTEM_COLUMNS
from exports.services import WHATS, export_job_create, export_job_execute, export_open
from studies.models import Membership
from tests.analysis.systems_document import RANKED, with_systems
from tests.analysis.test_dashboard_readable import analysed, four_annotators

pytestmark = pytest.mark.django_db

SECTIONS = list(SYSTEM_COLUMNS)


@pytest.fixture
def study(alice, make_study):
    return four_annotators(alice, make_study)


@pytest.fixture
def run(study):
    return with_systems(analysed(study))


def export_text(study, what: str, fmt: str) -> str:
    return b"".join(export_open(study=study, what=what, fmt=fmt).chunks).decode()


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_every_systems_section_is_an_export_in_csv_and_jsonl():
    assert SECTIONS == ["systems", "system_tests", "system_clusters", "mixed_model",
                        "metric_meta_evaluation"]
    for section in SECTIONS:
        assert WHATS[section] == ("csv", "jsonl")
        assert len(section) <= ExportJob._meta.get_field("what").max_length


@pytest.mark.parametrize("section", SECTIONS)
def test_the_jsonl_export_holds_the_documents_records(study, run, section):
    lines = [json.loads(line) for line in export_text(study, section, "jsonl").splitlines()]
    assert lines == run.results[section] and lines


@pytest.mark.parametrize("section", SECTIONS)
def test_the_csv_export_has_the_contracts_columns_and_one_row_per_record(study, run, section):
    text = export_text(study, section, "csv")
    rows = read_csv(text)
    assert text.splitlines()[0].split(",") == list(SYSTEM_COLUMNS[section])
    assert len(rows) == len(run.results[section])


def test_the_system_scores_export_ranks_and_clusters(study, run):
    rows = read_csv(export_text(study, "systems", "csv"))
    assert [r["system"] for r in rows] == RANKED
    assert [(r["rank"], r["rank_low"], r["rank_high"], r["cluster"]) for r in rows][1] == (
        "2", "2", "3", "2")
    assert rows[0]["mean"] == "5.6" and rows[0]["mean_low"] == "5.3" and rows[0]["reason"] == ""
    tests = read_csv(export_text(study, "system_tests", "csv"))
    tie = next(t for t in tests if {t["system_a"], t["system_b"]} == {"beta-mt", "gamma-mt"})
    assert tie["significant"] == "0" and tie["p_adjusted"] == "0.82"
    meta = read_csv(export_text(study, "metric_meta_evaluation", "csv"))
    assert {(m["metric"], m["level"]) for m in meta} >= {("tracking", "system"),
                                                         ("noisy", "item")}
    missing = next(m for m in meta if m["metric"] == "constant")
    assert missing["value"] == "" and missing["reason"] == (
        "the metric gives every system the same score")


def test_a_formula_in_a_system_name_is_neutralised(study):
    with_systems(analysed(study), name='=HYPERLINK("http://x","y")')
    for section, column in (("systems", "system"), ("system_tests", "system_a"),
                            ("system_clusters", "system")):
        rows = read_csv(export_text(study, section, "csv"))
        assert rows[0][column] == '\'=HYPERLINK("http://x","y")', section
    # JSON Lines is not a spreadsheet: the name as it is
    first = json.loads(export_text(study, "systems", "jsonl").splitlines()[0])
    assert first["system"] == '=HYPERLINK("http://x","y")'
    # numbers stay numbers, negative ones too
    fixed = read_csv(export_text(study, "mixed_model", "csv"))
    assert next(r for r in fixed if r["name"] == "delta-mt")["low"] == "1.7"
    assert next(r for r in fixed if r["name"] == "delta-mt")["estimate"] == "2.2"


def test_a_study_without_systems_exports_the_header_only(study):
    analysed(study)
    assert export_text(study, "systems", "csv").splitlines() == [",".join(SYSTEM_COLUMNS["systems"])]
    assert export_text(study, "system_tests", "jsonl") == ""


def test_the_bundle_holds_the_systems_tables_when_the_run_has_them(study, run):
    data = b"".join(export_open(study=study, what="bundle").chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        assert {f"{s}.csv" for s in SECTIONS} <= names
        rows = read_csv(archive.read("systems.csv").decode())
        readme = archive.read("README.md").decode()
    assert [r["system"] for r in rows] == RANKED
    assert "| `systems.csv` | 4 |" in readme and "| `system_tests.csv` | 6 |" in readme


def test_the_bundle_of_a_study_without_systems_has_no_systems_file(study):
    analysed(study)
    data = b"".join(export_open(study=study, what="bundle").chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert not any(n.startswith("system") for n in archive.namelist())
        assert "systems.csv" not in archive.read("README.md").decode()


def test_a_viewer_downloads_the_exports_and_a_stranger_gets_a_404(study, run, bob):
    client = Client()
    client.force_login(bob)
    url = reverse("exports:download", args=[study.slug, "system_tests", "csv"])
    assert client.get(url).status_code == 404
    Membership.objects.create(study=study, user=bob, role=Membership.Role.VIEWER)
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{study.slug}-system_tests.csv"'
    body = b"".join(response.streaming_content).decode()
    assert len(read_csv(body)) == 6


def test_an_unknown_format_of_a_systems_export_is_a_404(alice_client, study, run):
    url = reverse("exports:download", args=[study.slug, "systems", "parquet"])
    assert alice_client.get(url).status_code == 404


def test_a_background_job_writes_the_longest_named_export(study, run, alice):
    job = export_job_create(study=study, user=alice, what="metric_meta_evaluation", fmt="jsonl",
                            enqueue=False)
    job = export_job_execute(job_id=job.pk)
    assert job.status == ExportJob.Status.DONE and job.rows == len(
        run.results["metric_meta_evaluation"])


# --- the API --------------------------------------------------------------------------------


def api_url(study, section: str) -> str:
    return reverse("analysis:system_results", args=[study.slug, section])


@pytest.mark.parametrize("section", SECTIONS)
def test_the_api_serves_each_section(alice_client, study, run, section):
    body = alice_client.get(api_url(study, section)).json()
    assert body == {"section": section, "run": run.pk, "results": run.results[section]}


def test_the_api_filters_by_the_sections_fields(alice_client, study, run):
    question = run.results["questions"][0]["key"]
    body = alice_client.get(api_url(study, "system_tests"),
                            {"system": "delta-mt", "question": question, "scale": "raw"}).json()
    assert len(body["results"]) == 3  # delta-mt against each of the other three
    meta = alice_client.get(api_url(study, "metric_meta_evaluation"),
                            {"level": "system", "statistic": "soft_pairwise_accuracy"}).json()
    assert [m["metric"] for m in meta["results"]] == ["tracking", "noisy"]
    assert alice_client.get(api_url(study, "mixed_model"), {"kind": "variance"}).json()[
        "results"][0]["name"] == "annotator"


def test_the_api_refuses_an_unknown_filter_and_section(alice_client, study, run):
    response = alice_client.get(api_url(study, "systems"), {"metric": "x"})
    assert response.status_code == 400 and "metric" in response.json()
    response = alice_client.get(api_url(study, "systems"), {"system": "x" * 1001})
    assert response.status_code == 400
    assert alice_client.get(api_url(study, "alpha")).status_code == 404


def test_the_api_answers_a_viewer_an_empty_list_without_systems_and_a_404_before_a_run(
        study, bob):
    client = Client()
    client.force_login(bob)
    assert client.get(api_url(study, "systems")).status_code == 404
    Membership.objects.create(study=study, user=bob, role=Membership.Role.VIEWER)
    assert client.get(api_url(study, "systems")).status_code == 404  # no run yet
    analysed(study)
    assert client.get(api_url(study, "systems")).json()["results"] == []
