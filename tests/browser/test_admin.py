"""The admin page in Chromium against the running stack (issue 13 items 3 and 5): sign in, pause/resume,
the overview row, finding a named guest's failed job and retrying it, no Retry for a no-face photo, a
delivered job's page with its stickers (each with its likeness, issue 20 item 5), contact sheet and calls
and "Resend link" reaching the guest's chat, paging, the leads CSV export, an event made on the page and
the overview's events of today, each in its own local day (issue 23)."""

from __future__ import annotations

import asyncio
import csv
import io
import re
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import httpx
import pytest
import sqlalchemy as sa
from PIL import Image
from playwright.sync_api import Page, expect

from devstack.journey import wait_until
from devstack.processes import Stack
from shared import maintenance
from shared.db import create_engine
from shared.db.tables import jobs, sessions
from shared.domain import JobStatus
from shared.events import day_start, zone
from shared.likeness import LIKENESS_MAX_DISTANCE
from shared.repositories import Database, Repositories
from shared.repositories.usage import ApiCall
from tests.browser.kiosk_helpers import ADMIN_TOKEN, PHOTOS, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
T = TypeVar("T")


def in_db(stack: Stack, work: Callable[[Repositories], Awaitable[T]]) -> T:
    """Run ``work`` in one transaction on the stack's database (a thread of its own: Playwright's event
    loop runs in this one)."""

    async def run() -> T:
        db = Database(create_engine(stack.config.database_url))
        try:
            async with db.transaction() as repos:
                return await work(repos)
        finally:
            await db.dispose()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def linked_guest(stack: Stack, *, user_id: int, first_name: str, username: str) -> UUID:
    """A kiosk session whose guest pressed Start in the Telegram simulator; returns the session id."""
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=30) as kiosk,
        httpx.Client(base_url=stack.sim_url, timeout=30) as sim,
    ):
        session = kiosk.post("/sessions", json={"station": "hall-east"}).raise_for_status().json()
        token = session["deep_link"].split("start=", 1)[1]
        sim.post(
            f"/sim/users/{user_id}/messages",
            json={
                "text": f"/start {token}",
                "first_name": first_name,
                "username": username,
                "language_code": "en",
            },
        ).raise_for_status()
        wait_until(
            lambda: kiosk.get(f"/sessions/{session['id']}").json().get("telegram_linked"), 30, "the bind"
        )
    return UUID(session["id"])


def job_of(
    stack: Stack,
    session_id: UUID,
    *,
    status: JobStatus,
    stickers: int = 0,
    likeness: dict[int, dict[str, Any]] | None = None,
    **values: Any,
) -> str:
    """A job of the session, put straight into ``status`` with ``values`` (one transaction: no worker
    sees it queued), its selfie kept and ``stickers`` PNGs stored; ``likeness`` adds to the meta of the
    sticker at each of its positions (as the worker stores ``likeness`` and ``likeness_reason``)."""

    async def make(repos: Repositories) -> str:
        capture = f"c{time.time_ns()}"
        job = await repos.jobs.insert_queued(session_id=session_id, capture_id=capture, outfit_id="pirate")
        selfie = (PHOTOS / "face-older-man-white-hair.jpg").read_bytes()
        await repos.blobs.put(kind="selfie", data=selfie, content_type="image/jpeg", job_id=job.id)
        for position in range(stickers):
            out = io.BytesIO()
            Image.new("RGBA", (512, 512), (60 + 15 * position, 120, 220, 255)).save(out, format="PNG")
            await repos.blobs.put(
                kind="sticker",
                data=out.getvalue(),
                content_type="image/png",
                job_id=job.id,
                position=position,
                meta={"emoji": "🏴‍☠️", **(likeness or {}).get(position, {})},
            )
        if status == JobStatus.FAILED:  # through the real transitions: the timeline shows them
            await repos.jobs.claim(job.id, owner="browser-test")
            failing = {"error_class": values.pop("error_class"), "error": values.pop("error")}
            await repos.jobs.fail(job.id, from_statuses=(JobStatus.PROCESSING,), **failing)
        row = {"status": status.value, "attempts": 2 if status == JobStatus.FAILED else 0, **values}
        if status == JobStatus.DELIVERED:
            row.setdefault("sticker_set_name", f"sb{job.id.hex}_by_stickerbooth_bot")
            row.setdefault("link_sent_at", sa.func.now())
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(**row))
        return str(job.id)

    return in_db(stack, make)


def sign_in(page: Page, stack: Stack) -> None:
    page.goto(f"{stack.ingest_url}/admin")
    page.fill("#token", ADMIN_TOKEN)
    page.click("#login button[type=submit]")
    expect(page.locator("#dashboard")).to_be_visible()


def test_the_admin_page_signs_in_pauses_and_shows_the_overview(page: Page, stack: Stack) -> None:
    page.goto(f"{stack.ingest_url}/admin")
    page.fill("#token", "not-the-admin-token-000000")
    page.click("#login button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("That token is not right.")
    page.fill("#token", ADMIN_TOKEN)
    page.click("#login button[type=submit]")
    expect(page.locator("#dashboard")).to_be_visible()

    page.click("#pause")
    expect(page.locator("#queue-state")).to_have_text("Paused")
    expect(page.locator("#queue-detail")).to_contain_text("paused from the admin page")
    refused = httpx.post(f"{stack.ingest_url}/sessions", json={}, timeout=10)
    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "maintenance")
    page.click("#resume")
    expect(page.locator("#queue-state")).to_have_text("Running")
    assert httpx.post(f"{stack.ingest_url}/sessions", json={}, timeout=10).status_code == 201

    session = linked_guest(stack, user_id=7301, first_name="Vera", username="vera_v")
    job_of(
        stack, session, status=JobStatus.FAILED, error_class="deadline", error="the 15-minute deadline passed"
    )
    job_of(stack, session, status=JobStatus.DELIVERED)
    page.reload()
    expect(page.locator("#failures")).to_contain_text("deadline")
    expect(page.locator("#guests")).not_to_have_text("0")
    expect(page.locator("#link-count")).to_contain_text("p50 · p95 of")
    expect(page.locator("#spend-sub")).to_contain_text("DAILY_BUDGET_USD")
    expect(page.locator("#images-sub")).to_contain_text("IMAGE_RPD_LIMIT 1000")
    expect(page.locator("#streams")).not_to_be_empty()
    page.reload()  # the token is kept for the tab
    expect(page.locator("#dashboard")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
    screenshot(page, "admin-overview")


def test_an_operator_finds_a_named_guests_failed_job_sees_why_and_retries_it(
    page: Page, stack: Stack
) -> None:
    session = linked_guest(stack, user_id=7302, first_name="Olga", username="olga_p")
    job_id = job_of(stack, session, status=JobStatus.FAILED, error_class="invalid", error="no valid sheet")
    sign_in(page, stack)
    page.fill("#job-query", "olga")
    page.click("#job-search button[type=submit]")
    row = page.locator(f'#jobs tr[data-job-id="{job_id}"]')
    expect(row).to_contain_text("Olga")
    expect(row).to_contain_text("@olga_p")
    expect(row).to_contain_text("hall-east")
    expect(row).to_contain_text("pirate")
    expect(row).to_contain_text("invalid")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    row.click()
    expect(page).to_have_url(f"{stack.ingest_url}/admin#/jobs/{job_id}")
    expect(page.locator("#detail-title")).to_contain_text("Olga — pirate at hall-east")
    expect(page.locator("#detail-notice")).to_contain_text("No usable stickers came back")
    expect(page.locator("#detail-events")).to_contain_text("processing → failed — invalid: no valid sheet")
    expect(page.locator("#detail-resend")).to_be_hidden()
    screenshot(page, "admin-job-failed")
    page.click("#detail-retry")
    expect(page.locator("#detail-done")).to_contain_text("Queued again")
    expect(page.locator("#detail-events")).to_contain_text("failed → queued — admin retry (web)")
    page.click("#detail-back")
    expect(page.locator("#jobs-card")).to_be_visible()


def test_a_no_face_job_offers_no_retry_and_says_why(page: Page, stack: Stack) -> None:
    session = linked_guest(stack, user_id=7303, first_name="Ivan", username="ivan_q")
    job_id = job_of(
        stack,
        session,
        status=JobStatus.FAILED,
        error_class="permanent",
        error="NoFaceError: no face found in the selfie",
    )
    sign_in(page, stack)
    page.goto(f"{stack.ingest_url}/admin#/jobs/{job_id}")
    expect(page.locator("#detail-notice")).to_contain_text("Failed: no_face. No face in the photo")
    expect(page.locator("#detail-retry")).to_be_hidden()
    expect(page.locator("#detail-resend")).to_be_hidden()


def test_a_delivered_jobs_page_shows_its_stickers_and_calls_and_resends_the_link(
    page: Page, stack: Stack
) -> None:
    session = linked_guest(stack, user_id=7304, first_name="Anna", username="anna_k")
    bound = LIKENESS_MAX_DISTANCE
    near, far = round(bound * 0.7, 2), round(bound + 0.25, 2)
    scores: dict[int, dict[str, Any]] = {
        p: {"likeness": near, "likeness_reason": None} for p in range(12) if p not in (1, 2, 3, 4)
    }
    scores[1] = {"likeness": None, "likeness_reason": "eyes_hidden"}
    # 2: stored before likeness existed (no key)
    scores[3] = {"likeness": far, "likeness_reason": None}
    scores[4] = {"likeness": None, "likeness_reason": "no_face_found"}
    job_id = job_of(stack, session, status=JobStatus.DELIVERED, stickers=12, likeness=scores)

    async def calls(repos: Repositories) -> None:
        for kind, outcome, cost in (
            ("passport", "ok", 0.002),
            ("sheet", "rate_limit", 0.0),
            ("sheet", "ok", 0.039),
        ):
            call = ApiCall(
                provider="gemini",
                model="gemini-3.1-flash-image",
                kind=kind,
                call_type="image",
                outcome=outcome,
                cost_usd=cost,
                latency_s=4.2,
                job_id=UUID(job_id),
                error="429 RESOURCE_EXHAUSTED" if outcome != "ok" else None,
            )
            await repos.usage.record(call)

    in_db(stack, calls)
    sign_in(page, stack)
    page.goto(f"{stack.ingest_url}/admin#/jobs/{job_id}")
    expect(page.locator("#detail-stickers img")).to_have_count(12)
    loaded = "[...document.querySelectorAll('#detail-stickers img')].every((i) => i.naturalWidth === 512)"
    page.wait_for_function(f"() => {loaded}")

    def sticker(position: int) -> Any:
        return page.locator(f'#detail-stickers figure[data-position="{position}"]')

    # each sticker's likeness under its thumbnail; over the bound or without a face, marked
    expect(sticker(0).locator("figcaption")).to_have_text(f"{near:.2f}")
    expect(sticker(1).locator("figcaption")).to_have_text("eyes hidden, not judged")
    expect(sticker(2).locator("figcaption")).to_have_text("not scored")
    expect(sticker(3).locator("figcaption")).to_have_text(f"⚠ {far:.2f} > {bound:.2f}")
    expect(sticker(4).locator("figcaption")).to_have_text("⚠ no face found")
    expect(sticker(3)).to_have_class("sticker over")
    expect(sticker(4)).to_have_class("sticker missing")
    expect(sticker(0)).to_have_class("sticker")
    border = "(i) => getComputedStyle(i).borderTopColor"
    assert sticker(3).locator("img").evaluate(border) == "rgb(255, 107, 107)"  # --bad
    assert sticker(0).locator("img").evaluate(border) == "rgba(0, 0, 0, 0)"
    expect(page.locator("#detail-likeness")).to_have_text(
        "Likeness (distance to the guest's face, smaller is closer): likeness judged on 9 of 12, "
        f"1 over the bound {bound:.2f}, 1 without a face."
    )
    expect(page.locator("#detail-calls tbody tr")).to_have_count(3)
    expect(page.locator("#detail-cost")).to_contain_text("3 calls, $0.04 in all")
    expect(page.locator("#detail-calls")).to_contain_text("rate_limit")
    expect(page.locator("#detail-retry")).to_be_hidden()
    expect(page.locator("#detail-sheet")).to_be_visible()
    with page.context.expect_page() as sheet_tab:
        page.click("#detail-sheet")
    sheet = sheet_tab.value
    sheet.wait_for_load_state()
    assert sheet.url.startswith("blob:")
    sheet.close()
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "admin-job")

    page.click("#detail-resend")
    expect(page.locator("#detail-done")).to_contain_text("Link message queued")
    expect(page.locator("#detail-links")).to_contain_text("resend_link:1")
    set_name = f"sb{UUID(job_id).hex}_by_stickerbooth_bot"

    def link_in_chat() -> bool:
        body: Any = stack.http.get(f"{stack.sim_url}/sim/chats/7304/messages").json()
        messages = body["messages"] if isinstance(body, dict) else body
        return any(set_name in (m.get("text") or "") for m in messages)

    wait_until(link_in_chat, 30, "the resent link in the guest's chat")
    page.click("#detail-resend")
    expect(page.locator("#detail-links")).to_contain_text("resend_link:2")


def test_the_job_list_pages_older_and_newer(page: Page, stack: Stack) -> None:
    session = linked_guest(stack, user_id=7305, first_name="Pager", username="pager_p")
    for _ in range(27):
        job_of(stack, session, status=JobStatus.DELIVERED)
    sign_in(page, stack)
    page.fill("#job-query", "@pager_p")
    page.click("#job-search button[type=submit]")
    expect(page.locator("#jobs tbody tr")).to_have_count(25)
    expect(page.locator("#page-newer")).to_be_disabled()
    page.click("#page-older")
    expect(page.locator("#page-label")).to_have_text("page 2")
    expect(page.locator("#jobs tbody tr")).to_have_count(2)
    expect(page.locator("#page-older")).to_be_disabled()
    page.click("#page-newer")
    expect(page.locator("#jobs tbody tr")).to_have_count(25)


def test_the_leads_export_downloads_a_safe_csv(page: Page, stack: Stack) -> None:
    lead = {
        "requestId": f"browser-lead-{time.time_ns()}",
        "name": "=cmd|' /C calc'!A0",
        "contact": "csv@example.com",
        "message": 'Hi, "team"',
        "consent": True,
    }
    httpx.post(f"{stack.ingest_url}/leads", json=lead, timeout=10).raise_for_status()
    sign_in(page, stack)
    expect(page.locator("#leads")).to_contain_text("=cmd|' /C calc'!A0")  # shown as text on the page
    with page.expect_download() as download:
        page.click("#leads-export")
    path = download.value.path()
    assert download.value.suggested_filename.startswith("leads-")
    text = Path(path).read_text(encoding="utf-8-sig")
    rows = {r["contact"]: r for r in csv.DictReader(io.StringIO(text, newline=""))}
    assert rows["csv@example.com"]["name"] == "'=cmd|' /C calc'!A0"
    assert rows["csv@example.com"]["message"] == 'Hi, "team"'


def test_queued_again_shows_while_the_job_waits_and_becomes_retried_once_it_is_delivered(
    page: Page, stack: Stack
) -> None:
    session = linked_guest(stack, user_id=7310, first_name="Nina", username="nina_r")
    job_id = job_of(stack, session, status=JobStatus.FAILED, error_class="timeout", error="no answer")

    async def pause(repos: Repositories) -> None:  # no worker takes the retried job meanwhile
        await maintenance.start_pause(repos, source="admin", reason="browser test: queued again")

    async def deliver(repos: Repositories) -> None:
        done = {"status": "delivered", "link_sent_at": sa.func.now(), "sticker_set_name": "sbx_by_bot"}
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == UUID(job_id)).values(**done))

    async def resume(repos: Repositories) -> None:
        await maintenance.end_pause(repos)

    in_db(stack, pause)
    try:
        sign_in(page, stack)
        page.goto(f"{stack.ingest_url}/admin#/jobs/{job_id}")
        page.click("#detail-retry")
        expect(page.locator("#detail-done")).to_contain_text("Queued again")
        page.click("#detail-back")
        row = page.locator(f'#jobs tr[data-job-id="{job_id}"]')
        expect(row).to_contain_text("queued again")
        page.goto(f"{stack.ingest_url}/admin#/jobs/{job_id}")
        in_db(stack, deliver)
        # the next refresh (every 5 s) sees it delivered: the Retry's note goes, "Queued again 1×" stays
        expect(page.locator("#detail-fields")).to_contain_text("delivered", timeout=15_000)
        expect(page.locator("#detail-done")).to_be_empty()
        expect(page.locator("#detail-fields")).to_contain_text("1×")
        page.click("#detail-back")
        expect(row).to_contain_text("retried")
        expect(row).not_to_contain_text("queued again")
    finally:
        in_db(stack, resume)


def test_an_operator_creates_an_event_in_its_own_time_zone_and_a_bad_one_is_refused(
    page: Page, stack: Stack
) -> None:
    """Issue 23 item 1: the Events section's form writes the start and end in the event's zone (Tokyo,
    UTC+9, no daylight time), the list shows them back in that zone, and a station already at a running
    event is refused with its code on the page."""
    sign_in(page, stack)
    page.click("#event-new")
    page.fill("#event-id", "gala-tokyo")
    page.fill("#event-name", "Gala Tokyo")
    page.fill("#event-venue", "Hall B")
    page.fill("#event-zone", "Asia/Tokyo")
    page.fill("#event-starts", "2026-12-24T18:00")
    page.fill("#event-ends", "2026-12-25T02:00")
    page.fill("#event-stations", "tokyo-1, tokyo-2")
    page.fill("#event-outfits", "pirate, chef")
    page.fill(
        "#event-extra", '{"branding": {"title": "Gala", "accent_color": "#112233"}, "daily_budget_usd": 20}'
    )
    page.click("#event-form button[type=submit]")
    expect(page.locator("#event-form")).to_be_hidden()
    row = page.locator("#events tbody tr", has_text="gala-tokyo")
    expect(row).to_contain_text("Asia/Tokyo")
    expect(row).to_contain_text("Dec 24, 2026, 6:00 PM")  # the page's locale is Chromium's en-US
    expect(row).to_contain_text("Dec 25, 2026, 2:00 AM")
    stored = httpx.get(f"{stack.ingest_url}/admin/events/gala-tokyo", headers=ADMIN, timeout=10).json()
    starts, ends = (datetime.fromisoformat(stored[k]) for k in ("starts_at", "ends_at"))
    assert (starts, ends) == (datetime(2026, 12, 24, 9, tzinfo=UTC), datetime(2026, 12, 24, 17, tzinfo=UTC))
    assert stored["stations"] == ["tokyo-1", "tokyo-2"] and stored["daily_budget_usd"] == 20
    assert stored["branding"]["accent_color"] == "#112233"

    page.click("#event-new")  # the same station at an overlapping event
    page.fill("#event-id", "gala-tokyo-2")
    page.fill("#event-name", "Gala Tokyo again")
    page.fill("#event-zone", "Asia/Tokyo")
    page.fill("#event-starts", "2026-12-24T20:00")
    page.fill("#event-ends", "2026-12-24T23:00")
    page.fill("#event-stations", "tokyo-2")
    page.click("#event-form button[type=submit]")
    expect(page.locator("#event-error")).to_contain_text("station_overlap")
    gone = httpx.get(f"{stack.ingest_url}/admin/events/gala-tokyo-2", headers=ADMIN, timeout=10)
    assert gone.status_code == 404


def test_the_overview_shows_each_event_of_today_in_its_own_day(page: Page, stack: Stack) -> None:
    """Issue 23 item 2 on the page: the overview's events block, one box per event of today (running, or
    ended earlier in its own local day), with its sessions, packs, failures and cost against its daily
    budget since its local midnight."""
    now = datetime.now(UTC)
    # An event that ended a few minutes ago in a zone whose day began at least 10 minutes before that.
    ended_zone = next(z for z in ("UTC", "Asia/Tokyo") if now - day_start(now, z) > timedelta(minutes=10))
    for event_id, body in (
        (
            "la-night",
            {
                "name": "LA night",
                "time_zone": "America/Los_Angeles",
                "starts_at": (now - timedelta(hours=2)).isoformat(),
                "stations": ["la-1"],
                "daily_budget_usd": 4,
            },
        ),
        (
            "brunch",
            {
                "name": "Brunch",
                "time_zone": ended_zone,
                "starts_at": (day_start(now, ended_zone) + timedelta(minutes=1)).isoformat(),
                "ends_at": (now - timedelta(minutes=2)).isoformat(),
                "stations": ["brunch-1"],
            },
        ),
    ):
        saved = httpx.put(f"{stack.ingest_url}/admin/events/{event_id}", headers=ADMIN, json=body, timeout=10)
        assert saved.status_code in (200, 201), saved.text

    async def la_guest(repos: Repositories) -> UUID:
        session = await repos.sessions.create(station="la-1", token=f"la-{time.time_ns()}")
        await repos.conn.execute(
            sa.update(sessions).where(sessions.c.id == session.id).values(event_id="la-night")
        )
        call = ApiCall(
            provider="gemini",
            model="gemini-3.1-flash-image",
            kind="sheet",
            call_type="image",
            outcome="ok",
            cost_usd=3.5,
            latency_s=4.2,
            event_id="la-night",
        )
        await repos.usage.record(call)
        return session.id

    session = in_db(stack, la_guest)
    job_of(stack, session, status=JobStatus.DELIVERED)
    job_of(stack, session, status=JobStatus.FAILED, error_class="deadline", error="the deadline passed")
    sign_in(page, stack)
    tile = page.locator("#tile-events")
    expect(tile).to_be_visible()
    la = tile.locator("[data-event=la-night]")
    expect(la).to_contain_text("LA night")
    expect(la).to_contain_text("running")
    expect(la).to_contain_text("America/Los_Angeles")
    expect(la).to_contain_text("1 sessions · 1 packs · 1 failed · 0 leads")
    expect(la.locator(".meter")).to_contain_text("$3.50 of $4.00")
    expect(la.locator(".meter")).to_have_class(re.compile(r"\bwarn\b"))  # 88 % of its daily budget
    brunch = tile.locator("[data-event=brunch]")
    ended = (now - timedelta(minutes=2)).astimezone(zone(ended_zone))
    expect(brunch).to_contain_text(f"ended {ended:%H:%M}")
    expect(brunch).to_contain_text("0 sessions · 0 packs · 0 failed")
    expect(brunch.locator(".meter")).to_contain_text("no budget")
    expect(tile.locator("[data-event=default]")).to_contain_text("running")
    screenshot(page, "admin-events-today")
