"""Who may be written to, and on whose behalf stickers may be made (Bot API access checks).

Texts from Client.cpp (``check_chat``, ``check_user``, ``get_user_id``) and observed Telegram answers: an
unknown chat is 400 ``chat not found``; a user the bot knows but who never opened its private chat is 403
``bot can't initiate conversation with a user``; a user who blocked the bot is 403 ``bot was blocked by the
user``. Sticker methods act for a user who must have started the bot, otherwise 400 ``user not found``
(REFERENCE: tdlib/td#1377, python-telegram-bot#3667); the bot itself is refused with ``USER_ID_INVALID``.
"""

from __future__ import annotations

from simulators.telegram.errors import (
    BOT_BLOCKED,
    CANT_INITIATE,
    CHAT_ID_EMPTY,
    CHAT_NOT_FOUND,
    INVALID_USER_ID,
    USER_ID_INVALID,
    USER_NOT_FOUND,
    fail,
)
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import ChatRecord, UserRecord


def chat_id_param(params: Params) -> int:
    """The ``chat_id`` argument as an integer; ``@username`` targets are not simulated (chat not found)."""
    raw = params.text("chat_id").strip()
    if not raw:
        raise fail(CHAT_ID_EMPTY)
    try:
        return int(raw)
    except ValueError:
        raise fail(CHAT_NOT_FOUND) from None


def known_chat(sim: Simulator, params: Params) -> ChatRecord:
    """The chat named by ``chat_id``; raises ``chat not found`` for a chat the bot has never been in."""
    chat_id = chat_id_param(params)
    chat = sim.state.chats.get(chat_id)
    if chat is None:
        if chat_id in sim.state.users:
            raise fail(CANT_INITIATE)
        raise fail(CHAT_NOT_FOUND)
    return chat


def writable_chat(sim: Simulator, params: Params) -> ChatRecord:
    """The chat named by ``chat_id`` if the bot may post there now (see the module rules)."""
    chat = known_chat(sim, params)
    if chat.type == "private":
        if chat.blocked:
            raise fail(BOT_BLOCKED)
        if not chat.started:
            raise fail(CANT_INITIATE)
    return chat


def user_id_param(params: Params, name: str = "user_id") -> int:
    """A positive user id argument; raises ``invalid user_id specified`` otherwise."""
    user_id = params.integer(name)
    if user_id <= 0:
        raise fail(INVALID_USER_ID)
    return user_id


def started_user(sim: Simulator, user_id: int) -> UserRecord:
    """The user a sticker call acts for; raises ``USER_ID_INVALID`` for the bot, ``user not found`` for a
    user who never started the bot."""
    if user_id == sim.config.bot_id:
        raise fail(USER_ID_INVALID)
    user = sim.state.users.get(user_id)
    chat = sim.state.chats.get(user_id)
    if user is None or chat is None or not chat.started:
        raise fail(USER_NOT_FOUND)
    return user
