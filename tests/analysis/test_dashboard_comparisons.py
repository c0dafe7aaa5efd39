"""The dashboard's Comparisons section (issue 25, point 4), read from a results document whose
comparisons sections are built by hand after the agreed contract (`comparison_sections` here,
following /work/wt/CONTRACT.md "Results document"): the ranked tables at system and output level,
the strengths and win-probability charts, reliability with its plain sentence, consistency per
annotator with the flagged ones; not shown at all for a run without comparison records."""

from __future__ import annotations

import copy
import html as html_module
import re
from itertools import permutations
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from analysis.charts import SECTIONS, build_charts, chart_data
from analysis.charts.comparisons import comparison_charts
from analysis.dashboard_comparisons import (
    comparisons_section,
    flag_reason,
    reason_text,
    reliability_sentence,
)
from analysis.models import AnalysisRun
from tests.analysis.test_dashboard_readable import analysed, four_annotators, visible_text
from tests.unit.test_charts import assert_valid

QUESTION = "preference"
# (system, strength, low, high, rank, rank_low, rank_high, wins, losses, ties, score)
SYSTEMS = [
    ("mt-large", 1.21, 0.95, 1.48, 1, 1, 1, 96, 18, 6, 0.825),
    ("mt-medium", 0.02, -0.21, 0.25, 2, 2, 3, 58, 52, 10, 0.525),
    ("mt-tuned", -0.04, -0.27, 0.19, 3, 2, 3, 55, 56, 9, 0.496),
    ("mt-small", -1.19, -1.46, -0.93, 4, 4, 4, 19, 102, 5, 0.171),
]
RANKED = [s[0] for s in SYSTEMS]
ANNOTATORS = ["A1", "A2", "A3", "A4", "A5"]
BIASED = "A3"
BIAS_REASON = ("chose the output shown first in 93 % of their decided judgments, more often than "
               "chance (p = 0.0004)")
NO_ESTIMATE = "never compared"  # the analysis' code not_compared, in words


def comparison_sections(question: str = QUESTION) -> dict[str, list[dict[str, Any]]]:
    """The five comparisons sections of one pairwise question (ties allowed: Davidson), as the
    contract describes them: four systems, a clear best and worst, a near tie in the middle;
    eight outputs, one never estimated; one annotator with a position bias."""
    base = {"question": question, "kind": "pairwise"}
    scores = [{**base, "level": "system", "name": s, "judgments": w + lo + t, "wins": w,
               "losses": lo, "ties": t, "score": sc, "strength": st, "strength_low": sl,
               "strength_high": sh, "rank": r, "rank_low": rl, "rank_high": rh,
               "model": "davidson", "reason": ""}
              for s, st, sl, sh, r, rl, rh, w, lo, t, sc in SYSTEMS]
    outputs = [(f"src{n:02d}-{s}", st + (0.1 if n == 1 else -0.1)) for n in (1, 2)
               for s, st, *_ in SYSTEMS]
    outputs.sort(key=lambda o: -o[1])
    for rank, (name, strength) in enumerate(outputs, start=1):
        missing = name == "src02-mt-small"
        scores.append({**base, "level": "output", "name": name, "judgments": 6, "wins": 3,
                       "losses": 2, "ties": 1, "score": 0.583,
                       "strength": None if missing else round(strength, 6),
                       "strength_low": None if missing else round(strength - 0.6, 6),
                       "strength_high": None if missing else round(strength + 0.6, 6),
                       "rank": None if missing else rank,
                       "rank_low": None if missing else max(1, rank - 1),
                       "rank_high": None if missing else min(8, rank + 1),
                       "model": "davidson", "reason": "not_compared" if missing else ""})
    strength = {s[0]: s[1] for s in SYSTEMS}
    wins = [{**base, "level": "system", "a": a, "b": b,
             "probability": round(1 / (1 + 2.718281828 ** (strength[b] - strength[a])), 6)}
            for a, b in permutations(RANKED, 2)]
    reliability = [
        {**base, "level": "system", "split_half": 0.962, "split_half_sd": 0.031, "splits": 100,
         "alpha": 0.412, "agreement": 0.71, "judgments": 600, "annotators": 5,
         "comparisons": 60, "reason": ""},
        {**base, "level": "output", "split_half": None, "split_half_sd": None, "splits": 100,
         "alpha": 0.412, "agreement": 0.71, "judgments": 600, "annotators": 5,
         "comparisons": 60, "reason": "no_split_with_a_correlation"},
    ]
    consistency = []
    for annotator in ANNOTATORS:
        biased = annotator == BIASED
        consistency.append({
            **base, "annotator": annotator, "judgments": 60,
            "circular_triads": 1 if not biased else 2, "triads_expected": 4.0,
            "triads_share": 0.25 if not biased else 0.5,
            "left_share": 0.93 if biased else 0.5, "position_p": 0.0001 if biased else 0.9,
            "position_p_adjusted": 0.0004 if biased else 1.0,
            "competence": 0.31 if biased else 0.88, "ds_competence": 0.42 if biased else 0.9,
            "flagged": biased, "reason": ""})
    correlations = [
        {**base, "level": "system", "measure": "adequacy", "measure_kind": "rating", "n": 4,
         "spearman": 1.0, "low": 0.8, "high": 1.0, "pearson": 0.97, "reason": ""},
        {**base, "level": "system", "measure": "semsim", "measure_kind": "metric", "n": 4,
         "spearman": None, "low": None, "high": None, "pearson": None,
         "reason": "the metric gives every system the same score"},
    ]
    return {"comparison_scores": scores, "comparison_win_probabilities": wins,
            "comparison_reliability": reliability, "comparison_consistency": consistency,
            "comparison_correlations": correlations}


def with_comparisons(run: AnalysisRun, question: str = QUESTION) -> AnalysisRun:
    """Store the comparisons sections in a finished run's document."""
    document = copy.deepcopy(run.results)
    document.update(comparison_sections(question))
    AnalysisRun.objects.filter(pk=run.pk).update(results=document)
    run.refresh_from_db()
    return run


# --- pure: the section and its charts -------------------------------------------------------

def test_the_section_ranks_the_systems_and_folds_the_outputs():
    section = comparisons_section(comparison_sections())
    assert section is not None
    [q] = section.questions
    assert (q.key, q.level, q.kind, q.model) == (QUESTION, "system", "pairwise preference",
                                                 "Davidson")
    assert [r["name"] for r in q.rows] == RANKED
    assert len(q.outputs) == 8 and q.outputs[-1]["name"] == "src02-mt-small"  # no rank: last
    assert q.flagged == 1 and q.consistency[0]["annotator"] == BIASED  # the flagged first
    assert q.notes["consistency"] == {BIAS_REASON: 1}
    assert q.notes["scores"] == {NO_ESTIMATE: 1}
    assert [r["level"] for r in q.reliability] == ["system", "output"]
    assert q.notes["correlations"] == {"the metric gives every system the same score": 1}


def test_a_document_without_comparison_records_has_no_section():
    assert comparisons_section({}) is None
    assert comparisons_section({"comparison_scores": []}) is None
    assert comparisons_section({"comparison_scores": "bad", "questions": []}) is None
    # a malformed record (no question) is skipped, not drawn
    assert comparisons_section({"comparison_scores": [{"name": "x", "level": "system"}]}) is None
    assert comparison_charts({}) == []


def test_outputs_without_systems_are_the_table_and_nothing_is_folded():
    doc = comparison_sections()
    doc["comparison_scores"] = [r for r in doc["comparison_scores"] if r["level"] == "output"]
    doc["comparison_win_probabilities"] = []
    [q] = comparisons_section(doc).questions
    assert q.level == "output" and q.outputs == [] and len(q.rows) == 8
    assert [c.name for c in q.charts] == ["comparison-strengths-preference"]


def test_the_charts_are_valid_vega_lite_and_draw_the_document_numbers():
    charts = {c.name: c for c in comparison_charts(comparison_sections())}
    assert set(charts) == {"comparison-strengths-preference", "comparison-wins-preference"}
    for chart in charts.values():
        assert_valid(chart)
        assert chart.section == "comparisons" and chart.section in SECTIONS
    strengths = chart_data(charts["comparison-strengths-preference"])
    assert [r["name"] for r in strengths] == RANKED
    assert strengths[0]["strength"] == 1.21 and strengths[0]["strength_low"] == 0.95
    spec = charts["comparison-strengths-preference"].spec
    assert spec["layer"][1]["mark"]["type"] == "rule"  # the whisker
    assert spec["layer"][1]["encoding"]["y"]["sort"] == RANKED
    cells = chart_data(charts["comparison-wins-preference"])
    assert len(cells) == 12  # every ordered pair of 4 systems
    cell = next(c for c in cells if (c["row"], c["column"]) == ("mt-large", "mt-small"))
    assert cell["probability"] == pytest.approx(0.916, abs=1e-3) and cell["strong"] is True
    assert cell["label"] == "0.92"
    heat = charts["comparison-wins-preference"].spec["layer"][0]["encoding"]
    assert heat["x"]["sort"] == RANKED and heat["color"]["scale"]["domain"] == [0, 1]


def test_an_output_without_an_estimate_is_drawn_as_n_a_with_its_reason():
    doc = comparison_sections()
    doc["comparison_scores"] = [r for r in doc["comparison_scores"] if r["level"] == "output"]
    [chart] = [c for c in comparison_charts(doc) if "strengths" in c.name]
    assert_valid(chart)
    row = chart_data(chart)[-1]
    assert (row["name"], row["strength"], row["label"], row["reason"]) == (
        "src02-mt-small", None, "n/a", NO_ESTIMATE)


def test_strange_values_never_break_the_charts():
    doc = comparison_sections()
    doc["comparison_scores"][0].update(strength=float("nan"), strength_low="x", rank=True)
    doc["comparison_win_probabilities"][0]["probability"] = float("inf")
    doc["comparison_win_probabilities"].append({"question": QUESTION, "level": "system",
                                                "a": "mt-large", "b": "mt-large",
                                                "probability": 0.5})
    for chart in comparison_charts(doc):
        assert_valid(chart)
    assert comparisons_section(doc) is not None


def test_every_comparative_question_gets_its_own_charts_and_tables():
    doc = comparison_sections("fluent")
    for section, records in comparison_sections("faithful").items():
        doc[section] += records
    doc["questions"] = [{"key": "faithful", "prompt": "Which is more faithful?"}]
    section = comparisons_section(doc)
    assert [q.key for q in section.questions] == ["faithful", "fluent"]
    assert section.questions[0].prompt == "Which is more faithful?"
    assert [c.name for c in section.charts] == [
        "comparison-strengths-faithful", "comparison-wins-faithful",
        "comparison-strengths-fluent", "comparison-wins-fluent"]


@pytest.mark.parametrize("value, words", [
    (0.96, "almost the same order"), (0.8, "fairly reliable"), (0.55, "only in part"),
    (0.2, "more judgments are needed")])
def test_the_reliability_sentence_says_what_the_number_means(value, words):
    sentence = reliability_sentence({"level": "system", "split_half": value})
    assert words in sentence and f"{value:.2f}" in sentence and "systems" in sentence
    assert reliability_sentence({"split_half": None, "reason": "one annotator"}) == (
        "No split-half reliability: one annotator.")


def test_the_analysis_codes_read_as_words_and_a_flag_says_why():
    assert reason_text("not_compared") == "never compared"
    assert reason_text("no_triangle_of_decided_pairs; alpha_undefined") == (
        "no three outputs with all three pairs decided; α is undefined on these judgments")
    assert reason_text("some_new_code") == "some new code"
    assert reason_text("A sentence.") == "A sentence." and reason_text(None) == ""
    careless = {"flagged": True, "circular_triads": 9, "triads_share": 0.9, "left_share": 0.5,
                "position_p": 0.9}
    assert flag_reason(careless) == (
        "made 9 circular triads, 90 % of a random annotator's expected number")
    assert flag_reason({**careless, "flagged": False}) == ""
    assert flag_reason({"flagged": True, "reason": ""}) == "flagged by the analysis"
    assert flag_reason({"flagged": True, "left_share": 0.8, "position_p": 0.00002}) == (
        "chose the output shown first in 80 % of their decided judgments, more often than "
        "chance (p < 0.0001)")
    doc = comparison_sections()
    doc["comparison_questions"] = [{"key": QUESTION, "prompt": "Which translation is better?",
                                    "kind": "pairwise", "counts": {
                                        "judgments": 600, "missing": 3, "annotators": 5,
                                        "comparisons": 60, "outputs": 8}}]
    [q] = comparisons_section(doc).questions
    assert q.prompt == "Which translation is better?" and q.counts["missing"] == 3
    assert q.notes["consistency"] == {BIAS_REASON: 1}


# --- the page -------------------------------------------------------------------------------

@pytest.fixture
def study(alice, make_study):
    return four_annotators(alice, make_study)


def dashboard(client: Client, study, **query: str) -> str:
    response = client.get(reverse("analysis:dashboard", args=[study.slug]), query)
    assert response.status_code == 200
    return response.content.decode()


def comparisons_html(html: str) -> str:
    match = re.search(r'<section class="card" id="comparisons".*?</section>', html, flags=re.S)
    assert match, "no Comparisons section"
    return match[0]


@pytest.mark.django_db
def test_the_page_shows_the_section_with_its_tables_and_charts(alice_client, study):
    run = with_comparisons(analysed(study))
    html = dashboard(alice_client, study)
    assert '<a href="#comparisons">Comparisons</a>' in html
    section = comparisons_html(html)
    rows = re.findall(r'<tr class="comparison-row" data-name="([^"]+)"',
                      section.split('id="comparison-outputs-preference"')[0])
    assert rows == RANKED
    text = html_module.unescape(visible_text(section))
    assert "1 (1–1) mt-large 1.210 [0.95, 1.48] 0.825 96 / 18 / 6 120" in text
    assert "3 (2–3) mt-tuned -0.040 [-0.27, 0.19] 0.496 55 / 56 / 9 120" in text
    assert "Each output (8)" in text
    assert re.search(r"— \(—\) src02-mt-small —\s*1 — 0.583", text), text
    assert "1 Never compared." in text
    # reliability, with its plain sentence and the reason where there is no number
    assert "Systems 0.962 (sd 0.031, 100) 0.412 0.710 600 / 5 / 60" in text
    assert "A split-half reliability of 0.96 means two random halves" in text
    assert ("No split-half reliability: no split of the annotators gave two halves to "
            "correlate.") in text
    # consistency: the flagged annotator first, with the reason
    annotators = re.findall(r'data-annotator="([^"]+)"', section)
    assert annotators[0] == BIASED and sorted(annotators) == ANNOTATORS
    assert "A3 60 2 (random 4.0; share 0.50) 0.93 (p 0.0001, Holm 0.0004) 0.31 0.42 flagged 1 A1" in text
    assert f"1 {BIAS_REASON[0].upper()}{BIAS_REASON[1:]}." in text
    assert "1 of 5 annotators flagged" in text
    assert "adequacy (mean rating) system 1.000 [0.80, 1.00] 0.970 4" in text
    for name in ("comparison-strengths-preference", "comparison-wins-preference"):
        assert f'data-chart="{name}"' in section
    assert re.search(r'class="method" href="[^"]*/comparisons/?"', section), "no method link"
    assert run.results["comparison_scores"]


@pytest.mark.django_db
def test_the_charts_download_from_the_dashboard_links(alice_client, study):
    with_comparisons(analysed(study))
    url = reverse("analysis:chart_spec", args=[study.slug, "comparison-wins-preference"])
    response = alice_client.get(url)
    assert response.status_code == 200 and b'"P(row wins)"' in response.content
    url = reverse("analysis:chart_data", args=[study.slug, "comparison-strengths-preference",
                                                "csv"])
    response = alice_client.get(url)
    assert response.status_code == 200
    assert response.content.decode().splitlines()[1].startswith("mt-large,")


@pytest.mark.django_db
def test_a_run_without_comparisons_has_no_section(alice_client, study):
    analysed(study)
    html = dashboard(alice_client, study)
    assert 'id="comparisons"' not in html and 'href="#comparisons"' not in html


@pytest.mark.django_db
def test_names_are_escaped(alice_client, study):
    run = analysed(study)
    document = copy.deepcopy(run.results)
    sections = comparison_sections()
    sections["comparison_scores"][0]["name"] = "<script>alert(1)</script>"
    sections["comparison_consistency"][0]["reason"] = "<b>x</b>"
    document.update(sections)
    AnalysisRun.objects.filter(pk=run.pk).update(results=document)
    section = comparisons_html(dashboard(alice_client, study))
    assert "<script>alert(1)</script>" not in section and "&lt;script&gt;" in section
    assert "<b>x</b>" not in section


def test_build_charts_keeps_its_other_charts_and_adds_these():
    charts = build_charts(comparison_sections())
    assert [c.name for c in charts] == ["comparison-strengths-preference",
                                        "comparison-wins-preference"]
