"""How the kiosk opens its session (``POST /sessions``). The kiosk key (``KIOSK_KEY``, README "Ingest
limits"): a kiosk opened with ``?key=`` sends it; a kiosk the server refuses for want of it tells staff how
to open it and keeps trying, so fixing its start URL or the server's setting brings the QR code back by
itself. A 429 is tried again no sooner than its ``Retry-After``."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import Page, Route, expect

from devstack.processes import Stack
from tests.browser.kiosk_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
KEY = "venue-kiosk-key-0123456789"


def test_a_kiosk_opened_with_its_key_sends_it_when_it_opens_a_session(page: Page, stack: Stack) -> None:
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/sessions")) as sent:
        page.goto(f"{stack.ingest_url}/kiosk?station=hall-k&key={KEY}")
    assert sent.value.headers.get("x-kiosk-key") == KEY
    page.wait_for_selector("#qr:not([hidden])")  # this stack sets no KIOSK_KEY: the header changes nothing


def test_a_kiosk_refused_for_want_of_the_key_says_so_to_staff_and_recovers(page: Page, stack: Stack) -> None:
    refusals: list[str | None] = []

    def refuse(route: Route) -> None:  # ingest's answer with KIOSK_KEY set (tests/ingest/test_kiosk_api.py)
        refusals.append(route.request.headers.get("x-kiosk-key"))
        body = {
            "error": {"code": "kiosk_key_required", "message": "Only the booth's kiosks can open a session."}
        }
        route.fulfill(status=401, content_type="application/json", body=json.dumps(body))

    page.route("**/sessions", refuse)
    page.goto(f"{stack.ingest_url}/kiosk?station=hall-k")
    expect(page.locator("#welcome-status")).to_contain_text("kiosk key", timeout=15_000)
    assert page.is_hidden("#qr") and refusals[0] is None
    screenshot(page, "kiosk-key-required")
    page.unroute("**/sessions")  # the server's setting is fixed: the kiosk's next try opens a session
    page.wait_for_selector("#qr:not([hidden])", timeout=30_000)
    expect(page.locator("#welcome-status")).not_to_contain_text("kiosk key")


def test_a_refused_session_is_tried_again_after_its_retry_after_not_before(page: Page, stack: Stack) -> None:
    tries: list[float] = []

    def limit_once(route: Route) -> None:  # ingest's 429 (tests/ingest/test_kiosk_api.py), then through
        tries.append(time.monotonic())
        if len(tries) > 1:
            return route.continue_()
        body = {"error": {"code": "rate_limited", "message": "Too many requests from here."}}
        headers = {"Retry-After": "4"}
        return route.fulfill(
            status=429, content_type="application/json", body=json.dumps(body), headers=headers
        )

    page.route("**/sessions", limit_once)
    page.goto(f"{stack.ingest_url}/kiosk?station=hall-r")
    page.wait_for_selector("#qr:not([hidden])", timeout=30_000)
    assert len(tries) == 2
    assert tries[1] - tries[0] >= 3.5  # the backoff alone would try again after 1 s
