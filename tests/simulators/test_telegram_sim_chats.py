"""``getChat`` and ``getChatMember`` of the Telegram simulator through python-telegram-bot."""

from __future__ import annotations

import pytest
from telegram import Bot, ChatFullInfo
from telegram.constants import ChatMemberStatus
from telegram.error import BadRequest

from tests.simulators.tgsim_helpers import RunningSim

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

GROUP = -1001234567890


async def test_a_group_the_bot_is_in(tgsim: RunningSim, bot: Bot) -> None:
    await tgsim.say(7001, "hello", chat_id=GROUP, chat_title="Staff")
    chat = await bot.get_chat(GROUP)
    assert isinstance(chat, ChatFullInfo)
    assert (chat.type, chat.title) == ("supergroup", "Staff")
    assert chat.permissions is not None and chat.permissions.can_send_messages
    me = await bot.get_me()
    assert (await bot.get_chat_member(GROUP, me.id)).status == ChatMemberStatus.MEMBER
    assert (await bot.get_chat_member(GROUP, 7001)).status == ChatMemberStatus.MEMBER


async def test_a_group_the_bot_is_not_in_is_chat_not_found(tgsim: RunningSim, bot: Bot) -> None:
    for call in (bot.get_chat(GROUP), bot.get_chat_member(GROUP, 1)):
        with pytest.raises(BadRequest, match="Chat not found"):
            await call


async def test_private_chats_and_members(tgsim: RunningSim, bot: Bot, guest: int) -> None:
    assert (await bot.get_chat(guest)).first_name == "Ann"
    await tgsim.say(7002, "hi", chat_id=GROUP)
    assert (await bot.get_chat(7002)).type == "private"  # seen in a group: known, never started
    await tgsim.say(7003, "also here", chat_id=-1005550000)
    assert (await bot.get_chat_member(GROUP, 7003)).status == ChatMemberStatus.LEFT
    with pytest.raises(BadRequest, match="User not found"):
        await bot.get_chat_member(GROUP, 99999)
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.get_chat(99999)
