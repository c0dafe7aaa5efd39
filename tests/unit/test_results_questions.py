"""The results document per question (pure, no database): every question analysed as if alone.

Two questions share one study's rows (SummEval-style: several 1–5 questions per item, "can't
judge" stored as a missing value); every per-question record equals the statistics package on that
question's own annotators × items matrix, and is what a document of that question alone says.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import krippendorff
import numpy as np
import pytest

from core.data import QuestionData, item_columns, question_data_from_answers
from core.results import SECTIONS, build_results, question_keys, question_view, trust_inputs
from core.results.systems import SYSTEM_SECTIONS
from core.stats.trust import trust_coefficients
from tests.arrays import dense_of

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
LEVELS = ("nominal", "ordinal", "interval", "ratio")
DOMAIN = (1.0, 2.0, 3.0, 4.0, 5.0)
REDUCED = {"1": 0, "2": 0, "3": 1, "4": 2, "5": 2}
SETTINGS = {"bootstrap_samples": 20}
N_ITEMS, PARTICIPANTS = 8, (41, 17, 23, 5, 30)


def answers(seed: int = 3) -> dict:
    """Five annotators rate eight items on two questions; two of them see item 0 again.

    Coherence follows a seeded truth; relevance is noisier, and its "can't judge" (a blank
    with its reason) falls where coherence was answered, and the other way round once.
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=N_ITEMS)
    rows = {"participant": [], "item": [], "presentation": [], "active_ms": []}
    coherence, relevance, cant_c, cant_r = [], [], [], []
    for position in range(N_ITEMS + 1):
        for j, participant in enumerate(PARTICIPANTS):
            if position == N_ITEMS and j >= 2:
                continue
            item = position % N_ITEMS
            rows["participant"].append(participant)
            rows["item"].append(item)
            rows["presentation"].append(2 if position == N_ITEMS else 1)
            rows["active_ms"].append(900.0 + 37 * position + 5 * j)
            c = float(np.clip(truth[item] + rng.integers(-j // 2, j // 2 + 1), 1, 5))
            r = float(rng.integers(1, 6))
            skip_r = (item + j) % 4 == 0
            skip_c = (item, j) == (3, 1)
            coherence.append(np.nan if skip_c else c)
            relevance.append(np.nan if skip_r else r)
            cant_c.append(skip_c)
            cant_r.append(skip_r)
    items = item_columns([f"s{n}" for n in range(N_ITEMS)], [n == 7 for n in range(N_ITEMS)],
                         [{"rouge": (n % 5) / 5, "bleu": (n * 7 % 11) / 11} for n in range(N_ITEMS)],
                         [{"length": n % 3} for n in range(N_ITEMS)],
                         [{} for _ in range(N_ITEMS)])
    return {"items": items, **rows, "values": {"coherence": coherence, "relevance": relevance},
            "cant_judge": {"coherence": cant_c, "relevance": cant_r}}


def questions(keys=("coherence", "relevance")) -> list[QuestionData]:
    a = answers()
    data = question_data_from_answers(a["items"], participant=a["participant"], item=a["item"],
                                      presentation=a["presentation"], active_ms=a["active_ms"],
                                      values=a["values"], cant_judge=a["cant_judge"])
    reductions = {"coherence": {}, "relevance": {"reduced": REDUCED}}
    return [QuestionData(key, data[key], DOMAIN, reductions[key], prompt=key.title() + "?")
            for key in keys]


@pytest.fixture(scope="module")
def document() -> dict:
    doc = build_results(questions(), settings=SETTINGS, study={"slug": "s", "title": "S"})
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_every_record_names_its_question_and_only_time_is_the_studys(document):
    assert document["schema"] == "concord.results/3"
    assert question_keys(document) == ["coherence", "relevance"]
    for section in SECTIONS:
        if section in SYSTEM_SECTIONS:  # no item names a system (tests/unit/test_results_systems.py)
            assert document[section] == [], section
            continue
        assert document[section], section
        for record in document[section]:
            study_wide = section == "timing" or record.get("rule") in (
                "slow", "too_fast", "attention", "straight_lining")
            assert record["question"] is None if study_wide else \
                record["question"] in ("coherence", "relevance"), (section, record)
    assert {(s["question"], s["name"]) for s in document["scales"]} == {
        ("coherence", "raw"), ("relevance", "raw"), ("relevance", "reduced")}


def test_its_alpha_per_question_and_scale_equals_the_krippendorff_package(document):
    for q in questions():
        dense = dense_of(q.data)
        reduced = np.vectorize(lambda v: np.nan if np.isnan(v) else REDUCED[str(int(v))],
                               otypes=[float])(dense)
        scales = [("raw", dense, list(DOMAIN))]
        if q.reductions:
            scales.append(("reduced", reduced, [0, 1, 2]))
        for scale, matrix, domain in scales:
            for level in LEVELS:
                (record,) = [a for a in document["alpha"] if a["question"] == q.key
                             and a["scale"] == scale and a["items"] == "all"
                             and a["level"] == level and not a["without"]]
                expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                              value_domain=domain)
                assert record["value"] == pytest.approx(expected, abs=1e-9), (q.key, scale, level)


def test_its_trust_per_question_equals_the_trust_coefficients_of_its_matrix(document):
    names = document["annotators"]
    for q in questions():
        dense = dense_of(q.data)
        present = [a for a in range(dense.shape[0]) if np.isfinite(dense[a]).any()]
        (record,) = [t for t in document["trust"] if t["question"] == q.key
                     and t["scale"] == "raw" and t["items"] == "all"]
        expected = trust_coefficients(dense[present], level="ordinal", domain=DOMAIN,
                                      variant="paper", max_exact=20)
        got = [record["coefficients"][names[a]] for a in present]
        assert got == pytest.approx(expected.coefficients, abs=1e-12)


def test_cant_judge_is_a_missing_value_counted_per_question(document):
    entries = {q["key"]: q for q in document["questions"]}
    for q in questions():
        counts = entries[q.key]["counts"]
        first = q.data.value
        assert counts["answers"] == np.isfinite(first).sum()
        assert counts["cant_judge"] == counts["blank_answers"] == np.isnan(first).sum() > 0
        assert entries[q.key]["scales"][0]["domain"] == list(DOMAIN)  # never a category
    assert document["counts"]["answers"] == entries["coherence"]["counts"]["answers"]
    assert document["simple_items"] == entries["coherence"]["simple_items"]
    assert document["counts"]["questions"] == 2


def test_time_and_the_slow_rule_are_recorded_once_per_annotator(document):
    n = len(document["annotators"])
    assert len(document["timing"]) == n + 1  # and the pooled record
    rules = [h["rule"] for h in document["heuristics"]]
    assert rules.count("slow") == n and rules.count("low_variance") == 2 * n
    assert len(document["styles"]) == 2 * n


def test_each_question_reads_as_a_document_of_that_question_alone(document):
    # Nobody is slow here (about a second per item), so the correlations' slow rule removes
    # nobody whether the study asks one question or two.
    assert not any(h["flagged"] for h in document["heuristics"] if h["rule"] == "slow")
    for n, q in enumerate(questions()):
        alone = build_results([q], settings=SETTINGS, study={"slug": "s", "title": "S"})
        for section in SECTIONS:
            mine = [r for r in document[section] if r["question"] == q.key]
            assert mine == [r for r in alone[section] if r["question"] == q.key], section
        assert document["questions"][n] == alone["questions"][0]
        view = question_view(document, q.key)
        assert view["scales"] == [s for s in document["scales"] if s["question"] == q.key]
        assert view["alpha"] == [r for r in alone["alpha"]]
        assert view["timing"] == document["timing"]


def test_a_one_question_document_is_the_first_schema_with_questions_named():
    (q,) = questions(("relevance",))
    doc = build_results([q], settings=SETTINGS, study={"slug": "s", "title": "S"})
    assert doc["settings"]["heuristics_reduced_scale"] == "reduced"
    assert doc["questions"][0]["heuristics_reduced_scale"] == "reduced"
    assert doc["settings"]["styles"] == doc["questions"][0]["styles"]
    assert doc["scales"] == [{"question": "relevance", **s} for s in doc["questions"][0]["scales"]]
    assert doc["counts"]["answers"] + doc["counts"]["blank_answers"] == doc["counts"]["responses"]


def test_trust_inputs_are_keyed_by_question_scale_and_items_and_are_used_as_given():
    qs = questions()
    inputs = trust_inputs(qs, settings=SETTINGS)
    assert [i.key for i in inputs] == ["coherence:raw:all", "coherence:raw:simple",
                                       "relevance:raw:all", "relevance:raw:simple",
                                       "relevance:reduced:all", "relevance:reduced:simple"]
    inp = inputs[2]
    given = trust_coefficients(inp.ratings, level=inp.level, domain=inp.domain, variant="paper",
                               max_exact=20)
    forged = replace(given, coefficients=tuple(0.25 for _ in given.coefficients))
    doc = build_results(qs, settings=SETTINGS, study={"slug": "s", "title": "S"},
                        trust_results={("relevance", "raw", "all"): forged})
    (record,) = [t for t in doc["trust"] if (t["question"], t["scale"], t["items"])
                 == ("relevance", "raw", "all")]
    assert set(record["coefficients"].values()) == {0.25}
    (other,) = [t for t in doc["trust"] if (t["question"], t["scale"], t["items"])
                == ("coherence", "raw", "all")]
    assert set(other["coefficients"].values()) != {0.25}


def test_questions_must_share_the_studys_rows():
    first, second = questions()
    a = answers()
    keep = np.arange(len(a["participant"])) != 0
    other = question_data_from_answers(
        a["items"], participant=np.array(a["participant"])[keep],
        item=np.array(a["item"])[keep], presentation=np.array(a["presentation"])[keep],
        active_ms=np.array(a["active_ms"])[keep],
        values={"relevance": np.array(a["values"]["relevance"])[keep]})["relevance"]
    with pytest.raises(ValueError, match="does not share the rows"):
        build_results([first, QuestionData("relevance", other, DOMAIN)], settings=SETTINGS,
                      study={"slug": "s", "title": "S"})
    with pytest.raises(ValueError, match="unique"):
        build_results([first, first], settings=SETTINGS, study={"slug": "s", "title": "S"})
    with pytest.raises(ValueError, match="at least one question"):
        build_results([], settings=SETTINGS, study={"slug": "s", "title": "S"})
    assert second.data.annotators == first.data.annotators


def test_excluded_annotators_leave_every_question(document):
    doc = build_results(questions(), settings={**SETTINGS, "excluded_annotators": ["A2"]},
                        study={"slug": "s", "title": "S"})
    assert doc["annotators"] == ["A1", "A3", "A4", "A5"]
    for section in ("trust", "heuristics", "styles", "timing"):
        assert all(r.get("annotator") != "A2" and "A2" not in r.get("coefficients", {})
                   for r in doc[section]), section
    excluded = {q["key"]: q["counts"]["excluded_answers"] for q in doc["questions"]}
    for q in questions():
        assert excluded[q.key] == np.isfinite(q.data.value[q.data.annotator == 1]).sum()


@pytest.mark.parametrize("which", ["baseline", "none"])
def test_correlation_intervals_can_be_limited_to_the_baseline_or_left_out(document, which):
    limited = build_results(questions(), settings={**SETTINGS, "correlation_intervals": which},
                            study={"slug": "s", "title": "S"})
    jsonschema.validate(limited, SCHEMA)
    full = {json.dumps([r["question"], r["table"], r["rules"], r.get("set"), r.get("style"),
                        r.get("filtered"), r["metric"]]): r
            for r in document["correlation_intervals"]}
    assert len(limited["correlation_intervals"]) == len(full)
    for r in limited["correlation_intervals"]:
        key = json.dumps([r["question"], r["table"], r["rules"], r.get("set"), r.get("style"),
                          r.get("filtered"), r["metric"]])
        if which == "baseline" and not r["rules"]:
            assert r["pearson_ci"] == full[key]["pearson_ci"] is not None
        else:
            assert r["pearson_ci"] is None and "correlation_intervals" in r["reason"]
    # nothing else depends on the intervals
    assert limited["correlations"] == document["correlations"]


def test_outliers_that_would_leave_fewer_than_two_annotators_are_not_removed():
    # An outlier line at 0.99 makes nearly everyone an outlier: removing them would leave fewer
    # than two annotators, so alpha is not recomputed without them, and the record says why.
    doc = build_results(questions(("coherence",)),
                        settings={**SETTINGS, "outlier_threshold": 0.99},
                        study={"slug": "s", "title": "S"})
    jsonschema.validate(doc, SCHEMA)
    trust = [t for t in doc["trust"] if t["scale"] == "raw" and t["items"] == "all"]
    assert len(trust[0]["outliers"]) >= len(PARTICIPANTS) - 1
    without = [a for a in doc["alpha"] if a["without"] and a["items"] == "all"]
    assert without and all(a["value"] is None and a["reason"].startswith(
        "outliers not removed: without ") and "alpha needs two" in a["reason"] for a in without)
    # The alpha of everyone is still there.
    assert all(a["value"] is not None for a in doc["alpha"] if not a["without"]
               and a["items"] == "all")


def test_correlation_intervals_in_batches_of_one_pair_are_the_same(document, monkeypatch):
    """At crowd size the intervals are computed a few human sides at a time (a memory bound);
    batches of a single pair give every record the same interval."""
    import core.stats.correlation_uncertainty as module

    monkeypatch.setattr(module, "_BATCH_BYTES", 1)
    assert module.batch_pairs(N_ITEMS) == 1
    doc = build_results(questions(), settings=SETTINGS, study={"slug": "s", "title": "S"})
    assert document["correlation_intervals"]  # there is something to compare
    assert doc["correlation_intervals"] == document["correlation_intervals"]
