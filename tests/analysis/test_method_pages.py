"""The method pages: docs/statistics/*.md and docs/references.md served by the app, one source
for the repository and the dashboard; a run's page shows the settings that run used."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from analysis import methods
from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from studies.models import Membership

pytestmark = pytest.mark.django_db


def finished_run(study, **overrides) -> AnalysisRun:
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False,
                                                          overrides=overrides).pk)
    assert run.status == "done", run.error
    return run


def run_method_url(run, name: str) -> str:
    return reverse("analysis:run_method",
                   kwargs={"slug": run.study.slug, "run_id": run.pk, "name": name})


@pytest.fixture
def study(alice, make_study):
    from tests.analysis.test_dashboard_readable import four_annotators

    return four_annotators(alice, make_study)


def test_it_serves_every_page_of_docs_statistics(alice_client):
    names = sorted(p.stem for p in methods.STATISTICS.glob("*.md"))
    assert list(methods.METHODS) == names and len(names) >= 10
    for name in names:
        html = alice_client.get(f"/methods/{name}/").content.decode()
        heading = (methods.STATISTICS / f"{name}.md").read_text().splitlines()[0]
        title = heading.lstrip("# ").replace("*", "").replace("'", "&#x27;")
        assert f'<h1 id="method-title">{title}</h1>' in html, name


def test_it_shows_the_formula_as_the_markdown_writes_it(alice_client):
    html = alice_client.get("/methods/alpha/").content.decode()
    # Krippendorff 2011's alpha, in the words and code of docs/statistics/alpha.md
    assert "<code>α = 1 − D_o / D_e" in html
    assert '<h2 id="undefined-cases">Undefined cases</h2>' in html
    trust = alice_client.get("/methods/trust/").content.decode()
    assert "<pre><code>" in trust  # a fenced block stays a block


def test_a_page_leaves_out_the_developers_code_paragraph_and_nests_its_lists(alice_client):
    for name in methods.METHODS:
        html = alice_client.get(f"/methods/{name}/").content.decode()
        assert "<p>Code: " not in html and "Tests: <code>tests/" not in html, name
    trust = alice_client.get("/methods/trust/").content.decode()
    # The two readings of Algorithm 1 are a list inside step 3, not "- paper" run into its text.
    step = trust[trust.index("Accumulate"):trust.index("Divide every annotator")]
    assert "<ul>\n<li><strong><code>paper</code></strong>" in step
    assert "<li><strong><code>notebook</code></strong>" in step and "- <strong>" not in step


def test_links_between_documents_become_the_apps_pages(alice_client):
    html = alice_client.get("/methods/alpha/").content.decode()
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert "/methods/duplicates/" in hrefs and "/methods/trust/" in hrefs
    assert "/methods/references/" in hrefs
    assert not [h for h in hrefs if ".md" in h], hrefs
    # a link read as a file name reads as the page's title
    assert ">References</a>" in html and ">references.md</a>" not in html


def test_a_link_to_a_document_the_app_does_not_serve_reads_as_its_title(alice_client):
    html = alice_client.get("/methods/heuristics/").content.decode()
    title = (methods.DOCS / "results.md").read_text().splitlines()[0].lstrip("# ").replace("`", "")
    assert title and title in html  # "(results.md)" reads as the document's title
    assert "../results.md" not in html and "results.md" not in html


def test_the_references_page_gives_every_work_an_anchor(alice_client):
    html = alice_client.get("/methods/references/").content.decode()
    keys = methods.reference_keys()
    assert "Borovikova et al. 2022" in keys and "Dawid and Skene 1979" in keys
    for key in keys:
        assert f'<li id="{methods.reference_anchor(key)}">' in html, key
    # its links to the method pages are the app's
    assert 'href="/methods/alpha/"' in html


def test_a_method_page_lists_the_full_entries_of_the_works_it_cites(alice_client):
    html = alice_client.get("/methods/competence/").content.decode()
    cited = html[html.index('id="cited"'):]
    assert '<li id="ref-dawid-and-skene-1979">' in cited
    assert "Maximum Likelihood Estimation of" in cited


def test_a_runs_method_page_shows_the_settings_that_run_used(alice, study):
    run = finished_run(study, seed=7, bootstrap_samples=50, level="interval")
    finished_run(study, seed=9)  # a later run: the page is the first one's
    client = Client()
    client.force_login(alice)
    html = client.get(run_method_url(run, "alpha")).content.decode()
    table = html[html.index('id="settings-table"'):html.index("</table>",
                                                               html.index('id="settings-table"'))]
    values = dict(re.findall(r'<tr data-key="([\w.]+)">.*?<td class="num">([^<]*)</td>',
                             table, re.S))
    assert values["seed"] == "7" and values["bootstrap_samples"] == "50"
    assert values["level"] == "interval"
    heuristics = client.get(run_method_url(run, "heuristics")).content.decode()
    # each setting by its label, as the settings form names it; its key only in the markup
    assert "Slow: mean seconds per item above" in heuristics
    assert '<tr data-key="heuristics.slow.threshold_s">' in heuristics
    # links between method pages stay within the run
    assert f'href="{run_method_url(run, "trust")}"' in html


def test_a_runs_method_page_needs_a_role_on_the_study(alice, bob, django_user_model, study):
    run = finished_run(study)
    url = run_method_url(run, "trust")
    client = Client()
    client.force_login(bob)
    assert client.get(url).status_code == 404
    Membership.objects.create(study=study, user=bob, role="viewer")
    assert client.get(url).status_code == 200
    assert Client().get(url).status_code == 302  # to the login page


def test_a_run_that_did_not_finish_or_a_wrong_name_has_no_method_page(alice_client, study):
    run = finished_run(study)
    failed = AnalysisRun.objects.create(study=study, status=AnalysisRun.Status.FAILED,
                                        settings=run.settings)
    assert alice_client.get(run_method_url(failed, "alpha")).status_code == 404
    assert alice_client.get(run_method_url(run, "nope")).status_code == 404


def test_a_runs_method_page_makes_a_fixed_number_of_queries(alice_client, study,
                                                            django_assert_num_queries):
    url = run_method_url(finished_run(study), "quality")
    with django_assert_num_queries(4):  # session, user, the role-scoped study, the run's settings
        assert alice_client.get(url).status_code == 200


def test_every_method_says_which_settings_it_reads():
    assert set(methods.METHOD_SETTINGS) == set(methods.METHODS)
    rows = methods.settings_rows("noise", {"noise_confidence": 0.9, "noise_max_gamma": 0.05})
    assert [(r.key, r.value) for r in rows] == [("noise_confidence", "0.9"),
                                                ("noise_max_gamma", "0.05")]


def test_the_pages_speak_the_readers_language_not_numpys_or_the_repositorys(alice_client):
    # issue 23, point 10: "tests/test_citations.py" on the references page, "np.nan" and
    # "dense float array" on method pages.
    assert "tests/" not in alice_client.get("/methods/references/").content.decode()
    for name in ("alpha", "trust", "quality"):
        text = alice_client.get(f"/methods/{name}/").content.decode()
        for word in ("np.nan", "float array"):
            assert word not in text, (name, word)
