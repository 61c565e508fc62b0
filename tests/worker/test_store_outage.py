"""The worker tells a store outage from its own death (issue 19): a worker cut off Postgres (a real TCP
cut between it and the server: every connection reset, new ones refused) twice for longer than
``HEARTBEAT_TIMEOUT_SEC`` in one render keeps its job and renders it, while another replica's sweeper
(on its own connection, which still reaches Postgres) runs all along; a worker that dies during the
outage still has its job recovered as ``crashed``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from shared.db import create_engine
from shared.domain import Job
from shared.outfits import Outfit
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.streams import Publisher
from tests.tcp_proxy import TcpProxy
from tests.worker.test_job_lifecycle import fake_pack, generator, job_now, queued_job, settings
from worker.cost import DbUsageStore
from worker.outcomes import recover_crashed
from worker.render import Pack

pytestmark = pytest.mark.integration

TIMEOUT_S = 1.0  # HEARTBEAT_TIMEOUT_SEC of these tests; each outage lasts 2.5 times that


@pytest.fixture
async def cut_off(database_url: str) -> AsyncIterator[tuple[TcpProxy, Database]]:
    """The worker's own Database, through a proxy the test can cut."""
    proxy, url = await TcpProxy.to_url(database_url)
    worker_db = Database(create_engine(url, pool_size=3, connect_timeout_s=1.0))
    yield proxy, worker_db
    await proxy.close()
    await worker_db.dispose()


async def sweep_for(db: Database, redis: aioredis.Redis, seconds: float) -> None:
    """Another replica's crash recovery, every 0.2 s on a connection that reaches Postgres."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        await recover_crashed(db, Publisher(redis), heartbeat_timeout_s=TIMEOUT_S, max_attempts=2)
        await asyncio.sleep(0.2)


def recording_render(
    usage: DbUsageStore | None, started: asyncio.Event, finish: asyncio.Event, recorded: list[ApiCall]
) -> Any:
    """A render that records a provider call every 0.3 s, as it happens (``api_usage``; none without
    ``usage``), until told to finish: the writes a real render makes while the store is down
    (``recorded``: those that returned)."""

    async def render(job: Job, selfie: bytes, outfit: Outfit) -> Pack:
        started.set()
        while not finish.is_set():
            call = ApiCall("local", "local", "sheet", "image", "ok", 0.0, 0.3, image_size="2K", job_id=job.id)
            if usage is not None:
                await usage.record(call)
                recorded.append(call)
            await asyncio.sleep(0.3)
        return await fake_pack(job, selfie, outfit)

    return render


@pytest.mark.parametrize("writes", [True, False], ids=["render-writes", "render-quiet"])
async def test_a_live_worker_cut_off_postgres_twice_in_one_render_keeps_its_job(
    db: Database,
    redis: aioredis.Redis,
    database_url: str,
    redis_url: str,
    cut_off: tuple[TcpProxy, Database],
    writes: bool,
) -> None:
    proxy, worker_db = cut_off
    cfg = settings(database_url, redis_url, HEARTBEAT_SEC=0.2, HEARTBEAT_TIMEOUT_SEC=TIMEOUT_S)
    job = await queued_job(db)
    started, finish = asyncio.Event(), asyncio.Event()
    recorded: list[ApiCall] = []
    render = recording_render(DbUsageStore(worker_db) if writes else None, started, finish, recorded)
    worker = asyncio.create_task(generator(worker_db, redis, cfg, render).process(job.id))
    await asyncio.wait_for(started.wait(), 10)
    for _outage in range(2):
        proxy.cut()
        await sweep_for(db, redis, 2.5 * TIMEOUT_S)
        proxy.restore()
        await sweep_for(db, redis, 1.0)
    finish.set()
    outcome = await asyncio.gather(asyncio.wait_for(worker, 30), return_exceptions=True)
    await sweep_for(db, redis, 0.5)
    current = await job_now(db, job)
    assert outcome == [None]
    assert (current.status, current.attempts, current.error_class) == ("rendered", 0, None)
    async with db.transaction() as repos:
        stored = await repos.usage.for_job(job.id)
    assert len(stored) == len(recorded) >= (2 if writes else 0)  # one made in the outage is stored after it


async def test_a_worker_that_dies_while_postgres_is_down_is_still_recovered(
    db: Database,
    redis: aioredis.Redis,
    database_url: str,
    redis_url: str,
    cut_off: tuple[TcpProxy, Database],
) -> None:
    proxy, worker_db = cut_off
    cfg = settings(database_url, redis_url, HEARTBEAT_SEC=0.2, HEARTBEAT_TIMEOUT_SEC=TIMEOUT_S)
    job = await queued_job(db)
    started, finish = asyncio.Event(), asyncio.Event()
    render = recording_render(DbUsageStore(worker_db), started, finish, [])
    worker = asyncio.create_task(generator(worker_db, redis, cfg, render).process(job.id))
    await asyncio.wait_for(started.wait(), 10)
    proxy.cut()
    await asyncio.sleep(0.5)
    worker.cancel()  # the process dies: nothing of it beats any more (its requeue cannot reach the store)
    with contextlib.suppress(asyncio.CancelledError):
        await worker
    proxy.restore()
    await sweep_for(db, redis, 3 * TIMEOUT_S)
    current = await job_now(db, job)
    assert (current.status, current.attempts, current.error_class) == ("queued", 1, "crashed")
