"""Finding a message the bot may have sent: the reconciliation of a send whose outcome is unknown.

The Bot API cannot list a chat's messages. It can, however, tell whether message ``n`` is a bot message
with a given inline keyboard without changing anything: ``editMessageReplyMarkup`` with the keyboard the
message already has fails with "message is not modified" (core.telegram.org/bots/api#editmessagereplymarkup;
the same error text the simulator and Telegram use). Other answers say "not the bot's message"
("message can't be edited") or "no such message" ("message to edit not found").

Message ids in a supergroup grow by one per message, so a message sent after the chat's highest known id
``after_message_id`` sits above it. The search walks up from there, skipping ids the caller knows, and
stops at the first match, or after ``end_gap`` consecutive missing ids (the end of the chat), or after
``max_probes`` calls (inconclusive: the caller decides). The caller keeps at most one message of unknown
id in the chat (``leads.publishing``), so an unknown bot message above ``after_message_id`` is the one we
look for. If an edit does change a message, it was some other bot message without a keyboard (an alert
sharing the chat): the keyboard is taken off again, which restores it exactly, and the walk goes on.

In a private chat (a guest's link message whose answer was lost, issue 19) the message's keyboard is
unique (it carries the guest's own set link), and the caller knows a message sent *after* it
(``before_message_id``): the walk goes down from there to ``after_message_id``, the highest id known to
be older. Message ids only grow (core.telegram.org/bots/api#message: "Unique message identifier inside
this chat"; in a private chat the ids may come from the bot's own counter across all its private chats,
docs.pyrogram.org "Message identifiers", so the ids between the two bounds may belong to other chats and
answer "message to edit not found" here): the window holds the message if it was sent, and only a walk
that reached the lower bound is conclusive; a window wider than ``max_probes`` ends inconclusive. Walking
down finds a message sent just before the upper bound first.
"""

from __future__ import annotations

from typing import Any

import structlog
from telegram import Bot, InlineKeyboardMarkup
from telegram.error import BadRequest

from shared.commands import FindBotMessage

log = structlog.get_logger(__name__)

NOT_MODIFIED = "message is not modified"
NOT_FOUND = "message to edit not found"
NOT_OURS = "message can't be edited"


async def find_bot_message(bot: Bot, command: FindBotMessage) -> dict[str, Any]:
    """Gateway command ``find_bot_message``: search ``chat_id`` for the bot message with ``reply_markup``.

    ``command``: ``chat_id``; ``reply_markup`` (the inline keyboard JSON the message was sent with: it is
    what identifies the message, so it is required); ``after_message_id`` (the search starts above it);
    ``skip_message_ids`` (ids known to be other messages); ``max_probes`` (Bot API calls allowed, default
    30); ``end_gap`` (consecutive missing ids that mean "end of chat", default 3); ``before_message_id``
    (a message sent after the one looked for: the walk goes down from it, see the module docstring).

    Returns:
        ``{"chat_id", "message_id": int | None, "conclusive": bool, "probes": int}``: ``message_id`` is
        the match; ``None`` with ``conclusive`` means the message is not in the chat.

    Raises:
        telegram.error.TelegramError: any other answer (chat not found, bot removed, flood control).
    """
    if command.before_message_id is not None:
        return await _search_down(bot, command, command.before_message_id)
    chat_id = command.chat_id
    markup = InlineKeyboardMarkup.de_json(command.reply_markup, None)
    skip = set(command.skip_message_ids)
    max_probes, end_gap = command.max_probes, command.end_gap
    message_id = command.after_message_id
    probes = missing = 0
    while probes < max_probes:
        message_id += 1
        if message_id in skip:
            missing = 0
            continue
        probes += 1
        try:
            await bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id, reply_markup=markup)
        except BadRequest as exc:
            text = exc.message.lower()
            if NOT_MODIFIED in text:
                return {"chat_id": chat_id, "message_id": message_id, "conclusive": True, "probes": probes}
            if NOT_FOUND in text:
                missing += 1
                if missing >= end_gap:
                    return {"chat_id": chat_id, "message_id": None, "conclusive": True, "probes": probes}
                continue
            if NOT_OURS in text:
                missing = 0
                continue
            raise
        missing = 0
        log.warning("PROBE_CHANGED_OTHER_MESSAGE", chat_id=chat_id, message_id=message_id)
        await bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id, reply_markup=None)
    return {"chat_id": chat_id, "message_id": None, "conclusive": False, "probes": probes}


async def _search_down(bot: Bot, command: FindBotMessage, before: int) -> dict[str, Any]:
    """Probe the ids from ``before - 1`` down to ``after_message_id + 1`` (skipping ``skip_message_ids``),
    at most ``max_probes`` calls; conclusive when a match is found or the lower bound was reached."""
    chat_id = command.chat_id
    markup = InlineKeyboardMarkup.de_json(command.reply_markup, None)
    skip = set(command.skip_message_ids)
    probes = 0
    for message_id in range(before - 1, command.after_message_id, -1):
        if message_id in skip:
            continue
        if probes >= command.max_probes:
            return {"chat_id": chat_id, "message_id": None, "conclusive": False, "probes": probes}
        probes += 1
        if await _is_it(bot, chat_id, message_id, markup):
            return {"chat_id": chat_id, "message_id": message_id, "conclusive": True, "probes": probes}
    return {"chat_id": chat_id, "message_id": None, "conclusive": True, "probes": probes}


async def _is_it(bot: Bot, chat_id: int, message_id: int, markup: InlineKeyboardMarkup) -> bool:
    """Whether message ``message_id`` of ``chat_id`` is the bot's message with ``markup`` (a message the
    probe changed by mistake is restored)."""
    try:
        await bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id, reply_markup=markup)
    except BadRequest as exc:
        text = exc.message.lower()
        if NOT_MODIFIED in text:
            return True
        if NOT_FOUND in text or NOT_OURS in text:
            return False
        raise
    log.warning("PROBE_CHANGED_OTHER_MESSAGE", chat_id=chat_id, message_id=message_id)
    await bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id, reply_markup=None)
    return False
