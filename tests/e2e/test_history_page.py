"""The history page reads in words at both widths (issue 23, point 6)."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from studies.services import participants_invite, study_update

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("CONCORD_SHOTS_DIR")  # set: the pages are saved there to be looked at


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_the_history_says_what_happened_in_words(live_server, sized, alice, make_study, width,
                                                 height):
    study = make_study(alice, slug="hist", open=False)
    study_update(study=study, changes={"title": "Renamed", "instructions": "Read."}, user=alice)
    participants_invite(study=study, count=3, user=alice)
    page = sized(width, height)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/{study.slug}/history/")
    rows = page.locator("#history tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("3 new links")
    expect(rows.nth(1)).to_contain_text("changed: ")
    expect(rows.nth(2)).to_contain_text("5 items from items.csv")
    assert "[" not in page.locator("#history").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"history-{width}.png"), full_page=True)
