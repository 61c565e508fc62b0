"""The daily digests: each event's once per local day across replicas and restarts, after its own local
hour, with its own local yesterday's numbers (issue 23, the venue's day)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared.db.tables import jobs
from shared.digest import send_digest_if_due
from shared.events import Event
from shared.repositories import Database
from shared.streams import Publisher
from shared.subjects import AdminText, load_subject
from tests.event_helpers import guest

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
        *(send_digest_if_due(db, Publisher(redis), now=now, hour=9) for _ in range(5))
    )
    assert sorted(sent) == [[], [], [], [], ["default"]]
    assert not await send_digest_if_due(db, Publisher(redis), now=now + timedelta(hours=5), hour=9)
    assert await send_digest_if_due(db, Publisher(redis), now=now + timedelta(days=1), hour=9)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("digest:2026-12-01")
    assert record is not None and record.method == "send_admin_message"
    assert "Photos: 3, delivered: 2, failed: 1" in record.params["text"]
    assert "deadline 1" in record.params["text"]


async def test_no_digest_before_its_hour(db: Database, redis: aioredis.Redis) -> None:
    assert not await send_digest_if_due(
        db, Publisher(redis), now=datetime(2026, 12, 1, 8, 59, tzinfo=UTC), hour=9
    )


async def test_each_events_digest_is_sent_once_after_its_own_local_hour_about_its_own_yesterday(
    db: Database, redis: aioredis.Redis
) -> None:
    """A Los Angeles (UTC-8) and a Tokyo (UTC+9) event, both from their local 1 December: each digest of
    its local 1 December goes out at 09:00 on its own clock on 2 December, once, counting only its day."""
    la = Event(
        id="la",
        name="LA fair",
        time_zone="America/Los_Angeles",
        starts_at=datetime(2026, 12, 1, 8, tzinfo=UTC),  # 00:00 local
        daily_budget_usd=3.0,
    )
    tokyo = Event(
        id="tokyo",
        name="Tokyo fair",
        time_zone="Asia/Tokyo",
        starts_at=datetime(2026, 11, 30, 15, tzinfo=UTC),  # 1 December 00:00 local
        ends_at=datetime(2026, 12, 1, 15, tzinfo=UTC),  # 2 December 00:00 local
    )
    async with db.transaction() as repos:
        for event in (la, tokyo):
            await repos.events.save(event)
    for event_id, at, cost in (
        ("la", datetime(2026, 12, 1, 20, tzinfo=UTC), 1.25),  # 12:00 local
        ("la", datetime(2026, 12, 2, 7, 30, tzinfo=UTC), 0.5),  # 23:30 local
        ("la", datetime(2026, 12, 2, 8, 30, tzinfo=UTC), 4.0),  # 2 December 00:30 local
        ("tokyo", datetime(2026, 12, 1, 14, 30, tzinfo=UTC), 0.0),  # 23:30 local
        ("tokyo", datetime(2026, 12, 1, 15, 30, tzinfo=UTC), 0.0),  # 2 December 00:30 local
    ):
        await guest(db, event_id, at, "delivered", cost=cost)

    async def due(*at: int) -> list[str]:
        return await send_digest_if_due(db, Publisher(redis), now=datetime(*at, tzinfo=UTC), hour=9)

    assert await due(2026, 12, 1, 23, 59) == ["default"]  # 08:59 in Tokyo, 15:59 on 1 December in LA
    replicas = await asyncio.gather(*(due(2026, 12, 2, 0, 0) for _ in range(3)))  # 09:00 in Tokyo
    assert sorted(replicas) == [[], [], ["tokyo"]]
    assert await due(2026, 12, 2, 1, 0) == []
    assert await due(2026, 12, 2, 9, 0) == ["default"]  # 01:00 in LA: its 1 December is over, not its hour
    assert await due(2026, 12, 2, 16, 59) == []  # 08:59 in LA
    assert await due(2026, 12, 2, 17, 0) == ["la"]  # 09:00 in LA
    assert await due(2026, 12, 2, 23, 0) == []  # a restart or another replica later that day: nothing again
    assert await due(2026, 12, 3, 0, 0) == []  # Tokyo's 2 December is not in its run: no digest
    texts = {}
    async with db.transaction() as repos:
        for command_id in ("digest:la:2026-12-02", "digest:tokyo:2026-12-02", "digest:2026-12-02"):
            record = await repos.tg_commands.get(command_id)
            assert record is not None and record.method == "send_admin_message"
            assert load_subject(record.subject) == AdminText(
                id=command_id.removeprefix("digest:"), what="digest"
            )
            texts[command_id] = record.params["text"]
    la_text, tokyo_text, default_text = texts.values()
    assert la_text.splitlines() == [
        "Daily digest of LA fair for 2026-12-01 (America/Los_Angeles)",
        "Sessions: 2, photos: 2, delivered: 2, failed: 0",
        "Cost: $1.75 of $3.00 daily budget",
        "Leads: 0",
    ]
    assert tokyo_text.splitlines()[:2] == [
        "Daily digest of Tokyo fair for 2026-12-01 (Asia/Tokyo)",
        "Sessions: 1, photos: 1, delivered: 1, failed: 0",
    ]
    # the default event's digest is the deployment's UTC 1 December, every guest: as before events
    assert default_text.splitlines()[:2] == [
        "Daily digest for 2026-12-01 (UTC)",
        "Photos: 3, delivered: 3, failed: 0",
    ]
