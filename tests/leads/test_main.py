"""``leads.main.run`` takes the caller's clients and stop event (like ``ingest.main.create_app``): the
service runs its consumers on them and leaves them open when it stops."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from leads.main import SERVICE, run
from leads.settings import LeadsSettings
from shared import streams
from shared.repositories import Database

pytestmark = pytest.mark.integration


async def test_run_uses_the_given_clients_and_stops_on_the_given_event(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    env = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "LEADS_CHAT_ID": "-100",
        "STREAM_BLOCK_MS": "100",
    }
    settings = LeadsSettings(**env)  # type: ignore[arg-type]
    stop = asyncio.Event()
    service = asyncio.create_task(run(settings, db=db, redis=redis, stop=stop))
    wanted = {streams.LEADS, streams.results_stream(SERVICE), streams.TG_UPDATES_LEADS}
    async with asyncio.timeout(20):
        while {s for s in wanted if await redis.exists(s)} != wanted:  # each consumer created its group
            await asyncio.sleep(0.05)
    stop.set()
    assert await asyncio.wait_for(service, 20) == 0
    assert await redis.ping()
    await db.ping()
    for stream in wanted:
        assert [g["name"] for g in await redis.xinfo_groups(stream)] == [SERVICE]
