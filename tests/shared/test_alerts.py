"""Admin alerts: one per key per cooldown across replicas, suppressed repeats counted and mentioned."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import sqlalchemy as sa

from shared.alerts import queue_alert
from shared.commands import SendAdminMessage, load
from shared.db.tables import alerts
from shared.repositories import Database

pytestmark = pytest.mark.integration


async def raise_alert(db: Database, key: str = "job_failed") -> str | None:
    async with db.transaction() as repos:
        return await queue_alert(repos, key=key, text="Job 1 FAILED")


async def test_the_same_key_is_sent_once_per_cooldown_even_from_many_replicas(db: Database) -> None:
    results = await asyncio.gather(*(raise_alert(db) for _ in range(6)))
    assert sum(r is not None for r in results) == 1
    assert await raise_alert(db, key="other") is not None


async def test_suppressed_repeats_are_mentioned_by_the_next_alert(db: Database) -> None:
    await raise_alert(db)
    await raise_alert(db)
    await raise_alert(db)
    async with db.transaction() as repos:  # the cooldown passes
        await repos.conn.execute(sa.update(alerts).values(last_sent_at=sa.func.now() - timedelta(minutes=11)))
    command_id = await raise_alert(db)
    assert command_id is not None
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None
    assert load(record.method, record.params) == SendAdminMessage(
        text="Job 1 FAILED\n(+2 similar in the last 10 min)"
    )
