"""The dashboard's Systems section (issue 24, point 4), read from a results document whose
systems sections are built by hand after the agreed contract (tests/analysis/systems_document.py):
the ranked table, the clusters, the charts, the tests, the mixed model and the meta-evaluation;
shown to every role that sees the dashboard, and not at all for a study without systems."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from analysis import methods
from analysis.charts import build_charts, chart_data
from analysis.dashboard_systems import systems_section
from studies.models import Membership
from tests.analysis.systems_document import RANKED, systems_sections, with_systems
from tests.analysis.test_dashboard_readable import analysed, four_annotators, visible_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(alice, make_study):
    return four_annotators(alice, make_study)


@pytest.fixture
def run(study):
    return with_systems(analysed(study))


def dashboard(client: Client, study, **query: str) -> str:
    response = client.get(reverse("analysis:dashboard", args=[study.slug]), query)
    assert response.status_code == 200
    return response.content.decode()


def systems_html(html: str) -> str:
    match = re.search(r'<section class="card" id="systems".*?</section>', html, flags=re.S)
    assert match, "no Systems section"
    return match[0]


def test_it_ranks_the_systems_best_first_with_intervals_and_clusters(alice_client, study, run):
    section = systems_html(dashboard(alice_client, study))
    rows = re.findall(r'<tr class="system-row[^"]*" data-system="([^"]+)" data-cluster="(\w+)"',
                      section)
    assert rows == [("alpha-mt", "1"), ("beta-mt", "2"), ("gamma-mt", "2"), ("delta-mt", "3")]
    text = visible_text(section)
    assert "2 (2–3) beta-mt 4.100 [3.80, 4.40] 4.00 2 30 / 30 / 150" in text
    assert "1 (1–1) alpha-mt 5.600 [5.30, 5.90]" in text
    # a line above the first system of each new cluster, none above the first row
    assert section.count("system-row new-cluster") == 2
    assert "Clusters: 1 alpha-mt; 2 beta-mt, gamma-mt; 3 delta-mt." in text


def test_it_draws_the_means_and_the_heatmap_of_the_pairwise_tests(alice_client, study, run):
    section = systems_html(dashboard(alice_client, study))
    assert 'data-chart="system-means"' in section and 'data-chart="system-tests"' in section
    document = run.results
    charts = {c.name: c for c in build_charts(document, scale="raw")}
    means = chart_data(charts["system-means"])
    assert [r["system"] for r in means] == RANKED
    assert [r["cluster"] for r in means] == ["1", "2", "2", "3"]
    cells = chart_data(charts["system-tests"])
    assert len(cells) == 12  # every ordered pair of 4 systems
    tie = next(c for c in cells if (c["row"], c["column"]) == ("gamma-mt", "beta-mt"))
    assert tie["verdict"] == "not significant" and tie["mean_difference"] == pytest.approx(-0.1)
    worse = next(c for c in cells if (c["row"], c["column"]) == ("delta-mt", "alpha-mt"))
    assert worse["verdict"] == "column better" and worse["mean_difference"] == pytest.approx(-3.4)
    better = next(c for c in cells if (c["row"], c["column"]) == ("alpha-mt", "delta-mt"))
    assert better["verdict"] == "row better"
    spec = charts["system-tests"].spec
    tooltip = spec["layer"][0]["encoding"]["tooltip"]
    assert any(t["field"] == "mean_difference" for t in tooltip)
    assert spec["layer"][0]["encoding"]["x"]["sort"] == RANKED


def test_it_lists_the_tests_the_mixed_model_and_the_meta_evaluation(alice_client, study, run):
    html = systems_html(dashboard(alice_client, study))
    text = visible_text(html)
    assert "5 of 6 differences are significant" in text
    assert "beta-mt / gamma-mt 0.100 0.09 permutation 0.4100 0.8200 holm not significant" in text
    assert "alpha-mt / delta-mt 3.400 3.09 permutation 0.0002 0.0004 holm alpha-mt is better" in text
    assert "delta-mt 2.200 0.250 [1.70, 2.70]" in text
    fixed = re.search(r'id="mixed-fixed-table".*?</table>', html, flags=re.S)[0]
    assert re.findall(r'<th scope="row">([^<]+)</th>', fixed) == RANKED  # in rank order
    assert "Annotators 0.300 20.0 %" in text and "Residual 0.750 50.0 %" in text
    assert "tracking 0.970 [0.87, 1.00]" in text
    assert "Soft pairwise accuracy" in text
    assert "tracking / noisy 2.50 0.0300 4" in text
    assert "noisy by source, across systems 0.110 [0.01, 0.21]" in text
    # a number without a value says why, once, under its table
    assert text.count("The metric gives every system the same score.") == 1


def test_it_says_when_the_mixed_model_did_not_converge(alice_client, study, run):
    document = run.results
    for record in document["mixed_model"]:
        record["converged"] = False
    type(run).objects.filter(pk=run.pk).update(results=document)
    text = visible_text(systems_html(dashboard(alice_client, study)))
    assert "The mixed model did not converge" in text


def test_every_table_scrolls_in_its_own_box_and_is_named_by_its_caption(alice_client, study,
                                                                      run):
    """A wide table scrolls inside its box, never the page; js/scroll-regions.js makes the box a
    named tab stop when it is narrower than the table, named by the table's caption."""
    section = systems_html(dashboard(alice_client, study))
    tables = re.findall(r'<div class="scroll">\s*<table[^>]*>\s*<caption>([^<]+)</caption>',
                        section)
    assert tables == ["Systems ranked, best first", "Every pair of systems", "Fixed effects",
                      "Variance components", "System level",
                      "Does one metric rank the systems better than another?", "Item level"]
    assert section.count("<table") == len(tables)


def test_the_table_of_contents_links_the_section(alice_client, study, run):
    html = dashboard(alice_client, study)
    assert '<a href="#systems">Systems</a>' in html


def test_a_viewer_sees_the_section_and_a_stranger_does_not(study, run, bob):
    stranger = Client()
    stranger.force_login(bob)
    url = reverse("analysis:dashboard", args=[study.slug])
    assert stranger.get(url).status_code == 404
    Membership.objects.create(study=study, user=bob, role=Membership.Role.VIEWER)
    assert 'id="systems-table"' in dashboard(stranger, study)


def test_a_study_without_systems_shows_nothing_of_the_section(alice_client, study):
    analysed(study)
    html = dashboard(alice_client, study)
    assert 'id="systems"' not in html and 'href="#systems"' not in html
    assert "system-means" not in html and "which is better" not in visible_text(html)


def test_an_older_document_without_the_sections_reads_as_no_systems():
    assert systems_section({"question": "q", "scales": [{"name": "raw"}]}, scale="raw") is None
    assert systems_section({"systems": "not a list"}, scale="raw") is None
    assert systems_section({"systems": [{"oops": 1}, 3]}, scale="raw") is None
    assert build_charts({"annotators": [], "systems": [{"oops": 1}, 3]}, scale="raw") == []


def test_it_shows_the_chosen_scale_else_the_first_with_systems_and_one_question_at_a_time():
    document = {"question": "q1", "scales": [{"name": "raw"}, {"name": "reduced"}],
                "systems": (systems_sections("q1", "reduced")["systems"]
                            + systems_sections("q2", "raw", name="other")["systems"])}
    section = systems_section(document, scale="raw")
    assert section is not None and section.scale == "reduced" and section.scales == ["reduced"]
    assert [r.record["system"] for r in section.rows] == RANKED  # q2's records left out


def test_a_missing_mean_reads_as_a_dash_with_its_reason():
    records = systems_sections("q")["systems"]
    records[3].update(mean=None, mean_low=None, mean_high=None, median=None, rank=None,
                      rank_low=None, rank_high=None, cluster=None,
                      reason="the system has one item")
    section = systems_section({"question": "q", "systems": records}, scale="raw")
    assert section is not None
    assert section.rows[-1].record["system"] == "delta-mt"  # unranked last
    assert section.notes["systems"] == {"the system has one item": 1}
    means = next(c for c in build_charts({"question": "q", "systems": records})
                 if c.name == "system-means")
    row = next(r for r in chart_data(means) if r["system"] == "delta-mt")
    assert row["mean"] is None and row["reason"] == "the system has one item"


def test_the_section_links_its_method_page_and_the_works_it_cites(alice_client, study, run):
    section = systems_html(dashboard(alice_client, study))
    url = reverse("analysis:run_method", kwargs={"slug": study.slug, "run_id": run.pk,
                                                 "name": "systems"})
    assert f'href="{url}"' in section
    page = alice_client.get(url).content.decode()
    assert f'<h1 id="method-title">{methods.title_of("systems")}</h1>' in page
    assert "systems_bootstrap" in page  # the run's settings the method reads
    references = reverse("analysis:references")
    for key in ("Holm 1979", "Thompson et al. 2024", "Graham and Baldwin 2014"):
        assert f'href="{references}#{methods.reference_anchor(key)}">{key}</a>' in section, key


def test_the_systems_demo_analysed_for_real_shows_its_planted_order_and_tie(client):
    """End to end: the demo's answers through the real analysis (core.stats.systems) to the
    page. The planted order is recovered on both questions, and the planted tie is not
    declared significant while every other pair is."""
    from demo.services import demo_seed

    owner, demos = demo_seed()
    study = next(d.study for d in demos if d.study.slug == "demo-systems")
    run = analysed(study)
    client.force_login(owner)
    tie = {"mt-medium", "mt-tuned"}
    for question in ("adequacy", "fluency"):
        records = [r for r in run.results["systems"]
                   if r["question"] == question and r["scale"] == "raw"]
        order = [r["system"] for r in sorted(records, key=lambda r: r["rank"])]
        assert order[0] == "mt-large" and set(order[1:3]) == tie and order[3] == "mt-small"
        tests = [t for t in run.results["system_tests"]
                 if t["question"] == question and t["scale"] == "raw"]
        assert len(tests) == 6
        for t in tests:
            assert t["significant"] is ({t["system_a"], t["system_b"]} != tie), t
        section = systems_html(dashboard(client, study, question=question))
        rows = re.findall(r'data-system="([^"]+)" data-cluster="(\w+)"', section)
        assert rows[0] == ("mt-large", "1") and rows[3] == ("mt-small", "3")
        assert {rows[1], rows[2]} == {("mt-medium", "2"), ("mt-tuned", "2")}
        assert 'data-chart="system-means"' in section and 'id="meta-system-table"' in section


def test_the_charts_download_as_spec_and_data_with_formulas_neutralised(alice_client, study):
    with_systems(analysed(study), name="=cmd|' /C calc'!A0")
    spec = alice_client.get(reverse("analysis:chart_spec", args=[study.slug, "system-tests"]))
    assert spec.status_code == 200 and spec.json()["layer"][0]["mark"]["type"] == "rect"
    data = alice_client.get(reverse("analysis:chart_data", args=[study.slug, "system-means",
                                                                 "csv"]))
    assert data.status_code == 200
    first = data.content.decode().splitlines()[1]
    assert first.startswith("\"'=cmd|' /C calc'!A0\"") or first.startswith("'=cmd")
