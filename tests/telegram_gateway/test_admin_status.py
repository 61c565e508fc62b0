"""``/status`` for admins through the Telegram simulator (issue 13 item 2): queue depth, running, failed
today by class, spend today against ``DAILY_BUDGET_USD`` and the pause, from the same figures as the admin
page (shared.overview); and ``/start`` records the guest's ``@username`` for the admin page's search."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from telegram.ext import Application

from shared import maintenance, streams
from shared.db.tables import job_events, jobs
from shared.domain import JobStatus
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.streams import Publisher
from tests.simulators.tgsim_helpers import serving, sim_config
from tests.telegram_gateway.gateway_helpers import running_gateway
from tests.telegram_gateway.test_conversation import ADMIN, GUEST, replies, settings_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    async with serving(sim_config()) as running, httpx.AsyncClient(base_url=running.url) as client:
        yield client


@pytest.fixture
async def gateway(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[Application]:  # type: ignore[type-arg]
    settings = settings_for(sim, database_url, redis_url, ADMIN_USER_IDS=str(ADMIN), DAILY_BUDGET_USD="4")
    async with running_gateway(settings, db=db, publisher=Publisher(redis)) as started:
        yield started.application


async def add_job(
    db: Database, token: str, status: JobStatus, *, accepted_at: datetime | None = None, **values: object
) -> None:
    """A job in ``status`` with ``values`` on its row; ``accepted_at``: when its photo was accepted (its
    first event), when not now."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=token)
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.conn.execute(
            sa.update(jobs).where(jobs.c.id == job.id).values(status=status.value, **values)
        )
        if accepted_at is not None:
            await repos.conn.execute(
                sa.update(job_events).where(job_events.c.job_id == job.id).values(at=accepted_at)
            )


async def message(sim: httpx.AsyncClient, user_id: int, text: str, **user: str) -> None:
    body = {"text": text, "first_name": "U", "language_code": "en", **user}
    (await sim.post(f"/sim/users/{user_id}/messages", json=body)).raise_for_status()


async def test_status_shows_depth_running_failures_spend_and_the_pause(
    gateway: Application,  # type: ignore[type-arg]
    sim: httpx.AsyncClient,
    db: Database,
    redis: aioredis.Redis,
) -> None:
    for n in range(3):
        await add_job(db, f"q{n}", JobStatus.QUEUED)
    await add_job(db, "p", JobStatus.PROCESSING)
    await add_job(db, "f1", JobStatus.FAILED, error_class="deadline", error="late")
    await add_job(db, "f2", JobStatus.FAILED, error_class="deadline", error="late")
    await add_job(db, "f3", JobStatus.FAILED, error_class="permanent", error="no face found in the selfie")
    yesterday = datetime.now(UTC) - timedelta(days=2)
    await add_job(
        db, "f4", JobStatus.FAILED, error_class="timeout", updated_at=yesterday, created_at=yesterday
    )
    async with db.transaction() as repos:
        await repos.usage.record(
            ApiCall(
                provider="gemini",
                model="m",
                kind="sheet",
                call_type="image",
                outcome="ok",
                cost_usd=1.0,
                latency_s=2.0,
            )
        )
        await maintenance.start_pause(repos, source="auto", reason="credit")
    # Delivered a minute ago: the photo accepted 10 min 30 s ago, Retried (a fresh run) 3 min ago.
    now = datetime.now(UTC)
    await add_job(
        db,
        "d1",
        JobStatus.DELIVERED,
        created_at=now - timedelta(minutes=3),
        link_sent_at=now - timedelta(minutes=1),
        accepted_at=now - timedelta(minutes=11, seconds=30),
    )
    await redis.xadd(streams.dead_letter_stream(streams.JOBS), {"reason": "delivered 6 times"})
    await message(sim, ADMIN, "/status")
    [text] = await replies(sim, ADMIN, 1)
    lines = text.splitlines()
    assert lines[0] == "Queue paused (auto: credit). /resume to continue."
    assert lines[1] == "Queue depth: 3 waiting, 1 running."
    assert lines[2] == "Failed today: 3 (deadline 2, no_face 1)."
    assert lines[3] == (
        "Time to link (last hour): p50 10 min 30 s, p95 10 min 30 s of 1 link, from the accepted photo."
    )
    assert lines[4] == "Spend today: $1.00 of $4.00 (25%)."
    assert lines[5:] == ["Streams: stk:jobs dead 1."]


async def test_status_is_for_admins_only_and_start_records_the_username(
    gateway: Application,  # type: ignore[type-arg]
    sim: httpx.AsyncClient,
    db: Database,
) -> None:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="kiosk-token-u")
    await message(sim, GUEST, "/start kiosk-token-u", username="anna_k")
    await message(sim, GUEST, "/status")
    await message(sim, GUEST, "hello")  # answered in order: had /status been answered, it came first
    texts = await replies(sim, GUEST, 2)
    assert texts[0].startswith("You're linked!")
    assert not any("Queue" in t for t in texts), texts
    async with db.transaction() as repos:
        bound = await repos.sessions.get(session.id)
    assert bound is not None and (bound.tg_username, bound.guest_name) == ("anna_k", "U")
