"""python-telegram-bot's ``Application`` (polling, ``AIORateLimiter``) runs against the simulator."""

from __future__ import annotations

import asyncio

import pytest
from telegram import Update
from telegram.ext import AIORateLimiter, ApplicationBuilder, CommandHandler, ContextTypes

from tests.simulators.tgsim_helpers import TOKEN, RunningSim

pytestmark = pytest.mark.integration


async def test_polling_application_answers_start_through_a_command_handler(tgsim: RunningSim) -> None:
    seen: list[list[str]] = []
    answered = asyncio.Event()

    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Greet the guest with the deep-link payload."""
        assert update.effective_message is not None
        seen.append(list(context.args or []))
        await update.effective_message.reply_text(
            f"Welcome! payload={context.args[0] if context.args else ''}"
        )
        answered.set()

    application = (
        ApplicationBuilder()
        .token(TOKEN)
        .base_url(f"{tgsim.url}/bot")
        .base_file_url(f"{tgsim.url}/file/bot")
        .rate_limiter(AIORateLimiter())
        .build()
    )
    application.add_handler(CommandHandler("start", start))

    async with application:
        await application.start()
        assert application.updater is not None
        await application.updater.start_polling(timeout=2, poll_interval=0)
        await tgsim.say(6001, "/start booth_7", first_name="Cleo")
        await asyncio.wait_for(answered.wait(), 5)
        await application.updater.stop()
        await application.stop()

    assert seen == [["booth_7"]]
    messages = await tgsim.get("/sim/chats/6001/messages")
    assert [(m["from_bot"], m["text"]) for m in messages] == [
        (False, "/start booth_7"),
        (True, "Welcome! payload=booth_7"),
    ]
    methods = {call["method"] for call in await tgsim.get("/sim/calls")}
    assert {"getMe", "deleteWebhook", "getUpdates", "sendMessage"} <= methods
    assert await tgsim.get("/sim/updates") == []
