"""The daily digest: once per day across replicas and restarts, with yesterday's numbers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared.db.tables import jobs, sessions
from shared.digest import digest_text, send_digest_if_due
from shared.events import Event
from shared.repositories import Database
from shared.streams import Publisher

pytestmark = pytest.mark.integration


async def test_the_digest_is_sent_once_per_day_by_one_of_many_replicas(
    db: Database, redis: aioredis.Redis
) -> None:
    now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t")
        for i, status in enumerate(["delivered", "delivered", "failed"]):
            job = await repos.jobs.insert_queued(session_id=session.id, capture_id=f"c{i}", outfit_id="chef")
            await repos.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job.id)
                .values(
                    status=status,
                    created_at=now - timedelta(days=1),
                    error_class="deadline" if status == "failed" else None,
                )
            )
    sent = await asyncio.gather(
        *(send_digest_if_due(db, Publisher(redis), now=now, hour_utc=9) for _ in range(5))
    )
    assert sum(sent) == 1
    assert not await send_digest_if_due(db, Publisher(redis), now=now + timedelta(hours=5), hour_utc=9)
    assert await send_digest_if_due(db, Publisher(redis), now=now + timedelta(days=1), hour_utc=9)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("digest:2026-12-01")
    assert record is not None and record.method == "send_admin_message"
    assert "Photos: 3, delivered: 2, failed: 1" in record.params["text"]
    assert "deadline 1" in record.params["text"]


async def test_no_digest_before_its_hour(db: Database, redis: aioredis.Redis) -> None:
    assert not await send_digest_if_due(
        db, Publisher(redis), now=datetime(2026, 12, 1, 8, 59, tzinfo=UTC), hour_utc=9
    )


async def test_the_digest_has_a_line_per_event_for_its_own_local_yesterday(db: Database) -> None:
    async with db.transaction() as repos:
        assert "Event " not in await digest_text(repos, datetime(2026, 3, 11, tzinfo=UTC).date())
        await repos.events.save(Event(id="tokyo", name="Tokyo fair", time_zone="Asia/Tokyo"))
        # 10 March 16:00 UTC is 11 March 01:00 in Tokyo: not its 10 March
        for token, at in (
            ("a", datetime(2026, 3, 10, 14, tzinfo=UTC)),
            ("b", datetime(2026, 3, 10, 16, tzinfo=UTC)),
        ):
            session = await repos.sessions.create(station="s", token=token)
            await repos.conn.execute(
                sa.update(sessions).where(sessions.c.id == session.id).values(event_id="tokyo", created_at=at)
            )
            job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
            await repos.conn.execute(
                sa.update(jobs).where(jobs.c.id == job.id).values(status="delivered", created_at=at)
            )
        text = await digest_text(repos, datetime(2026, 3, 11, tzinfo=UTC).date())
    assert (
        "Event Tokyo fair (2026-03-10, Asia/Tokyo): photos 1, delivered 1, failed 0, $0.00, leads 0" in text
    )
