"""The charts of real results documents drawn in Chromium under the project's strict CSP.

A page served by a view that exists only in this module (`pytest.mark.urls`) through the project's
middleware (so with its Content-Security-Policy header) holds one `<figure class="chart">` per chart
and its spec in a `json_script` block, the vendored vega files and static/js/charts.js, all from the
collected, hashed static files. Every chart must draw an SVG with marks, with no CSP violation, no
console error or warning and no page error.
"""

from __future__ import annotations

import copy

import pytest
from django.db import transaction
from django.http import HttpResponse
from django.template import engines
from django.urls import path

from analysis.charts import build_charts
from analysis.selectors import study_questions
from core.results import build_results
from demo.services import demo_seed

pytestmark = [pytest.mark.e2e, pytest.mark.django_db, pytest.mark.urls(__name__)]

DOCUMENTS: dict[str, dict] = {}

PAGE = engines["django"].from_string("""{% load static %}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Charts</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{% static 'css/charts.css' %}">
</head>
<body>
<main>
{% for chart in charts %}{% with sid="spec-"|add:chart.name %}
<figure class="chart" id="chart-{{ chart.name }}" data-chart-spec="{{ sid }}" data-chart="{{ chart.name }}">
  <figcaption><strong>{{ chart.title }}.</strong> {{ chart.description }}</figcaption>
</figure>
{{ chart.spec|json_script:sid }}
{% endwith %}{% endfor %}
</main>
<script src="{% static 'vendor/vega/vega.min.js' %}" defer></script>
<script src="{% static 'vendor/vega/vega-lite.min.js' %}" defer></script>
<script src="{% static 'vendor/vega/vega-interpreter.min.js' %}" defer></script>
<script src="{% static 'vendor/vega/vega-embed.min.js' %}" defer></script>
<script src="{% static 'js/charts.js' %}" defer></script>
</body>
</html>""")


def charts_page(request, key: str):
    charts = build_charts(DOCUMENTS[key], scale=request.GET.get("scale", "raw"))
    return HttpResponse(PAGE.render({"charts": charts}, request))


urlpatterns = [path("charts/<str:key>/", charts_page)]

# Records a violation even when Chromium logs nothing: init scripts run outside the page's CSP.
WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile));
"""


def nulled(document: dict) -> dict:
    """The document with every number of every section null (and a reason): nothing to plot."""
    doc = copy.deepcopy(document)
    for section in ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
                    "heuristics", "correlations", "noise", "timing"):
        for record in doc[section]:
            for key, value in list(record.items()):
                if isinstance(value, float) or key in {"ci95", "t0", "max_disagreements"}:
                    record[key] = None
                if isinstance(value, dict):
                    record[key] = {k: None for k in value}
            record["reason"] = "nulled by the test"
    return doc


@pytest.fixture(scope="module")
def documents(django_db_setup, django_db_blocker):
    """Results documents of both demo studies, built once; the demo data are rolled back."""
    with django_db_blocker.unblock(), transaction.atomic():
        _, demos = demo_seed()
        for demo in demos:
            study = demo.study
            DOCUMENTS[study.slug] = build_results(
                study_questions(study=study), settings={},
                study={"slug": study.slug, "title": study.title, "run": None})
        transaction.set_rollback(True)
    DOCUMENTS["nulled"] = nulled(DOCUMENTS["demo-coref"])
    yield DOCUMENTS
    DOCUMENTS.clear()


def open_charts(page, url: str) -> tuple[list, list]:
    problems: list[str] = []
    page.on("console", lambda m: m.type in {"error", "warning"} and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.add_init_script(WATCH)
    response = page.goto(url)
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_function(
        "() => [...document.querySelectorAll('figure.chart')].every("
        "f => ['rendered', 'error'].includes(f.dataset.chartState))", timeout=30_000)
    return problems, page.evaluate("window.__csp")


def drawn(page) -> dict[str, dict]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('figure.chart')]
      .map(f => [f.dataset.chart, {
        state: f.dataset.chartState,
        svgs: f.querySelectorAll('.chart-view svg').length,
        marks: f.querySelectorAll('.chart-view svg .role-mark > :is(path, line, text)').length,
        label: f.querySelector('.chart-view').getAttribute('aria-label'),
        caption: f.querySelector('figcaption').textContent,
      }]))""")


@pytest.mark.parametrize(("key", "scale", "expected"), [
    ("demo-coref", "raw", {"trust", "alpha", "duplicates", "timing", "heuristics", "correlations",
                           "gaps-scatter", "gaps-mean", "weights", "noise"}),
    ("demo-coref", "gravity", {"trust", "alpha", "duplicates", "timing", "heuristics",
                               "correlations", "gaps-scatter", "gaps-mean", "weights", "noise"}),
    ("demo-similarity", "raw", {"trust", "alpha", "duplicates", "timing", "heuristics",
                                "correlations", "gaps-scatter", "gaps-mean", "noise"}),
    ("demo-similarity", "reduced", {"trust", "alpha", "duplicates", "timing", "heuristics",
                                    "correlations", "gaps-scatter", "gaps-mean", "noise"}),
])
def test_every_chart_draws_under_the_csp(live_server, page, documents, key, scale, expected):
    problems, violations = open_charts(page, f"{live_server.url}/charts/{key}/?scale={scale}")
    charts = drawn(page)
    assert set(charts) == expected
    for name, chart in charts.items():
        assert chart["state"] == "rendered", name
        assert chart["svgs"] == 1, name
        assert chart["marks"] > 0, name
        # the spec's description labels the drawing for screen readers
        assert chart["label"] and chart["label"] in chart["caption"], name
    assert violations == [] and page.csp_violations == [], (violations, page.csp_violations)
    assert problems == [], problems
    # No <style> element was injected (vega-embed, vega-tooltip): the CSP would block it anyway.
    assert page.evaluate("document.querySelectorAll('style').length") == 0


def test_the_bars_are_the_document_numbers_and_the_outlier_is_named(live_server, page, documents):
    document = documents["demo-coref"]
    (record,) = [t for t in document["trust"] if t["scale"] == "raw" and t["items"] == "all"]
    open_charts(page, f"{live_server.url}/charts/demo-coref/?scale=raw")
    # The drawn view's data are the document's coefficients, and the outlier label is on screen.
    values = page.evaluate("""() => document.getElementById('chart-trust').chartView
        .data('source_0').map(d => [d.annotator, d.coefficient])""")
    assert dict(values) == pytest.approx(record["coefficients"])
    (outlier,) = record["outliers"]
    labels = page.locator("#chart-trust svg .role-mark text").all_text_contents()
    assert any(label.startswith(f"{outlier}: ") for label in labels), labels


def test_a_document_full_of_nulls_still_draws(live_server, page, documents):
    problems, violations = open_charts(page, f"{live_server.url}/charts/nulled/?scale=raw")
    charts = drawn(page)
    assert charts, "the sections still have records, so the charts are still there"
    for name, chart in charts.items():
        assert chart["state"] == "rendered" and chart["svgs"] == 1, name
    assert "not computed" in page.locator("#chart-trust svg").text_content()
    assert violations == [] and page.csp_violations == [], (violations, page.csp_violations)
    assert problems == [], problems


def test_the_tooltip_is_styled_by_the_stylesheet(live_server, page, documents):
    open_charts(page, f"{live_server.url}/charts/demo-coref/?scale=raw")
    bar = page.locator("#chart-trust svg .mark-rect path").first
    bar.hover(position={"x": 30, "y": 8})
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible")
    assert "trust coefficient" in tooltip.inner_text()
    assert tooltip.evaluate("e => getComputedStyle(e).position") == "fixed"
    assert page.evaluate("window.__csp") == []
