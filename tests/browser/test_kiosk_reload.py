"""A reload of the kiosk page carries on where it was (a staff member's reload, a crashed tablet browser,
a tablet that slept): the same QR code while nobody has linked, the linked guest's step, the progress or
done screen once the photo is sent. After a reset or "Not you?" a reload never brings the previous guest
back (the page keeps the session in localStorage and forgets it first; see "Resume after a reload" in
``kiosk.js``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Request, Route

from devstack.processes import Stack
from tests.browser.kiosk_helpers import (
    choose_language,
    choose_photo,
    deep_link,
    open_kiosk,
    pick_outfit,
    scan_and_start,
    screen,
    screenshot,
    session_status,
    wait_screen,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture
def created(page: Page) -> Iterator[list[str]]:
    """The ``POST /sessions`` requests the page makes from now on (their URLs)."""
    seen: list[str] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/sessions"):
            seen.append(request.url)

    page.on("request", on_request)
    yield seen


def stored_session_id(page: Page) -> str | None:
    """The session id the page keeps for a reload (None: it keeps none)."""
    raw = page.evaluate(
        "() => Object.keys(localStorage).filter((k) => k.startsWith('sticker-booth.kiosk.'))"
        ".map((k) => localStorage.getItem(k))"
    )
    assert len(raw) <= 1, raw
    return str(json.loads(raw[0])["id"]) if raw else None


def reload_and_settle(page: Page) -> None:
    page.reload()
    page.wait_for_function("() => document.body.dataset.screen !== undefined")
    page.wait_for_timeout(1500)  # the resume's status read and one poll


def test_a_reload_while_waiting_for_the_link_shows_the_same_qr(
    page: Page, stack: Stack, created: list[str]
) -> None:
    session = open_kiosk(page, stack, station="hall-r1")
    link = deep_link(page)
    assert len(created) == 1
    reload_and_settle(page)
    page.wait_for_selector("#qr:not([hidden])")
    assert screen(page) == "welcome"
    assert deep_link(page) == link  # the same token: a guest who scanned before the reload goes on
    assert len(created) == 1, "the reload opened a new session"
    scan_and_start(page, stack, user_id=7301, first_name="Ola")  # the resumed page's poll sees the link
    assert page.inner_text("#guest-hi") == "Hi, Ola!"
    assert session_status(stack, session["id"])["telegram_linked"]


def test_a_reload_after_linking_shows_the_linked_guest_on_their_step(
    page: Page, stack: Stack, created: list[str]
) -> None:
    session = open_kiosk(page, stack, station="hall-r2")
    scan_and_start(page, stack, user_id=7302, first_name="Lea")
    choose_language(page, "ru")  # the guest reads Russian
    reload_and_settle(page)
    wait_screen(page, "outfits")
    page.wait_for_selector("#guest:not([hidden])")
    assert page.inner_text("#guest-hi") == "Привет, Lea!" and page.is_visible("#not-you")
    choose_language(page, "en")
    pick_outfit(page, "chef")
    reload_and_settle(page)
    wait_screen(page, "camera")  # outfit and "Agree" are on the session: straight to the camera
    assert page.inner_text("#guest-hi") == "Hi, Lea!"
    screenshot(page, "kiosk-reload-camera")
    assert len(created) == 1
    status = session_status(stack, session["id"])
    assert (status["outfit_id"], status["consent"] is not None) == ("chef", True)


def test_a_reload_after_the_photo_was_sent_shows_progress_then_the_done_screen(
    page: Page, stack: Stack, created: list[str]
) -> None:
    session = open_kiosk(page, stack, station="hall-r3")
    scan_and_start(page, stack, user_id=7303, first_name="Max")
    pick_outfit(page, "wizard")
    choose_photo(page, "face-older-man-white-hair.jpg")
    page.click("#send")
    wait_screen(page, "generating")
    reload_and_settle(page)
    assert screen(page) in ("generating", "done"), screen(page)
    assert not page.is_visible("#guest")  # the greeting is for the steps before the photo
    wait_screen(page, "done", timeout_ms=180_000)  # the resumed poll follows the job
    reload_and_settle(page)
    wait_screen(page, "done")
    # the stickers are fetched with the session's token, which the page kept (the status no longer has it)
    page.wait_for_function(
        "() => { const s = [...document.querySelectorAll('#done-stickers img.sticker')];"
        " return s.length === 4 && s.every((i) => i.complete && i.naturalWidth > 0); }"
    )
    assert len(created) == 1
    assert session_status(stack, session["id"])["token"] is None
    # "Next guest" forgets the session before anything else: even when the new one cannot be opened
    # yet (the network is down), a reload does not show this guest's stickers again.
    page.route("**/sessions", lambda route: route.abort("connectionreset"))
    page.click("#next-done")
    wait_screen(page, "welcome")
    page.unroute("**/sessions")
    reload_and_settle(page)
    page.wait_for_selector("#qr:not([hidden])")
    assert screen(page) == "welcome"
    assert stored_session_id(page) not in (None, session["id"])


def test_after_not_you_a_reload_never_greets_the_other_person(page: Page, stack: Stack) -> None:
    session = open_kiosk(page, stack, station="hall-r4")
    first_link = deep_link(page)
    scan_and_start(page, stack, user_id=7304, first_name="Zed")
    # "Not you?" on a hung network: a reload before the answer must not resume Zed's session.
    hung: list[Route] = []

    def hang(route: Route) -> None:
        hung.append(route)  # never answered

    page.route("**/sessions/*/unlink", hang)
    page.click("#not-you")
    deadline = time.monotonic() + 5
    while not hung:
        assert time.monotonic() < deadline, "the unlink was not sent"
        page.wait_for_timeout(100)
    assert stored_session_id(page) is None
    page.unroute("**/sessions/*/unlink")
    reload_and_settle(page)
    page.wait_for_selector("#qr:not([hidden])")
    assert screen(page) == "welcome" and not page.is_visible("#guest")
    assert deep_link(page) != first_link
    assert stored_session_id(page) not in (None, session["id"])  # a new session
    # A normal unlink, then a reload: the new QR code of that session, nobody greeted.
    second = session_status(stack, str(stored_session_id(page)))
    scan_and_start(page, stack, user_id=7305, first_name="Amy")
    page.click("#not-you")
    wait_screen(page, "welcome")
    page.wait_for_selector("#qr:not([hidden])")
    new_link = deep_link(page)
    reload_and_settle(page)
    page.wait_for_selector("#qr:not([hidden])")
    assert screen(page) == "welcome" and not page.is_visible("#guest")
    assert deep_link(page) == new_link and second["token"] not in new_link
    assert not session_status(stack, second["id"])["telegram_linked"]


def test_after_the_idle_reset_a_reload_shows_a_fresh_welcome(page: Page, stack: Stack) -> None:
    page.clock.install()
    session = open_kiosk(page, stack, station="hall-r5")
    first_link = deep_link(page)
    scan_and_start(page, stack, user_id=7306, first_name="Ivy")
    reload_and_settle(page)  # kept until the reset: a reload resumes Ivy
    wait_screen(page, "outfits")
    assert page.inner_text("#guest-hi") == "Hi, Ivy!"
    page.route("**/sessions", lambda route: route.abort("connectionreset"))  # no new session yet
    page.clock.fast_forward(76_000)
    page.wait_for_selector("#idle:not([hidden])")
    page.clock.fast_forward(16_000)
    wait_screen(page, "welcome")
    assert stored_session_id(page) is None
    page.unroute("**/sessions")
    reload_and_settle(page)
    page.wait_for_selector("#qr:not([hidden])")
    assert screen(page) == "welcome" and not page.is_visible("#guest")
    assert deep_link(page) != first_link
    assert stored_session_id(page) not in (None, session["id"])
    screenshot(page, "kiosk-reload-fresh")


def test_a_reload_keeps_the_idle_time_already_spent_on_the_screen(page: Page, stack: Stack) -> None:
    """A reload 50 s into the 90 s of the outfits screen: "Still there?" comes 25 s later, as without
    the reload, not 75 s later (a reload must not keep the previous guest's screen up longer)."""
    page.clock.install()
    open_kiosk(page, stack, station="hall-r6")
    scan_and_start(page, stack, user_id=7307, first_name="Max")
    wait_screen(page, "outfits")
    page.clock.fast_forward(50_000)
    reload_and_settle(page)
    wait_screen(page, "outfits")
    assert page.inner_text("#guest-hi") == "Hi, Max!" and not page.is_visible("#idle")
    page.clock.fast_forward(30_000)
    page.wait_for_selector("#idle:not([hidden])", timeout=5_000)
