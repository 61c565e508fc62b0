"""Steps of the kiosk page as a guest does them, plus screenshots and the stack's view of a session."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from devstack.processes import Stack
from shared.texts import LANGUAGES

REPO = Path(__file__).resolve().parents[2]
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
SHOTS = REPO / "var" / "test-output" / "browser"
ADMIN_TOKEN = "browser-tests-admin-token-0123456789"
#: The venue branding the browser stack's ingest runs with (issue 13); the logo is a path on its origin.
BRANDING = {
    "KIOSK_EVENT_TITLE": "Tech Expo 2026",
    "KIOSK_LOGO_URL": "/kiosk/assets/icon.svg",
    "KIOSK_ACCENT_COLOR": "#3ddc97",
}


KIOSK_SCREENS = REPO / "out" / "kiosk-screens"


def screenshot(page: Page, name: str) -> Path:
    """Save a PNG of the page as ``var/test-output/browser/<name>.png`` (not in git); a kiosk screen
    (``kiosk-*``) also goes to ``out/kiosk-screens/`` (not in git), the set to look at at tablet size."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    if name.startswith("kiosk-"):
        KIOSK_SCREENS.mkdir(parents=True, exist_ok=True)
        (KIOSK_SCREENS / f"{name}.png").write_bytes(path.read_bytes())
    return path


def choose_language(page: Page, language: str) -> None:
    """Tap the language button until the page is in ``language`` (it steps through the languages of
    ``GET /kiosk/words.js``, English first)."""
    for _ in range(len(LANGUAGES)):
        if page.get_attribute("html", "lang") == language:
            return
        page.click("#lang")
    assert page.get_attribute("html", "lang") == language


def screen(page: Page) -> str:
    """The kiosk screen shown now (``body[data-screen]``)."""
    return str(page.get_attribute("body", "data-screen"))


def wait_screen(page: Page, name: str, timeout_ms: float = 15_000) -> None:
    """Wait up to ``timeout_ms`` (ms) for screen ``name``.

    Raises:
        AssertionError: it did not show by then; names the screen shown instead and its visible text
            (a kiosk that gave up on an upload shows ``send-failed``, one still trying says so).
    """
    try:
        page.wait_for_selector(f'body[data-screen="{name}"]', timeout=timeout_ms)
    except PlaywrightTimeoutError:
        shown = screen(page)
        section = page.query_selector(f'section[data-screen="{shown}"]')
        text = section.inner_text() if section else ""
        raise AssertionError(
            f"screen {name!r} not shown within {timeout_ms:g} ms; shown: {shown!r} {text!r}"
        ) from None


def open_kiosk(page: Page, stack: Stack, station: str = "hall-a") -> dict[str, Any]:
    """Load ``/kiosk?station=…`` and wait for the QR code; returns the session the page opened."""
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/sessions") and r.status == 201
    ) as created:
        page.goto(f"{stack.ingest_url}/kiosk?station={station}")
    page.wait_for_selector("#qr:not([hidden])")
    session: dict[str, Any] = created.value.json()
    return session


def deep_link(page: Page) -> str:
    return str(page.get_attribute("#qr", "data-deep-link"))


def scan_and_start(
    page: Page, stack: Stack, user_id: int, *, first_name: str = "Guest", wait_for: str | None = "outfits"
) -> None:
    """The guest scans the QR code and presses Start: ``/start <token>`` through the simulator; then
    waits for the screen ``wait_for`` (None: no wait)."""
    token = deep_link(page).split("start=", 1)[1]
    httpx.post(
        f"{stack.sim_url}/sim/users/{user_id}/messages",
        json={"text": f"/start {token}", "first_name": first_name, "language_code": "en"},
        timeout=10,
    ).raise_for_status()
    if wait_for:
        wait_screen(page, wait_for)


def pick_outfit(page: Page, outfit_id: str) -> None:
    """Choose the outfit, then "Agree" on the consent screen that comes before the camera."""
    page.click(f'.outfit[data-outfit="{outfit_id}"]')
    wait_screen(page, "consent")
    page.click("#agree:enabled")
    wait_screen(page, "camera")


def choose_photo(page: Page, name: str) -> None:
    """Use the file-input fallback with ``../shared/fixtures/photos/<name>``; ends on the review screen."""
    page.set_input_files("#pick", str(PHOTOS / name))
    wait_screen(page, "review")


def session_status(stack: Stack, session_id: str) -> dict[str, Any]:
    body: dict[str, Any] = stack.http.get(f"{stack.ingest_url}/sessions/{session_id}").json()
    return body


T = TypeVar("T")


def in_thread(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on its own event loop in another thread: Playwright's sync API keeps a loop
    running in this one (see ``conftest.playwright``)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
