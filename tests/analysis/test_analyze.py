"""The analysis service on the demo study: every section, the planted behaviours, the schema."""

import json
from pathlib import Path

import jsonschema
import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.models import AnalysisRun
from analysis.selectors import study_data
from studies.selectors import pseudonyms as stored_pseudonyms
from tests.arrays import dense_of

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/results.schema.json").read_text())


@pytest.fixture
def demos(demo_studies):
    _, created = demo_studies
    return {d.study.slug: d for d in created}


def analyze(tmp_path, slug, *args) -> dict:
    out = tmp_path / f"{slug}.json"
    call_command("analyze", slug, "--output", str(out), *args)
    text = out.read_text()
    document = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the document"))
    jsonschema.validate(document, SCHEMA)
    return document


def planted(demo, behaviour) -> str:
    names = stored_pseudonyms(study=demo.study)
    (pk,) = [pk for pk, b in demo.behaviours.items() if b == behaviour]
    return names[pk]


def flagged(document, rule) -> set[str]:
    return {h["annotator"] for h in document["heuristics"] if h["rule"] == rule and h["flagged"]}


def test_it_writes_every_section_and_finds_the_planted_annotators(tmp_path, demos):
    demo = demos["demo-coref"]
    document = analyze(tmp_path, "demo-coref")
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "largest_gaps",
                    "item_gap_sample", "error_weights", "heuristics", "correlations", "noise"):
        assert document[section], section
    assert {s["name"] for s in document["scales"]} == {"raw", "reduced", "gravity", "importance"}
    raw_trust = next(t for t in document["trust"] if t["scale"] == "raw" and t["items"] == "all")
    assert raw_trust["outliers"] == [planted(demo, "random")]
    assert raw_trust["coefficients"][planted(demo, "random")] <= 0.5
    assert planted(demo, "constant") in flagged(document, "low_variance")
    assert flagged(document, "slow") == {planted(demo, "slow")}
    dup = {d["annotator"]: d for d in document["duplicates"] if d["scale"] == "raw"}
    worst = max(dup.values(), key=lambda d: d["mean_abs_diff"])
    assert worst["annotator"] in {planted(demo, "inconsistent"), planted(demo, "random")}
    assert dup[planted(demo, "inconsistent")]["mean_abs_diff"] >= 3


def test_it_flags_the_annotator_who_rates_controls_high(tmp_path, demos):
    demo = demos["demo-similarity"]
    document = analyze(tmp_path, "demo-similarity")
    assert planted(demo, "controls-high") in flagged(document, "high_random")
    assert planted(demo, "constant") in flagged(document, "low_variance")
    styles = {s["annotator"]: s["style"] for s in document["styles"]}
    assert set(styles) == set(document["annotators"])


def test_its_alpha_equals_the_krippendorff_package(tmp_path, demos):
    document = analyze(tmp_path, "demo-coref")
    data = study_data(study=demos["demo-coref"].study)
    dense = dense_of(data)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        (record,) = [a for a in document["alpha"] if a["scale"] == "raw" and a["items"] == "all"
                     and a["level"] == level and not a["without"]]
        expected = krippendorff.alpha(reliability_data=dense, level_of_measurement=level,
                                      value_domain=list(range(8)))
        assert record["value"] == pytest.approx(expected, abs=1e-9)
        assert record["ci95"][0] <= record["value"] <= record["ci95"][1] + 1e-9


def test_its_alpha_without_outliers_drops_exactly_them(tmp_path, demos):
    document = analyze(tmp_path, "demo-coref")
    data = study_data(study=demos["demo-coref"].study)
    (record,) = [a for a in document["alpha"] if a["scale"] == "raw" and a["items"] == "all"
                 and a["level"] == "ordinal" and a["without"]]
    keep = [n for n, a in enumerate(data.annotators) if a not in record["without"]]
    expected = krippendorff.alpha(reliability_data=dense_of(data)[keep], level_of_measurement="ordinal",
                                  value_domain=list(range(8)))
    assert record["value"] == pytest.approx(expected, abs=1e-9)


def test_it_uses_the_same_pseudonyms_as_the_rest_of_the_app(tmp_path, demos):
    study = demos["demo-coref"].study
    document = analyze(tmp_path, "demo-coref")
    assert document["annotators"] == sorted(stored_pseudonyms(study=study).values(),
                                            key=lambda a: int(a[1:]))


def test_it_records_every_setting_and_honours_overrides(tmp_path, demos):
    document = analyze(tmp_path, "demo-coref", "--level", "interval", "--trust-variant",
                       "notebook", "--simple-threshold", "2")
    settings = document["settings"]
    assert (settings["level"], settings["trust_variant"], settings["simple_threshold"]) == (
        "interval", "notebook", 2)
    assert "heuristics" in settings and settings["bootstrap_samples"] == 1000
    assert {t["level"] for t in document["trust"]} == {"interval"}
    assert {t["variant"] for t in document["trust"]} == {"notebook"}
    run = AnalysisRun.objects.get()
    assert run.status == "done" and run.progress == 100 and run.results["settings"] == settings


def test_it_is_reproducible(tmp_path, demos):
    first = analyze(tmp_path, "demo-coref")
    second = analyze(tmp_path, "demo-coref")
    for doc in (first, second):
        doc.pop("generated_at")
        doc["study"].pop("run")
    assert first == second


def test_it_explains_an_unknown_study(db):
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("analyze", "nope")


def test_the_selector_loads_a_study_in_three_queries(demos, django_assert_num_queries):
    study = demos["demo-coref"].study
    with django_assert_num_queries(3):  # the items, the answers, the stored pseudonyms
        data = study_data(study=study)
    assert data.n_annotators == 12 and data.n_items == 36 and data.dup_item.size == 36
    assert np.isfinite(data.value).all()
