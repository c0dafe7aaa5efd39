"""A results dashboard a researcher reads without the repository (the fast half of the done-when
test; tests/e2e/test_dashboard_readable.py checks the widths in Chromium).

On both demo studies and a 4-annotator study: no repository path or seed file name; every "how
it is computed" link opens the method's page; no bare ISO timestamp as text; a rule set has one
name in the table and the chart; a reason a number is missing is stated once per table.
"""

import itertools
import json
import re

import pytest
from django.test import Client

from analysis.charts import build_charts, chart_data
from analysis.methods import title_of
from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from annotation.models import Response
from studies.models import Item, Participant, Study
from tests.answers import store
from tests.conftest import study_make

pytestmark = pytest.mark.django_db

# A repository path, a Markdown file named as text, a seed file's name.
REPOSITORY = re.compile(r"docs/|\.md\b|seeds/|seed 00|Seed 00|\b00[0-9]_", re.IGNORECASE)
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def four_annotators(owner, make_study):
    """A 0–7 study of 5 items, each answered by the same 4 annotators, two items repeated."""
    study = make_study(owner, slug="four")
    items = dict(study.items.values_list("external_id", "pk"))
    people: dict[str, Participant] = {}
    answers = [(f"ann{a}", f"i{b + 1}", 1, b, float((a + b) % 8), 1000 * (b + 1))
               for a, b in itertools.product(range(4), range(5))]
    answers += [("ann0", "i2", 2, 5, 3.0, 800), ("ann2", "i4", 2, 5, 6.0, None)]
    for external, item, presentation, position, value, active_ms in answers:
        if external not in people:
            people[external] = Participant.objects.create(
                study=study, source=Participant.Source.IMPORT, external_id=external)
        store(people[external], Item(pk=items[item]), value, presentation=presentation,
              position=position, active_ms=active_ms, source=Response.Source.IMPORT)
    return study


def analysed(study) -> AnalysisRun:
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    assert run.status == "done", run.error
    return run


def visible_text(html: str) -> str:
    """The page's text as read: no script or data block, no tag, no attribute."""
    html = re.sub(r"<script\b.*?</script>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", html))


@pytest.fixture(scope="module")
def analysed_studies(demo_seeded, module_db):
    """(study pk, run pk) of both demo studies and of a 4-annotator study, analysed once for the
    module (see module_db): every test here only reads them."""
    from django.contrib.auth import get_user_model

    with module_db.unblock():
        alice = get_user_model().objects.create_user("alice", "alice@example.org",
                                                     "alice-password-1")
        studies = [Study.objects.get(pk=pk) for pk, _, _ in demo_seeded[1]]
        studies.append(four_annotators(alice, study_make))
        return [(study.pk, analysed(study).pk) for study in studies]


@pytest.fixture
def dashboards(analysed_studies, db):
    """(client, study, run) of both demo studies and of a 4-annotator study."""
    out = []
    for study_pk, run_pk in analysed_studies:
        study = Study.objects.get(pk=study_pk)
        client = Client()
        client.force_login(study.owner)
        out.append((client, study, AnalysisRun.objects.get(pk=run_pk)))
    return out


def page(client, study) -> str:
    response = client.get(f"/studies/{study.slug}/results/")
    assert response.status_code == 200
    return response.content.decode()


def test_it_names_no_repository_path_or_seed_file(dashboards):
    for client, study, _ in dashboards:
        html = page(client, study)
        assert not REPOSITORY.findall(html), (study.slug, REPOSITORY.findall(html)[:5])
        annotator = client.get(f"/studies/{study.slug}/results/annotators/A1/").content.decode()
        assert not REPOSITORY.findall(annotator), study.slug
        participants = client.get(f"/studies/{study.slug}/participants/").content.decode()
        assert not REPOSITORY.findall(participants), study.slug
        # it shows no run: its "how it is computed" is the general page
        assert '<a class="method" href="/methods/quality/">' in participants


def test_every_how_it_is_computed_link_opens_the_methods_page(dashboards):
    for client, study, run in dashboards:
        html = page(client, study)
        links = set(re.findall(r'<a class="method" href="([^"]+)">', html))
        names = {re.search(r"/methods/([\w-]+)/$", link)[1] for link in links}
        # the sections' methods, each on the page of the run shown
        assert {"alpha", "trust", "duplicates", "heuristics", "noise", "competence",
                "quality"} <= names, names
        assert all(f"/runs/{run.pk}/methods/" in link for link in links)
        for link in links:
            response = client.get(link)
            assert response.status_code == 200, link
            name = re.search(r"/methods/([\w-]+)/$", link)[1]
            body = response.content.decode()
            # the heading of docs/statistics/<name>.md, and the run's settings for the method
            title = title_of(name).replace("'", "&#x27;")
            assert f'<h1 id="method-title">{title}</h1>' in body, link
            assert f"The settings of run {run.pk}" in body
            assert 'id="settings-table"' in body or 'id="no-settings"' in body


def test_every_citation_links_to_its_entry_on_the_references_page(dashboards):
    client, study, _ = dashboards[0]
    html = page(client, study)
    cites = re.findall(r'<a class="cite" href="/methods/references/#([\w-]+)">([^<]+)</a>', html)
    assert {"Borovikova et al. 2022", "Solomon et al. 2021", "Dawid and Skene 1979",
            "Hovy et al. 2013", "Beigman Klebanov and Beigman 2009"} <= {k for _, k in cites}
    # the charts' captions too ("Solomon et al. (2021)")
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", html, flags=re.S)
    assert any('<a class="cite" href="/methods/references/#ref-solomon-et-al-2021">'
               "Solomon et al. (2021)</a>" in c for c in captions)
    references = client.get("/methods/references/").content.decode()
    for anchor, key in cites:
        assert f'<li id="{anchor}">' in references, key


def test_no_bare_iso_timestamp_is_shown_as_text(dashboards):
    for client, study, _ in dashboards:
        for url in (f"/studies/{study.slug}/results/",
                    f"/studies/{study.slug}/results/annotators/A1/"):
            html = client.get(url).content.decode()
            assert not ISO.search(visible_text(html)), (url, ISO.findall(visible_text(html)))
            assert re.search(r'<time datetime="[^"]+" title="[^"]+">\d', html), url


def test_a_rule_set_has_one_name_in_the_table_and_the_chart(dashboards):
    client, study, run = next(d for d in dashboards if d[1].slug == "demo-similarity")
    html = page(client, study)
    table = html[html.index('id="correlations-table"'):]
    table = table[:table.index("</table>")]
    in_table = re.findall(r'<th scope="row" class="rules">([^<]+)</th>', table)
    assert len(in_table) == 32 and in_table[0] == "Baseline (no filter)"
    assert "Low variance + Sentiment-driven" in in_table
    chart = next(c for c in build_charts(run.results, scale="raw") if c.name == "correlations")
    assert {r["combination"] for r in chart_data(chart)} == set(in_table)
    assert "[1" not in json.dumps(chart.spec) and "low_variance" not in json.dumps(chart.spec)
    # a change never wraps away from its correlation
    assert re.search(r'<td class="num nowrap">[^<]+ <small>\([+-]\d+\.\d %\)</small>', table)


def test_a_reason_is_stated_once_per_table_not_in_every_row(dashboards):
    client, study, _ = next(d for d in dashboards if d[1].slug == "four")
    html = page(client, study)
    reason = "No pairable item: no item has answers from at least two annotators."
    text = visible_text(html)
    assert text.count(reason) == 1  # under the alpha tables, once
    assert text.lower().count("no pairable item") == 1
    marks = re.findall(r'<sup class="note-mark" title="no pairable item[^"]*">1</sup>', html)
    assert len(marks) == 16  # the simple-items row: four scales × four levels, each marked
    for block in re.findall(r'<div class="notes">(.*?)</div>', html, flags=re.S):
        sentences = re.findall(r"</sup> ([^<]+)</small>", block)
        assert len(sentences) == len(set(sentences))
