"""The per-annotator page: one annotator against the newest finished run, and the way to exclude."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.selectors import full_document
from studies.models import Membership

from .test_dashboard import demos, finished_run, planted  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

# session, user, study (with the role), participant, newest finished run, the annotator's answers,
# the aggregated labels of their items (the run keeps them in its own table); the first visit
# reads the run's document apart (analysis.selectors.run_document keeps it for the next ones)
ANNOTATOR_QUERIES = 7


def page_url(study, name, **query):
    base = reverse("analysis:annotator", kwargs={"slug": study.slug, "pseudonym": name})
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture(scope="module")
def coref_analysed(demo_seeded, module_db):
    """The coreference demo with a finished run, analysed once for the module (see module_db)."""
    from studies.models import Study

    with module_db.unblock():
        finished_run(Study.objects.get(slug="demo-coref"))


@pytest.fixture
def coref(demos, coref_analysed):  # noqa: F811
    return demos["demo-coref"]


@pytest.fixture
def viewer(coref, django_user_model):
    user = django_user_model.objects.create_user("charlie", password="x")
    Membership.objects.create(study=coref.study, user=user, role="viewer")
    client = Client()
    client.force_login(user)
    return client


def test_it_shows_the_fast_random_clicker_flagged_with_its_ranks_in_a_fixed_number_of_queries(
        coref, viewer, django_assert_num_queries):
    bot = planted(coref, "random")
    with django_assert_num_queries(ANNOTATOR_QUERIES + 1):
        viewer.get(page_url(coref.study, bot))
    with django_assert_num_queries(ANNOTATOR_QUERIES):
        response = viewer.get(page_url(coref.study, bot))
    html = response.content.decode()
    assert response.status_code == 200
    document = AnalysisRun.objects.get(study=coref.study).results
    rules = html[html.index('id="rules-table"'):]
    rules = rules[:rules.index("</table>")]
    fast = re.search(r'<tr class="flagged"><th scope="row">Too fast</th><td>all</td>'
                     r'<td class="num">([0-9.]+) <strong class="flag"', rules)
    (record,) = [q for q in document["quality"]
                 if q["annotator"] == bot and q["rule"] == "too_fast"]
    assert fast and float(fast[1]) == pytest.approx(record["value"], abs=0.005)
    ranks = html[html.index('id="ranks-table"'):html.index("</table>",
                                                          html.index('id="ranks-table"'))]
    n = len(document["annotators"])
    shown = [int(r) for r in re.findall(rf"(\d+) of {n}</td>", ranks)]
    assert len(shown) == 3 and all(rank >= n - 2 for rank in shown[1:])  # DS and MACE


def test_it_lists_every_answer_beside_the_items_aggregated_label(coref, viewer):
    bot = planted(coref, "random")
    html = viewer.get(page_url(coref.study, bot)).content.decode()
    document = full_document(document=AnalysisRun.objects.get(study=coref.study).results)
    question = document["questions"][0]["key"]
    labels = {r["item"]: r["label"] for r in document["item_labels"]
              if r["question"] == question and r["scale"] == "raw"
              and r["method"] == "dawid_skene"}
    table = html[html.index('id="answers-table"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr><th scope="row">([^<]+?)(?: <small>\(repeat\)</small>)?</th>'
                      r'<td class="num">([^<]*)</td>\s*<td class="num">([-0-9.]+) ', table)
    participant = coref.study.participants.get(pseudonym_number=int(bot[1:]))
    assert len(rows) == participant.responses.filter(revision=1).count()
    for item, _answer, label in rows:
        assert float(label) == pytest.approx(labels[item], abs=0.005)


def test_it_shows_whole_answers_and_labels_as_integers(coref, viewer):
    bot = planted(coref, "random")
    html = viewer.get(page_url(coref.study, bot)).content.decode()
    table = html[html.index('id="answers-table"'):]
    table = table[:table.index("</table>")]
    answers = re.findall(r'</th><td class="num">([^<]*)</td>', table)
    labels = re.findall(r'<td class="num">([-0-9.]+) <small>\(', table)
    assert answers and labels
    # A 0–7 scale's answer reads "5", never "5.00".
    assert all(re.fullmatch(r"\d|can't judge", a) for a in answers), answers
    assert all(re.fullmatch(r"\d", label) for label in labels), labels


def test_it_draws_the_timing_histogram_with_the_too_fast_floor_without_inline_script(coref,
                                                                                      viewer):
    bot = planted(coref, "random")
    html = viewer.get(page_url(coref.study, bot)).content.decode()
    spec = json.loads(re.search(r'<script id="spec-annotator-timing" type="application/json">'
                                r'(.*?)</script>', html, re.S)[1])
    floor = [v for v in spec["data"]["values"] if v.get("line") == "too-fast floor"]
    assert len(floor) == 1 and floor[0]["seconds"] == 1.0
    times = [v for v in spec["data"]["values"] if v["kind"] == "answer"]
    assert spec["layer"][0]["transform"] == [{"filter": {"field": "kind", "equal": "answer"}}]
    assert sum(1 for v in times if v["seconds"] < 1.0) > len(times) / 2  # the clicker's speed
    for tag in re.findall(r"<script[^>]*>", html):
        assert "src=" in tag or 'type="application/json"' in tag, tag


@pytest.mark.parametrize("name", ["A0", "A999", "B1", "A1x", "%3Cscript%3E"])
def test_it_answers_an_unknown_pseudonym_with_404(coref, viewer, name):
    assert viewer.get(page_url(coref.study, name)).status_code == 404


def test_it_hides_the_page_from_a_stranger(coref, django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    assert client.get(page_url(coref.study, "A1")).status_code == 404


def test_a_viewer_sees_no_exclude_action(coref, viewer):
    html = viewer.get(page_url(coref.study, "A1")).content.decode()
    assert 'id="exclude-form"' not in html and 'id="rerun-form"' not in html


def test_the_owner_excludes_from_the_page_after_confirming_then_starts_a_new_run(coref):
    study = coref.study
    client = Client()
    client.force_login(study.owner)
    bot = planted(coref, "random")
    html = client.get(page_url(study, bot)).content.decode()
    form = html[html.index('id="exclude-form"') - 300:html.index("</form>",
                                                               html.index('id="exclude-form"'))]
    action = re.search(r'action="([^"]+)"', form)[1]
    assert 'name="confirm" value="exclude" required' in form
    # without the confirmation nothing changes
    client.post(action, {})
    study.refresh_from_db()
    assert bot not in (study.analysis_settings.get("excluded_annotators") or [])
    client.post(action, {"confirm": "exclude"})
    study.refresh_from_db()
    assert bot in study.analysis_settings["excluded_annotators"]
    html = client.get(page_url(study, bot)).content.decode()
    assert 'id="excluded-badge"' in html and "Include " + bot in html
    rerun = html[html.index('id="rerun-form"') - 200:html.index("</form>",
                                                             html.index('id="rerun-form"'))]
    fields = dict(re.findall(r'name="([a-z_]+)" value="([^"]*)"', rerun))
    runs = AnalysisRun.objects.filter(study=study).count()
    response = client.post(re.search(r'action="([^"]+)"', rerun)[1], fields)
    assert response.status_code == 302
    assert AnalysisRun.objects.filter(study=study).count() == runs + 1
    newest = AnalysisRun.objects.filter(study=study).latest("created_at")
    assert bot in newest.settings["excluded_annotators"]


def test_the_ranking_table_and_the_participants_page_link_to_it(coref):
    study = coref.study
    client = Client()
    client.force_login(study.owner)
    bot = planted(coref, "random")
    target = reverse("analysis:annotator", kwargs={"slug": study.slug, "pseudonym": bot})
    dashboard = client.get(reverse("analysis:dashboard", kwargs={"slug": study.slug}))
    table = dashboard.content.decode()
    table = table[table.index('id="ranking-table"'):]
    assert f'href="{target}?' in table[:table.index("</table>")]
    people = client.get(reverse("studies:participants", kwargs={"slug": study.slug}))
    assert f'href="{target}"' in people.content.decode()
