"""`make run`'s demo (issue 23, point 4): an open link where each browser is a new annotator,
and the demos analysed, so Results are full on the first visit."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

from analysis.models import AnalysisRun
from studies.models import Participant, Study

pytestmark = pytest.mark.django_db


def test_seed_demo_prints_open_links_and_leaves_the_demos_analysed():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    links = dict(re.findall(r"^  (demo-[a-z]+): http://[^/]+(/join/[^/]+/)$", text, re.M))
    assert sorted(links) == ["demo-coref", "demo-similarity"]
    for slug, link in links.items():
        study = Study.objects.get(slug=slug)
        assert link == f"/join/{study.open_token}/"
        run = AnalysisRun.objects.get(study=study)
        assert run.status == AnalysisRun.Status.DONE and run.results["counts"]["annotators"] == 12

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
