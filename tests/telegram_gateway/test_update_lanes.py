"""Updates of different chats are handled side by side, each chat's in order (issue 19): a guest writing
25 messages in a burst (each reply paced 1 s by their chat's bucket) must not hold up another guest's
answer to Start, and is still answered in the order they wrote."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared.db.tables import tg_commands
from shared.repositories import Database
from tests.telegram_gateway.test_flood import GUEST, OTHER, start_gateway, wait_for_text

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]
BURST = 25


async def _handled_updates(db: Database, chat_id: int) -> list[int]:
    """Update ids of the replies recorded for ``chat_id`` (``update:<id>``), in the order recorded."""
    async with db.transaction() as repos:
        rows = await repos.conn.execute(
            sa.select(tg_commands.c.subject["id"].astext)
            .where(tg_commands.c.subject["kind"].astext == "update")
            .where(tg_commands.c.params["chat_id"].astext == str(chat_id))
            .order_by(tg_commands.c.created_at)
        )
    return [int(update_id) for (update_id,) in rows]


async def test_a_burst_from_one_guest_does_not_delay_another_guests_answer(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    # the simulator keeps Telegram's 1 message/s per private chat, as the gateway's limiter does
    made, cleanup = await start_gateway(db, redis, database_url, redis_url, private_per_second=1)
    try:
        before = len(await _handled_updates(db, GUEST))
        for n in range(BURST):
            await made.sim.say(GUEST, f"message {n}", first_name="Ann", language_code="en")
        while len(await _handled_updates(db, GUEST)) < before + 2:  # the burst is being answered
            await asyncio.sleep(0.05)
        asked = time.monotonic()
        await made.sim.say(OTHER, "/start", first_name="Bob", language_code="en")
        async with asyncio.timeout(20):
            while len(await _handled_updates(db, OTHER)) < 2:  # the greeting of the set-up, then this
                await asyncio.sleep(0.05)
            await wait_for_text(made, OTHER, "Hi!")
        waited = time.monotonic() - asked
        assert waited < 3.0, f"the other guest's answer took {waited:.1f}s behind the burst"
        handled = await _handled_updates(db, GUEST)
        assert len(handled) - before < BURST  # the burst was still being answered meanwhile
        assert handled == sorted(handled)  # the guest's own messages answered in the order written
    finally:
        await cleanup()
