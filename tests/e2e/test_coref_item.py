"""An annotator reads a coreference item: gold and system passages, numbered chains, a legend."""

import pytest
from playwright.sync_api import expect

from studies.services import coref_items_import, participants_invite, study_open
from tests.studies.test_coref_import import GOLD_CONLL, SYSTEM_CONLL

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def coref_participant(make_study, owner):
    study = make_study(owner, slug="coref-e2e", items=None, open=False)
    coref_items_import(study=study, gold=GOLD_CONLL.encode(), system=SYSTEM_CONLL.encode(),
                       gold_name="gold.conll", system_name="sys.conll", fmt="conll2012")
    study_open(study=study)
    return participants_invite(study=study, count=1)[0]


def start(page, base, participant):
    page.goto(f"{base}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()


def test_an_annotator_sees_both_annotations_and_the_legend(live_server, page, alice, make_study):
    participant = coref_participant(make_study, alice)
    start(page, live_server.url, participant)

    gold = page.get_by_role("region", name="Gold annotation")
    system = page.get_by_role("region", name="System annotation")
    expect(gold.get_by_role("heading", name="Gold annotation")).to_be_visible()
    expect(system.get_by_role("heading", name="System annotation")).to_be_visible()
    # Whichever document comes first, each side shows bracketed, numbered mentions
    for side in (gold, system):
        expect(side.locator(".coref-text .mention").first).to_be_visible()
        expect(side.locator(".coref-text .chain-no").first).to_have_text("1")
        legend = side.get_by_role("list", name="Chains")
        expect(legend).to_be_visible()
        expect(legend.get_by_role("listitem").first).to_contain_text("Chain 1:")
    # The chain number is visible text, and the swatch takes its colour from the palette.
    swatch = gold.locator(".chain-legend li.chain-1 .swatch")
    assert swatch.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(227, 236, 251)"
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    page.keyboard.press("7")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Item 2 of 2")).to_be_visible()
    expect(page.get_by_role("region", name="Gold annotation")).to_be_visible()
    assert page.csp_violations == []


def test_a_coreference_item_fits_a_phone_screen(live_server, phone, alice, make_study):
    participant = coref_participant(make_study, alice)
    start(phone, live_server.url, participant)
    expect(phone.get_by_role("heading", name="System annotation")).to_be_visible()
    overflow = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
