"""The dashboard's Judges section (issue 27, point 3), read from a results document whose judges
sections are built by hand after the agreed contract (tests/analysis/judges_document.py): one
row per judge and question with the decision in words, each record's numbers in full with its
chart, the section's exports; the "with judges" view labelled on the page, the runs table and
the exports; no section for a run without judges."""

from __future__ import annotations

import csv
import html as html_module
import io
import re

import pytest
from django.test import Client
from django.urls import reverse

from analysis.charts import SECTIONS, build_charts, chart_data
from analysis.charts.judges import judge_charts
from analysis.dashboard_judges import decision, is_with_judges, judges_section
from exports.judge_results import JUDGE_RESULT_COLUMNS, judge_result_rows
from exports.services import export_open
from tests.analysis.judges_document import UNTESTED, judges_sections, with_judges
from tests.analysis.test_dashboard_readable import analysed, four_annotators, visible_text
from tests.unit.test_charts import assert_valid

PASS = "may replace an annotator of this study at ε = 0.2"
FAIL = "may not replace an annotator of this study at ε = 0.2"


# --- pure: the section and its charts -------------------------------------------------------

def test_it_gives_one_row_per_judge_and_question_in_the_judges_order():
    section = judges_section(judges_sections())
    assert section is not None
    assert [(r.judge, r.question, r.scale) for r in section.rows] == [
        ("good", "adequacy", "raw"), ("good", "preference", "choice"),
        ("first-picker", "adequacy", "raw"), ("first-picker", "preference", "choice")]
    assert [r.decision for r in section.rows] == [PASS, f"not tested: {UNTESTED}", FAIL, FAIL]
    assert [r.verdict for r in section.rows] == ["pass", "untested", "fail", "fail"]
    assert section.summary == {"pass": 1, "fail": 2, "untested": 1}
    assert len(section.records) == 5 and section.epsilon == 0.2
    assert [j["name"] for j in section.judges] == ["good", "first-picker"]


def test_a_record_reads_its_correlations_alpha_and_position_bias():
    section = judges_section(judges_sections())
    good = section.rows[0]
    assert good.spearman == {"name": "spearman", "label": "Spearman ρ", "value": 0.81,
                             "low": 0.73, "high": 0.89}
    assert [c["name"] for c in good.correlations] == ["pearson", "spearman", "kendall"]
    assert good.systems["kendall_tau"]["value"] == 1.0 and len(good.systems["scores"]) == 4
    assert [a["annotator"] for a in good.per_annotator] == ["A1", "A2", "A3", "A4", "A5"]
    assert good.per_annotator[0]["test"]["won"] is True
    assert good.per_annotator[0]["alpha"]["replaced_alpha"] == 0.55
    biased = section.rows[3]
    assert biased.comparative and biased.kind == "pairwise preference"
    assert biased.position_bias["first_share"] == 0.86
    assert biased.position_bias["humans_first_share"] == 0.58
    assert biased.majority_match["value"] == 0.55 and biased.correlations == []


def test_the_decision_says_why_a_judge_was_not_tested():
    assert decision({"alt_test": {"passed": None, "reason": "a_single_annotator"}}) == (
        "not tested: a single annotator")
    assert decision({}) == "not tested: the analysis gave no reason"
    assert decision({"alt_test": {"passed": True, "epsilon": 0.1}}) == (
        "may replace an annotator of this study at ε = 0.1")


def test_a_document_without_judges_has_no_section_and_is_not_the_view_with_judges():
    assert judges_section({}) is None
    assert judges_section({"judges": [], "judges_info": []}) is None
    assert judges_section({"judges": [{"question": "q"}]}) is None  # malformed: no judge
    assert judge_charts({}) == []
    assert not is_with_judges({"settings": {"judges_as_annotators": False},
                               "judge_annotators": []})
    assert is_with_judges({"settings": {"judges_as_annotators": True}})


def test_the_charts_are_valid_vega_lite_and_draw_the_judges_points():
    charts = {c.name: c for c in judge_charts(judges_sections())}
    assert set(charts) == {"judge-good-adequacy-raw", "judge-first-picker-adequacy-raw",
                           "judge-first-picker-preference-choice"}
    for chart in charts.values():
        assert_valid(chart)
        assert chart.section == "judges" and chart.section in SECTIONS
    rows = chart_data(charts["judge-good-adequacy-raw"])
    # 60 points, equal ones counted: never more rows than points
    assert sum(r["items"] for r in rows) == 60 and len(rows) <= 60
    assert {(r["judge"], r["humans"]) for r in rows} >= {(1.0, 1.0), (2.0, 2.1)}
    # the charts are the dashboard's too, whatever question the page shows
    names = {c.name for c in build_charts({**judges_sections(), "questions": []})}
    assert set(charts) <= names


def test_strange_values_never_break_the_charts_or_the_section():
    doc = judges_sections()
    doc["judges"][2]["plot"] = [[float("nan"), 1.0], "x", [1, 2, 3], [True, 2.0], [1.0, 2.0]]
    doc["judges"][2]["alt_test"] = "broken"
    doc["judges"][2]["correlations"] = {"pearson": "x"}
    [chart] = [c for c in judge_charts(doc) if c.name == "judge-good-adequacy-raw"]
    assert_valid(chart)
    assert chart_data(chart) == [{"judge": 1.0, "humans": 2.0, "items": 1}]
    assert judges_section(doc).rows[0].decision == "not tested: the analysis gave no reason"


def test_the_export_rows_flatten_each_record_with_its_decision():
    rows = judge_result_rows(judges_sections())
    assert len(rows) == 5 and list(rows[0]) == list(JUDGE_RESULT_COLUMNS)
    good = next(r for r in rows if (r["judge"], r["scale"]) == ("good", "raw"))
    assert (good["decision"], good["passed"], good["winning_rate"], good["spearman"],
            good["spearman_low"], good["systems_tau"], good["with_judges"]) == (
        PASS, True, 0.8, 0.81, 0.73, 1.0, "")
    biased = next(r for r in rows if r["scale"] == "choice" and r["judge"] == "first-picker")
    assert (biased["first_share"], biased["humans_first_share"], biased["pearson"]) == (
        0.86, 0.58, None)


# --- the page -------------------------------------------------------------------------------

@pytest.fixture
def study(alice, make_study):
    return four_annotators(alice, make_study)


def dashboard(client, study) -> str:
    response = client.get(reverse("analysis:dashboard", args=[study.slug]))
    assert response.status_code == 200
    return response.content.decode()


def judges_html(html: str) -> str:
    match = re.search(r'<section class="card" id="judges".*?</section>', html, flags=re.S)
    assert match, "no Judges section"
    return match[0]


@pytest.mark.django_db
def test_the_page_shows_the_decisions_and_every_records_numbers(alice_client, study):
    with_judges(analysed(study))
    html = dashboard(alice_client, study)
    assert '<a href="#judges">Judges</a>' in html
    section = judges_html(html)
    # as read: no space a tag left before a semicolon or a comma
    text = re.sub(r" ([;,])", r"\1", html_module.unescape(visible_text(section)))
    rows = re.findall(r'<tr class="judge-row (\w+)" data-judge="([^"]+)" '
                      r'data-question="([^"]+)"', section)
    assert rows == [("pass", "good", "adequacy"), ("untested", "good", "preference"),
                    ("fail", "first-picker", "adequacy"),
                    ("fail", "first-picker", "preference")]
    assert f"good adequacy (rating) yes {PASS} details 0.80 (5) 0.72 0.810 [0.73, 0.89] " \
           f"0.610 vs 0.500 120" in text
    assert f"not tested {'not tested: ' + UNTESTED}" in text
    assert "1 of 4 judge × question pairs may replace an annotator; 1 could not be tested" in text
    assert "gpt-4o-mini (v2)" in text and "1, 2" in text
    # the details: correlations, α, self-consistency, systems, position bias beside the people's
    assert "Pearson r 0.830 [0.75, 0.91]; Spearman ρ 0.810 [0.73, 0.89]; Kendall τ 0.660" in text
    assert "judge with an annotator 0.610, two annotators 0.500; the annotators 0.520, with " \
           "the judge replacing one 0.550 (up for 4, down for 1)" in text
    assert "α 0.930 over 2 runs" in text
    assert "Kendall τ 1.00 [0.80, 1.20], pairwise accuracy 1.00 (4 systems)" in text
    assert "0.86 [0.77, 0.93], p 0.0000; the people 0.58 [0.53, 0.63]" in text
    assert "0.20 of 10 pairs shown both ways" in text
    for name in ("judge-good-adequacy-raw", "judge-first-picker-preference-choice"):
        assert f'data-chart="{name}"' in section
    assert 'id="judge-results-csv"' in section
    assert 'id="with-judges-banner"' not in html and 'class="badge with-judges"' not in html


@pytest.mark.django_db
def test_a_run_without_judges_shows_no_section(alice_client, study):
    run = analysed(study)
    assert run.results["judges"] == [] and run.results["judges_info"] == []
    html = dashboard(alice_client, study)
    assert 'id="judges"' not in html and '<a href="#judges">' not in html
    assert 'id="with-judges-banner"' not in html


@pytest.mark.django_db
def test_the_view_with_judges_is_labelled_on_the_page_the_runs_and_the_exports(alice_client,
                                                                                 study):
    run = with_judges(analysed(study), view=True)
    html = dashboard(alice_client, study)
    banner = re.search(r'<p class="with-judges-banner" id="with-judges-banner".*?</p>', html,
                       flags=re.S)
    assert banner and "judge: good, judge: first-picker" in banner[0]
    assert 'id="with-judges-badge">with judges</span>' in html
    runs = re.search(r'<table class="table compact" id="runs">.*?</table>', html, flags=re.S)[0]
    assert 'class="badge with-judges">with judges' in runs
    assert "the results exports below come from a run that analysed the LLM judges" in html
    # the rerun form starts from the run's settings: the view with judges, until set to no
    assert re.search(r'<select name="judges_as_annotators"[^>]*>\s*<option value="False">no'
                     r'</option>\s*<option value="True" selected>yes', html)
    export = export_open(study=study, what="judge_results", fmt="csv")
    assert export.filename == f"{study.slug}-judge_results-with-judges.csv"
    rows = list(csv.DictReader(io.StringIO(b"".join(export.chunks).decode())))
    assert len(rows) == 5 and {r["with_judges"] for r in rows} == {"with judges"}
    assert export_open(study=study, what="results").filename.endswith("-with-judges.json")
    assert run.results["judge_annotators"]


@pytest.mark.django_db
def test_the_charts_and_the_section_download_from_the_dashboard_links(alice_client, study):
    with_judges(analysed(study))
    url = reverse("analysis:chart_data", args=[study.slug, "judge-good-adequacy-raw", "csv"])
    response = alice_client.get(url)
    assert response.status_code == 200 and b"judge,humans,items" in response.content
    response = alice_client.get(reverse("exports:download",
                                        args=[study.slug, "judge_results", "csv"]))
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    assert body.splitlines()[0].startswith("judge,question,scale,decision,kind,level,runs,items,passed")
    assert f"good,adequacy,raw,{PASS}" in body
    assert 'filename="four-judge_results.csv"' in response["Content-Disposition"]


@pytest.mark.django_db
def test_another_researcher_cannot_see_the_section(bob, study):
    with_judges(analysed(study))
    bob_client = Client()
    bob_client.force_login(bob)
    assert bob_client.get(reverse("analysis:dashboard", args=[study.slug])).status_code == 404
    assert bob_client.get(reverse("exports:download", args=[study.slug, "judge_results",
                                                            "csv"])).status_code == 404


def test_the_rerun_form_asks_for_the_view_with_judges_and_leaves_it_to_the_study_unasked():
    from analysis.forms import RunForm
    from core.settings import AnalysisSettings

    main = {"level": "ordinal", "trust_variant": "paper", "simple_threshold": 3}
    form = RunForm(data={**main, "judges_as_annotators": "True", "judge_epsilon": "0.1"})
    assert form.is_valid(), form.errors
    settings = form.run_settings(base=AnalysisSettings())
    assert settings.judges_as_annotators is True and settings.judge_epsilon == 0.1
    form = RunForm(data=main)
    assert form.is_valid(), form.errors
    base = AnalysisSettings(judges_as_annotators=True)
    assert form.run_settings(base=base).judges_as_annotators is True
    form = RunForm(data={**main, "judge_epsilon": "1"})
    assert not form.is_valid() and "judge_epsilon" in form.errors
