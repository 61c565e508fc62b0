"""``find_bot_message`` against the simulator with the real python-telegram-bot: it finds a bot message by
its keyboard without changing anything, tells "not in the chat" from "too many to search", and leaves
other messages as they were."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram import Bot

from shared.commands import FindBotMessage
from telegram_gateway.message_probe import find_bot_message
from tests.simulators.tgsim_helpers import RunningSim, serving, sim_config

pytestmark = pytest.mark.integration
CHAT = -1009876543210
CARD = {"inline_keyboard": [[{"text": "Take", "callback_data": "stickers_lead:1:take"}]]}


@pytest.fixture
async def sim() -> AsyncIterator[RunningSim]:
    async with serving(sim_config()) as running:
        await running.say(1000, "hello", chat_id=CHAT, chat_title="Leads")  # message 1, a user's
        yield running


@pytest.fixture
async def bot(sim: RunningSim) -> AsyncIterator[Bot]:
    async with sim.bot() as ptb_bot:
        yield ptb_bot


async def search(bot: Bot, **params: Any) -> dict[str, Any]:
    return await find_bot_message(bot, FindBotMessage(chat_id=CHAT, reply_markup=CARD, **params))


async def test_the_card_is_found_by_its_keyboard_and_left_unchanged(sim: RunningSim, bot: Bot) -> None:
    await bot.send_message(CHAT, "an alert, no keyboard")  # 2
    await sim.say(1001, "another user", chat_id=CHAT)  # 3
    await bot.send_message(CHAT, "Lead #1", reply_markup=_markup(CARD))  # 4
    found = await search(bot, after_message_id=1)
    assert found == {"chat_id": CHAT, "message_id": 4, "conclusive": True, "probes": 3}
    messages = await sim.get(f"/sim/chats/{CHAT}/messages")
    assert [m["reply_markup"] for m in messages] == [None, None, None, CARD]  # the alert got its state back
    assert [m.get("edit_date") for m in messages][3] is None  # the card was never edited


async def test_a_chat_without_the_card_is_a_conclusive_no(bot: Bot) -> None:
    await bot.send_message(CHAT, "Lead #2", reply_markup=_markup(_other()))  # 2, known: skipped
    found = await search(bot, after_message_id=1, skip_message_ids=[2])
    assert found == {"chat_id": CHAT, "message_id": None, "conclusive": True, "probes": 3}


async def test_too_many_messages_to_search_is_inconclusive(sim: RunningSim, bot: Bot) -> None:
    for i in range(4):
        await sim.say(1001, f"chatter {i}", chat_id=CHAT)
    found = await search(bot, after_message_id=0, max_probes=3)
    assert found == {"chat_id": CHAT, "message_id": None, "conclusive": False, "probes": 3}


def _other() -> dict[str, Any]:
    return {"inline_keyboard": [[{"text": "Take", "callback_data": "stickers_lead:2:take"}]]}


def _markup(data: dict[str, Any]) -> Any:
    from telegram import InlineKeyboardMarkup

    return InlineKeyboardMarkup.de_json(data, None)
