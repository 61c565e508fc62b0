"""No idle wait between "the set exists" and "the link is sent" (issue 12, item 1): the first readiness
check is queued by the create result itself, so a set that is complete when created goes create → one
``getStickerSet`` → link without a sweeper tick; only a set Telegram reads as incomplete waits for the
spec's poll schedule (spec/000 "Pack readiness poll")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import command_ids
from shared.db.tables import jobs
from shared.repositories import Database
from tests.delivery.delivery_helpers import Rig, current, gateway_rig, rendered_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST = 5002


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AsyncIterator[Rig]:
    async with gateway_rig(db, redis, database_url, redis_url, guest=GUEST, first_name="Bea") as rig:
        yield rig


async def run_events(rig: Rig) -> list[str]:
    """Step the gateway and delivery on stream events alone (never the sweeper) until nothing is queued;
    returns the commands the gateway executed, in order."""
    executed: list[str] = []
    for _ in range(10):
        step = await rig.step()
        if not step:
            return executed
        executed += step
    raise AssertionError(f"the events never settled: {executed}")


async def test_a_complete_set_is_checked_once_at_once_and_the_link_follows_without_a_sweep(rig: Rig) -> None:
    job = await rendered_job(rig.db, guest=GUEST)
    await rig.delivery.request_set(job.id)

    executed = await run_events(rig)

    assert executed == [
        command_ids.create_set(job.id),
        command_ids.poll(job.id, 1),
        command_ids.link(job.id),
        command_ids.preview(job.id),
    ]
    done = await current(rig.db, job)
    assert done.status == "delivered" and done.polls == 1
    assert len(await rig.calls("getStickerSet")) == 2  # the one readiness check, then the preview's read
    assert await rig.delivery.poll_due() == 0  # nothing left for the sweeper


async def test_an_incomplete_set_falls_back_to_the_poll_schedule(rig: Rig) -> None:
    job = await rendered_job(rig.db, guest=GUEST)
    await rig.sim.post(
        "/sim/faults", {"method": "getStickerSet", "kind": "incomplete", "visible_stickers": 6}
    )
    await rig.delivery.request_set(job.id)

    executed = await run_events(rig)

    assert executed == [command_ids.create_set(job.id), command_ids.poll(job.id, 1)]
    waiting = await current(rig.db, job)
    assert waiting.status == "delivering" and waiting.polls == 1
    assert waiting.next_poll_at is not None and waiting.set_created_at is not None
    fast = timedelta(seconds=rig.delivery.settings.pack_poll_fast_sec)
    assert waiting.set_created_at < waiting.next_poll_at <= datetime.now(UTC) + fast
    assert await rig.delivery.poll_due() == 0  # the next poll is not due before the schedule says

    async with rig.db.transaction() as repos:  # the schedule's time has come
        await repos.conn.execute(
            sa.update(jobs).where(jobs.c.id == job.id).values(next_poll_at=sa.func.now())
        )
    assert await rig.delivery.poll_due() == 1
    executed = await run_events(rig)

    assert executed == [command_ids.poll(job.id, 2), command_ids.link(job.id), command_ids.preview(job.id)]
    assert (await current(rig.db, job)).status == "delivered"
    assert len(await rig.calls("getStickerSet")) == 3  # two readiness checks, then the preview's read
