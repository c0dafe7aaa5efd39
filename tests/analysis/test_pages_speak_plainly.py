"""Pages speak the researcher's language (issue 23, point 10): no repository path, no file of the
code, no numpy word and no setting's key shown as text where its label belongs, on every main page
of a study and on every method page (general and of a run).

The pages are read as text (no tag, script, style or attribute): a link's address may be a docs
path; what a reader sees may not.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from analysis.methods import METHODS
from analysis.models import AnalysisRun
from analysis.services import analysis_run_create, analysis_run_execute
from core.settings import knobs
from studies.models import Study

pytestmark = pytest.mark.django_db

# A folder of the repository followed by a path, a code or Markdown file named as text.
FOLDERS = ("tests", "docs", "core", "analysis", "studies", "imports", "exports", "annotation",
           "jobs", "tokens", "config", "demo", "bench", "templates", "statistics")
# `python manage.py …` is a command an operator types, not a file to read: allowed.
REPOSITORY = re.compile(r"(?<![\w.-])(?:" + "|".join(FOLDERS) + r")/[\w./-]*"
                        r"|\b(?!manage\.py\b)[\w-]+\.(?:py|md)\b")
CODE_WORDS = re.compile(r"np\.\w+|\bnumpy\b|dense float|float64|\bndarray\b|\bdtype\b"
                        r"|\bexcluded_annotators\b")
# Every setting's key path that reads as code (outlier_threshold, heuristics.slow.threshold_s;
# not the plain words level and seed).
SETTING_KEYS = re.compile(r"(?<![\w.])(?:" + "|".join(
    re.escape(p) for p in sorted(knobs(), key=len, reverse=True) if "_" in p or "." in p)
    + r")(?![\w])")


def visible_text(html: str) -> str:
    """The page's text as read: no script, style or data block, no tag, no attribute."""
    html = re.sub(r"<(script|style|template)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", html))


def offenders(text: str) -> list[str]:
    found = []
    for pattern in (REPOSITORY, CODE_WORDS, SETTING_KEYS):
        for m in pattern.finditer(text):
            found.append(text[max(0, m.start() - 40):m.end() + 40])
    return found


@pytest.fixture
def seen(demo_studies):
    _, created = demo_studies
    study = next(d.study for d in created if d.study.slug == "demo-coref")
    run = analysis_run_execute(run_id=analysis_run_create(study=study, enqueue=False).pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    client = Client()
    client.force_login(study.owner)
    return client, study, run


def main_pages(study: Study, run: AnalysisRun) -> list[str]:
    slug = study.slug
    item = study.items.order_by("pk").first()
    return [
        "/studies/", "/studies/new/", "/studies/new/definition/", "/studies/new/bundle/",
        f"/studies/{slug}/", f"/studies/{slug}/items/", f"/studies/{slug}/items/{item.pk}/",
        f"/studies/{slug}/items/{item.pk}/edit/",
        f"/studies/{slug}/responses/import/", f"/studies/{slug}/participants/",
        f"/studies/{slug}/settings/", f"/studies/{slug}/sharing/", f"/studies/{slug}/history/",
        f"/studies/{slug}/results/", f"/studies/{slug}/results/annotators/A1/",
        "/account/tokens/", "/methods/references/",
    ]


def test_no_main_page_shows_a_repository_path_or_a_code_word(seen):
    client, study, run = seen
    problems = {}
    for url in main_pages(study, run):
        response = client.get(url)
        assert response.status_code == 200, url
        found = offenders(visible_text(response.content.decode()))
        if found:
            problems[url] = found[:5]
    assert problems == {}, "\n".join(f"{u}: {f}" for u, f in problems.items())


@pytest.mark.parametrize("name", METHODS)
def test_no_method_page_shows_a_repository_path_or_a_code_word(seen, name):
    client, study, run = seen
    for url in (f"/methods/{name}/", f"/studies/{study.slug}/results/runs/{run.pk}/methods/{name}/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert offenders(visible_text(response.content.decode())) == [], url


def test_the_scanner_finds_what_it_looks_for():
    for text in ("see tests/test_citations.py", "described in docs/import.md", "alpha.md",
                 "a dense float array", "np.nan = not rated", "left out: excluded_annotators",
                 "the setting trust_max_exact", "heuristics.slow.threshold_s is 300"):
        assert offenders(text), text
    assert offenders("Exact trust up to annotators: 20; 1.5 s; e.g. Krippendorff's alpha; "
                     "python manage.py import_bundle FILE") == []
