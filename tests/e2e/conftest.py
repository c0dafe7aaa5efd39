"""Headless Chromium driven by Playwright against the live test server."""

import os
import shutil

import pytest

from tests.conftest import require

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="session")
def browser():
    require(os.path.exists(CHROMIUM), "Chromium is not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are still plain synchronous calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.csp_violations = []
    page.on("console", lambda msg: "Content Security Policy" in msg.text
            and page.csp_violations.append(msg.text))
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def login(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/studies/")


@pytest.fixture
def sized(browser):
    """Return a function opening a page of the given size (a phone is a touch device)."""
    contexts = []

    def open_page(width: int, height: int):
        phone = width < 600
        context = browser.new_context(viewport={"width": width, "height": height},
                                      is_mobile=phone, has_touch=phone)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.csp_violations = []
        page.on("console", lambda msg: "Content Security Policy" in msg.text
                and page.csp_violations.append(msg.text))
        return page

    yield open_page
    for context in contexts:
        context.close()
