"""Data minimisation (issue 11): a pack delivered through the gateway's executor on the Telegram simulator
leaves on ``tg:results:delivery``, and in ``tg_commands.result``, only the ids and counts delivery reads
(``shared.commands.minimal_result``): no chat, user, name, username, text or set name, which would outlive
the guest's ``/delete`` until the stream is trimmed. Delivery still takes the job to ``delivered``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import streams
from shared.db.tables import tg_commands
from shared.messages import TelegramResult, decode
from shared.repositories import Database
from tests.delivery.delivery_helpers import Rig, current, gateway_rig, rendered_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST = 5002
PROFILE = {"first_name": "Annabel", "last_name": "Guestova", "username": "annabel_guest"}
#: What Telegram's answers (the sent Message, the sticker set) would carry about the guest and their set.
PERSONAL = (str(GUEST), *PROFILE.values(), "addstickers", "_by_stickerbooth_bot")
TELEGRAM_OBJECTS = ('"chat"', '"from"', '"text"', '"username"', '"first_name"', '"name"', '"title"')


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AsyncIterator[Rig]:
    async with gateway_rig(db, redis, database_url, redis_url, guest=GUEST, **PROFILE) as rig:
        yield rig


async def test_a_delivered_packs_results_carry_ids_and_counts_only(rig: Rig, db: Database) -> None:
    job = await rendered_job(db, guest=GUEST, name=PROFILE["first_name"], stickers=3)
    await rig.delivery.request_set(job.id)
    await rig.step()  # createNewStickerSet; its result queues the first readiness check at once
    assert (await current(db, job)).status == "delivering"
    await rig.step()  # getStickerSet: 3 of 3, the link is queued
    await rig.step()  # sendMessage with the link
    assert (await current(db, job)).status == "delivered"
    messages = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    assert any("https://t.me/addstickers/" in m["text"] for m in messages if m["from_bot"])

    entries = await rig.redis.xrange(streams.results_stream("delivery"))
    raw = [fields["data"] for _id, fields in entries]
    results: list[TelegramResult] = [decode(fields) for _id, fields in entries]  # type: ignore[misc]
    by_step = {r.command_id.split(":")[2]: r.result for r in results}
    assert all(r.ok for r in results)
    assert by_step["create_set"] == {"created": True, "sticker_count": 3}
    assert by_step["poll"] == {"sticker_count": 3}
    assert set(by_step["link"]) == {"message_id"}
    for needle in (*PERSONAL, *TELEGRAM_OBJECTS):
        assert not [body for body in raw if needle in body], needle

    async with db.transaction() as repos:  # the stored results are the same reduced ones
        stored = [
            str(r)
            for r in await repos.conn.scalars(
                sa.select(sa.cast(tg_commands.c.result, sa.Text)).where(tg_commands.c.result.isnot(None))
            )
        ]
    assert len(stored) == 3
    for needle in (*PERSONAL, *TELEGRAM_OBJECTS):
        assert not [body for body in stored if needle in body], needle
