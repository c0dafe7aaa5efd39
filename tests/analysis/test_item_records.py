"""The records that grow with the items live beside the run's document (`concord.results/3`).

A run stores its items, simple items, per-item gaps and aggregated labels in their own tables;
its document keeps counts, the largest gaps and the scatter's sample.  Put back together they are
the full document `core.results.build_results` gives for the same answers, record for record;
the API pages through them, and a document stored before /3 is read as it is.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from rest_framework.test import APIClient

from analysis.models import AnalysisRun, ItemGap, ItemLabel, RunItem
from analysis.selectors import (
    full_document,
    item_labels_for,
    item_records,
    item_records_page,
    study_checks,
    study_questions,
)
from analysis.services import (
    _item_json,
    analysis_run_complete,
    analysis_run_create,
    analysis_run_execute,
)
from core.results import (
    GAP_SAMPLE,
    ITEM_SECTIONS,
    LARGEST_GAPS,
    SAMPLED_AGGREGATE,
    ItemRecords,
    build_results,
    gap_summaries,
)
from core.stats.gaps import ItemGapBlock
from studies.models import Study

pytestmark = pytest.mark.django_db
METADATA = ("generated_at",)


@pytest.fixture(scope="module")
def coref_run(demo_seeded, module_db):
    """The coreference demo's finished run, computed once for the module (see module_db)."""
    with module_db.unblock():
        study = Study.objects.get(slug="demo-coref")
        run = analysis_run_create(study=study, enqueue=False)
        return study.pk, analysis_run_execute(run_id=run.pk).pk


@pytest.fixture
def coref(coref_run, db):
    study_pk, run_pk = coref_run
    return Study.objects.get(pk=study_pk), AnalysisRun.objects.get(pk=run_pk)


@pytest.fixture
def api(coref):
    client = APIClient()
    client.force_authenticate(coref[0].owner)
    return client


def test_the_stored_document_keeps_no_section_that_grows_with_the_items(coref):
    study, run = coref
    document = run.results
    assert not set(ITEM_SECTIONS) & set(document)
    assert all("simple_items" not in q for q in document["questions"])
    assert document["counts"]["simple_items"] == document["questions"][0]["counts"][
        "simple_items"]
    assert RunItem.objects.filter(run=run).count() == document["counts"]["items"]
    assert ItemGap.objects.filter(run=run).count() > 0
    assert ItemLabel.objects.filter(run=run).count() > 0
    assert run.timings["store_s"] >= 0


def test_put_back_together_it_is_the_full_document_of_the_same_answers(coref):
    study, run = coref
    full = full_document(document=run.results)
    again = build_results(study_questions(study=study), settings=run.settings,
                          study=full["study"], checks=study_checks(study=study))
    for key in METADATA:
        full.pop(key, None)
        again.pop(key, None)
    assert full == again
    assert full["simple_items"] == full["questions"][0]["simple_items"]
    assert len(full["item_gaps"]) == run.results["counts"]["item_gaps"]


def test_each_item_is_stored_once_with_its_metrics_and_its_human_aggregate_once_per_scale(coref):
    study, run = coref
    full = full_document(document=run.results)
    metrics = run.results["item_gap_metrics"]
    rows = {(g.question, g.scale, g.aggregate, g.position): g.human
            for g in ItemGap.objects.filter(run=run)}
    items = {i.item: i for i in RunItem.objects.filter(run=run)}
    assert len(rows) * len(metrics) >= len(full["item_gaps"]) > len(rows)
    for g in full["item_gaps"]:
        item = items[g["item"]]
        assert rows[(g["question"], g["scale"], g["aggregate"], item.position)] == g["human"]
        assert item.metrics[metrics.index(g["metric"])] == g["metric_value"]
        assert g["gap"] == g["metric_value"] - g["human"]


def test_the_document_keeps_the_largest_gaps_of_each_metric_and_a_sample(coref):
    study, run = coref
    document, full = run.results, full_document(document=run.results)
    panels = {(g["question"], g["scale"], g["aggregate"], g["metric"]) for g in full["item_gaps"]}
    for panel in panels:
        records = [g for g in full["item_gaps"]
                   if (g["question"], g["scale"], g["aggregate"], g["metric"]) == panel]
        expected = sorted(records, key=lambda g: (-abs(g["gap"]), g["item"]))[:LARGEST_GAPS]
        kept = [g for g in document["largest_gaps"]
                if (g["question"], g["scale"], g["aggregate"], g["metric"]) == panel]
        assert kept == expected
        sample = [g for g in document["item_gap_sample"]
                  if (g["question"], g["scale"], g["aggregate"], g["metric"]) == panel]
        # The scatter's aggregate only; fewer than GAP_SAMPLE items: every one of them.
        assert sample == (records if panel[2] == SAMPLED_AGGREGATE else [])
    assert len(full["item_gaps"]) < GAP_SAMPLE * len(panels)


def test_a_large_panel_keeps_an_evenly_spaced_sample_and_its_largest_gaps():
    n = 10_001
    gap = np.linspace(-0.5, 0.5, n)
    gap[7] = 0.9  # the largest, away from the sample's stride
    block = ItemGapBlock("raw", "mean", "m", np.arange(n), np.zeros(n), gap, gap)
    ids = np.array([f"i{k:05d}" for k in range(n)], dtype=object)
    largest, sample = gap_summaries(block, ids, largest=3, sample=2000)
    assert largest == [7, 0, n - 1]  # 0.9, then |−0.5| and |0.5| in item id order
    assert sample == list(range(0, n, 6)) and len(sample) <= 2000


def test_the_items_json_is_what_json_dumps_writes_of_their_rows():
    # Built from the columns for speed; stored as the rows' json.dumps texts, value for value.
    ids = [f"i{k}" for k in range(6)]
    values = np.array([0.1, 1.0, -0.0, 1e-05, 1e16, 0.30000000000000004])
    records = ItemRecords(ids, ["q1", "q2", "q3"],
                          {"q1": np.array([1, 0, 1, 0, 0, 1], bool),
                           "q3": np.array([1, 1, 0, 0, 0, 1], bool)})
    for metric, present in (("m1", [0, 1, 2, 3, 4, 5]), ("m2", [1, 3, 5])):
        item = np.array(present)
        records.gaps.append(("q1", ItemGapBlock("raw", "mean", metric, item, np.zeros(item.size),
                                                values[item] * 3, values[item] * 3)))
    rows = list(records.item_rows())
    assert _item_json(records) == ([r[1] for r in rows], [json.dumps(r[2]) for r in rows],
                                   [json.dumps(r[3]) for r in rows])
    assert _item_json(records)[2][0] == "[0.30000000000000004, null]"


def test_item_records_stream_in_order_and_filter(coref):
    study, run = coref
    full = full_document(document=run.results)
    assert list(item_records(document=run.results, section="item_labels")) == full["item_labels"]
    mace = list(item_records(document=run.results, section="item_labels", method="mace"))
    assert mace == [r for r in full["item_labels"] if r["method"] == "mace"]
    labels = item_labels_for(document=run.results, items=["doc003", "doc001"], scale="raw")
    assert {r["item"] for r in labels} == {"doc001", "doc003"}
    assert labels == [r for r in full["item_labels"] if r["scale"] == "raw"
                      and r["item"] in ("doc001", "doc003")]
    with pytest.raises(ValueError, match="not a section"):
        list(item_records(document=run.results, section="items"))


def test_a_document_before_3_is_read_from_itself(coref):
    study, run = coref
    full = full_document(document=run.results)
    old = {**full, "schema": "concord.results/2"}
    assert full_document(document=old) is old
    page, after = item_records_page(document=old, section="item_gaps", limit=5)
    assert page == full["item_gaps"][:5] and after == 4
    page, _ = item_records_page(document=old, section="item_gaps", after=after, limit=5)
    assert page == full["item_gaps"][5:10]
    assert list(item_records(document=old, section="item_labels")) == full["item_labels"]


def test_the_api_pages_through_every_record(coref, api):
    study, run = coref
    full = full_document(document=run.results)
    url = f"/api/studies/{study.slug}/results/items/item_gaps/"
    seen, after, pages = [], -1, 0
    while after is not None:
        body = api.get(url, {"after": after, "limit": 97}).json()
        assert body["section"] == "item_gaps" and body["run"] == run.pk
        assert len(body["results"]) <= 97
        seen += body["results"]
        after, pages = body["next"], pages + 1
    assert seen == full["item_gaps"] and pages == -(-len(seen) // 97)
    only = api.get(url, {"metric": "MUC", "scale": "raw", "limit": 5000}).json()["results"]
    assert only == [g for g in full["item_gaps"] if g["metric"] == "MUC" and g["scale"] == "raw"]
    labels = api.get(f"/api/studies/{study.slug}/results/items/item_labels/",
                     {"item": "doc002", "limit": 5000}).json()["results"]
    assert labels == [r for r in full["item_labels"] if r["item"] == "doc002"]


@pytest.mark.parametrize("query, field", [
    ({"limit": "0"}, "limit"), ({"limit": "5001"}, "limit"), ({"after": "x"}, "after"),
    ({"method": "mace"}, "method"), ({"colour": "red"}, "colour"),
    ({"metric": "m" * 1001}, "metric")])
def test_the_api_refuses_bad_parameters_with_400(coref, api, query, field):
    study, _ = coref
    response = api.get(f"/api/studies/{study.slug}/results/items/item_gaps/", query)
    assert response.status_code == 400 and field in response.json()


def test_a_nul_in_a_parameter_is_taken_out_before_the_api_reads_it(coref, api):
    # config.middleware.NulRefusalMiddleware: "a\x00b" arrives as "ab" (no PostgreSQL error).
    study, _ = coref
    url = f"/api/studies/{study.slug}/results/items/item_gaps/"
    assert api.get(url, {"item": "a\x00b"}).json() == api.get(url, {"item": "ab"}).json()


def test_the_api_hides_the_records_from_strangers(coref, django_user_model):
    study, _ = coref
    assert APIClient().get(f"/api/studies/{study.slug}/results/items/item_gaps/"
                           ).status_code in (401, 403)
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("mallory", password="x"))
    assert stranger.get(f"/api/studies/{study.slug}/results/items/item_gaps/").status_code == 404
    owner = APIClient()
    owner.force_authenticate(study.owner)
    assert owner.get(f"/api/studies/{study.slug}/results/items/nope/").status_code == 404


def test_a_run_completed_again_replaces_its_records_never_doubles_them(coref):
    study, run = coref
    counts = (RunItem.objects.filter(run=run).count(), ItemGap.objects.filter(run=run).count(),
              ItemLabel.objects.filter(run=run).count())
    analysis_run_complete(run=AnalysisRun.objects.select_related("study").get(pk=run.pk))
    assert counts == (RunItem.objects.filter(run=run).count(),
                      ItemGap.objects.filter(run=run).count(),
                      ItemLabel.objects.filter(run=run).count())


def test_deleting_a_run_deletes_its_records(coref):
    study, run = coref
    run.delete()
    assert not (RunItem.objects.exists() or ItemGap.objects.exists() or ItemLabel.objects.exists())
