"""The items list pages with htmx under the strict CSP: Next swaps the table and pushes the URL,
typing in the search box filters it; no CSP violation."""

import pytest
from playwright.sync_api import expect

from studies.selectors import PAGE_SIZE

from .conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

MANY = "id,text\n" + "".join(f"n{k:03d},Passage number {k}\n" for k in range(PAGE_SIZE + 3))


def test_the_items_list_pages_and_searches_in_place(live_server, page, alice, make_study):
    make_study(alice, items=MANY, open=False)
    login(page, live_server.url, "alice", "alice-password-1")
    page.goto(f"{live_server.url}/studies/s1/items/")
    expect(page.locator("#items tbody tr")).to_have_count(PAGE_SIZE)
    page.evaluate("window.notReloaded = true")
    page.locator("a[rel=next]").click()
    page.wait_for_url("**/items/?page=2")
    expect(page.locator("#items tbody tr")).to_have_count(3)
    assert page.evaluate("window.notReloaded") is True  # swapped in place, not a new page
    page.fill("#q", "number 7")
    page.wait_for_url("**q=number**")
    expect(page.locator("#items tbody tr")).to_have_count(1)
    expect(page.locator("#items")).to_contain_text("n007")
    page.go_back()
    page.wait_for_url("**/items/?page=2")
    expect(page.locator("#items tbody tr")).to_have_count(3)
    assert page.csp_violations == []
