"""Every way in for analysis settings uses AnalysisSettings: the definition file, the dashboard's
form, the API and `analyze` reject a bad value naming it; a run honours every setting."""

import json
from pathlib import Path

import jsonschema
import krippendorff
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from analysis.forms import RunForm
from analysis.models import AnalysisRun
from analysis.selectors import study_data
from analysis.services import analysis_run_create, analysis_run_execute, analysis_settings
from core.problems import InputError
from core.settings import AnalysisSettings, SettingsError
from studies.definitions import load_definition
from tests.arrays import dense_of

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/results.schema.json").read_text())


@pytest.fixture
def demos(demo_studies):
    _, created = demo_studies
    return {d.study.slug: d for d in created}


@pytest.fixture
def coref(demos):
    return demos["demo-coref"].study


def analyze(tmp_path, slug, *args) -> dict:
    out = tmp_path / f"{slug}.json"
    call_command("analyze", slug, "--output", str(out), *args)
    document = json.loads(out.read_text())
    jsonschema.validate(document, SCHEMA)
    return document


# --------------------------------------------------------------------------- definition files

TOML = """
slug = "s"
title = "S"
scale = "similarity-1-5"

[analysis]
level = "interval"
excluded_annotators = ["A3"]

[analysis.heuristics.slow]
threshold_s = {threshold}
"""


def test_a_definition_accepts_every_analysis_setting():
    every = AnalysisSettings.from_mapping({
        "level": "nominal", "trust_variant": "notebook", "simple_threshold": 2, "seed": 5,
        "trust_max_annotators": 30, "excluded_annotators": ["A2"],
        "heuristics": {"sentiment": {"sentiment_threshold": 1.2}},
        "quality": {"too_fast": {"reading_speed": 4.5}, "straight_lining": {"run_threshold": 7}},
        "comparison_alpha": 0.01}).to_dict()
    definition = load_definition(json.dumps({"slug": "s", "title": "S", "scale": "similarity-1-5",
                                             "analysis": every}).encode(), "s.json")
    assert definition["analysis"] == every


def test_a_definition_names_the_key_path_of_a_bad_nested_setting():
    assert load_definition(TOML.format(threshold=600).encode(), "s.toml")["analysis"][
        "heuristics"]["slow"]["threshold_s"] == 600.0
    with pytest.raises(InputError) as caught:
        load_definition(TOML.format(threshold=-1).encode(), "s.toml")
    (problem,) = caught.value.problems
    assert problem.column == "analysis.heuristics.slow.threshold_s"
    assert problem.message == "must be greater than 0, not -1"


def test_a_definition_reports_every_bad_setting_at_once():
    raw = {"slug": "s", "title": "S", "scale": "similarity-1-5",
           "analysis": {"seed": -1, "levle": "nominal", "heuristics": {"sentiment": {"min_pairs": 1}}}}
    with pytest.raises(InputError) as caught:
        load_definition(json.dumps(raw).encode(), "s.json")
    assert [p.column for p in caught.value.problems] == [
        "analysis.seed", "analysis.heuristics.sentiment.min_pairs", "analysis.levle"]


def test_a_study_from_a_definition_stores_its_settings_written_out(alice, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML.format(threshold=600))
    call_command("create_study", "--definition", str(path), "--owner", "alice")
    from studies.models import Study

    study = Study.objects.get(slug="s")
    settings = analysis_settings(study=study)
    assert settings.level == "interval" and settings.excluded_annotators == ("A3",)
    assert settings.heuristics.slow.threshold_s == 600.0
    assert study.analysis_settings == settings.to_dict()


# --------------------------------------------------------------------------- the rerun form


def test_the_form_takes_its_fields_and_choices_from_the_settings():
    form = RunForm()
    assert list(form.fields)[:3] == ["level", "trust_variant", "simple_threshold"]
    assert [c for c, _ in form.fields["level"].choices] == ["nominal", "ordinal", "interval", "ratio"]
    assert dict(form.fields["trust_variant"].choices)["paper"] == \
        "paper (Borovikova et al. 2022, Algorithm 1)"
    assert (form.fields["simple_threshold"].min_value, form.fields["seed"].min_value) == (1, 0)


@pytest.mark.parametrize(("field", "value"), [
    ("level", "fancy"), ("simple_threshold", "0"), ("seed", "-1"),
    ("excluded_annotators", "A3, B7")])
def test_the_form_rejects_a_bad_value_naming_the_field(field, value):
    data = {"level": "ordinal", "trust_variant": "paper", "simple_threshold": "3", field: value}
    form = RunForm(data)
    assert not form.is_valid() and list(form.errors) == [field]


def test_the_form_reads_pseudonyms_and_leaves_empty_fields_to_the_study():
    form = RunForm({"level": "ordinal", "trust_variant": "paper", "simple_threshold": "3",
                    "seed": "", "excluded_annotators": "a7 A3,A3"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {"level": "ordinal", "trust_variant": "paper",
                                 "simple_threshold": 3, "excluded_annotators": ["A7", "A3", "A3"]}
    assert RunForm.initial_from(AnalysisSettings(excluded_annotators=["A3"]))[
        "excluded_annotators"] == ["A3"]


def test_the_form_starts_from_stored_settings_even_those_an_older_version_let_through():
    # A run of an older version: only some keys, and a negative seed the API accepted then.
    initial = RunForm.initial_from({"level": "interval", "seed": -5, "simple_threshold": 2,
                                    "heuristics": {"slow": {"threshold_s": 60}}})
    assert {k: initial[k] for k in RunForm.MAIN} == {
        "level": "interval", "trust_variant": "paper", "simple_threshold": 2, "seed": 0,
        "excluded_annotators": []}
    assert initial["heuristics.slow.threshold_s"] == 60
    assert initial["quality.too_fast.floor_s"] == 1.0  # not stored by that version: the default
    assert initial["quality.too_fast.reading_speed"] is None


def test_the_form_offers_every_other_setting_by_its_key_path():
    from core.settings import knobs

    form = RunForm()
    assert set(form.fields) == set(knobs())
    assert [f.name for f in form.advanced_fields()] == [p for p in knobs() if p not in RunForm.MAIN]
    posted = RunForm({"level": "ordinal", "trust_variant": "paper", "simple_threshold": "3",
                      "quality.too_fast.floor_s": "2.5", "outlier_threshold": "0.4",
                      "quality.straight_lining.run_threshold": "", "correlation_intervals": ""})
    assert posted.is_valid(), posted.errors
    assert posted.cleaned_data == {"level": "ordinal", "trust_variant": "paper",
                                   "simple_threshold": 3, "outlier_threshold": 0.4,
                                   "excluded_annotators": [],
                                   "quality": {"too_fast": {"floor_s": 2.5}}}
    bad = RunForm({"level": "ordinal", "trust_variant": "paper", "simple_threshold": "3",
                   "quality.too_fast.threshold": "2"})
    assert not bad.is_valid() and list(bad.errors) == ["quality.too_fast.threshold"]


def test_a_bad_value_posted_to_the_dashboard_starts_nothing_and_says_why(coref):
    client = Client()
    client.force_login(coref.owner)
    dashboard = reverse("analysis:dashboard", kwargs={"slug": coref.slug})
    response = client.post(reverse("analysis:run_start", kwargs={"slug": coref.slug}), {
        "level": "ordinal", "trust_variant": "paper", "simple_threshold": "2",
        "excluded_annotators": "A0"}, follow=True)
    assert response.redirect_chain[-1][0] == dashboard and not AnalysisRun.objects.exists()
    assert "Leave out annotators: must list pseudonyms like A3" in response.content.decode()


def test_the_form_posts_an_exclusion_and_starts_from_the_shown_run(coref):
    client = Client()
    client.force_login(coref.owner)
    client.post(reverse("analysis:run_start", kwargs={"slug": coref.slug}), {
        "level": "ordinal", "trust_variant": "paper", "simple_threshold": "3", "seed": "4",
        "excluded_annotators": "A2, A5"})
    run = AnalysisRun.objects.get()
    assert (run.settings["seed"], run.settings["excluded_annotators"]) == (4, ["A2", "A5"])
    analysis_run_execute(run_id=run.pk)
    html = client.get(reverse("analysis:dashboard", kwargs={"slug": coref.slug})).content.decode()
    assert 'value="A2, A5"' in html and 'id="excluded-annotators">A2, A5<' in html


# --------------------------------------------------------------------------- the API


@pytest.fixture
def api(coref):
    client = APIClient()
    client.force_authenticate(coref.owner)
    return client


@pytest.mark.parametrize(("body", "errors"), [
    ({"simple_threshold": 0}, {"simple_threshold": ["must be between 1 and 1000, not 0"]}),
    ({"seed": -1}, {"seed": ["must be at least 0, not -1"]}),
    ({"bootstrap_confidence": 1.5}, {"bootstrap_confidence": ["must be strictly between 0 and 1, not 1.5"]}),
    ({"heuristics": {"slow": {"threshold_s": -1}}},
     {"heuristics": {"slow": {"threshold_s": ["must be greater than 0, not -1"]}}}),
    ({"heuristics": {"slow": {"treshold_s": 1}}},
     {"heuristics": {"slow": {"treshold_s": ["unknown key 'treshold_s'"]}}}),
    ({"levle": "nominal"}, {"levle": ["unknown key"]}),
    ({"quality": {"too_fast": {"floor_s": -1}}},
     {"quality": {"too_fast": {"floor_s": ["must be between 0 and 3600, not -1"]}}}),
    ({"comparison_alpha": 0}, {"comparison_alpha": ["must be strictly between 0 and 1, not 0"]}),
])
def test_the_api_rejects_a_bad_value_naming_the_field(api, coref, body, errors):
    response = api.post(f"/api/studies/{coref.slug}/runs/", body, format="json")
    assert response.status_code == 400 and response.json() == errors
    assert not AnalysisRun.objects.exists()


def test_the_api_accepts_every_setting(api, coref):
    body = {"trust_max_annotators": 5, "excluded_annotators": ["A4"], "noise_max_gamma": 0.1,
            "heuristics": {"disagreeable": {"threshold": 0.75}},
            "quality": {"too_fast": {"reading_speed": 4}, "duplicate_inconsistency": {"tolerance": 0}},
            "outlier_threshold": 0.3, "trust_samples": 500, "trust_max_exact": 10}
    response = api.post(f"/api/studies/{coref.slug}/runs/", body, format="json")
    assert response.status_code == 201
    settings = response.json()["settings"]
    assert settings == AnalysisSettings.from_mapping(body).to_dict()


# --------------------------------------------------------------------------- analyze


@pytest.mark.parametrize(("args", "named"), [
    (["--simple-threshold", "0"], "simple_threshold: must be between 1 and 1000"),
    (["--seed", "-2"], "seed: must be at least 0"),
    (["--set", "heuristics.slow.threshold_s=-5"], "heuristics.slow.threshold_s: must be greater than 0"),
    (["--set", "heuristics.slw.threshold_s=5"], "heuristics.slw: unknown key 'slw'"),
    (["--level", "fancy"], "--level"),
    (["--set", "seed"], "--set takes KEY=VALUE"),
    (["--set", "quality.too_fast.min_answers=0"], "quality.too_fast.min_answers: must be at least 1"),
])
def test_analyze_rejects_a_bad_value_naming_the_setting(coref, args, named):
    with pytest.raises(CommandError, match=named.replace("(", r"\(")):
        call_command("analyze", coref.slug, *args)
    assert not AnalysisRun.objects.exists()


def test_analyze_sets_any_setting_and_records_the_whole_object(tmp_path, coref):
    document = analyze(tmp_path, coref.slug, "--trust-max-annotators", "30",
                       "--set", "heuristics.slow.threshold_s=0.1",
                       "--set", "heuristics.low_variance.min_ratings=3",
                       "--set", "quality.too_fast.floor_s=3600")
    settings = document["settings"]
    expected = AnalysisSettings.from_mapping({"trust_max_annotators": 30, "heuristics": {
        "slow": {"threshold_s": 0.1}, "low_variance": {"min_ratings": 3}},
        "quality": {"too_fast": {"floor_s": 3600}}}).to_dict()
    for key, value in expected.items():
        if key not in ("heuristics", "quality"):
            assert settings[key] == value, key
    for section in ("heuristics", "quality"):  # each rule also records what it applied
        for rule, params in expected[section].items():
            assert params.items() <= settings[section][rule].items(), rule
    slow = [h for h in document["heuristics"] if h["rule"] == "slow"]
    assert {h["threshold"] for h in slow} == {0.1}
    assert all(h["flagged"] for h in slow if h["value"] is not None)  # everyone takes > 0.1 s (the demo clicker: 0.15–0.3 s)
    assert settings["heuristics"]["low_variance"] == {"threshold": 1.0, "min_ratings": 3, "ddof": 1}
    fast = [q for q in document["quality"] if q["rule"] == "too_fast"]
    assert fast and all(q["flagged"] for q in fast)  # nobody answers in under an hour
    assert settings["quality"]["too_fast"]["floor"] == "fixed"


# --------------------------------------------------------------------------- runs honour them


def test_a_run_leaves_out_the_excluded_annotators(tmp_path, coref):
    full = study_data(study=coref)
    document = analyze(tmp_path, coref.slug, "--excluded-annotators", "A3")
    assert document["annotators"] == [a for a in full.annotators if a != "A3"]
    assert document["settings"]["excluded_annotators"] == ["A3"]
    left_out = int((full.annotator == full.annotators.index("A3")).sum())
    assert (document["counts"]["excluded_annotators"], document["counts"]["excluded_answers"]) == (
        1, left_out)
    assert document["counts"]["annotators"] == full.n_annotators - 1
    keep = [n for n, a in enumerate(full.annotators) if a != "A3"]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        (record,) = [a for a in document["alpha"] if a["scale"] == "raw" and a["items"] == "all"
                     and a["level"] == level and not a["without"]]
        expected = krippendorff.alpha(reliability_data=dense_of(full)[keep],
                                      level_of_measurement=level, value_domain=list(range(8)))
        assert record["value"] == pytest.approx(expected, abs=1e-9)
    for record in document["trust"]:
        assert "A3" not in record["coefficients"]
    assert "A3" not in {t["annotator"] for t in document["timing"]}
    assert "A3" not in {h["annotator"] for h in document["heuristics"]}


def test_excluding_someone_the_study_does_not_have_fails_the_run_saying_so(coref):
    with pytest.raises(CommandError, match="excluded_annotators: A99 is not an annotator"):
        call_command("analyze", coref.slug, "--excluded-annotators", "A99")
    run = AnalysisRun.objects.get()
    assert run.status == "failed" and "A99 is not an annotator of this study (annotators: A1–A12)" \
        in run.error


def test_a_run_honours_trust_max_annotators(tmp_path, coref):
    document = analyze(tmp_path, coref.slug, "--trust-max-annotators", "11")
    assert document["settings"]["trust_max_annotators"] == 11
    for record in document["trust"]:
        assert record["method"] is None and record["n_subsets"] == 0
        assert set(record["coefficients"].values()) == {None}
        assert record["reason"] == "more than 11 annotators (setting trust_max_annotators)"
    document = analyze(tmp_path, coref.slug, "--trust-max-annotators", "12")
    assert {r["method"] for r in document["trust"]} == {"exact"}


def test_a_run_rejects_settings_the_study_stored_wrongly(coref):
    coref.analysis_settings = {"level": "fancy"}
    with pytest.raises(SettingsError, match="level: must be one of"):
        analysis_run_create(study=coref, enqueue=False)
