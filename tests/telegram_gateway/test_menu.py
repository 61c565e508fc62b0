"""The command menu the gateway sets at start (telegram_gateway.menu) against the Telegram simulator with
real python-telegram-bot: guests' commands in English and Russian, the admins' own list in their chat,
5xx and dropped connections tried again, a refused list skipped, and no failure stopping the gateway."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from telegram import Bot, Chat, Message, Update, User

from shared.repositories import Database
from shared.texts import ADMIN_COMMANDS, GUEST_COMMANDS
from telegram_gateway.main import build_application, run
from telegram_gateway.menu import MENU_LANGUAGES, CommandMenu, keep_command_menu, set_command_menu
from tests.simulators.tgsim_helpers import RunningSim, serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
ADMIN, NEW_ADMIN, GUEST, RU_GUEST, UK_GUEST = 1000, 1001, 2000, 2001, 2002


@pytest.fixture
async def tgsim() -> AsyncIterator[RunningSim]:
    async with serving(sim_config()) as running:
        for user, lang in ((ADMIN, "en"), (GUEST, "en"), (RU_GUEST, "ru"), (UK_GUEST, "uk")):
            await running.say(user, "/start", first_name="U", language_code=lang)
        yield running


@pytest.fixture
async def bot(tgsim: RunningSim, database_url: str, redis_url: str) -> AsyncIterator[Bot]:
    """The gateway's own bot (its request settings and flood limiter), pointed at the simulator."""
    application = build_application(gateway_settings(database_url, redis_url, tgsim.url))
    async with application.bot as gateway_bot:
        yield gateway_bot


async def from_bot(tgsim: RunningSim, chat_id: int) -> list[dict[str, Any]]:
    """The bot's messages in ``chat_id``, oldest first."""
    messages = await tgsim.get(f"/sim/chats/{chat_id}/messages")
    return [m for m in messages if m["from"]["is_bot"]]


async def new_admin_lists(tgsim: RunningSim) -> list[dict[str, Any]]:
    """The ``setMyCommands`` calls that set a list in ``NEW_ADMIN``'s own chat."""
    calls = await tgsim.get("/sim/calls?method=setMyCommands")
    scopes = [(c, json.loads(c["params"].get("scope") or "{}")) for c in calls if c["ok"]]
    return [c for c, scope in scopes if scope.get("type") == "chat" and scope.get("chat_id") == NEW_ADMIN]


def described(commands: dict[str, dict[str, str]], language: str) -> list[dict[str, str]]:
    return [{"command": name, "description": texts[language]} for name, texts in commands.items()]


async def test_guests_and_admins_get_their_menus_in_their_language_through_5xx_and_drops(
    tgsim: RunningSim, bot: Bot
) -> None:
    await tgsim.post("/sim/faults", {"method": "setMyCommands", "kind": "error", "error_code": 502})
    await tgsim.post("/sim/faults", {"method": "setMyCommands", "kind": "drop"})
    # NEW_ADMIN never opened the chat with the bot: Telegram knows no such chat and refuses their list
    outcome = await set_command_menu(bot, [ADMIN, NEW_ADMIN])
    assert outcome.done == 2 * len(MENU_LANGUAGES) and outcome.refused_admins == {NEW_ADMIN}
    guests_en, guests_ru = described(GUEST_COMMANDS, "en"), described(GUEST_COMMANDS, "ru")
    assert await tgsim.get(f"/sim/users/{GUEST}/commands") == guests_en
    assert await tgsim.get(f"/sim/users/{RU_GUEST}/commands") == guests_ru
    assert await tgsim.get(f"/sim/users/{UK_GUEST}/commands") == guests_ru  # the bot answers uk in Russian
    assert [c["command"] for c in guests_en] == ["help", "delete"]  # /status answers admins only
    admins = await tgsim.get(f"/sim/users/{ADMIN}/commands")
    assert admins == described({**GUEST_COMMANDS, **ADMIN_COMMANDS}, "en")
    calls = await tgsim.get("/sim/calls?method=setMyCommands")
    assert [c["fault"] for c in calls[:2]] == ["error", "drop"]  # both tried again
    refused = [c for c in calls if not c["ok"] and c["fault"] is None]
    # asked once: a chat Telegram does not know refuses every language alike
    assert [c["description"] for c in refused] == ["Bad Request: chat not found"]
    # setting it again (a restart) sets the same menu
    assert (await set_command_menu(bot, [ADMIN])).done == 2 * len(MENU_LANGUAGES)
    assert await tgsim.get(f"/sim/users/{ADMIN}/commands") == admins


async def test_the_menu_task_never_stops_the_gateway_and_waits_for_the_lock(
    tgsim: RunningSim, bot: Bot
) -> None:
    # Telegram refuses the token (401) on every call: the task logs it and keeps the gateway running
    await tgsim.post(
        "/sim/faults", {"method": "setMyCommands", "error_code": 401, "description": "Unauthorized"}
    )
    stop, held = asyncio.Event(), asyncio.Event()
    refused = asyncio.create_task(keep_command_menu(bot, [ADMIN], stop))
    async with asyncio.timeout(10):  # its first call, however busy the machine
        while not await tgsim.get("/sim/calls?method=setMyCommands"):
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # time for a second call, which must not come
    assert not refused.done()
    assert [c["error_code"] for c in await tgsim.get("/sim/calls?method=setMyCommands")] == [401]
    # a gateway waiting for the single-gateway lock sets nothing until it holds it
    waiting = asyncio.create_task(keep_command_menu(bot, [ADMIN], stop, held=held))
    await asyncio.sleep(0.3)
    assert await tgsim.get(f"/sim/users/{GUEST}/commands") == []
    held.set()
    async with asyncio.timeout(30):
        while not await tgsim.get(f"/sim/users/{GUEST}/commands"):
            await asyncio.sleep(0.1)
    assert await tgsim.get(f"/sim/users/{GUEST}/commands") == described(GUEST_COMMANDS, "en")
    assert not refused.done() and not waiting.done()
    stop.set()
    await asyncio.wait_for(asyncio.gather(refused, waiting), timeout=5)


async def test_the_gateway_sets_the_menu_when_it_starts_and_keeps_running(
    tgsim: RunningSim, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    # the gateway process as main runs it (lock, polling, outbox, duties), in this process
    settings = gateway_settings(database_url, redis_url, tgsim.url, ADMIN_USER_IDS=str(ADMIN))
    stop = asyncio.Event()
    gateway = asyncio.create_task(run(settings, db=db, redis=redis, stop=stop))
    try:
        admins = described({**GUEST_COMMANDS, **ADMIN_COMMANDS}, "en")
        async with asyncio.timeout(60):  # the default lists come first, then the admin's own
            while await tgsim.get(f"/sim/users/{ADMIN}/commands") != admins:
                await asyncio.sleep(0.1)
        assert await tgsim.get(f"/sim/users/{RU_GUEST}/commands") == described(GUEST_COMMANDS, "ru")
        await asyncio.sleep(0.3)
        assert not gateway.done()  # the menu task, done with its work, does not end the service
    finally:
        stop.set()
        assert await asyncio.wait_for(gateway, timeout=30) == 0


async def test_an_admin_telegram_did_not_know_at_start_gets_their_menu_when_they_write(
    tgsim: RunningSim, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    settings = gateway_settings(database_url, redis_url, tgsim.url, ADMIN_USER_IDS=f"{ADMIN},{NEW_ADMIN}")
    stop = asyncio.Event()
    gateway = asyncio.create_task(run(settings, db=db, redis=redis, stop=stop))
    admins = described({**GUEST_COMMANDS, **ADMIN_COMMANDS}, "en")
    try:
        async with asyncio.timeout(30):
            while await tgsim.get(f"/sim/users/{ADMIN}/commands") != admins:
                await asyncio.sleep(0.1)
            # NEW_ADMIN never opened the chat: their list was refused at start (asked once)
            while not [c for c in await tgsim.get("/sim/calls?method=setMyCommands") if not c["ok"]]:
                await asyncio.sleep(0.1)
        await tgsim.say(NEW_ADMIN, "/help", first_name="New", language_code="en")
        async with asyncio.timeout(30):  # every language of their list, as at start
            while len(await new_admin_lists(tgsim)) < len(MENU_LANGUAGES):
                await asyncio.sleep(0.1)
        assert await tgsim.get(f"/sim/users/{NEW_ADMIN}/commands") == admins
        calls = await tgsim.get("/sim/calls?method=setMyCommands")
        assert [c["ok"] for c in calls].count(False) == 1  # refused once, then set on the first message
        assert len(await from_bot(tgsim, NEW_ADMIN)) == 1  # /help was answered as well
        await tgsim.say(NEW_ADMIN, "/help", first_name="New", language_code="en")
        async with asyncio.timeout(30):
            while len(await from_bot(tgsim, NEW_ADMIN)) < 2:
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        assert len(await tgsim.get("/sim/calls?method=setMyCommands")) == len(calls)  # set once only
        assert len(await new_admin_lists(tgsim)) == len(MENU_LANGUAGES)
    finally:
        stop.set()
        assert await asyncio.wait_for(gateway, timeout=30) == 0


async def test_an_admin_refused_while_the_start_menu_is_still_being_set_gets_theirs_when_they_write(
    tgsim: RunningSim,
) -> None:
    """The start still sets another admin's list after NEW_ADMIN's was refused (here: waiting out a 429
    on GUEST's, the later admin's, first list) when NEW_ADMIN writes: they get theirs all the same."""
    passed = len(MENU_LANGUAGES) + 1  # the default lists and NEW_ADMIN's refused one, answered as usual
    await tgsim.post("/sim/faults", {"method": "setMyCommands", "kind": "delay", "count": passed})
    await tgsim.post(
        "/sim/faults", {"method": "setMyCommands", "kind": "error", "error_code": 429, "retry_after": 600}
    )
    stop = asyncio.Event()
    async with tgsim.bot() as bot:
        menu = CommandMenu(bot, [NEW_ADMIN, GUEST])
        start = asyncio.create_task(menu.keep(stop))
        try:
            async with asyncio.timeout(30):
                while not [c for c in await tgsim.get("/sim/calls?method=setMyCommands") if c["error_code"]]:
                    await asyncio.sleep(0.1)
            await tgsim.say(NEW_ADMIN, "/help", first_name="New", language_code="en")  # the chat is known
            chat = Chat(NEW_ADMIN, Chat.PRIVATE)
            wrote = Message(1, datetime.now(UTC), chat, from_user=User(NEW_ADMIN, "New", is_bot=False))
            await menu.admin_wrote(Update(1, message=wrote), None)  # type: ignore[arg-type]
            assert len(await new_admin_lists(tgsim)) == len(MENU_LANGUAGES)
            assert not start.done()  # the start is still waiting out the 429
        finally:
            stop.set()
            await asyncio.wait_for(start, timeout=30)
