"""`make run`'s demo (issue 23, point 4): an open link where each browser is a new annotator,
and the demos analysed, so Results are full on the first visit."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.db.models import Avg
from django.test import Client

from analysis.models import AnalysisRun
from annotation.models import Answer
from studies.models import Participant, Study

pytestmark = pytest.mark.django_db


def test_seed_demo_prints_open_links_and_leaves_the_demos_analysed():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    links = dict(re.findall(r"^  (demo-[a-z]+): http://[^/]+(/join/[^/]+/)$", text, re.M))
    assert sorted(links) == ["demo-coref", "demo-similarity", "demo-systems"]
    for slug, link in links.items():
        study = Study.objects.get(slug=slug)
        assert link == f"/join/{study.open_token}/"
        run = AnalysisRun.objects.get(study=study)
        assert run.status == AnalysisRun.Status.DONE
        assert run.results["counts"]["annotators"] == (5 if slug == "demo-systems" else 12)

    study = Study.objects.get(slug="demo-similarity")
    before = Participant.objects.filter(study=study).count()
    tokens = set()
    for _ in range(2):  # two browsers: two annotators
        browser = Client()
        page = browser.get(links["demo-similarity"])
        assert page.status_code == 200  # the consent page, not "this study is full"
        entry = re.search(r'name="entry" value="([^"]+)"', page.content.decode()).group(1)
        started = browser.post(links["demo-similarity"], {"entry": entry})
        assert started.status_code == 302
        tokens.add(started["Location"].split("/")[2])
    assert len(tokens) == 2
    assert Participant.objects.filter(study=study).count() == before + 2


def test_the_systems_demo_fills_the_comparisons_section_on_the_first_visit():
    """seed_demo analyses demo-systems from its stored judgments (no number is planted in the
    results): the Comparisons section shows the planted order, the planted tie in the middle
    and the annotator with the planted position bias flagged."""
    from demo.services import DEMO_USER, POSITION_BIASED

    call_command("seed_demo", stdout=io.StringIO())
    study = Study.objects.get(slug="demo-systems")
    client = Client()
    client.force_login(study.owner)
    assert study.owner.username == DEMO_USER
    html = client.get(f"/studies/{study.slug}/results/").content.decode()
    section = re.search(r'<section class="card" id="comparisons".*?</section>', html, re.S)
    assert section, "no Comparisons section on the first visit"
    table = re.search(r'<table[^>]*id="comparison-scores-preference".*?</table>', section[0],
                      re.S)[0]
    systems = re.findall(r'data-name="([^"]+)"', table)
    assert systems[0] == "mt-large" and systems[3] == "mt-small"
    assert set(systems[1:3]) == {"mt-medium", "mt-tuned"}
    assert "Which translation is better?" in section[0]
    flagged = re.findall(r'class="comparison-annotator flagged" data-annotator="([^"]+)"',
                         section[0])
    assert flagged == [f"A{POSITION_BIASED + 1}"]
    for chart in ("comparison-strengths-preference", "comparison-wins-preference"):
        assert f'data-chart="{chart}"' in section[0]
    # the section's downloads: every judgment, and the scores it shows
    rows = {}
    for link in ("judgments-csv", "comparison-scores-csv"):
        href = re.search(rf'href="([^"]+)" id="{link}"', section[0])[1]
        response = client.get(href)
        assert response.status_code == 200, href
        body = b"".join(response.streaming_content) if response.streaming else response.content
        rows[link] = body.decode().splitlines()
    assert len(rows["judgments-csv"]) == 1 + 5 * 60
    assert any("mt-large" in line for line in rows["comparison-scores-csv"])


def test_seed_demo_can_leave_the_analysis_out():
    call_command("seed_demo", "--no-analysis", stdout=io.StringIO())
    assert not AnalysisRun.objects.exists()


def test_the_systems_demo_rates_four_systems_on_thirty_shared_sources():
    from demo.services import SYSTEM_QUALITY, demo_seed
    from studies.models import Item, SystemScore

    _, demos = demo_seed()
    assert [d.study.slug for d in demos] == ["demo-coref", "demo-similarity", "demo-systems"]
    study = demos[2].study
    assert [q.key for q in study.question_list] == ["adequacy", "fluency", "preference"]
    items = Item.objects.filter(study=study, outputs=[])  # the outputs (comparisons aside)
    assert items.count() == 120
    assert set(items.values_list("system", flat=True)) == set(SYSTEM_QUALITY)
    sources = {}
    for system, source in items.values_list("system", "source"):
        sources.setdefault(source, set()).add(system)
    assert len(sources) == 30 and all(s == set(SYSTEM_QUALITY) for s in sources.values())
    assert all({"semsim", "overlap"} <= set(m) for m in items.values_list("metrics", flat=True))
    assert dict(SystemScore.objects.filter(study=study).values_list("system", "value"))[
        "mt-large"] == 31.5
    assert len(demos[2].participants) == 5
    answers = Answer.objects.filter(response__participant__study=study)
    # each output rated on both scale questions, each comparison judged once: no answer to a
    # question the item is not asked
    assert answers.count() == 5 * 120 * 2 + 5 * 60
    assert not answers.filter(question__key="preference", response__item__outputs=[]).exists()
    assert not answers.filter(question__key="adequacy").exclude(
        response__item__outputs=[]).exists()


def test_the_systems_demo_asks_which_translation_is_better_about_every_pair():
    """Issue 25: the pairwise question, ties allowed, about all 6 pairs of the 4 systems'
    outputs of each of 10 sources, in the design's canonical order (systems by name)."""
    from itertools import combinations

    from core.comparative import options_clean
    from demo.services import PAIRWISE_SOURCES, SYSTEM_QUALITY, demo_seed
    from studies.models import Item, Question

    _, demos = demo_seed()
    study = demos[2].study
    question = study.questions.get(key="preference")
    assert question.kind == Question.Kind.PAIRWISE and question.is_comparative
    assert question.prompt == "Which translation is better?"
    assert question.comparison == options_clean("pairwise", {"ties": True})
    assert question.values == [] and question.labels == {}
    comparisons = list(Item.objects.filter(study=study).exclude(outputs=[]))
    assert len(comparisons) == PAIRWISE_SOURCES * 6
    system = dict(Item.objects.filter(study=study, outputs=[]).values_list("external_id",
                                                                           "system"))
    source = dict(Item.objects.filter(study=study, outputs=[]).values_list("external_id",
                                                                           "source"))
    pairs: dict[str, list[tuple[str, str]]] = {}
    for c in comparisons:
        assert c.role == Item.Role.MAIN and c.system == "" and c.meta["design"] == "pairs"
        assert {source[o] for o in c.outputs} == {c.source}
        assert c.external_id.startswith(f"cmp-{c.source}-")
        assert question.applies_to(c)
        pairs.setdefault(c.source, []).append(tuple(system[o] for o in c.outputs))
    assert len(pairs) == PAIRWISE_SOURCES
    expected = list(combinations(sorted(SYSTEM_QUALITY), 2))
    assert all(sorted(p) == expected for p in pairs.values())


def test_the_systems_demo_stores_judgments_with_their_choice_and_planted_quality():
    """Every annotator judges every comparison; each answer keeps the outputs in the order this
    participant is shown them and the pick, its value the canonical index (a tie 0.5). The
    planted order shows in the win rates, the planted tie stays close, and the planted
    position bias in one annotator's share of left picks."""
    from collections import Counter

    from core.comparative import judgment_clean, shown_order
    from demo.services import POSITION_BIASED, demo_seed
    from studies.models import Item

    _, demos = demo_seed()
    demo = demos[2]
    system = dict(Item.objects.filter(study=demo.study, outputs=[]).values_list("external_id",
                                                                                "system"))
    answers = list(Answer.objects.filter(response__participant__study=demo.study,
                                         question__key="preference")
                   .select_related("response__item", "response__participant"))
    assert len(answers) == 5 * 60
    wins, shown, left, judged = Counter(), Counter(), Counter(), Counter()
    for answer in answers:
        item, participant = answer.response.item, answer.response.participant
        choice = answer.choice
        assert choice["shown"] == shown_order(item.outputs, f"{participant.pk}:{item.pk}")
        value, stored = judgment_clean("pairwise", {"ties": True}, item.outputs, choice)
        assert stored == choice and answer.value == value and answer.missing == ""
        for output in choice["shown"]:
            shown[system[output]] += 1
            wins[system[output]] += 1.0 if choice["pick"] == output else \
                0.5 if choice["pick"] == "tie" else 0.0
        judged[participant.pk] += 1
        left[participant.pk] += choice["pick"] == choice["shown"][0]
    assert set(judged.values()) == {60}
    rate = {s: wins[s] / shown[s] for s in shown}
    assert rate["mt-large"] > max(rate["mt-medium"], rate["mt-tuned"]) + 0.2
    assert min(rate["mt-medium"], rate["mt-tuned"]) > rate["mt-small"] + 0.2
    # the planted tie: far closer than the planted gaps (the shown orders, and with them the
    # draws, follow the participants' ids)
    assert abs(rate["mt-medium"] - rate["mt-tuned"]) < 0.2
    assert any(a.choice["pick"] == "tie" and a.value == 0.5 for a in answers)
    biased = demo.participants[POSITION_BIASED].pk
    assert demo.behaviours[biased] == "position-bias"
    assert left[biased] / 60 > 0.7
    assert all(0.25 < left[p] / 60 < 0.65 for p in judged if p != biased)


def test_the_systems_demo_plants_its_order_and_its_tie_in_the_answers():
    """The answers carry the planted order (mt-large > mt-medium = mt-tuned > mt-small) on both
    questions: the means of the ratings follow it, and the tied pair is far closer than any
    other neighbouring pair."""
    from demo.services import demo_seed

    _, demos = demo_seed()
    study = demos[2].study
    for question in ("adequacy", "fluency"):
        means = dict(Answer.objects.filter(response__participant__study=study,
                                           question__key=question)
                     .values_list("response__item__system").annotate(m=Avg("value"))
                     .values_list("response__item__system", "m"))
        assert means["mt-large"] > max(means["mt-medium"], means["mt-tuned"]) + 0.4
        assert min(means["mt-medium"], means["mt-tuned"]) > means["mt-small"] + 0.4
        assert abs(means["mt-medium"] - means["mt-tuned"]) < 0.25


def test_the_first_two_demos_are_made_first_so_their_ids_do_not_move():
    from demo.services import demo_seed

    _, demos = demo_seed()
    coref, similarity, systems = (d.study for d in demos)
    assert coref.pk < similarity.pk < systems.pk
    assert max(p.pk for d in demos[:2] for p in d.participants) < min(
        p.pk for p in demos[2].participants)
