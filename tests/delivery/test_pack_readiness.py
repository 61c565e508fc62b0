"""A set the gateway built in steps (a smaller createNewStickerSet, then addStickerToSet) is ready only when
every sticker of the job is in: delivery reads readiness from its getStickerSet polls, never from the
create result's ``sticker_count``."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.packs import PackDelivery
from delivery.settings import DeliverySettings
from shared.db.tables import jobs
from shared.domain import Job
from shared.messages import TelegramResult
from shared.repositories import Database
from shared.streams import Publisher

pytestmark = pytest.mark.integration


@pytest.fixture
def delivery(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> PackDelivery:
    settings = DeliverySettings(
        DATABASE_URL=database_url, REDIS_URL=redis_url, BOT_USERNAME="stickerbooth_bot"
    )  # type: ignore[call-arg]
    return PackDelivery(db=db, publisher=Publisher(redis), settings=settings)


async def rendered_job(db: Database) -> Job:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t")
        await repos.sessions.bind_telegram("t", user_id=8, chat_id=8, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(12):
            await repos.blobs.put(
                kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=i
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(status="rendered"))
    return job


async def link_commands(db: Database, job: Job) -> list[str]:
    async with db.transaction() as repos:
        return [r.command_id for r in await repos.tg_commands.with_prefix(f"job:{job.id}:link")]


async def test_a_set_is_ready_only_when_all_twelve_stickers_are_in(
    db: Database, delivery: PackDelivery
) -> None:
    job = await rendered_job(db)
    created = {"name": "sbx_by_stickerbooth_bot", "created": True, "sticker_count": 6}

    await delivery.on_set_created(
        job.id, TelegramResult(command_id=f"job:{job.id}:create_set", ok=True, result=created)
    )

    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None and current.status == "delivering"
    for poll, count in enumerate((6, 11), start=1):
        partial = TelegramResult(
            command_id=f"job:{job.id}:poll:{poll}", ok=True, result={"sticker_count": count}
        )
        await delivery.on_poll(job.id, partial)
        assert await link_commands(db, job) == []
    ready = TelegramResult(command_id=f"job:{job.id}:poll:3", ok=True, result={"sticker_count": 12})
    await delivery.on_poll(job.id, ready)
    assert await link_commands(db, job) == [f"job:{job.id}:link"]
