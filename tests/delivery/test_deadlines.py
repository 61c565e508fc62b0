"""Deadlines from ``jobs.created_at``: the 5-minute notice once, the 15-minute failure text only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.deadlines import enforce_deadlines
from shared.db.tables import jobs
from shared.domain import Job
from shared.joblife import retry_failed_job
from shared.repositories import Database
from shared.streams import Publisher
from tests.outbox_helpers import stored_texts

pytestmark = pytest.mark.integration
NOTICE, DEADLINE = 300.0, 900.0


async def job_aged(db: Database, minutes: float, *, status: str = "queued", capture: str = "c") -> Job:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=f"t-{capture}")
        await repos.sessions.bind_telegram(session.token, user_id=9, chat_id=9, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id=capture, outfit_id="pirate")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.id)
            .values(created_at=sa.func.now() - timedelta(minutes=minutes), status=status)
        )
        fresh = await repos.jobs.get(job.id)
    assert fresh is not None
    return fresh


async def sweep(db: Database, redis: aioredis.Redis) -> tuple[int, int]:
    return await enforce_deadlines(db, Publisher(redis), notice_after_s=NOTICE, deadline_s=DEADLINE)


async def test_a_slow_job_gets_one_still_working_notice(db: Database, redis: aioredis.Redis) -> None:
    job = await job_aged(db, 6, status="processing")
    assert await sweep(db, redis) == (0, 1)
    assert await sweep(db, redis) == (0, 0)
    assert await stored_texts(db, "send_message") == ["Still working on your stickers — almost there!"]
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None and current.status == "processing"


async def test_a_job_past_the_deadline_gets_only_the_failure_text(
    db: Database, redis: aioredis.Redis
) -> None:
    job = await job_aged(db, 20)
    assert await sweep(db, redis) == (1, 0)
    assert await sweep(db, redis) == (0, 0)
    texts = await stored_texts(db, "send_message")
    assert len(texts) == 1 and texts[0].startswith("Something went wrong")
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None and current.status == "failed" and current.error_class == "deadline"


async def test_finished_and_young_jobs_are_left_alone(db: Database, redis: aioredis.Redis) -> None:
    await job_aged(db, 30, status="delivered", capture="a")
    await job_aged(db, 1, capture="b")
    assert await sweep(db, redis) == (0, 0)
    assert await stored_texts(db, "send_message") == []


async def test_an_admin_retry_starts_a_new_deadline_and_a_new_failure_text(
    db: Database, redis: aioredis.Redis
) -> None:
    job = await job_aged(db, 20)
    await sweep(db, redis)
    async with db.transaction() as repos:
        retried = await retry_failed_job(repos, job.id, note="admin retry")
    assert retried is not None and retried.status == "queued"
    assert retried.created_at > datetime.now(UTC) - timedelta(minutes=1)
    assert await sweep(db, redis) == (0, 0)  # a fresh deadline
    async with db.transaction() as repos:  # and when that one passes too, the guest hears again
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.id)
            .values(created_at=sa.func.now() - timedelta(minutes=16))
        )
    assert await sweep(db, redis) == (1, 0)
    assert len(await stored_texts(db, "send_message")) == 2
