"""A German and a Spanish guest through the gateway's real handlers (python-telegram-bot polling the
simulator): every answer in their Telegram client's language, from the catalogues (``shared/locales``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from telegram.ext import Application

from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import TEXTS
from tests.simulators.tgsim_helpers import serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GERMAN, SPANISH, FRENCH = 3000, 3001, 3002


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    async with serving(sim_config()) as running, httpx.AsyncClient(base_url=running.url) as client:
        yield client


@pytest.fixture
async def gateway(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[Application]:
    settings = gateway_settings(database_url, redis_url, str(sim.base_url).rstrip("/"))
    async with running_gateway(settings, db=db, publisher=Publisher(redis)) as started:
        yield started.application


async def say(sim: httpx.AsyncClient, user_id: int, text: str, language_code: str) -> None:
    body = {"text": text, "first_name": "Gast", "language_code": language_code}
    (await sim.post(f"/sim/users/{user_id}/messages", json=body)).raise_for_status()


async def from_bot(sim: httpx.AsyncClient, chat_id: int, count: int) -> list[dict[str, Any]]:
    """The bot's first ``count`` messages in the chat, waiting for them."""
    async with asyncio.timeout(15):
        while True:
            body: Any = (await sim.get(f"/sim/chats/{chat_id}/messages")).json()
            messages = body["messages"] if isinstance(body, dict) else body
            mine = [m for m in messages if (m.get("from") or {}).get("is_bot")]
            if len(mine) >= count:
                return mine[:count]
            await asyncio.sleep(0.1)


async def test_a_german_guest_is_answered_in_german(
    gateway: Application,
    sim: httpx.AsyncClient,
    db: Database,
) -> None:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="kiosk-token-de")
    await say(sim, GERMAN, "/start kiosk-token-de", "de-AT")  # Austrian German: the nearest is de
    await say(sim, GERMAN, "/help", "de-AT")
    await say(sim, GERMAN, "Hallo?", "de-AT")
    texts = [m["text"] for m in await from_bot(sim, GERMAN, 3)]
    assert texts == [TEXTS["linked"]["de"], TEXTS["help"]["de"], TEXTS["hello"]["de"]]
    assert texts[0].startswith("Verbunden! Mach jetzt dein Selfie")
    async with db.transaction() as repos:
        bound = await repos.sessions.get(session.id)
    # what delivery later says (the link, the set title) follows this stored code
    assert bound is not None and bound.language == "de-AT"


async def test_a_spanish_guest_is_answered_in_spanish_with_spanish_buttons(
    gateway: Application,
    sim: httpx.AsyncClient,
    db: Database,
) -> None:
    async with db.transaction() as repos:
        await repos.sessions.create(station="s", token="kiosk-token-es")
    await say(sim, SPANISH, "/start kiosk-token-es", "es")
    await say(sim, SPANISH, "/start no-such-token", "es")
    await say(sim, SPANISH, "/delete", "es")
    linked, used, prompt = await from_bot(sim, SPANISH, 3)
    assert linked["text"] == TEXTS["linked"]["es"]
    assert linked["text"].startswith("¡Ya estás conectado! Hazte el selfie en el stand")
    assert used["text"] == TEXTS["unknown_token"]["es"]
    assert prompt["text"] == TEXTS["erase_confirm"]["es"]
    buttons = [b["text"] for row in prompt["reply_markup"]["inline_keyboard"] for b in row]
    assert buttons == [TEXTS["erase_yes"]["es"], TEXTS["erase_no"]["es"]] == ["Borrar todo", "Cancelar"]


async def test_a_language_without_a_catalogue_is_answered_in_english(
    gateway: Application,
    sim: httpx.AsyncClient,
) -> None:
    await say(sim, FRENCH, "/help", "fr")
    assert [m["text"] for m in await from_bot(sim, FRENCH, 1)] == [TEXTS["help"]["en"]]
