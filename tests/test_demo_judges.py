"""The systems demo's two LLM judges (issue 27, point 4): the careful one rates close to the
planted quality and picks the better output; the other rates more noisily and picks the output
shown first; each has two runs, the second showing every pair the other way round. Then the
demo's first analysis fills the Judges section, and its numbers about the people are those of
the same run without judges."""

from __future__ import annotations

import csv
import io
import itertools
import re

import numpy as np
import pytest
from scipy import stats

from demo.services import (
    DEMO_JUDGES,
    FIRST_SHOWN_BIAS,
    JUDGE_RUNS,
    SYSTEM_QUALITY,
    demo_judge_files,
)

SYSTEMS = list(SYSTEM_QUALITY)
QUALITY = {f"src{s:02d}-{system}": SYSTEM_QUALITY[system][0] + 0.1 * (s % 3)
           for s in range(1, 11) for system in SYSTEMS}
COMPARISONS = [(f"cmp-src{s:02d}-{k}", [f"src{s:02d}-{a}", f"src{s:02d}-{b}"])
               for s in range(1, 11)
               for k, (a, b) in enumerate(itertools.combinations(sorted(SYSTEMS), 2), start=1)]


def rows(name: str) -> list[dict[str, str]]:
    files = demo_judge_files(quality=QUALITY, systems={i: i.split("-", 1)[1] for i in QUALITY},
                             comparisons=COMPARISONS)
    return list(csv.DictReader(io.StringIO(files[name].decode())))


def ratings(name: str, run: str = "1") -> tuple[np.ndarray, np.ndarray]:
    mine = [r for r in rows(name) if r["question"] == "adequacy" and r["run"] == run]
    return (np.array([QUALITY[r["item"]] for r in mine]),
            np.array([float(r["value"]) for r in mine]))


def first_share(name: str) -> float:
    picks = [r for r in rows(name) if r["question"] == "preference" and r["choice"] != "tie"]
    return sum(r["choice"] == r["items"].split("|")[0] for r in picks) / len(picks)


def test_it_writes_both_runs_of_both_questions_for_every_output_and_comparison():
    careful = rows("careful-judge")
    assert {r["run"] for r in careful} == set(JUDGE_RUNS)
    for run in JUDGE_RUNS:
        mine = [r for r in careful if r["run"] == run]
        assert sum(r["question"] == "adequacy" for r in mine) == len(QUALITY)
        assert sum(r["question"] == "fluency" for r in mine) == len(QUALITY)
        assert sum(r["question"] == "preference" for r in mine) == len(COMPARISONS)
    assert {r["value"] for r in careful if r["value"]} <= {"1", "2", "3", "4", "5"}
    assert [d["name"] for d in DEMO_JUDGES] == ["careful-judge", "first-shown-judge"]


def test_the_careful_judge_follows_the_planted_quality_closer_than_the_other():
    careful = stats.spearmanr(*ratings("careful-judge"))[0]
    noisy = stats.spearmanr(*ratings("first-shown-judge"))[0]
    assert careful > 0.7 and noisy < careful - 0.15


def test_the_other_judge_picks_the_output_shown_first():
    assert first_share("first-shown-judge") >= FIRST_SHOWN_BIAS - 0.05
    assert 0.3 <= first_share("careful-judge") <= 0.7


def test_the_second_run_shows_every_pair_the_other_way_round():
    pairs = {run: [r["items"] for r in rows("careful-judge")
                   if r["question"] == "preference" and r["run"] == run] for run in JUDGE_RUNS}
    assert [p.split("|")[::-1] for p in pairs["1"]] == [p.split("|") for p in pairs["2"]]


def test_the_files_are_the_same_every_time():
    assert rows("first-shown-judge") == rows("first-shown-judge")


@pytest.mark.django_db
def test_the_systems_demo_fills_the_judges_section_on_the_first_visit():
    from django.core.management import call_command
    from django.test import Client

    from studies.models import Study

    call_command("seed_demo", stdout=io.StringIO())
    study = Study.objects.get(slug="demo-systems")
    client = Client()
    client.force_login(study.owner)
    html = client.get(f"/studies/{study.slug}/results/").content.decode()
    section = re.search(r'<section class="card" id="judges".*?</section>', html, flags=re.S)
    assert section, "no Judges section"
    rows = re.findall(r'<tr class="judge-row (\w+)" data-judge="([^"]+)" '
                      r'data-question="([^"]+)"', section[0])
    assert {(judge, question) for _, judge, question in rows} == {
        (j, q) for j in ("careful-judge", "first-shown-judge")
        for q in ("adequacy", "fluency", "preference")}
    verdicts = {(judge, question): v for v, judge, question in rows}
    assert verdicts[("careful-judge", "adequacy")] == "pass"
    assert verdicts[("first-shown-judge", "preference")] == "fail"
    assert "may replace an annotator of this study at ε = 0.2" in section[0]
    assert 'id="with-judges-banner"' not in html  # the people's results, judges beside them
