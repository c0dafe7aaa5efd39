"""Trust coefficients of large studies are computed by default, sampled within the time allowed
(`trust_budget_s`), and every record says which estimate it is (issue 23, point 20). Pure: the
results document is built from arrays, no database."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from core.data import QuestionData, item_columns, question_data_from_answers
from core.results import build_results
from core.stats.trust import sampled_seconds, trust_coefficients
from tests.arrays import dense_of

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/results.schema.json").read_text())
DOMAIN = (1.0, 2.0, 3.0, 4.0, 5.0)
N_ITEMS = 30


def crowd(k: int, seed: int = 0) -> list[QuestionData]:
    """k annotators rate 30 items 1–5 around a seeded truth, with growing noise; the last
    answers at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, N_ITEMS)
    participant, item, value = [], [], []
    for a in range(k):
        noise = 0.3 + 2.0 * a / k
        for i in range(N_ITEMS):
            if rng.random() < 0.1:
                continue
            v = rng.integers(1, 6) if a == k - 1 else np.clip(round(truth[i] + rng.normal(0, noise)), 1, 5)
            participant.append(1000 + a)
            item.append(i)
            value.append(float(v))
    items = item_columns([f"i{n}" for n in range(N_ITEMS)], [False] * N_ITEMS,
                         [{} for _ in range(N_ITEMS)], [{} for _ in range(N_ITEMS)],
                         [{} for _ in range(N_ITEMS)])
    n = len(value)
    data = question_data_from_answers(items, participant=participant, item=item,
                                      presentation=[1] * n, active_ms=[1500.0] * n,
                                      values={"q": value})
    return [QuestionData("q", data["q"], DOMAIN, {})]


def build(qs, **settings) -> dict:
    doc = build_results(qs, settings={"bootstrap_samples": 10, "correlation_intervals": "none",
                                      **settings}, study={"slug": "s", "title": "S"})
    jsonschema.validate(doc, SCHEMA)
    return doc


def raw(doc: dict) -> dict:
    return next(t for t in doc["trust"] if t["scale"] == "raw" and t["items"] == "all")


@pytest.fixture(scope="module")
def seventy():
    return crowd(70)


def test_seventy_annotators_get_sampled_coefficients_with_their_error_by_default(seventy):
    doc = build(seventy)
    assert doc["settings"]["trust_max_annotators"] is None
    record = raw(doc)
    assert record["method"] == "sampled" and record["n_subsets"] == 20_000
    assert record["samples_wanted"] == 20_000 and "reason" not in record
    names = [f"A{n}" for n in range(1, 71)]
    assert list(record["coefficients"]) == names and None not in record["coefficients"].values()
    # the same seeded estimate as the statistics package, and an error for every coefficient
    expected = trust_coefficients(dense_of(seventy[0].data), level="ordinal", domain=DOMAIN,
                                  n_samples=20_000, rng=np.random.default_rng(0))
    assert [record["coefficients"][a] for a in names] == pytest.approx(expected.coefficients)
    assert [record["mc_error"][a] for a in names] == pytest.approx(expected.mc_error)
    assert all(0 <= e < 0.05 for e in record["mc_error"].values())
    assert record["estimated_s"] == pytest.approx(
        sampled_seconds(k=70, n_items=N_ITEMS, n_values=5, n_samples=20_000), abs=1e-3)
    # the random annotator ranks among the five least trusted
    assert record["ranks"]["A70"] >= 66


def test_below_the_exact_limit_the_coefficients_are_exact_without_an_error():
    record = raw(build(crowd(12)))
    assert record["method"] == "exact" and record["n_subsets"] == 2**12 - 12 - 1
    assert record["mc_error"] is None and "samples_wanted" not in record


def test_a_tight_time_limit_draws_fewer_subsets_and_reports_the_larger_error(seventy):
    per = sampled_seconds(k=70, n_items=N_ITEMS, n_values=5, n_samples=1)
    budget = round(per * 3000, 6)
    record = raw(build(seventy, trust_budget_s=budget))
    assert record["method"] == "sampled" and 2999 <= record["n_subsets"] <= 3000
    assert record["samples_wanted"] == 20_000
    full = raw(build(seventy))
    assert max(record["mc_error"].values()) > 1.5 * max(full["mc_error"].values())


def test_when_even_the_fewest_subsets_do_not_fit_the_coefficients_are_null_with_the_reason(seventy):
    record = raw(build(seventy, trust_budget_s=0.001))
    assert record["method"] is None and record["n_subsets"] == 0
    assert set(record["coefficients"].values()) == {None} and record["mc_error"] is None
    assert record["reason"].startswith("the sampled estimate would take about")
    assert "more than the 0.001 s allowed (setting trust_budget_s)" in record["reason"]


def test_trust_max_annotators_still_caps_for_whoever_sets_it(seventy):
    record = raw(build(seventy, trust_max_annotators=60))
    assert record["method"] is None
    assert record["reason"] == "more than 60 annotators (setting trust_max_annotators)"
