"""The gateway's leads routing through python-telegram-bot polling the simulator, wired by the real
``register_handlers``: ``stickers_`` presses and the leads chat go to ``tg:updates:leads`` and nowhere
else; with leads off, old buttons get a polite answer; a broken leads stream never stops the guest
conversation, and a broken guest side (Postgres down) never stops the leads routing (spec/000
"Isolation between the guest flow and leads")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.ext import Application

from shared import streams
from shared.db import create_engine
from shared.messages import LeadButtonPressed, LeadsChatMessage, decode
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.leads_updates import LEADS_OFF, TRY_AGAIN
from tests.simulators.tgsim_helpers import serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
ADMIN, STAFF, GUEST = 1000, 3000, 2000
LEADS_CHAT = -1001234567890
Gateway = Callable[..., AbstractAsyncContextManager[Application]]  # type: ignore[type-arg]


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    async with serving(sim_config()) as running, httpx.AsyncClient(base_url=running.url) as client:
        await client.post(
            f"/sim/users/{ADMIN}/messages",
            json={"text": "cards here", "chat_id": LEADS_CHAT, "chat_title": "Leads"},
        )
        yield client


@pytest.fixture
def gateway(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> Gateway:
    """Run the gateway's conversation (``leads_enabled``; ``database``: another Postgres, e.g. a dead one)."""

    @asynccontextmanager
    async def running(
        *, leads_enabled: bool = True, database: Database | None = None
    ) -> AsyncIterator[Application]:  # type: ignore[type-arg]
        settings = gateway_settings(
            database_url,
            redis_url,
            str(sim.base_url).rstrip("/"),
            ADMIN_USER_IDS=str(ADMIN),
            LEADS_ENABLED=leads_enabled,
            LEADS_CHAT_ID=LEADS_CHAT,
        )
        async with running_gateway(settings, db=database or db, publisher=Publisher(redis)) as started:
            yield started.application

    return running


async def card(app: Application, data: str = "stickers_lead:1:take") -> int:  # type: ignore[type-arg]
    markup = InlineKeyboardMarkup([[InlineKeyboardButton("Take", callback_data=data)]])
    message = await app.bot.send_message(LEADS_CHAT, "Lead #1", reply_markup=markup)
    return message.message_id


async def press(sim: httpx.AsyncClient, message_id: int, data: str = "stickers_lead:1:take") -> str:
    body = {"user_id": STAFF, "chat_id": LEADS_CHAT, "message_id": message_id, "data": data}
    return str((await sim.post("/sim/callbacks", json=body)).json()["id"])


async def answered(sim: httpx.AsyncClient, callback_id: str) -> str:
    async with asyncio.timeout(10):
        while not (body := (await sim.get(f"/sim/callbacks/{callback_id}")).json())["answered"]:
            await asyncio.sleep(0.05)
    return str(body["answer"]["text"])


async def routed(redis: aioredis.Redis, count: int) -> list[Any]:
    async with asyncio.timeout(10):
        while len(entries := await redis.xrange(streams.TG_UPDATES_LEADS)) < count:
            await asyncio.sleep(0.05)
    return [decode(fields) for _id, fields in entries]


async def guest_reply(sim: httpx.AsyncClient, text: str, count: int) -> list[str]:
    await sim.post(
        f"/sim/users/{GUEST}/messages", json={"text": text, "first_name": "G", "language_code": "en"}
    )
    async with asyncio.timeout(10):
        while True:
            messages = (await sim.get(f"/sim/chats/{GUEST}/messages")).json()
            texts = [m["text"] for m in messages if m["from_bot"]]
            if len(texts) >= count:
                return texts
            await asyncio.sleep(0.05)


async def test_presses_and_leads_chat_messages_go_to_the_leads_stream_only(
    gateway: Gateway, sim: httpx.AsyncClient, redis: aioredis.Redis
) -> None:
    async with gateway() as app:
        message_id = await card(app)
        callback_id = await press(sim, message_id)
        await sim.post(f"/sim/users/{STAFF}/messages", json={"text": "/start", "chat_id": LEADS_CHAT})
        updates = await routed(redis, 2)
        assert await guest_reply(sim, "/start", 1)  # the guest conversation is untouched
    pressed = next(u for u in updates if isinstance(u, LeadButtonPressed))
    assert (pressed.callback_query_id, pressed.data, pressed.user_id) == (
        callback_id,
        "stickers_lead:1:take",
        STAFF,
    )
    assert (pressed.chat_id, pressed.message_id) == (LEADS_CHAT, message_id)
    assert any(isinstance(u, LeadsChatMessage) and u.chat_id == LEADS_CHAT for u in updates)
    group = (await sim.get(f"/sim/chats/{LEADS_CHAT}/messages")).json()
    assert [m["text"] for m in group if m["from_bot"]] == ["Lead #1"]  # no guest reply to "/start" there
    assert (await sim.get(f"/sim/callbacks/{callback_id}")).json()["answered"] is False  # leads answers it


async def test_with_leads_off_old_buttons_get_a_polite_answer(
    gateway: Gateway, sim: httpx.AsyncClient, redis: aioredis.Redis
) -> None:
    async with gateway(leads_enabled=False) as app:
        callback_id = await press(sim, await card(app))
        assert await answered(sim, callback_id) == LEADS_OFF
        await sim.post(f"/sim/users/{STAFF}/messages", json={"text": "hello", "chat_id": LEADS_CHAT})
        assert await guest_reply(sim, "/start", 1)
    assert await redis.xrange(streams.TG_UPDATES_LEADS) == []


async def test_a_poisoned_leads_stream_costs_a_retry_answer_never_the_guest_flow(
    gateway: Gateway, sim: httpx.AsyncClient, redis: aioredis.Redis
) -> None:
    await redis.set(streams.TG_UPDATES_LEADS, "not a stream")  # XADD now fails with WRONGTYPE
    async with gateway() as app:
        callback_id = await press(sim, await card(app))
        assert await answered(sim, callback_id) == TRY_AGAIN
        assert len(await guest_reply(sim, "/start", 1)) == 1
        await sim.post(f"/sim/users/{STAFF}/messages", json={"text": "hello", "chat_id": LEADS_CHAT})
        assert len(await guest_reply(sim, "hello again", 2)) == 2  # polling goes on


async def test_postgres_down_for_the_guest_side_leaves_leads_routing_working(
    gateway: Gateway, sim: httpx.AsyncClient, redis: aioredis.Redis
) -> None:
    dead = Database(create_engine("postgresql://nobody@127.0.0.1:9/none", connect_timeout_s=1))
    try:
        async with gateway(database=dead) as app:
            (reply,) = await guest_reply(sim, "/start kiosk-token-1", 1)
            assert "busy" in reply  # the guest side is degraded...
            callback_id = await press(sim, await card(app))
            (pressed,) = await routed(redis, 1)  # ...the leads side is not
    finally:
        await dead.dispose()
    assert isinstance(pressed, LeadButtonPressed) and pressed.callback_query_id == callback_id
