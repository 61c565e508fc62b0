"""A kiosk opened for a station shows that station's event (issue 23) in Chromium against the running
stack: the event's branding per station (the ``KIOSK_*`` settings at a station no event lists), and the
closed screen of a station whose event has ended, which opens by itself once its next event starts (the
page asks again every 60 s: the page's clock is moved on, the server's is not).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import Page

from devstack.processes import Stack
from shared.db import create_engine
from shared.events import Event
from shared.repositories import Database
from tests.browser.kiosk_helpers import BRANDING, in_thread, open_kiosk, screenshot, wait_screen

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def save_events(stack: Stack, *events: Event) -> None:
    async def go() -> None:
        db = Database(create_engine(stack.config.database_url))
        try:
            async with db.transaction() as repos:
                for event in events:
                    await repos.events.save(event)
        finally:
            await db.dispose()

    in_thread(go)


def accent(page: Page) -> str:
    return str(
        page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent')")
    ).strip()


def test_each_station_shows_its_event_branding(page: Page, stack: Stack) -> None:
    now = datetime.now(UTC)
    save_events(
        stack,
        Event(
            id="browser-berlin",
            name="Berlin Expo",
            time_zone="Europe/Berlin",
            starts_at=now - timedelta(hours=1),
            stations=("berlin-b",),
            branding={"title": "Berlin Expo", "accent_color": "#ff0000"},
        ),
    )
    open_kiosk(page, stack, station="berlin-b")
    assert page.text_content("#event-title") == "Berlin Expo"
    assert accent(page) == "#ff0000"
    screenshot(page, "kiosk-event-branding")

    open_kiosk(page, stack, station="unlisted-b")
    assert page.text_content("#event-title") == BRANDING["KIOSK_EVENT_TITLE"]
    assert accent(page) == BRANDING["KIOSK_ACCENT_COLOR"]


def test_a_closed_station_shows_the_next_event_and_opens_by_itself(page: Page, stack: Stack) -> None:
    now = datetime.now(UTC)
    spring = Event(
        id="browser-spring",
        name="Spring Fair",
        time_zone="Europe/Berlin",
        starts_at=datetime(2036, 3, 14, 9, 30, tzinfo=UTC),  # 10:30 in Berlin
        stations=("closed-b",),
    )
    save_events(
        stack,
        Event(
            id="browser-gala",
            name="Old Gala",
            starts_at=now - timedelta(days=2),
            ends_at=now - timedelta(days=1),
            stations=("closed-b",),
        ),
        spring,
    )
    page.clock.install()
    page.goto(f"{stack.ingest_url}/kiosk?station=closed-b")
    wait_screen(page, "closed")
    assert page.text_content('section[data-screen="closed"] h1') == "We're closed right now"
    next_line = page.text_content("#closed-next") or ""
    assert next_line.startswith("Next: Spring Fair, ") and "10:30" in next_line, next_line
    assert page.is_hidden("#qr")
    screenshot(page, "kiosk-closed")

    page.click("#lang")  # the closed screen speaks the kiosk's languages too
    assert page.text_content('section[data-screen="closed"] h1') != "We're closed right now"

    save_events(stack, Event(**{**_fields(spring), "starts_at": now - timedelta(minutes=1)}))
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/sessions") and r.status == 201
    ):
        page.clock.run_for(61_000)
    page.wait_for_selector("#qr:not([hidden])")
    assert page.get_attribute("body", "data-screen") == "welcome"


def _fields(event: Event) -> dict[str, Any]:
    return {name: getattr(event, name) for name in Event.__dataclass_fields__}
