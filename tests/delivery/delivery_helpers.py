"""Delivery test helpers: a job with its 12 stored stickers in a given state; delivery and the gateway's
executor on the Telegram simulator, stepped by hand (:func:`gateway_rig`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import redis.asyncio as aioredis
import sqlalchemy as sa
from telegram.ext import ExtBot

from delivery.packs import PackDelivery
from delivery.settings import DeliverySettings
from shared import streams
from shared.db.tables import jobs, tg_commands
from shared.domain import Job
from shared.events import DEFAULT_EVENT
from shared.messages import decode
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.flood import FloodLimiter
from telegram_gateway.main import reconcile_outbox
from telegram_gateway.settings import GatewaySettings
from tests.simulators.tgsim_helpers import TOKEN, RunningSim, png, serve, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings


async def job_with_stickers(db: Database, **values: Any) -> Job:
    """A guest (user and chat 8) linked to a session, a job with 12 sticker blobs, its row set to
    ``values`` (e.g. ``status="rendered"``)."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t")
        await repos.sessions.bind_telegram("t", user_id=8, chat_id=8, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(12):
            await repos.blobs.put(
                kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=i
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(**values))
    return job


async def rendered_job(
    db: Database,
    *,
    guest: int,
    name: str = "B",
    language: str = "en",
    stickers: int = 12,
    event_id: str = DEFAULT_EVENT,
) -> Job:
    """A ``rendered`` job of Telegram user (and private chat) ``guest`` at event ``event_id`` with
    ``stickers`` valid sticker PNGs (a different image each, emoji 😀) that the Telegram simulator accepts;
    read back from Postgres."""
    token = f"t-{uuid.uuid4().hex}"
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=token, event_id=event_id)
        await repos.sessions.bind_telegram(token, user_id=guest, chat_id=guest, name=name, language=language)
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(stickers):
            await repos.blobs.put(
                kind="sticker",
                data=png(seed=i),
                content_type="image/png",
                job_id=job.id,
                position=i,
                meta={"emoji": "😀"},
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(status="rendered"))
    return await current(db, job)


class LimiterClock:
    """Monotonic time for the gateway's limiter that a test can move forward (its pauses end)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@dataclass
class Rig:
    """Delivery, the gateway's executor and the simulator, stepped by hand."""

    db: Database
    redis: aioredis.Redis
    sim: RunningSim
    delivery: PackDelivery
    executor: CommandExecutor
    clock: LimiterClock
    gateway: GatewaySettings
    outbox_cursor: str = "0-0"
    results_cursor: str = "0-0"

    async def wait_passes(self, seconds: float) -> list[str]:
        """As if ``seconds`` had passed for the outbox (deferred rows' ``not_before``, the limiter's
        pauses), then one tick of the gateway's reconciler and a :meth:`step`; returns what was run."""
        async with self.db.transaction() as repos:
            back = timedelta(seconds=seconds)
            await repos.conn.execute(
                sa.update(tg_commands).values(not_before=tg_commands.c.not_before - back)
            )
        self.clock.offset += seconds
        await reconcile_outbox(self.db, Publisher(self.redis), self.gateway)
        return await self.step()

    async def step(self) -> list[str]:
        """The gateway runs every hinted command, then delivery applies the results."""
        executed = []
        for entry_id, fields in await self.redis.xrange(streams.TG_OUTBOX, min=f"({self.outbox_cursor}"):
            self.outbox_cursor = entry_id
            command = decode(fields)
            await self.executor.execute(command.command_id)  # type: ignore[union-attr]
            executed.append(command.command_id)  # type: ignore[union-attr]
        stream = streams.results_stream("delivery")
        for entry_id, fields in await self.redis.xrange(stream, min=f"({self.results_cursor}"):
            self.results_cursor = entry_id
            await self.delivery.handle_result(decode(fields))
        return executed

    async def calls(self, method: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await self.sim.get(f"/sim/calls?method={method}")
        return found


async def current(db: Database, job: Job) -> Job:
    """``job`` as it is in Postgres now (it must exist)."""
    async with db.transaction() as repos:
        found = await repos.jobs.get(job.id)
    assert found is not None
    return found


@asynccontextmanager
async def gateway_rig(
    db: Database,
    redis: aioredis.Redis,
    database_url: str,
    redis_url: str,
    *,
    guest: int,
    public_base_url: str | None = None,
    **profile: Any,
) -> AsyncIterator[Rig]:
    """A :class:`Rig` on a fresh Telegram simulator, after ``guest`` sent ``/start`` with ``profile``
    (``first_name``, ``username``, … as the simulator takes them); the gateway's limiter does not retry.
    ``public_base_url``: delivery's ``PUBLIC_BASE_URL``."""
    runner, running = await serve(sim_config())
    await running.say(guest, "/start", **profile)
    clock = LimiterClock()
    bot: ExtBot[None] = ExtBot(
        TOKEN,
        base_url=f"{running.url}/bot",
        base_file_url=f"{running.url}/file/bot",
        rate_limiter=FloodLimiter(max_retries=0, clock=clock),
    )
    await bot.initialize()
    settings = DeliverySettings(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        BOT_USERNAME="stickerbooth_bot",
        PUBLIC_BASE_URL=public_base_url,
    )  # type: ignore[call-arg]
    publisher = Publisher(redis)
    try:
        yield Rig(
            db=db,
            redis=redis,
            sim=running,
            delivery=PackDelivery(db=db, publisher=publisher, settings=settings),
            executor=CommandExecutor(bot=bot, db=db, publisher=publisher),
            clock=clock,
            gateway=gateway_settings(database_url, redis_url, running.url),
        )
    finally:
        await bot.shutdown()
        await running.http.close()
        await runner.cleanup()
