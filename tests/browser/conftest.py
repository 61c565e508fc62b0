"""Browser tier: Debian's Chromium (``/usr/bin/chromium``) driven by Playwright against a running stack.

One stack (Telegram simulator + the five services as processes, real Postgres and Redis) serves every
browser test; each test gets a fresh browser context, and fails on any uncaught script error or
Content-Security-Policy violation on the page. Screenshots go to ``var/test-output/browser/``.

Chromium's fake camera (``--use-fake-device-for-media-stream``) shows a moving pattern without a face,
which is exactly what the no-face test needs; journeys that must succeed use the file-input fallback
with a fixture photo from ``../shared/fixtures/photos``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from devstack.processes import Stack
from tests.browser.kiosk_helpers import ADMIN_TOKEN, BRANDING

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
]
EXTRA_ENV = {"ADMIN_TOKEN": ADMIN_TOKEN, **BRANDING}


@pytest.fixture(scope="session")
def stack(namespace: Any) -> Iterator[Stack]:
    with namespace.running_stack("sb_browser", extra_env=EXTRA_ENV, scope="session") as s:
        yield s


@pytest.fixture(scope="session")
def playwright(stack: Stack) -> Iterator[Playwright]:
    """Playwright's driver, started after the stack: its sync API keeps an event loop running in this
    thread, so nothing that calls ``asyncio.run`` (the stack's set-up and tear-down) may run beside it."""
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's Chromium, never a browser downloaded by Playwright (``make test-browser`` installs it)."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: run `make test-browser`, which installs it"
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tablet-sized page (landscape, touch); the test fails on a script error or a CSP violation."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, has_touch=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            problems.append(f"CSP: {message.text}")

    page.on("console", on_console)
    yield page
    context.close()
    assert not problems, problems
