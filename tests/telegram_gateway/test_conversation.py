"""The gateway's conversation through python-telegram-bot polling the simulator: deep-link binding, the
maintenance gate, and admin commands."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from telegram.ext import Application

from shared import maintenance
from shared.events import Event
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.main import build_application, register_handlers
from telegram_gateway.settings import GatewaySettings
from tests.simulators.tgsim_helpers import serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings, polling, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
ADMIN, GUEST = 1000, 2000


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    async with serving(sim_config()) as running, httpx.AsyncClient(base_url=running.url) as client:
        yield client


def settings_for(sim: httpx.AsyncClient, database_url: str, redis_url: str, **fields: Any) -> GatewaySettings:
    return gateway_settings(database_url, redis_url, str(sim.base_url).rstrip("/"), **fields)


@pytest.fixture
async def gateway(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[Application]:  # type: ignore[type-arg]
    settings = settings_for(sim, database_url, redis_url, ADMIN_USER_IDS=str(ADMIN))
    async with running_gateway(settings, db=db, publisher=Publisher(redis)) as started:
        yield started.application


async def say(sim: httpx.AsyncClient, user_id: int, text: str) -> None:
    response = await sim.post(
        f"/sim/users/{user_id}/messages", json={"text": text, "first_name": "U", "language_code": "en"}
    )
    response.raise_for_status()


async def replies(sim: httpx.AsyncClient, chat_id: int, count: int) -> list[str]:
    """Wait until the bot has sent ``count`` messages in the chat; returns their texts."""
    async with asyncio.timeout(15):
        while True:
            body: Any = (await sim.get(f"/sim/chats/{chat_id}/messages")).json()
            messages = body["messages"] if isinstance(body, dict) else body
            texts = [m["text"] for m in messages if (m.get("from") or {}).get("is_bot")]
            if len(texts) >= count:
                return texts
            await asyncio.sleep(0.1)


async def test_start_with_a_kiosk_token_binds_the_guest(
    gateway: Application, sim: httpx.AsyncClient, db: Database
) -> None:  # type: ignore[type-arg]
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="kiosk-token-1")
    await say(sim, GUEST, "/start kiosk-token-1")
    assert (await replies(sim, GUEST, 1))[0].startswith("You're linked!")
    async with db.transaction() as repos:
        bound = await repos.sessions.get(session.id)
    assert bound is not None and bound.tg_user_id == GUEST and bound.tg_chat_id == GUEST
    await say(sim, GUEST + 1, "/start kiosk-token-1")  # another person with the same (used) code
    assert (await replies(sim, GUEST + 1, 1))[0].startswith("This code has expired")


async def test_the_linked_answer_is_in_the_words_and_language_of_the_sessions_event(
    gateway: Application, sim: httpx.AsyncClient, db: Database
) -> None:  # type: ignore[type-arg]
    """A French guest at an event in German and English: its own German "linked" text (the event's first
    language); an unknown code is about no session and stays the catalogue's, in French's nearest, English."""
    async with db.transaction() as repos:
        await repos.events.save(
            Event(
                id="gala", name="Gala", languages=("de", "en"), texts={"de": {"linked": "Gala: verbunden!"}}
            )
        )
        await repos.sessions.create(station="s", token="gala-token", event_id="gala")
    for text in ("/start gala-token", "/start no-such-token"):
        response = await sim.post(
            f"/sim/users/{GUEST}/messages", json={"text": text, "first_name": "U", "language_code": "fr"}
        )
        response.raise_for_status()
    linked, unknown = await replies(sim, GUEST, 2)
    assert linked == "Gala: verbunden!"
    assert unknown.startswith("This code has expired")


async def test_while_paused_guests_get_the_maintenance_text_and_admins_keep_their_commands(
    gateway: Application,  # type: ignore[type-arg]
    sim: httpx.AsyncClient,
    db: Database,
) -> None:
    await say(sim, ADMIN, "/pause")
    assert (await replies(sim, ADMIN, 1))[0].startswith("Paused.")
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
        created = await repos.sessions.create(station="s", token="kiosk-token-2")
    assert pause is not None and pause.source == "admin"
    await say(sim, GUEST, "/start kiosk-token-2")
    assert (await replies(sim, GUEST, 1)) == [
        "The sticker booth is taking a short break. Please try again in a few minutes."
    ]
    async with db.transaction() as repos:  # linked all the same: the kiosk carries on after the break
        linked = await repos.sessions.get(created.id)
    assert linked is not None and linked.tg_user_id == GUEST
    await say(sim, GUEST, "hello")  # anything else still gets only the break text
    assert (await replies(sim, GUEST, 2))[1].startswith("The sticker booth is taking a short break")
    await say(sim, ADMIN, "/status")
    assert "Queue paused (admin" in (await replies(sim, ADMIN, 2))[1]
    await say(sim, ADMIN, "/resume")
    assert (await replies(sim, ADMIN, 3))[2].startswith("Resumed (admin")
    await say(sim, GUEST, "/start kiosk-token-2")
    assert (await replies(sim, GUEST, 3))[2].startswith("You're linked!")


async def test_admin_commands_from_a_guest_pause_nothing_and_get_the_help_text(
    gateway: Application, sim: httpx.AsyncClient, db: Database
) -> None:  # type: ignore[type-arg]
    await say(sim, GUEST, "/pause")
    await say(sim, GUEST, "/status")
    await say(sim, GUEST, "/stickerz")  # a typo: an answer, not silence
    await say(sim, GUEST, "hello")
    texts = await replies(sim, GUEST, 4)
    async with db.transaction() as repos:
        assert await maintenance.current_pause(repos) is None
    assert all(t.startswith("How to get your own sticker pack:") for t in texts[:3])
    assert texts[3].startswith("Hi! Scan the QR code")


async def test_an_update_whose_handling_was_interrupted_is_delivered_again(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """A gateway killed mid-handler must not lose the guest's /start (python-telegram-bot's Updater would)."""
    from telegram.ext import TypeHandler

    settings = settings_for(sim, database_url, redis_url)
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="kiosk-token-9")
    entered = asyncio.Event()

    async def hang(_update: object, _context: object) -> None:
        entered.set()
        await asyncio.Event().wait()  # the process "dies" here

    first = build_application(settings)
    first.add_handler(TypeHandler(object, hang), group=-5)
    await first.initialize()
    async with polling(first):  # killed mid-handler at its end: the batch was never confirmed
        await say(sim, GUEST, "/start kiosk-token-9")
        async with asyncio.timeout(10):
            await entered.wait()
    await first.shutdown()

    second = build_application(settings)
    register_handlers(second, db=db, publisher=Publisher(redis), settings=settings)
    await second.initialize()
    try:
        async with polling(second):
            assert (await replies(sim, GUEST, 1))[0].startswith("You're linked!")
    finally:
        await second.shutdown()
    async with db.transaction() as repos:
        bound = await repos.sessions.get(session.id)
    assert bound is not None and bound.tg_user_id == GUEST


async def test_an_update_handled_again_after_a_crash_is_answered_once(
    sim: httpx.AsyncClient, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """A gateway killed after its reply went out but before it confirmed the update: the next gateway
    handles the update again (at least once) and the guest still gets one "You're linked!" (at most once)."""
    from telegram import Update
    from telegram.ext import TypeHandler

    settings = settings_for(sim, database_url, redis_url)
    async with db.transaction() as repos:
        await repos.sessions.create(station="s", token="kiosk-token-10")
    replied = asyncio.Event()

    async def die_after_reply(_update: object, _context: object) -> None:
        replied.set()
        await asyncio.Event().wait()  # the process "dies" here, after the guest handler answered

    first = build_application(settings)
    register_handlers(first, db=db, publisher=Publisher(redis), settings=settings)
    first.add_handler(TypeHandler(object, die_after_reply), group=5)
    await first.initialize()
    async with polling(first):  # killed at its end
        await say(sim, GUEST, "/start kiosk-token-10")
        async with asyncio.timeout(10):
            await replied.wait()
    await first.shutdown()

    handled_again = asyncio.Event()

    async def seen(update: object, _context: object) -> None:
        if isinstance(update, Update) and update.effective_message is not None:
            handled_again.set()

    second = build_application(settings)
    register_handlers(second, db=db, publisher=Publisher(redis), settings=settings)
    second.add_handler(TypeHandler(object, seen), group=5)
    await second.initialize()
    try:
        async with polling(second):
            async with asyncio.timeout(10):
                await handled_again.wait()
            await asyncio.sleep(0.5)
            body: Any = (await sim.get(f"/sim/chats/{GUEST}/messages")).json()
            messages = body["messages"] if isinstance(body, dict) else body
            texts = [m.get("text") or "" for m in messages if (m.get("from") or {}).get("is_bot")]
    finally:
        await second.shutdown()
    assert [t for t in texts if t.startswith("You're linked!")] == [texts[0]] and len(texts) == 1


async def test_help_tells_guests_how_to_get_a_pack_and_admins_their_commands_too(
    gateway: Application,  # type: ignore[type-arg]
    sim: httpx.AsyncClient,
) -> None:
    await say(sim, GUEST, "/help")
    guest_help = (await replies(sim, GUEST, 1))[0]
    assert guest_help.startswith("How to get your own sticker pack:") and "/delete" in guest_help
    assert "/pause" not in guest_help
    await say(sim, ADMIN, "/help")
    admin_help = (await replies(sim, ADMIN, 1))[0]
    assert admin_help.startswith("Admin commands:")
    assert all(command in admin_help for command in ("/status", "/pause", "/resume", "/delete"))
    response = await sim.post(
        f"/sim/users/{GUEST + 5}/messages", json={"text": "/help", "first_name": "A", "language_code": "uz"}
    )
    response.raise_for_status()
    assert (await replies(sim, GUEST + 5, 1))[0].startswith("Как получить свой набор стикеров:")
