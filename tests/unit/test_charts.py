"""Chart specs from a results document (pure, no database): valid Vega-Lite v6, the document's
numbers, nulls with their reasons, no chart for an empty section, and never a crash."""

from __future__ import annotations

import copy
import json
import math
from functools import cache
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.charts import SECTIONS, VEGA_LITE_SCHEMA, Chart, build_charts, chart_data
from analysis.dashboard import rule_set_name

ROOT = Path(__file__).resolve().parents[2]
RESULTS_SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
NAMES = {"trust", "alpha", "duplicates", "timing", "heuristics", "correlations", "gaps-scatter",
         "gaps-mean", "weights", "noise"}


@cache
def vega_lite_validator() -> jsonschema.Draft7Validator:
    import altair

    path = Path(altair.__file__).parent / "vegalite/v6/schema/vega-lite-schema.json"
    return jsonschema.Draft7Validator(json.loads(path.read_text()))


def assert_valid(chart: Chart) -> None:
    errors = list(vega_lite_validator().iter_errors(chart.spec))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        pytest.fail(f"{chart.name}: {best.message[:500]} at {list(best.absolute_path)}")
    assert chart.spec["$schema"] == VEGA_LITE_SCHEMA
    assert chart.spec["description"] == chart.description and chart.description
    assert chart.spec["title"]["text"] == chart.title
    json.dumps(chart.spec, allow_nan=False)  # strict JSON: no NaN or Infinity
    for row in chart_data(chart):  # flat rows, ready for CSV
        assert all(v is None or isinstance(v, (str, int, float, bool)) for v in row.values()), row


def by_name(charts: list[Chart]) -> dict[str, Chart]:
    names = [c.name for c in charts]
    assert len(names) == len(set(names)), names
    return {c.name: c for c in charts}


def rows(chart: Chart, **match) -> list[dict]:
    return [r for r in chart_data(chart) if all(r.get(k) == v for k, v in match.items())]


def per_question(doc: dict, question: str = "rating") -> dict:
    """Make a one-question full document `concord.results/3`: every record names its question
    (null for timing and the slow rule), ``questions`` describes it, and it carries its item
    sections (``item_gaps``) with empty summaries of them (the charts read the full ones)."""
    doc["schema"] = "concord.results/3"
    doc.setdefault("largest_gaps", [])
    doc.setdefault("item_gap_sample", [])
    doc.setdefault("item_gap_metrics", list(dict.fromkeys(g["metric"] for g in doc["item_gaps"])))
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
                    "heuristics", "styles", "correlations", "noise", "timing", "scales"):
        for record in doc[section]:
            study_wide = section == "timing" or record.get("rule") == "slow"
            record["question"] = None if study_wide else question
    counts = {"answers": 0, "blank_answers": 0, "cant_judge": 0, "excluded_answers": 0,
              "simple_items": len(doc["simple_items"])}
    doc["questions"] = [{"key": question, "prompt": "", "counts": counts,
                         "scales": [{k: v for k, v in s.items() if k != "question"}
                                    for s in doc["scales"]],
                         "simple_items": doc["simple_items"]}]
    return doc


def document() -> dict:
    """A small, complete document: three annotators, two scales, every section, a few nulls."""
    annotators = ["A1", "A2", "A3"]
    doc = {
        "schema": "concord.results/1",
        "study": {"slug": "s", "title": "S", "run": 1, "code_version": "abc"},
        "generated_at": "2025-01-01T00:00:00Z",
        "settings": {"level": "ordinal", "trust_variant": "paper", "simple_threshold": 3,
                     "bootstrap_samples": 100, "seed": 0, "outlier_threshold": 0.5,
                     "noise_max_gamma": 0.05},
        "annotators": annotators,
        "scales": [{"name": "raw", "domain": [0, 1, 2, 3]}, {"name": "reduced", "domain": [0, 1]}],
        "items": ["i1", "i2", "i3"], "simple_items": ["i1"],
        "counts": {"annotators": 3, "items": 3, "answers": 9, "blank_answers": 0,
                   "duplicate_pairs": 3, "control_items": 0},
        "alpha": [], "trust": [], "duplicates": [], "metric_gaps": [], "item_gaps": [],
        "error_weights": [], "heuristics": [], "styles": [], "correlations": [], "noise": [],
        "timing": [],
    }
    for scale in ("raw", "reduced"):
        for items in ("all", "simple"):
            for level in ("nominal", "ordinal", "interval", "ratio"):
                doc["alpha"].append({"scale": scale, "items": items, "level": level, "without": [],
                                     "value": 0.61, "n_items": 3, "ci95": [0.5, 0.7]})
            doc["alpha"].append({"scale": scale, "items": items, "level": "ordinal",
                                 "without": ["A3"], "value": 0.8, "n_items": 3,
                                 "ci95": [0.7, 0.9]})
            doc["trust"].append({"scale": scale, "items": items, "level": "ordinal",
                                 "variant": "paper", "method": "exact", "n_subsets": 4,
                                 "coefficients": {"A1": 1.0, "A2": 0.9, "A3": 0.31},
                                 "outliers": ["A3"]})
        doc["alpha"][-2].update(value=None, ci95=None, reason="a single distinct value")
        doc["duplicates"] += [
            {"annotator": "A1", "scale": scale, "pairs": 3, "exact_agreement": 2 / 3,
             "mean_abs_diff": 1 / 3},
            {"annotator": "A2", "scale": scale, "pairs": 0, "exact_agreement": None,
             "mean_abs_diff": None, "reason": "no duplicate pair answered twice"},
            {"annotator": "A3", "scale": scale, "pairs": 3, "exact_agreement": 0.0,
             "mean_abs_diff": 2.5},
        ]
        for aggregate in ("mean", "mode"):
            for metric, gap in (("MUC", 0.2), ("LEA", None)):
                for items in ("all", "simple"):
                    record = {"scale": scale, "aggregate": aggregate, "items": items,
                              "metric": metric, "mean_abs_gap": gap,
                              "mean_signed_gap": gap and -gap, "n_items": 3}
                    if gap is None:
                        record["reason"] = "metric outside [0, 1]"
                    doc["metric_gaps"].append(record)
                for item, human, value in (("i1", 0.5, 0.9), ("i2", 0.25, 0.3), ("i3", 1.0, 0.1),
                                           ("i4", 0.0, 0.0)):
                    record = {"item": item, "scale": scale, "aggregate": aggregate,
                              "metric": metric, "human": human,
                              "metric_value": value if metric == "MUC" else None,
                              "gap": value - human if metric == "MUC" else None}
                    if metric != "MUC":
                        record["reason"] = "metric outside [0, 1]"
                    doc["item_gaps"].append(record)
        doc["error_weights"] += [
            {"target": "metric:MUC", "scale": scale, "coefficients": {"border": -0.4, "noise": 0.1},
             "r2": 0.9, "n_items": 3},
            {"target": "human:mean", "scale": scale,
             "coefficients": {"border": -0.2, "noise": None}, "r2": 0.5, "n_items": 3},
            {"target": "annotator:A2", "scale": scale, "coefficients": {"border": 0.0, "noise": 0.0},
             "r2": None, "n_items": 3, "reason": "constant target: R² undefined"},
        ]
    doc["noise"] = [
        {"scale": "raw", "n_items": 1000, "agreed": 900, "disagreed": 100, "p": 0.5, "kappa": 0.8,
         "confidence": 0.95, "t0": 225, "gamma": 125 / 900, "max_disagreements": 33,
         "chance_difference": {"chebyshev": 35.6, "normal": 15.8}},
        {"scale": "reduced", "n_items": 10, "agreed": 0, "disagreed": 10, "p": 0.3, "kappa": 0.1,
         "confidence": 0.95, "t0": 10, "gamma": None, "max_disagreements": None,
         "chance_difference": {"chebyshev": None, "normal": None},
         "reason": "no agreed item: the agreed subset is empty"},
    ]
    for rule, values, threshold in (("slow", [10.0, 400.0, 12.0], 300.0),
                                    ("low_variance", [1.5, 1.2, 0.0], 1.0),
                                    ("disagreeable", [None, None, None], 0.5)):
        for annotator, value in zip(annotators, values, strict=True):
            record = {"rule": rule, "annotator": annotator, "value": value,
                      "threshold": threshold,
                      "flagged": value is not None and (value < threshold if rule == "low_variance"
                                                        else value > threshold)}
            if value is None:
                record["reason"] = "fewer than 3 items where the other raters agree"
            doc["heuristics"].append(record)
    doc["styles"] = [{"annotator": a, "style": "neither", "extreme_share": 0.2,
                      "moderate_share": 0.3} for a in annotators]
    for rules, removed, change in (([], [], 0.0), (["slow"], ["A2"], -0.02),
                                   (["low_variance"], ["A3"], 0.1),
                                   (["low_variance", "slow"], ["A2", "A3"], None)):
        for metric in ("MUC", "LEA"):
            record = {"rules": rules, "removed": removed, "metric": metric,
                      "pearson": 0.6 * (1 + (change or 0)), "spearman": 0.5 * (1 + (change or 0)),
                      "pearson_change": change, "spearman_change": change, "n_items": 3}
            if change is None:
                record.update(pearson=None, spearman=None, reason="fewer than 3 items left")
            doc["correlations"].append(record)
    doc["timing"] = [
        {"annotator": "all", "n": 9, "min_s": 2.0, "p05_s": 2.5, "q1_s": 5.0, "median_s": 8.0,
         "q3_s": 12.0, "p95_s": 400.0, "max_s": 450.0},
        {"annotator": "A1", "n": 3, "min_s": 2.0, "p05_s": 2.2, "q1_s": 4.0, "median_s": 6.0,
         "q3_s": 8.0, "p95_s": 9.5, "max_s": 10.0},
        {"annotator": "A2", "n": 3, "min_s": 300.0, "p05_s": 310.0, "q1_s": 350.0,
         "median_s": 400.0, "q3_s": 420.0, "p95_s": 440.0, "max_s": 450.0},
        {"annotator": "A3", "n": 0, "min_s": None, "p05_s": None, "q1_s": None, "median_s": None,
         "q3_s": None, "p95_s": None, "max_s": None, "reason": "no recorded time"},
    ]
    return per_question(doc)


@pytest.fixture
def doc() -> dict:
    data = document()
    jsonschema.validate(data, RESULTS_SCHEMA)
    return data


def test_every_section_gives_a_valid_chart(doc):
    for scale in ("raw", "reduced"):
        charts = build_charts(doc, scale=scale)
        assert set(by_name(charts)) == NAMES
        for chart in charts:
            assert chart.section in SECTIONS
            assert_valid(chart)
            assert chart_data(chart) == chart.spec["data"]["values"]
            assert chart_data(chart) is not chart.spec["data"]["values"]  # a copy


def two_questions(doc: dict) -> dict:
    """The document with a second question, "fluency", whose records differ from the first's."""
    two = copy.deepcopy(doc)
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
                    "heuristics", "styles", "correlations", "noise", "scales"):
        for record in doc[section]:
            if record.get("question") is None:
                continue
            other = {**copy.deepcopy(record), "question": "fluency"}
            if section == "trust":
                other["coefficients"] = {"A1": 0.2, "A2": 1.0, "A3": 0.9}
                other["outliers"] = ["A1"]
            two[section].append(other)
    two["questions"].append({**copy.deepcopy(doc["questions"][0]), "key": "fluency",
                             "prompt": "Is it fluent?", "simple_items": []})
    return two


def test_it_draws_the_chosen_question_and_names_it(doc):
    two = two_questions(doc)
    jsonschema.validate(two, RESULTS_SCHEMA)
    first, second = by_name(build_charts(two)), by_name(build_charts(two, question="fluency"))
    assert rows(first["trust"], annotator="A3")[0]["coefficient"] == 0.31
    assert rows(second["trust"], annotator="A1")[0]["coefficient"] == 0.2
    assert first["trust"].title == "rating: Trust coefficients (raw scale)"
    assert second["trust"].spec["title"]["text"] == "fluency: Trust coefficients (raw scale)"
    # time is the study's: the same chart, untitled by question, whichever question is shown
    assert first["timing"].spec == second["timing"].spec
    assert "fluency" not in second["timing"].title
    # the slow rule (question null) is in every question's heatmap, once
    slow = [r for r in chart_data(second["heuristics"]) if r["rule"] == "slow"]
    assert len(slow) == len(doc["annotators"])
    # an unknown question reads as the first, a one-question document keeps its titles
    assert by_name(build_charts(two, question="nope"))["trust"].spec == first["trust"].spec
    assert by_name(build_charts(doc))["trust"].title == "Trust coefficients (raw scale)"
    for chart in second.values():
        assert_valid(chart)


def test_a_document_of_schema_1_still_draws(doc):
    old = copy.deepcopy(doc)
    old["schema"] = "concord.results/1"
    del old["questions"]
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
                    "heuristics", "styles", "correlations", "noise", "timing", "scales"):
        for record in old[section]:
            record.pop("question")
    assert {c.name for c in build_charts(old)} == NAMES


def test_the_trust_bars_are_the_coefficients_and_the_outlier_is_flagged(doc):
    chart = by_name(build_charts(doc))["trust"]
    data = {r["annotator"]: r for r in chart_data(chart)}
    assert {a: r["coefficient"] for a, r in data.items()} == {"A1": 1.0, "A2": 0.9, "A3": 0.31}
    assert [a for a, r in data.items() if r["outlier"]] == ["A3"]
    assert data["A3"]["status"] == "outlier" and data["A3"]["label"] == "A3: 0.31"
    layers = chart.spec["layer"]
    assert layers[0]["encoding"]["y"]["sort"] == ["A1", "A2", "A3"]  # most trusted first
    (rule,) = [la for la in layers if la["mark"]["type"] == "rule"]
    assert rule["data"]["values"][0]["threshold"] == 0.5
    assert "A3" in chart.description


def test_the_trust_chart_uses_the_requested_level_when_the_document_has_it(doc):
    other = copy.deepcopy(doc["trust"][0])
    other.update(level="interval", coefficients={"A1": 0.2, "A2": 1.0, "A3": 0.9}, outliers=["A1"])
    doc["trust"].insert(0, other)
    ordinal = by_name(build_charts(doc))["trust"]  # the run's level
    interval = by_name(build_charts(doc, level="interval"))["trust"]
    assert rows(ordinal, outlier=True)[0]["annotator"] == "A3"
    assert rows(interval, outlier=True)[0]["annotator"] == "A1"
    fallback = by_name(build_charts(doc, level="ratio"))["trust"]  # not in the document
    assert len(chart_data(fallback)) == 3


def test_trust_not_computed_is_said_with_the_reason(doc):
    for record in doc["trust"]:
        record.update(coefficients={a: None for a in doc["annotators"]}, outliers=[],
                      method=None, reason="more than 60 annotators")
    chart = by_name(build_charts(doc))["trust"]
    assert_valid(chart)
    assert {r["status"] for r in chart_data(chart)} == {"not computed"}
    assert {r["reason"] for r in chart_data(chart)} == {"more than 60 annotators"}
    assert "more than 60 annotators" in chart.description
    # no bar layer is left to draw (Vega would warn on an empty extent)
    assert [la["mark"]["type"] for la in chart.spec["layer"]] == ["rule", "text"]


def test_the_alpha_points_and_intervals_are_the_document_numbers(doc):
    chart = by_name(build_charts(doc))["alpha"]
    data = chart_data(chart)
    assert len(data) == len([a for a in doc["alpha"] if a["scale"] == "raw"])
    without = rows(chart, without="A3", items="all items")
    assert without == [pytest.approx({**without[0], "alpha": 0.8, "ci_low": 0.7, "ci_high": 0.9})]
    assert without[0]["annotators"] == "without outliers"
    (null,) = rows(chart, alpha=None)
    assert null["reason"] == "a single distinct value" and null["ci_low"] is None
    labels = {r["level_label"] for r in data}
    assert "ordinal (analysis level)" in labels and "interval" in labels
    marked = by_name(build_charts(doc, level="interval"))["alpha"]
    assert "interval (analysis level)" in {r["level_label"] for r in chart_data(marked)}


def test_duplicates_give_agreement_and_difference_per_annotator(doc):
    chart = by_name(build_charts(doc))["duplicates"]
    data = {r["annotator"]: r for r in chart_data(chart)}
    assert data["A1"]["exact_agreement"] == pytest.approx(2 / 3)
    assert data["A3"]["mean_abs_diff"] == 2.5 and data["A3"]["pairs"] == 3
    assert data["A2"]["exact_agreement"] is None
    assert data["A2"]["reason"] == "no duplicate pair answered twice"
    assert len(chart.spec["hconcat"]) == 2


def test_timing_boxes_come_from_the_quantiles_with_the_pooled_median(doc):
    chart = by_name(build_charts(doc))["timing"]
    data = {r["annotator"]: r for r in chart_data(chart)}
    assert data["all"]["kind"] == "pooled" and data["A1"]["kind"] == "annotator"
    for q in ("min_s", "p05_s", "q1_s", "median_s", "q3_s", "p95_s", "max_s"):
        assert data["A2"][q] == doc["timing"][2][q]
    assert data["A3"]["median_s"] is None and data["A3"]["reason"] == "no recorded time"
    layers = chart.spec["layer"]
    scales = {la["encoding"]["x"].get("scale", {}).get("type") for la in layers
              if "field" in la["encoding"].get("x", {})}
    assert scales == {"log"}  # every time > 0
    pooled = [la for la in layers if {"filter": {"field": "kind", "equal": "pooled"}}
              in la.get("transform", [])]
    assert pooled and pooled[0]["mark"]["type"] == "rule"
    assert "8.00 s" in chart.description
    doc["timing"][1]["min_s"] = 0.0  # a zero cannot go on a log scale
    zero = by_name(build_charts(doc))["timing"]
    assert_valid(zero)
    assert "symlog" in json.dumps(zero.spec)


def test_heuristics_mark_the_flagged_cells(doc):
    chart = by_name(build_charts(doc))["heuristics"]
    flagged = {(r["rule"], r["annotator"]) for r in chart_data(chart) if r["flagged"]}
    assert flagged == {("slow", "A2"), ("low_variance", "A3")}
    cell = rows(chart, rule="slow", annotator="A2")[0]
    assert cell["value"] == 400.0 and cell["status"] == "flagged" and cell["label"] == "✕ 400"
    null = rows(chart, rule="disagreeable", annotator="A1")[0]
    assert null["status"] == "not computed" and null["reason"].startswith("fewer than 3")
    assert chart.spec["layer"][0]["encoding"]["y"]["sort"][0].startswith("Slow: mean s >")
    assert "Flagged: A2, A3." in chart.description


def test_the_correlation_changes_follow_solomon_2021_table_3(doc):
    chart = by_name(build_charts(doc))["correlations"]
    assert chart.section == "heuristics"
    data = chart_data(chart)
    assert len(data) == 2 * len(doc["correlations"])  # Pearson and Spearman
    combos = chart.spec["spec"]["layer"][0]["encoding"]["y"]["sort"]
    # the rows carry the names the dashboard's table gives them (one name for a rule set)
    assert combos == ["Baseline (no filter)", "Slow", "Low variance", "Slow + Low variance"]
    assert combos == [rule_set_name(r) for r in ([], ["slow"], ["low_variance"],
                                               ["low_variance", "slow"])]
    # the change is absolute: r after − r of the baseline (0.66 − 0.60), not relative (+10 %)
    (cell,) = rows(chart, combination="Low variance", metric="MUC", measure="Pearson")
    assert cell["change"] == pytest.approx(0.06) and cell["label"] == "+0.06"
    assert cell["removed"] == "A3"
    (cell,) = rows(chart, combination="Slow", metric="LEA", measure="Spearman")
    assert cell["change"] == pytest.approx(-0.01) and cell["label"] == "-0.01"
    (base,) = rows(chart, combination="Baseline (no filter)", metric="LEA", measure="Spearman")
    assert base["correlation"] == 0.5 and base["label"] == "0.50"
    (null,) = rows(chart, combination="Slow + Low variance", metric="LEA", measure="Pearson")
    assert null["change"] is None and null["label"] == "n/a"
    assert null["reason"] == "fewer than 3 items left"
    color = chart.spec["spec"]["layer"][0]["encoding"]["color"]
    assert color["scale"]["domain"] == pytest.approx([-0.06, 0.06])
    assert color["scale"]["domainMid"] == 0 and color["title"] == "change of r"
    tips = {t["field"]: t for t in chart.spec["spec"]["layer"][0]["encoding"]["tooltip"]}
    assert tips["change"]["title"] == "change from the baseline (r after − r before)"
    assert tips["change"]["format"] == "+.3f"


def test_a_baseline_near_zero_gives_an_absolute_change_not_a_huge_relative_one(doc):
    """The issue's case: a baseline r of 0.01 and −0.0404 after filtering is a relative change of
    −504 %; the heatmap shows −0.05 (correlation points), labels and colours alike."""
    doc = json.loads(json.dumps(doc))
    for r in doc["correlations"]:
        if r["metric"] == "MUC" and r["rules"] in ([], ["slow"]):
            r["pearson"] = 0.01 if not r["rules"] else -0.0404
            r["pearson_change"] = None if not r["rules"] else -0.0404 / 0.01 - 1
    chart = by_name(build_charts(doc))["correlations"]
    (cell,) = rows(chart, combination="Slow", metric="MUC", measure="Pearson")
    assert cell["change"] == pytest.approx(-0.0504) and cell["label"] == "-0.05"
    assert "%" not in json.dumps(chart_data(chart))
    domain = chart.spec["spec"]["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert domain[1] < 1  # correlation points, never hundreds of percent


def test_the_gap_scatter_is_item_gaps_and_the_bars_metric_gaps(doc):
    charts = by_name(build_charts(doc))
    scatter = charts["gaps-scatter"]
    data = chart_data(scatter)
    expected = [g for g in doc["item_gaps"] if g["scale"] == "raw" and g["aggregate"] == "mean"]
    assert [(r["item"], r["metric"], r["human"], r["metric_value"]) for r in data] == [
        (g["item"], g["metric"], g["human"], g["metric_value"]) for g in expected]
    largest = {r["item"] for r in data if r["largest"]}
    assert largest == {"i1", "i3", "i2"}  # |gap| 0.4, 0.9, 0.05 beat i4's 0
    assert [p["title"]["text"] for p in scatter.spec["concat"]] == ["MUC", "LEA"]
    assert scatter.spec["concat"][1]["title"]["subtitle"] == "4 items without a value"
    bars = charts["gaps-mean"]
    assert len(chart_data(bars)) == len([g for g in doc["metric_gaps"] if g["scale"] == "raw"])
    (muc,) = rows(bars, metric="MUC", aggregate="mode", items="simple items")
    assert muc["mean_abs_gap"] == 0.2 and muc["mean_signed_gap"] == -0.2
    assert {r["reason"] for r in rows(bars, metric="LEA")} == {"metric outside [0, 1]"}


def test_the_weights_heatmap_is_the_coefficients_with_r2_in_the_row_label(doc):
    chart = by_name(build_charts(doc))["weights"]
    (cell,) = rows(chart, target="metric:MUC", feature="border")
    assert cell["coefficient"] == -0.4 and cell["row"] == "MUC (metric) · R² 0.90"
    (none,) = rows(chart, target="human:mean", feature="noise")
    assert none["coefficient"] is None and none["reason"] == "constant feature"
    (constant,) = rows(chart, target="annotator:A2", feature="noise")
    assert constant["r2"] is None and constant["reason"].startswith("constant target")
    scale = chart.spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domain"] == [-0.4, 0.4] and scale["domainMid"] == 0
    order = chart.spec["layer"][0]["encoding"]["y"]["sort"]
    assert order == ["MUC (metric) · R² 0.90", "humans, mean · R² 0.50", "A2 · R² n/a"]


def test_the_noise_chart_splits_the_items_as_beigman_klebanov_2009(doc):
    chart = by_name(build_charts(doc))["noise"]
    raw, reduced = chart_data(chart)
    assert raw["disagreed (hard)"] == 100
    assert raw["agreed by chance (upper bound)"] == 125  # t0 - d, as in §3.1 of the paper
    assert raw["agreed (easy)"] == 775 and raw["agreed (not split)"] is None
    assert raw["gamma"] == pytest.approx(125 / 900) and raw["max_gamma"] == 0.05
    assert reduced["gamma"] is None and reduced["reason"].startswith("no agreed item")
    assert reduced["agreed by chance (upper bound)"] == 0 and reduced["agreed (easy)"] == 0


def test_the_descriptions_cite_the_papers_by_author_and_year(doc):
    charts = by_name(build_charts(doc))
    cited = {"trust": "(Borovikova et al. 2022, Algorithm 1)",
             "heuristics": "Solomon et al. (2021), §5.1",
             "correlations": "Solomon et al. (2021), table 3",
             "gaps-mean": "Borovikova et al. (2022), table 2",
             "weights": "Borovikova et al. (2022), table 3",
             "noise": "The easy/hard model of Beigman Klebanov and Beigman (2009)"}
    for name, citation in cited.items():
        assert citation in charts[name].description, name


def test_empty_sections_give_no_chart(doc):
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
                    "heuristics", "correlations", "noise", "timing"):
        doc[section] = []
    assert build_charts(doc) == []
    assert build_charts({}) == []


def test_a_scale_without_records_keeps_only_the_scale_free_charts(doc):
    names = set(by_name(build_charts(doc, scale="gravity")))
    assert names == {"timing", "heuristics", "correlations", "noise"}


def test_strange_values_never_break_a_chart(doc):
    doc["timing"][1].update(min_s=float("nan"), max_s=float("inf"))  # not JSON, but not a crash
    doc["trust"][0]["coefficients"]["A2"] = "high"
    doc["heuristics"][0]["value"] = True
    doc["duplicates"][0]["pairs"] = 2.5
    doc["noise"][0]["t0"] = 50  # t0 < d: inconsistent, so not split
    doc["correlations"][0]["rules"] = ["unknown_rule"]
    charts = by_name(build_charts(doc))
    for chart in charts.values():
        assert_valid(chart)
    assert rows(charts["trust"], annotator="A2")[0]["coefficient"] is None
    assert rows(charts["timing"], annotator="A1")[0]["min_s"] is None
    assert chart_data(charts["noise"])[0]["agreed (not split)"] == 900
    assert "unknown rule" in charts["correlations"].description


# --- random well-formed documents -----------------------------------------------------------

NUMBER = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
                   st.integers(-5, 5))
UNIT = st.one_of(st.none(), st.floats(0, 1))
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)
LEVELS = ("nominal", "ordinal", "interval", "ratio")
RULES = ("slow", "low_variance", "high_random", "disagreeable", "sentiment")


def with_reason(record: dict, *keys: str) -> dict:
    if any(record.get(k) is None for k in keys):
        record["reason"] = "because"
    return record


@st.composite
def documents(draw) -> dict:
    annotators = [f"A{i + 1}" for i in range(draw(st.integers(0, 5)))]
    names = ["raw"] + draw(st.lists(st.sampled_from(["reduced", "gravity", "é t.[0]"]),
                                    unique=True, max_size=2))
    items = [f"i{i}" for i in range(draw(st.integers(0, 5)))]
    metrics = draw(st.lists(st.sampled_from(["MUC", "B3", "a.b", "x[1]"]), unique=True,
                            max_size=3))
    people = st.sampled_from(annotators) if annotators else st.just("A1")
    scale = st.sampled_from(names)

    def some(strategy, max_size=8):
        return draw(st.lists(strategy, max_size=max_size))

    alpha = some(st.builds(
        lambda s, it, lv, w, v, n, ci: with_reason(
            {"scale": s, "items": it, "level": lv, "without": w, "value": v, "n_items": n,
             "ci95": ci if v is not None else None}, "value"),
        scale, st.sampled_from(["all", "simple"]), st.sampled_from(LEVELS),
        st.lists(people, max_size=2, unique=True), NUMBER, st.integers(0, 9),
        st.one_of(st.none(), st.lists(st.floats(-1, 1), min_size=2, max_size=2))))
    trust = some(st.builds(
        lambda s, it, lv, co, out: {"scale": s, "items": it, "level": lv, "variant": "paper",
                                    "method": "exact", "n_subsets": 1, "coefficients": co,
                                    "outliers": out},
        scale, st.sampled_from(["all", "simple"]), st.sampled_from(LEVELS),
        st.dictionaries(people, NUMBER, max_size=5), st.lists(people, max_size=2)), 4)
    duplicates = some(st.builds(
        lambda a, s, p, e, m: with_reason({"annotator": a, "scale": s, "pairs": p,
                                           "exact_agreement": e, "mean_abs_diff": m},
                                          "exact_agreement", "mean_abs_diff"),
        people, scale, st.integers(0, 5), UNIT, NUMBER))
    metric = st.sampled_from(metrics) if metrics else st.just("MUC")
    metric_gaps = some(st.builds(
        lambda s, ag, it, m, a, g, n: with_reason(
            {"scale": s, "aggregate": ag, "items": it, "metric": m, "mean_abs_gap": a,
             "mean_signed_gap": g, "n_items": n}, "mean_abs_gap"),
        scale, st.sampled_from(["mean", "mode"]), st.sampled_from(["all", "simple"]), metric,
        UNIT, NUMBER, st.integers(0, 9)))
    item_gaps = some(st.builds(
        lambda i, s, ag, m, h, v, g: with_reason(
            {"item": i, "scale": s, "aggregate": ag, "metric": m, "human": h,
             "metric_value": v, "gap": g}, "human", "metric_value", "gap"),
        st.sampled_from(items) if items else TEXT, scale, st.sampled_from(["mean", "mode"]),
        metric, UNIT, UNIT, NUMBER), 20)
    target = st.one_of(people.map(lambda a: f"annotator:{a}"),
                       st.sampled_from(["human:mean", "human:mode"]),
                       metric.map(lambda m: f"metric:{m}"))
    error_weights = some(st.builds(
        lambda t, s, co, r2: with_reason({"target": t, "scale": s, "coefficients": co, "r2": r2,
                                          "n_items": 3}, "r2"),
        target, scale, st.dictionaries(st.sampled_from(["border", "noise", "type"]), NUMBER,
                                       max_size=3), NUMBER))
    heuristics = some(st.builds(
        lambda r, a, v, t, f: with_reason({"rule": r, "annotator": a, "value": v,
                                           "threshold": t, "flagged": f and v is not None},
                                          "value"),
        st.sampled_from(RULES), people, NUMBER, NUMBER, st.booleans()), 12)
    correlations = some(st.builds(
        lambda rules, rem, m, p, s, pc, sc, n: with_reason(
            {"rules": rules, "removed": rem, "metric": m, "pearson": p, "spearman": s,
             "pearson_change": pc, "spearman_change": sc, "n_items": n},
            "pearson_change", "spearman_change"),
        st.lists(st.sampled_from(RULES), unique=True, max_size=5),
        st.lists(people, unique=True, max_size=3), metric, NUMBER, NUMBER, NUMBER, NUMBER,
        st.integers(0, 9)), 12)

    def noise_record(s, n, agreed, t0, gamma, m, cheb):
        agreed = min(agreed, n)
        return with_reason({"scale": s, "n_items": n, "agreed": agreed, "disagreed": n - agreed,
                            "p": 0.5, "kappa": None, "confidence": 0.95, "t0": t0,
                            "gamma": gamma, "max_disagreements": m,
                            "chance_difference": {"chebyshev": cheb, "normal": cheb}}, "p", "gamma")

    noise = some(st.builds(
        noise_record, scale, st.integers(0, 50), st.integers(0, 50),
        st.one_of(st.none(), st.integers(0, 60)), UNIT,
        st.one_of(st.none(), st.integers(0, 50)), NUMBER), 3)

    def timing_record(a, n, qs):
        record = {"annotator": a, "n": n,
                  **dict(zip(("min_s", "p05_s", "q1_s", "median_s", "q3_s", "p95_s", "max_s"),
                             sorted(qs) if None not in qs else qs, strict=True))}
        return with_reason(record, "median_s")

    timing = some(st.builds(
        timing_record, st.one_of(people, st.just("all")), st.integers(0, 9),
        st.lists(st.one_of(st.none(), st.floats(0, 1e4)), min_size=7, max_size=7)), 6)
    return per_question({
        "schema": "concord.results/1", "study": {"slug": "s", "title": "S"},
        "settings": {"level": draw(st.sampled_from(LEVELS)), "trust_variant": "paper",
                     "simple_threshold": 3, "bootstrap_samples": 10, "seed": 0},
        "annotators": annotators, "scales": [{"name": n, "domain": [0, 1]} for n in names],
        "items": items, "simple_items": [], "counts": {},
        "alpha": alpha, "trust": trust, "duplicates": duplicates, "metric_gaps": metric_gaps,
        "item_gaps": item_gaps, "error_weights": error_weights, "heuristics": heuristics,
        "styles": [], "correlations": correlations, "noise": noise, "timing": timing,
    })


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(documents(), st.sampled_from(["raw", "reduced", "gravity", "é t.[0]", "none"]),
       st.one_of(st.none(), st.sampled_from(LEVELS)))
def test_random_documents_always_give_valid_specs(document, scale, level):
    jsonschema.validate(document, RESULTS_SCHEMA)  # the generator makes well-formed documents
    charts = build_charts(document, scale=scale, level=level)
    assert len({c.name for c in charts}) == len(charts)
    assert {c.name for c in charts} <= NAMES
    for chart in charts:
        assert_valid(chart)
        for row in chart_data(chart):
            for value in row.values():
                assert not (isinstance(value, float) and not math.isfinite(value))


def test_a_large_gap_scatter_is_thinned_but_keeps_the_largest_gaps(doc, monkeypatch):
    import analysis.charts.metrics as charts_module

    assert "evenly spaced sample" not in by_name(build_charts(doc))["gaps-scatter"].description
    monkeypatch.setattr(charts_module, "MAX_SCATTER_POINTS", 2)
    many = copy.deepcopy(doc)
    base = [g for g in many["item_gaps"] if g["scale"] == "raw" and g["aggregate"] == "mean"]
    per_metric = {m: sum(1 for g in base if g["metric"] == m) for m in {g["metric"] for g in base}}
    scatter = by_name(build_charts(many))["gaps-scatter"]
    assert_valid(scatter)
    data = chart_data(scatter)
    for metric, n in per_metric.items():
        drawn = [r for r in data if r["metric"] == metric]
        largest = [r for r in drawn if r["largest"]]
        assert len(drawn) <= 2 + len(largest) and len(drawn) < n
        # the red, named points are never sampled away
        assert len(largest) == min(3, sum(1 for g in base if g["metric"] == metric
                                          and g.get("human") is not None
                                          and g.get("metric_value") is not None))
    assert "evenly spaced sample" in scatter.description
