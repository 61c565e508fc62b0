"""The landing page in Chromium against the running stack (issue 13 item 4): the visitor's language from
Accept-Language, the EN/RU switch (remembered), the consent line that must be ticked, and a sent lead that
records the consent."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Route, expect

from devstack.processes import Stack
from shared.db import create_engine
from shared.repositories import Database
from tests.browser.kiosk_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture
def russian_phone(browser: Browser) -> Iterator[tuple[BrowserContext, Page, list[str]]]:
    """A phone-sized page whose browser asks for Russian; the list collects script errors, CSP
    violations and the landing's POSTs (``POST <url>``)."""
    context = browser.new_context(viewport=PHONE, locale="ru-RU", has_touch=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    seen: list[str] = []
    page.on("pageerror", lambda error: seen.append(f"uncaught: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            seen.append(f"CSP: {message.text}")

    def on_request(request: Request) -> None:
        if request.method == "POST":
            seen.append(f"POST {request.url}")

    page.on("console", on_console)
    page.on("request", on_request)
    yield context, page, seen
    context.close()


def consented_at(stack: Stack, lead_number: int) -> datetime | None:
    async def read() -> datetime | None:
        db = Database(create_engine(stack.config.database_url))
        try:
            async with db.transaction() as repos:
                lead = await repos.leads.get(lead_number)
            assert lead is not None, f"lead #{lead_number} is not stored"
            return lead.consented_at
        finally:
            await db.dispose()

    with ThreadPoolExecutor(1) as thread:  # Playwright's event loop runs in this thread
        return thread.submit(asyncio.run, read()).result()


def test_the_landing_page_speaks_russian_switches_to_english_and_needs_consent(
    stack: Stack, russian_phone: tuple[BrowserContext, Page, list[str]]
) -> None:
    _context, page, seen = russian_phone
    page.goto(f"{stack.ingest_url}/landing")
    expect(page.locator("html")).to_have_attribute("lang", "ru")
    expect(page.get_by_role("heading", level=1, name="Стикер-стойка на вашем мероприятии")).to_be_visible()
    expect(page.get_by_text("A sticker booth at your event")).to_be_hidden()
    expect(page.get_by_text("Я согласен(на), что Sticker Booth хранит")).to_be_visible()
    expect(page.get_by_role("button", name="Русский")).to_have_attribute("aria-pressed", "true")
    screenshot(page, "landing-ru-phone")

    page.get_by_role("button", name="English").click()
    expect(page.get_by_role("heading", level=1, name="A sticker booth at your event")).to_be_visible()
    expect(page).to_have_title("Sticker Booth for your event")
    consent_line = page.get_by_text("I agree that Sticker Booth stores my name, contact and message")
    expect(consent_line).to_contain_text("deletes them 180 days after my last request")

    page.get_by_label("Your name").fill("Maria Browser")
    page.get_by_label("Phone, e-mail or Telegram @username").fill("maria.browser@example.com")
    page.get_by_label("About the event").fill("A wedding, 120 guests")
    page.get_by_role("button", name="Send").click()
    status = page.locator("[data-sticker-lead-status]")
    expect(status).to_have_text("Please tick the consent box: we need it to answer you.")
    expect(page.locator("#lead-consent")).to_have_attribute("aria-invalid", "true")
    assert not [s for s in seen if s.startswith("POST")], seen  # nothing left the page
    screenshot(page, "landing-en-consent-missing")

    page.locator("#lead-consent").check()
    page.get_by_role("button", name="Send").click()
    expect(status).to_have_text(
        re.compile(r"^Thank you! Your request #(\d+) is with us, we will contact you soon\.$")
    )
    number = int(status.inner_text().split("#", 1)[1].split(" ", 1)[0])
    assert seen == [f"POST {stack.ingest_url}/leads"], seen
    assert consented_at(stack, number) is not None
    expect(page.get_by_label("Your name")).to_have_value("")  # the form is cleared for the next one
    screenshot(page, "landing-en-sent")

    page.reload()  # the visitor's choice wins over Accept-Language
    expect(page.get_by_role("heading", level=1, name="A sticker booth at your event")).to_be_visible()
    assert [s for s in seen if not s.startswith("POST")] == []


def test_the_landing_page_fits_a_desktop_in_english_by_default(browser: Browser, stack: Stack) -> None:
    context = browser.new_context(viewport=DESKTOP, locale="en-GB")
    try:
        page = context.new_page()
        page.goto(f"{stack.ingest_url}/landing")
        expect(page.get_by_role("heading", level=1, name="A sticker booth at your event")).to_be_visible()
        form, hero = page.locator("form[data-sticker-lead]"), page.locator(".hero")
        form_box, hero_box = form.bounding_box(), hero.bounding_box()
        assert form_box and hero_box and form_box["x"] > hero_box["x"] + hero_box["width"] - 1  # side by side
        assert page.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
        screenshot(page, "landing-en-desktop")
    finally:
        context.close()


def leads_with_contact(stack: Stack, contact_key: str) -> list[int]:
    async def read() -> list[int]:
        db = Database(create_engine(stack.config.database_url))
        try:
            async with db.transaction() as repos:
                return [
                    lead.id
                    for lead, _repeats in await repos.leads.list_recent(limit=1000)
                    if lead.contact_key == contact_key
                ]
        finally:
            await db.dispose()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, read()).result()


def test_a_lead_the_landing_could_not_send_is_kept_and_sent_once_after_a_reload(
    browser: Browser, stack: Stack
) -> None:
    """Issue 19 (DESIGN.md §8): ingest answers 503 to every POST of the first visit; the lead is kept on
    the device (localStorage) and, the page loaded again, sent with its requestId: it arrives once."""
    context = browser.new_context(viewport=PHONE, locale="en-GB")
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        sent_ids: list[str] = []

        def on_request(request: Request) -> None:
            body = request.post_data_json if request.method == "POST" else None
            if body:
                sent_ids.append(body["requestId"])

        page.on("request", on_request)

        def unavailable(route: Route) -> None:
            route.fulfill(status=503, json={"error": {"code": "database_unavailable"}})

        page.route("**/leads", unavailable)
        page.goto(f"{stack.ingest_url}/landing")
        page.get_by_label("Your name").fill("Kept Visitor")
        page.get_by_label("Phone, e-mail or Telegram @username").fill("kept.visitor@example.com")
        page.get_by_label("About the event").fill("A conference, 400 guests")
        page.locator("#lead-consent").check()
        page.get_by_role("button", name="Send").click()
        status = page.locator("[data-sticker-lead-status]")
        expect(status).to_have_text(
            "We could not send your request yet. It is kept on this device and will be sent automatically."
        )
        assert len(sent_ids) == 3  # the first try and its two retries
        assert leads_with_contact(stack, "email:kept.visitor@example.com") == []

        page.unroute("**/leads")  # ingest answers again
        page.reload()
        expect(status).to_have_text(
            re.compile(r"^Thank you! Your request #(\d+) is with us, we will contact you soon\.$")
        )
        number = int(status.inner_text().split("#", 1)[1].split(" ", 1)[0])
        assert leads_with_contact(stack, "email:kept.visitor@example.com") == [number]
        assert len(set(sent_ids)) == 1 and len(sent_ids) >= 4, sent_ids  # one requestId throughout
        assert page.evaluate("window.localStorage.getItem('stickerBoothLeadOutbox')") is None
        expect(page.get_by_label("Your name")).to_have_value("")
        page.reload()  # nothing is sent twice
        page.wait_for_timeout(1000)
        assert leads_with_contact(stack, "email:kept.visitor@example.com") == [number]
    finally:
        context.close()
