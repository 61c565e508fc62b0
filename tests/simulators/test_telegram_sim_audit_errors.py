"""Every Bot API error of the contract audit (docs/contract-audit.md, "Telegram Bot API") can be injected
through ``POST /sim/faults`` and reaches the bot in Telegram's wire shape, so python-telegram-bot raises
what it raises against Telegram (its ``request/_baserequest.py``: ``parameters.migrate_to_chat_id`` →
``ChatMigrated``, 403 → ``Forbidden``, 400 → ``BadRequest``)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from telegram import Bot, ReplyParameters
from telegram.error import BadRequest, ChatMigrated, Forbidden, TelegramError
from telegram.warnings import PTBUserWarning

from simulators.telegram import errors
from tests.simulators.tgsim_helpers import TOKEN, RunningSim

pytestmark = pytest.mark.integration
GROUP, SUPERGROUP = -4001, -1004001


async def raw_call(tgsim: RunningSim, method: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with tgsim.http.post(f"{tgsim.url}/bot{TOKEN}/{method}", json=body) as response:
        return response.status, await response.json()


async def test_a_group_upgraded_to_a_supergroup_answers_migrate_to_chat_id(
    tgsim: RunningSim, bot: Bot
) -> None:
    fault = {"method": "sendMessage", "error_code": 400, "migrate_to_chat_id": SUPERGROUP, "chat_id": GROUP}
    await tgsim.post("/sim/faults", {**fault, "count": 2})

    status, body = await raw_call(tgsim, "sendMessage", {"chat_id": GROUP, "text": "card"})

    assert status == 400
    assert body == {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: group chat was upgraded to a supergroup chat",
        "parameters": {"migrate_to_chat_id": SUPERGROUP},
    }
    with pytest.raises(ChatMigrated) as caught:
        await bot.send_message(GROUP, "card")
    assert caught.value.new_chat_id == SUPERGROUP


async def test_migrate_to_chat_id_comes_only_with_a_400(tgsim: RunningSim) -> None:
    fault = {"method": "sendMessage", "error_code": 403, "migrate_to_chat_id": SUPERGROUP}
    await tgsim.post("/sim/faults", fault, status=400)


@pytest.mark.parametrize(
    ("method", "description", "raised"),
    [
        ("sendMessage", errors.BOT_BLOCKED, Forbidden),
        ("sendMessage", errors.USER_DEACTIVATED, Forbidden),
        ("sendMessage", errors.KICKED_FROM_SUPERGROUP, Forbidden),
        ("sendMessage", errors.KICKED_FROM_GROUP, Forbidden),
        ("sendMessage", errors.NOT_A_MEMBER, Forbidden),
        ("sendMessage", errors.GROUP_DELETED, Forbidden),
        ("sendMessage", errors.NOT_ENOUGH_RIGHTS, BadRequest),
        ("sendMessage", errors.CHAT_NOT_FOUND, BadRequest),
        ("sendMessage", errors.REPLY_NOT_FOUND, BadRequest),
        ("editMessageText", errors.MESSAGE_NOT_MODIFIED, BadRequest),
        ("editMessageText", errors.MESSAGE_TO_EDIT_NOT_FOUND, BadRequest),
        ("answerCallbackQuery", errors.QUERY_ID_INVALID, BadRequest),
        ("createNewStickerSet", errors.STICKER_SET_NAME_OCCUPIED, BadRequest),
        ("createNewStickerSet", errors.USER_NOT_FOUND, BadRequest),
        ("createNewStickerSet", errors.PEER_ID_INVALID, BadRequest),
        ("createNewStickerSet", errors.STICKER_PNG_DIMENSIONS, BadRequest),
        ("getStickerSet", errors.STICKERSET_INVALID, BadRequest),
    ],
)
async def test_each_audited_error_is_answered_in_telegrams_wire_shape(
    tgsim: RunningSim, bot: Bot, method: str, description: str, raised: type[TelegramError]
) -> None:
    code = int(errors.fail(description).error_code)
    await tgsim.post(
        "/sim/faults", {"method": method, "error_code": code, "description": description, "count": 2}
    )

    status, body = await raw_call(tgsim, method, {"chat_id": GROUP})

    assert status == code
    assert body == {"ok": False, "error_code": code, "description": description}
    with warnings.catch_warnings(), pytest.raises(raised) as caught:
        warnings.simplefilter("ignore", PTBUserWarning)  # "use Bot.sendMessage": any method, one call here
        await bot.do_api_request(method, api_kwargs={"chat_id": GROUP})
    # PTB strips Telegram's "Bad Request: " prefix and capitalises the rest; the text is Telegram's
    assert caught.value.message.lower() in description.lower()


async def test_a_reply_to_a_deleted_message_is_refused_unless_sending_without_reply_is_allowed(
    tgsim: RunningSim, bot: Bot
) -> None:
    """Client.cpp: a missing replied message fails "message to be replied not found" unless
    ``reply_parameters.allow_sending_without_reply`` (core.telegram.org/bots/api#replyparameters)."""
    await tgsim.say(5101, "/start", chat_id=GROUP, chat_title="Staff")
    card = await bot.send_message(GROUP, "Lead #1")
    await bot.delete_message(GROUP, card.message_id)  # a staff member deletes the card

    with pytest.raises(BadRequest, match="Message to be replied not found"):
        await bot.send_message(GROUP, "repeat", reply_parameters=ReplyParameters(card.message_id))
    sent = await bot.send_message(
        GROUP, "repeat", reply_parameters=ReplyParameters(card.message_id, allow_sending_without_reply=True)
    )
    assert sent.reply_to_message is None
