"""A pairwise study made in the browser (docs/comparisons.md): created, its question turned into a
pairwise one on the settings page (the scale's fields hide, the options show), its outputs
uploaded, its comparisons built on the items page and built again after a confirmation — at a
desktop and a phone width, under the strict CSP.

With CONCORD_SHOTS=<folder>, each page is also saved there as a screenshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from studies.models import Item, Study

from .conftest import login
from .test_accessibility import Audit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SIZES = [(1280, 800), (390, 844)]
OUTPUTS = "id,text,system,source\n" + "".join(
    f"doc{d}-{s},Summary of document {d} by {s}: the council approved the new budget.,{s},doc{d}\n"
    for d in range(1, 4) for s in ("baseline", "bart", "pegasus", "t5"))


def shot(page, name: str, part: str | None = None) -> None:
    folder = os.environ.get("CONCORD_SHOTS")
    if folder:
        width = page.viewport_size["width"]
        path = str(Path(folder) / f"{name}-{width}.png")
        if part:
            page.locator(part).screenshot(path=path)
        else:
            page.screenshot(path=path, full_page=True)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_pairwise_study_is_made_and_its_pairs_built_in_the_browser(live_server, sized, alice,
                                                                      width, height):
    page = sized(width, height)
    audit = Audit(width)  # axe-core's WCAG rules and, on the phone, no sideways scroll
    base = live_server.url
    login(page, base, "alice", "alice-password-1")
    page.goto(f"{base}/studies/new/")
    page.fill("#id_slug", "prefs")
    page.fill("#id_title", "Which summary is better?")
    page.select_option("#id_preset", "likert-1-5")
    page.click("form:has(#id_slug) button[type=submit]")
    page.wait_for_url(f"{base}/studies/prefs/")
    # The outputs: four systems for each of three documents.
    page.set_input_files("#id_file", {"name": "outputs.csv", "mimeType": "text/csv",
                                      "buffer": OUTPUTS.encode()})
    page.get_by_role("button", name="Upload items").click()
    page.wait_for_load_state()
    assert Item.objects.filter(study__slug="prefs").count() == 12

    # The settings page: the question becomes a pairwise one, by keyboard.
    page.goto(f"{base}/studies/prefs/settings/")
    form = page.locator("#question-form-0")
    expect(form.locator("select[name='q-0-scale']")).to_be_visible()
    expect(form.locator(".comparison-options")).to_be_hidden()
    form.locator("select[name='q-0-kind']").focus()
    page.keyboard.press("ArrowDown")  # Scale → Pairwise preference
    expect(form.locator("select[name='q-0-kind']")).to_have_value("pairwise")
    expect(form.locator("select[name='q-0-scale']")).to_be_hidden()
    expect(form.locator(".custom-scale")).to_be_hidden()
    expect(form.locator("input[name='q-0-ties']")).to_be_visible()
    expect(form.locator("input[name='q-0-strength']")).to_be_visible()
    expect(form.locator("input[name='q-0-size']")).to_be_hidden()
    form.locator("input[name='q-0-prompt']").fill("Which summary is more faithful?")
    form.locator("input[name='q-0-ties']").check()
    form.scroll_into_view_if_needed()
    shot(page, "question-form", "#questions-section")
    audit.check(page, "settings with a pairwise question")
    # Best–worst shows the tuple size instead.
    form.locator("select[name='q-0-kind']").select_option("bws")
    expect(form.locator("input[name='q-0-size']")).to_be_visible()
    expect(form.locator("input[name='q-0-strength']")).to_be_hidden()
    form.locator("select[name='q-0-kind']").select_option("pairwise")
    page.click("#save-settings")
    expect(page.locator("ul.messages")).to_contain_text("Saved: questions")
    study = Study.objects.get(slug="prefs")
    question = study.questions.get()
    assert (question.kind, question.comparison, question.values) == (
        "pairwise", {"ties": True, "strength": False}, [])
    page.goto(f"{base}/studies/prefs/")
    expect(page.locator(".facts")).to_contain_text("pairwise preference, ties allowed")

    # The items page: build every pair of each document's outputs.
    page.goto(f"{base}/studies/prefs/items/")
    section = page.locator("#comparisons-summary")
    expect(section).to_contain_text("No comparison yet")
    page.locator("#id_seed").fill("7")
    page.click("#comparisons-build")
    page.wait_for_url(f"{base}/studies/prefs/items/")
    expect(page.locator("ul.messages")).to_contain_text("Built 18 comparisons")
    expect(section).to_contain_text("18 comparisons of 12 outputs (18 pairs) · seed 7")
    expect(section).to_contain_text("12 outputs are shown only inside comparisons")
    assert _roles(study) == {"main": 18, "output": 12}
    expect(page.locator("#items")).to_contain_text("compares")
    expect(page.locator("#items")).to_contain_text("(pegasus)")
    shot(page, "items-comparisons")
    audit.visit(page, "items with comparisons", f"{base}/studies/prefs/items/")
    # Again, as tuples: the page asks first, then replaces them.
    page.check("#comparisons-form input[value='tuples']")
    page.locator("#id_size").fill("3")
    page.click("#comparisons-build")
    expect(page.locator("#confirm")).to_contain_text("has 18 comparisons")
    shot(page, "comparisons-confirm")
    audit.check(page, "replace the comparisons")
    page.click("#confirm-button")
    page.wait_for_url(f"{base}/studies/prefs/items/")
    expect(page.locator("ul.messages")).to_contain_text("Built 24 comparisons, replacing 18")
    assert study.items.exclude(outputs=[]).count() == 24
    assert page.csp_violations == []
    assert not audit.findings, json.dumps(audit.findings, indent=1)


def _roles(study) -> dict[str, int]:
    from collections import Counter

    return dict(Counter(study.items.values_list("role", flat=True)))
