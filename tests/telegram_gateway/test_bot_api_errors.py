"""Bot API errors the contract audit found mishandled (issue 18), through the executor, python-telegram-bot
and the Telegram simulator answering them in Telegram's wire shape."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from telegram.ext import ExtBot

from shared import command_ids, streams
from shared.messages import TelegramResult, decode
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.flood import FloodLimiter
from tests.simulators.tgsim_helpers import TOKEN, RunningSim, serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings, running_gateway

pytestmark = pytest.mark.integration
GUEST = 5102
GROUP, SUPERGROUP = -4001, -1004001


@pytest.fixture
async def tgsim() -> AsyncIterator[RunningSim]:
    async with serving(sim_config(groups={GROUP: "Staff", SUPERGROUP: "Staff"})) as running:
        yield running


@pytest.fixture
async def executor(tgsim: RunningSim, db: Database, redis: aioredis.Redis) -> AsyncIterator[CommandExecutor]:
    bot: ExtBot[None] = ExtBot(
        TOKEN,
        base_url=f"{tgsim.url}/bot",
        base_file_url=f"{tgsim.url}/file/bot",
        rate_limiter=FloodLimiter(max_retries=0),
    )
    await bot.initialize()
    yield CommandExecutor(bot=bot, db=db, publisher=Publisher(redis), admin_chat_id=GROUP)
    await bot.shutdown()


async def run(executor: CommandExecutor, db: Database, command_id: str, method: str, **params: Any) -> None:
    async with db.transaction() as repos:
        await repos.tg_commands.add(command_id, method=method, params=params, reply_to="tests")
    await executor.execute(command_id)


async def results(redis: aioredis.Redis) -> list[TelegramResult]:
    return [decode(fields) for _id, fields in await redis.xrange(streams.results_stream("tests"))]  # type: ignore[misc]


async def test_a_repeat_notice_under_a_deleted_card_is_sent_without_the_reply(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, tgsim: RunningSim
) -> None:
    await run(executor, db, "card", "send_message", chat_id=GROUP, text="Lead #1")
    (card,) = await results(redis)
    assert card.ok and isinstance(card.result, dict)
    await executor.bot.delete_message(GROUP, card.result["message_id"])  # a staff member deletes the card

    await run(
        executor,
        db,
        "notice",
        "send_message",
        chat_id=GROUP,
        text="again",
        reply_to_message_id=card.result["message_id"],
    )

    _card, notice = await results(redis)
    assert notice.ok, notice.error
    messages = await tgsim.get(f"/sim/chats/{GROUP}/messages")
    assert [(m["text"], m["reply_to_message_id"]) for m in messages] == [("again", None)]


async def test_a_reply_to_a_card_still_there_is_a_reply(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, tgsim: RunningSim
) -> None:
    await run(executor, db, "card", "send_message", chat_id=GROUP, text="Lead #1")
    (card,) = await results(redis)
    assert isinstance(card.result, dict)
    await run(
        executor,
        db,
        "notice",
        "send_message",
        chat_id=GROUP,
        text="again",
        reply_to_message_id=card.result["message_id"],
    )
    messages = await tgsim.get(f"/sim/chats/{GROUP}/messages")
    assert [m["reply_to_message_id"] for m in messages] == [None, card.result["message_id"]]


async def test_a_group_upgraded_to_a_supergroup_is_followed_and_the_admins_told(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, tgsim: RunningSim
) -> None:
    fault = {
        "method": "*",
        "error_code": 400,
        "migrate_to_chat_id": SUPERGROUP,
        "chat_id": GROUP,
        "count": 100,
    }
    await tgsim.post("/sim/faults", fault)

    await run(executor, db, "card:1", "send_message", chat_id=GROUP, text="Lead #1")
    await run(executor, db, "card:2", "send_message", chat_id=GROUP, text="Lead #2")

    first, second = await results(redis)
    assert first.ok and second.ok, (first.error, second.error)
    texts = [m["text"] for m in await tgsim.get(f"/sim/chats/{SUPERGROUP}/messages")]
    assert texts == ["Lead #1", "Lead #2"]
    calls = [(c["params"]["chat_id"], c["ok"]) for c in await tgsim.get("/sim/calls?method=sendMessage")]
    # the refused call, the same card in the new chat, then the next card straight there
    assert calls == [(str(GROUP), False), (str(SUPERGROUP), True), (str(SUPERGROUP), True)]
    async with db.transaction() as repos:
        key = command_ids.name_hash(f"chat_migrated:{GROUP}")
        alerts = await repos.tg_commands.for_subject("admin", key, what="alert")
    (alert,) = alerts
    assert str(GROUP) in alert.params["text"] and str(SUPERGROUP) in alert.params["text"]

    # the admin chat (here the same group) is followed too: the alert itself reaches the supergroup
    await executor.execute(alert.command_id)
    assert [m["text"] for m in await tgsim.get(f"/sim/chats/{SUPERGROUP}/messages")][-1] == alert.params[
        "text"
    ]


async def test_a_webhook_left_on_the_bot_is_deleted_so_that_polling_gets_updates(
    tgsim: RunningSim, db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """While a webhook is set, every getUpdates is a 409 (core.telegram.org/bots/api#getupdates): before,
    the gateway backed off for ever and no guest's message ever arrived."""
    async with tgsim.bot() as bot:
        await bot.set_webhook("https://old-deployment.example/telegram")
    await tgsim.say(GUEST, "/help", first_name="Ann")  # waiting before the gateway starts: kept

    settings = gateway_settings(database_url, redis_url, tgsim.url)
    async with running_gateway(settings, db=db, publisher=Publisher(redis)):
        async with asyncio.timeout(20):
            while not [m for m in await tgsim.get(f"/sim/chats/{GUEST}/messages") if m["from_bot"]]:
                await asyncio.sleep(0.1)
    async with tgsim.bot() as bot:
        assert (await bot.get_webhook_info()).url == ""
