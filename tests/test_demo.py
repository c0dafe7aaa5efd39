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


def test_seed_demo_can_leave_the_analysis_out():
    call_command("seed_demo", "--no-analysis", stdout=io.StringIO())
    assert not AnalysisRun.objects.exists()


def test_the_systems_demo_rates_four_systems_on_thirty_shared_sources():
    from demo.services import SYSTEM_QUALITY, demo_seed
    from studies.models import Item, SystemScore

    _, demos = demo_seed()
    assert [d.study.slug for d in demos] == ["demo-coref", "demo-similarity", "demo-systems"]
    study = demos[2].study
    assert [q.key for q in study.question_list] == ["adequacy", "fluency"]
    items = Item.objects.filter(study=study)
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
    assert answers.count() == 5 * 120 * 2


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
