"""A set the gateway built in steps (a smaller createNewStickerSet, then addStickerToSet) is ready only when
every sticker of the job is in: delivery reads readiness from its getStickerSet polls, never from the
create result's ``sticker_count``."""

from __future__ import annotations

import pytest

from delivery.packs import PackDelivery
from shared.domain import Job
from shared.messages import TelegramResult
from shared.repositories import Database
from tests.delivery.delivery_helpers import job_with_stickers

pytestmark = pytest.mark.integration


async def rendered_job(db: Database) -> Job:
    return await job_with_stickers(db, status="rendered")


async def link_commands(db: Database, job: Job) -> list[str]:
    async with db.transaction() as repos:
        return [r.command_id for r in await repos.tg_commands.for_subject("job", job.id, step="link")]


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
