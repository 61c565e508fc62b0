"""A guest erased (issue 11) while the worker renders their job: the worker's transition finds no row and
stops, so nothing comes back (no job, no stickers, no delivery hint); a provider call made meanwhile keeps
its cost without a link to the job."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import streams
from shared.db.tables import api_usage, blobs, job_events, jobs, sessions
from shared.domain import Job
from shared.erasure import erase_user
from shared.outfits import Outfit
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from tests.worker.test_job_lifecycle import fake_pack, generator, queued_job, settings
from worker.render import Pack

pytestmark = pytest.mark.integration


async def test_a_job_erased_mid_render_does_not_come_back(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)  # the guest is Telegram user 3
    rendering, erased = asyncio.Event(), asyncio.Event()

    async def slow_render(claimed: Job, selfie: bytes, outfit: Outfit) -> Pack:
        rendering.set()
        await erased.wait()
        async with db.transaction() as repos:  # a provider call that finishes after the erasure
            call = ApiCall("local", "m", "sheet", "image", "ok", 0.05, 1.0, job_id=claimed.id)
            await repos.usage.record(call)
        return await fake_pack(claimed, selfie, outfit)

    worker = generator(db, redis, settings(database_url, redis_url), slow_render)
    task = asyncio.create_task(worker.process(job.id))
    async with asyncio.timeout(10):
        await rendering.wait()
    async with db.transaction() as repos:
        erasure = await erase_user(repos, 3)
    assert erasure.rows.jobs == 1 and erasure.rows.blobs == 1  # the selfie
    erased.set()
    await asyncio.wait_for(task, 10)
    async with db.transaction() as repos:
        for table in (sessions, jobs, job_events, blobs):
            assert await repos.conn.scalar(sa.select(sa.func.count()).select_from(table)) == 0, table.name
        usage = (await repos.conn.execute(sa.select(api_usage.c.job_id, api_usage.c.cost_usd))).all()
    assert [(u.job_id, float(u.cost_usd)) for u in usage] == [(None, 0.05)]
    assert await redis.xlen(streams.DELIVERY) == 0
