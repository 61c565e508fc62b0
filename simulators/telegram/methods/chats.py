"""Reading chats: ``getChat`` and ``getChatMember`` (what the preflight asks before the doors open).

Rules (core.telegram.org/bots/api#getchat, #getchatmember; texts from tdlib/telegram-bot-api
``Client.cpp`` ``check_chat`` / ``check_user``, as :mod:`simulators.telegram.methods.access`):

- ``getChat`` answers a ``ChatFullInfo`` (Bot API 7.3) for a chat the bot can see: a group it is in (the
  simulator's groups are those it was seeded with or that a user wrote in), or the private chat of a user
  it knows. Any other chat, a group the bot is not in among them, is 400 ``chat not found``. The required
  fields of ``ChatFullInfo`` are ``id``, ``type``, ``accent_color_id``, ``max_reaction_count`` and
  ``accepted_gift_types`` (Bot API 9.0; python-telegram-bot 22.8 ``ChatFullInfo.__init__`` requires them);
  a group also carries ``permissions`` (its default member permissions; every one granted here).
- ``getChatMember`` answers a ``ChatMember`` of a chat ``getChat`` would answer: the bot itself is a
  ``member`` of its groups (and of the private chats), a user who wrote in the group a ``member``, a
  known user who did not ``left``; a user the bot has never seen is 400 ``user not found``.
"""

from __future__ import annotations

from typing import Any

from simulators.telegram import wire
from simulators.telegram.errors import CHAT_NOT_FOUND, USER_NOT_FOUND, fail
from simulators.telegram.methods.access import chat_id_param, user_id_param
from simulators.telegram.methods.base import Handler
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import ChatRecord

#: ``ChatPermissions`` of a group whose members may do everything (a fresh group's defaults).
_ALL_PERMISSIONS = {
    name: True
    for name in (
        "can_send_messages",
        "can_send_audios",
        "can_send_documents",
        "can_send_photos",
        "can_send_videos",
        "can_send_video_notes",
        "can_send_voice_notes",
        "can_send_polls",
        "can_send_other_messages",
        "can_add_web_page_previews",
        "can_change_info",
        "can_invite_users",
        "can_pin_messages",
        "can_manage_topics",
    )
}
#: ``AcceptedGiftTypes`` (Bot API 9.0): what a private chat's user accepts; Telegram's defaults.
_ACCEPTED_GIFTS = {
    "unlimited_gifts": True,
    "limited_gifts": True,
    "unique_gifts": True,
    "premium_subscription": True,
    "gifts_from_channels": True,
}


def _visible_chat(sim: Simulator, params: Params) -> ChatRecord:
    """The chat ``chat_id`` names if the bot can see it (see the module rules), else ``chat not found``."""
    chat_id = chat_id_param(params)
    chat = sim.state.chats.get(chat_id)
    if chat is not None:
        return chat
    if chat_id in sim.state.users:  # a user seen in a group: their private chat is known, not started
        return ChatRecord(id=chat_id, type="private")
    raise fail(CHAT_NOT_FOUND)


async def get_chat(sim: Simulator, params: Params) -> Any:
    """``getChat``: the ``ChatFullInfo`` of a chat the bot can see."""
    chat = _visible_chat(sim, params)
    info: dict[str, Any] = {
        **wire.chat(sim.state, chat),
        "accent_color_id": abs(chat.id) % 7,  # one of the 7 built-in colours (Bot API "accent_color_id")
        "max_reaction_count": 11,  # Telegram's default for chats without paid reactions
        "accepted_gift_types": _ACCEPTED_GIFTS,
    }
    if chat.type != "private":
        info["permissions"] = _ALL_PERMISSIONS
    return info


async def get_chat_member(sim: Simulator, params: Params) -> Any:
    """``getChatMember``: ``member`` for the bot and for users who wrote in the chat, ``left`` for other
    known users."""
    chat = _visible_chat(sim, params)
    user_id = user_id_param(params)
    if user_id == sim.config.bot_id:
        return {"user": wire.bot_user(sim.config), "status": "member"}
    user = sim.state.users.get(user_id)
    if user is None:
        raise fail(USER_NOT_FOUND)
    wrote = chat.id == user_id or any(
        m.sender_id == user_id and not m.from_bot for m in sim.state.messages.get(chat.id, {}).values()
    )
    return {"user": wire.user(user), "status": "member" if wrote else "left"}


HANDLERS: dict[str, Handler] = {
    "getChat": get_chat,
    "getChatMember": get_chat_member,
}
