"""The admin page in Chromium against the running stack: token, pause/resume, jobs with retry, leads."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

import httpx
import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from devstack.journey import start_session
from devstack.processes import Stack
from shared.db import create_engine
from shared.db.tables import jobs
from shared.domain import JobStatus
from shared.repositories import Database
from tests.browser.kiosk_helpers import ADMIN_TOKEN, PHOTOS, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def failed_job(stack: Stack, *, user_id: int) -> str:
    """A linked guest's job that failed after two attempts, selfie kept (so it can be retried)."""
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=30) as kiosk,
        httpx.Client(base_url=stack.sim_url, timeout=30) as sim,
    ):
        session_id = UUID(start_session(kiosk, sim, user_id=user_id)["id"])

    async def fail() -> str:
        db = Database(create_engine(stack.config.database_url))
        try:
            async with db.transaction() as repos:  # one transaction: no worker sees it queued
                job = await repos.jobs.insert_queued(session_id=session_id, capture_id="c1", outfit_id="chef")
                selfie = (PHOTOS / "face-older-man-white-hair.jpg").read_bytes()
                await repos.blobs.put(kind="selfie", data=selfie, content_type="image/jpeg", job_id=job.id)
                await repos.jobs.claim(job.id, owner="browser-test")
                failing = {"error_class": "invalid", "error": "no valid sheet"}
                await repos.jobs.fail(job.id, from_statuses=(JobStatus.PROCESSING,), **failing)
                await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(attempts=2))
            return str(job.id)
        finally:
            await db.dispose()

    with ThreadPoolExecutor(1) as thread:  # Playwright's event loop runs in this thread
        return thread.submit(asyncio.run, fail()).result()


def test_the_admin_page_pauses_lists_jobs_and_retries_a_failed_one(page: Page, stack: Stack) -> None:
    job_id = failed_job(stack, user_id=7201)
    lead = {
        "requestId": "browser-lead-0001",
        "name": "<b>Ann</b> & Co",
        "contact": "ann@example.com",
        "consent": True,
    }
    httpx.post(f"{stack.ingest_url}/leads", json=lead, timeout=10).raise_for_status()

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

    row = page.locator(f'#jobs tr[data-job-id="{job_id}"]')
    expect(row).to_contain_text("failed")
    expect(row).to_contain_text("invalid")
    row.click()
    expect(page.locator("#detail-events")).to_contain_text("processing → failed — invalid: no valid sheet")
    expect(page.locator("#leads")).to_contain_text("<b>Ann</b> & Co")  # shown as text, not markup
    screenshot(page, "admin-failed-job")
    row.get_by_role("button", name="Retry").click()
    expect(row.locator('.pill[class*="status-"]')).not_to_have_text("failed")
    expect(page.locator("#detail-events")).to_contain_text("failed → queued — admin retry (web)")
    events = httpx.get(f"{stack.ingest_url}/admin/jobs/{job_id}", headers=ADMIN, timeout=10).json()["events"]
    assert [e["note"] for e in events if e["from"] == "failed"] == ["admin retry (web)"]

    page.reload()  # the token is kept for the tab
    expect(page.locator("#dashboard")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
