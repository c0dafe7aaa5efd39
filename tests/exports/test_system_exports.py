"""Systems and sources in the exports: the items export's `system` and `source` columns, the
responses and revisions exports' `system` and `item_source`, the system-level scores in the
methods bundle, and a bundle that replays them exactly (docs/systems.md, docs/exports.md)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exports.selectors import RESPONSE_COLUMNS, REVISION_COLUMNS
from exports.services import export_open
from studies.models import Item, Study
from studies.services import (
    items_import,
    participants_invite,
    study_create,
    system_scores_import,
)
from tests.answers import submit
from tests.exports.test_bundle_import import differences, without_replay_fields

pytestmark = pytest.mark.django_db

SYSTEMS_CSV = "id,text,system,source,metric:bleu\n" + "".join(
    f"{doc}-{sys},Output of {sys} for {doc},{sys},{doc},{0.1 * n}\n"
    for n, (doc, sys) in enumerate((d, s) for d in ("doc-1", "doc-2", "doc-3")
                                   for s in ("sys-A", "sys-B")))


@pytest.fixture
def rated(make_study, alice):
    study = make_study(alice, slug="rated", items=SYSTEMS_CSV)
    for n, participant in enumerate(participants_invite(study=study, count=3)):
        for position in range(participant.n_assigned):
            submit(participant, position, (position + n) % 7, active_ms=900 + position)
    return study


def table(study: Study, what: str, fmt: str = "csv") -> list[dict]:
    data = b"".join(export_open(study=study, what=what, fmt=fmt).chunks).decode()
    if fmt == "jsonl":
        return [json.loads(line) for line in data.splitlines()]
    return list(csv.DictReader(io.StringIO(data)))


def test_the_items_export_has_system_and_source_columns(rated):
    rows = table(rated, "items")
    assert list(rows[0])[:6] == ["id", "text", "control", "system", "source", "metric:bleu"]
    assert {(r["id"], r["system"], r["source"]) for r in rows} >= {("doc-2-sys-B", "sys-B",
                                                                    "doc-2")}
    assert table(rated, "items", "jsonl")[0]["system"] == "sys-A"


def test_the_exports_of_a_study_without_systems_are_unchanged(make_study, alice):
    study = make_study(alice, slug="plain")
    submit(participants_invite(study=study, count=1)[0], 0, 3)
    assert "system" not in table(study, "items")[0]
    assert tuple(table(study, "responses")[0]) == RESPONSE_COLUMNS
    assert tuple(table(study, "revisions")[0]) == REVISION_COLUMNS


def test_the_responses_and_revisions_exports_name_the_items_system(rated):
    responses = table(rated, "responses")
    assert tuple(responses[0]) == (*RESPONSE_COLUMNS, "system", "item_source")
    by_item = {(r["item"], r["system"], r["item_source"]) for r in responses}
    assert ("doc-3-sys-A", "sys-A", "doc-3") in by_item and len(by_item) == 6
    assert responses[0]["source"] in ("app", "import")  # the answer's source, as before
    revisions = table(rated, "revisions", "jsonl")
    assert tuple(revisions[0]) == (*REVISION_COLUMNS, "system", "item_source")


def test_the_parquet_responses_export_has_the_columns(rated):
    import pyarrow.parquet as pq

    data = b"".join(export_open(study=rated, what="responses", fmt="parquet").chunks)
    schema = pq.read_table(io.BytesIO(data)).schema
    assert schema.names[-2:] == ["system", "item_source"]


def test_the_responses_export_reads_back_with_import_responses(rated, make_study, alice,
                                                               tmp_path):
    target = make_study(alice, slug="again", items=SYSTEMS_CSV)
    path = tmp_path / "responses.csv"
    path.write_bytes(b"".join(export_open(study=rated, what="responses").chunks))
    call_command("import_responses", "again", str(path), "--format", "long",
                 stdout=io.StringIO())
    assert target.participants.count() == 3


def test_a_bundle_replays_systems_sources_and_scores(rated, tmp_path):
    system_scores_import(study=rated, data=b"system,metric,value\nsys-A,chrF,51.5\n"
                                          b"sys-B,chrF,48\n", filename="scores.csv")
    call_command("analyze", "rated", "--output", "/dev/null", stdout=io.StringIO())
    data = b"".join(export_open(study=rated, what="bundle").chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.read("system_scores.csv").decode().splitlines() == [
            "system,metric,value", "sys-A,chrF,51.5", "sys-B,chrF,48"]
        assert "`system_scores.csv` | 2 |" in archive.read("README.md").decode()
        recorded = json.loads(archive.read("results.json"))
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    call_command("import_bundle", str(path), "--slug", "replayed", "--owner", "alice",
                 stdout=io.StringIO())
    replayed = Study.objects.get(slug="replayed")
    fields = ("external_id", "system", "source", "position")
    assert (list(replayed.items.order_by("position").values_list(*fields))
            == list(rated.items.order_by("position").values_list(*fields)))
    assert (sorted(replayed.system_scores.values_list("system", "metric", "value"))
            == [("sys-A", "chrF", 51.5), ("sys-B", "chrF", 48.0)])
    call_command("analyze", "replayed", "--output", str(tmp_path / "again.json"),
                 stdout=io.StringIO())
    again = json.loads((tmp_path / "again.json").read_text())
    assert differences(without_replay_fields(recorded), without_replay_fields(again)) == []


def test_a_bundle_without_systems_has_no_scores_file(make_study, alice):
    study = make_study(alice, slug="plain")
    participant = participants_invite(study=study, count=1)[0]
    submit(participant, 0, 3)
    call_command("analyze", "plain", "--output", "/dev/null", stdout=io.StringIO())
    data = b"".join(export_open(study=study, what="bundle").chunks)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "system_scores.csv" not in archive.namelist()
        assert "system" not in archive.read("items.csv").decode().splitlines()[0]


# A system or source: at most 200 characters of text without control, format or separator
# characters (refused on import), surrounding spaces removed; formula-like values included.
LABEL = st.one_of(
    st.just(""), st.sampled_from(["=SUM(A1)", "+sys", "-x", "@src", "'quoted", 'a,"b"', "é漢"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Zl", "Zp", "Cs")),
            max_size=30).map(str.strip))
labelled = itertools.count()


@given(st.lists(st.tuples(LABEL, LABEL), min_size=1, max_size=6),
       st.sampled_from(["csv", "jsonl"]))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_systems_and_sources_round_trip_through_import_items(alice, labels, fmt):
    source = study_create(owner=alice, slug=f"lsrc-{next(labelled)}", title="S",
                          preset="likert-0-7-coref")
    Item.objects.bulk_create(Item(study=source, external_id=f"i{n}", position=n, text="Text",
                                  system=system, source=origin)
                             for n, (system, origin) in enumerate(labels))
    target = study_create(owner=alice, slug=f"ldst-{next(labelled)}", title="T",
                          preset="likert-0-7-coref")
    data = b"".join(export_open(study=source, what="items", fmt=fmt).chunks)
    items_import(study=target, data=data, filename=f"items.{fmt}")
    fields = ("external_id", "system", "source")
    assert (list(target.items.order_by("position").values_list(*fields))
            == list(source.items.order_by("position").values_list(*fields)))
