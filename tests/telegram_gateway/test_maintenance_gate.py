"""The maintenance gate: an unreadable database lets the guest through (spec/000); while paused a guest's
message gets the maintenance text once, however often the update is delivered (outbox key
``update:<update_id>``), and admins pass. Replies go to the Telegram simulator through the real executor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
import redis.asyncio as aioredis
from telegram import Chat, Message, Update, User
from telegram.ext import ApplicationHandlerStop

from shared.db import create_engine
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import text
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.main import build_application
from telegram_gateway.maintenance_gate import MaintenanceGate
from tests.simulators.tgsim_helpers import serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings

pytestmark = pytest.mark.integration
GUEST = 7


@pytest.fixture
async def sim_executor(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[tuple[CommandExecutor, httpx.AsyncClient]]:
    """A real executor whose bot talks to an in-process Telegram simulator, and a client of the sim."""
    async with serving(sim_config()) as running:
        application = build_application(gateway_settings(database_url, redis_url, running.url))
        await application.initialize()
        async with httpx.AsyncClient(base_url=running.url) as sim:
            # the guest writes first, so the private chat exists for the bot to answer in
            body = {"text": "hi", "first_name": "G", "language_code": "ru"}
            (await sim.post(f"/sim/users/{GUEST}/messages", json=body)).raise_for_status()
            yield CommandExecutor(bot=application.bot, db=db, publisher=Publisher(redis)), sim
        await application.shutdown()


def private_update(update_id: int, user_id: int, *, language: str = "ru") -> Update:
    user = User(id=user_id, first_name="G", is_bot=False, language_code=language)
    chat = Chat(id=user_id, type="private")
    message = Message(message_id=update_id, date=datetime.now(UTC), chat=chat, from_user=user, text="hello")
    return Update(update_id=update_id, message=message)


async def bot_texts(sim: httpx.AsyncClient, chat_id: int) -> list[str]:
    body = (await sim.get(f"/sim/chats/{chat_id}/messages")).json()
    messages = body["messages"] if isinstance(body, dict) else body
    return [m["text"] for m in messages if (m.get("from") or {}).get("is_bot")]


async def test_an_unreadable_database_lets_the_guest_through(
    sim_executor: tuple[CommandExecutor, httpx.AsyncClient],
) -> None:
    executor, sim = sim_executor
    dead = Database(create_engine("postgresql://postgres@127.0.0.1:1/x", connect_timeout_s=1))
    gate = MaintenanceGate(db=dead, executor=executor, admin_ids=frozenset(), env_maintenance=False)
    await gate.check(private_update(1, GUEST), None)  # type: ignore[arg-type]  # no ApplicationHandlerStop
    assert await bot_texts(sim, GUEST) == []
    await dead.dispose()


async def test_env_maintenance_answers_a_guest_once_per_update_and_lets_admins_pass(
    db: Database, sim_executor: tuple[CommandExecutor, httpx.AsyncClient]
) -> None:
    executor, sim = sim_executor
    gate = MaintenanceGate(db=db, executor=executor, admin_ids=frozenset({1000}), env_maintenance=True)
    for _ in range(2):  # the same update delivered again, as polling does after a gateway crash
        with pytest.raises(ApplicationHandlerStop):
            await gate.check(private_update(2, GUEST), None)  # type: ignore[arg-type]
    assert await bot_texts(sim, GUEST) == [text("maintenance", "ru")]
    with pytest.raises(ApplicationHandlerStop):
        await gate.check(private_update(3, GUEST), None)  # type: ignore[arg-type]  # a new message: answered
    assert await bot_texts(sim, GUEST) == [text("maintenance", "ru")] * 2
    await gate.check(private_update(4, 1000), None)  # type: ignore[arg-type]  # an admin passes
