"""Sending and changing messages: ``sendMessage``, ``editMessageText``, ``editMessageReplyMarkup``,
``deleteMessage``, ``sendSticker``, ``sendPhoto``, ``sendChatAction``, ``answerCallbackQuery``.

Checks run in the Bot API server's order (text, reply markup, chat, replied message) and flood control
(``ratelimit``) comes last, just before the change, so a refused call changes nothing. Limits from
core.telegram.org/bots/api: text 1-4096 characters after entity parsing, caption 0-1024; editing without
``reply_markup`` removes the inline keyboard; an edit that changes nothing fails with "message is not
modified".
"""

from __future__ import annotations

from typing import Any

from simulators.telegram.errors import (
    CAPTION_TOO_LONG,
    IMAGE_PROCESS_FAILED,
    MESSAGE_CANT_BE_EDITED,
    MESSAGE_NOT_MODIFIED,
    MESSAGE_TEXT_EMPTY,
    MESSAGE_TO_DELETE_NOT_FOUND,
    MESSAGE_TO_EDIT_NOT_FOUND,
    MESSAGE_TOO_LONG,
    NO_PHOTO,
    NO_STICKER,
    NO_TEXT_TO_EDIT,
    QUERY_ID_INVALID,
    REPLY_NOT_FOUND,
    WRONG_CHAT_ACTION,
    BotApiError,
    bad_request,
    fail,
)
from simulators.telegram.formatting import Entity, parse_text
from simulators.telegram.keyboards import parse_reply_markup
from simulators.telegram.methods.access import known_chat, writable_chat
from simulators.telegram.methods.base import Handler
from simulators.telegram.methods.files import input_file
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import ChatRecord, MessageRecord
from simulators.telegram.validation import image_info

MAX_TEXT_CHARS = 4096
MAX_CAPTION_CHARS = 1024
MAX_CALLBACK_ANSWER_CHARS = 200
CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
_IMAGE_MIME = {"PNG": "image/png", "WEBP": "image/webp", "JPEG": "image/jpeg", "GIF": "image/gif"}


def _lenient_json(params: Params, name: str) -> Any:
    try:
        return params.json(name, name)
    except BotApiError:
        return None


def _message_text(params: Params) -> tuple[str, list[Entity]]:
    raw = params.text("text")
    if not raw:
        raise fail(MESSAGE_TEXT_EMPTY)
    text, entities = parse_text(raw, params.text("parse_mode"), _lenient_json(params, "entities"))
    if not text:
        raise fail(MESSAGE_TEXT_EMPTY)
    if len(text) > MAX_TEXT_CHARS:
        raise fail(MESSAGE_TOO_LONG)
    return text, entities


def _caption(params: Params) -> tuple[str | None, list[Entity]]:
    raw = params.text("caption")
    if not raw:
        return None, []
    caption, entities = parse_text(raw, params.text("parse_mode"), _lenient_json(params, "caption_entities"))
    if len(caption) > MAX_CAPTION_CHARS:
        raise fail(CAPTION_TOO_LONG)
    return caption or None, entities


def _reply_target(sim: Simulator, chat: ChatRecord, params: Params) -> int | None:
    """The id of the replied message, from ``reply_parameters`` or the older ``reply_to_message_id``."""
    reply = params.json("reply_parameters", "reply parameters")
    if reply is not None:
        if not isinstance(reply, dict):
            raise bad_request("object expected as reply parameters")
        message_id = reply.get("message_id")
        allow_missing = bool(reply.get("allow_sending_without_reply"))
        if not isinstance(message_id, int):
            raise bad_request('can\'t parse reply parameters: Field "message_id" must be a valid Number')
        other_chat = reply.get("chat_id")
        if other_chat is not None and str(other_chat) != str(chat.id):
            if allow_missing:
                return None
            raise fail(REPLY_NOT_FOUND)
    else:
        message_id = params.integer("reply_to_message_id")
        allow_missing = params.flag("allow_sending_without_reply")
    if message_id <= 0:
        return None
    if message_id in sim.state.messages.get(chat.id, {}):
        return message_id
    if allow_missing:
        return None
    raise fail(REPLY_NOT_FOUND)


def _check_link_preview(params: Params) -> None:
    options = params.json("link_preview_options", "link preview options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("object expected as link preview options")


def _inline(markup: dict[str, Any] | None) -> dict[str, Any] | None:
    return markup if markup and "inline_keyboard" in markup else None


def _own_message(sim: Simulator, chat: ChatRecord, message_id: int) -> MessageRecord:
    record = sim.state.messages.get(chat.id, {}).get(message_id)
    if record is None:
        raise fail(MESSAGE_TO_EDIT_NOT_FOUND)
    if not record.from_bot:
        raise fail(MESSAGE_CANT_BE_EDITED)
    return record


async def send_message(sim: Simulator, params: Params) -> Any:
    """``sendMessage``: post a text message from the bot; returns the ``Message``."""
    text, entities = _message_text(params)
    markup = parse_reply_markup(params)
    _check_link_preview(params)
    chat = writable_chat(sim, params)
    reply_to = _reply_target(sim, chat, params)
    sim.flood.acquire(chat.id)
    record = sim.add_message(
        chat,
        sender_id=sim.config.bot_id,
        from_bot=True,
        text=text,
        entities=entities,
        reply_markup=markup,
        reply_to_message_id=reply_to,
    )
    return sim.message_json(record)


async def edit_message_text(sim: Simulator, params: Params) -> Any:
    """``editMessageText`` of a bot message in a chat (inline messages are not simulated)."""
    if params.has("inline_message_id") and not params.has("chat_id"):
        raise bad_request("MESSAGE_ID_INVALID")
    text, entities = _message_text(params)
    markup = _inline(parse_reply_markup(params))
    _check_link_preview(params)
    chat = writable_chat(sim, params)
    record = _own_message(sim, chat, params.integer("message_id"))
    if record.text is None:
        raise fail(NO_TEXT_TO_EDIT)
    if record.text == text and record.entities == entities and _inline(record.reply_markup) == markup:
        raise fail(MESSAGE_NOT_MODIFIED)
    sim.flood.acquire(chat.id)
    record.text, record.entities, record.reply_markup = text, entities, markup
    record.edit_date = sim.now()
    sim.touch()
    return sim.message_json(record)


async def edit_message_reply_markup(sim: Simulator, params: Params) -> Any:
    """``editMessageReplyMarkup``: replace (or, without ``reply_markup``, remove) the inline keyboard."""
    if params.has("inline_message_id") and not params.has("chat_id"):
        raise bad_request("MESSAGE_ID_INVALID")
    markup = _inline(parse_reply_markup(params))
    chat = writable_chat(sim, params)
    record = _own_message(sim, chat, params.integer("message_id"))
    if _inline(record.reply_markup) == markup:
        raise fail(MESSAGE_NOT_MODIFIED)
    sim.flood.acquire(chat.id)
    record.reply_markup = markup
    record.edit_date = sim.now()
    sim.touch()
    return sim.message_json(record)


async def delete_message(sim: Simulator, params: Params) -> Any:
    """``deleteMessage``: remove a message (the bot's, or a user's in the private chat or a group)."""
    chat = known_chat(sim, params)
    messages = sim.state.messages.get(chat.id, {})
    if messages.pop(params.integer("message_id"), None) is None:
        raise fail(MESSAGE_TO_DELETE_NOT_FOUND)
    sim.touch()
    return True


async def send_chat_action(sim: Simulator, params: Params) -> Any:
    """``sendChatAction``: acknowledged after checking the chat and the action name."""
    writable_chat(sim, params)
    if params.text("action") not in CHAT_ACTIONS:
        raise fail(WRONG_CHAT_ACTION)
    return True


async def send_sticker(sim: Simulator, params: Params) -> Any:
    """``sendSticker``: a known sticker ``file_id`` or a PNG/WEBP upload; returns the ``Message``."""
    source = await input_file(sim, params, "sticker")
    if source is None:
        raise fail(NO_STICKER)
    markup = parse_reply_markup(params)
    chat = writable_chat(sim, params)
    reply_to = _reply_target(sim, chat, params)
    if source.existing is not None and source.existing.kind == "sticker":
        sticker_file = source.existing
    else:
        kind, width, height = image_info(source.data)
        if kind not in ("PNG", "WEBP"):
            raise fail(IMAGE_PROCESS_FAILED)
        sticker_file = sim.store_file(
            source.data,
            kind="sticker",
            mime_type=_IMAGE_MIME[kind],
            width=width,
            height=height,
            sticker_format="static",
        )
    sim.flood.acquire(chat.id)
    record = sim.add_message(
        chat,
        sender_id=sim.config.bot_id,
        from_bot=True,
        sticker_file_id=sticker_file.file_id,
        reply_markup=markup,
        reply_to_message_id=reply_to,
    )
    return sim.message_json(record)


async def send_photo(sim: Simulator, params: Params) -> Any:
    """``sendPhoto``: an image upload, URL or ``file_id`` with an optional caption; returns the Message."""
    source = await input_file(sim, params, "photo")
    if source is None:
        raise fail(NO_PHOTO)
    caption, caption_entities = _caption(params)
    markup = parse_reply_markup(params)
    chat = writable_chat(sim, params)
    reply_to = _reply_target(sim, chat, params)
    kind, width, height = image_info(source.data)
    if kind not in _IMAGE_MIME:
        raise fail(IMAGE_PROCESS_FAILED)
    photo = source.existing if source.existing is not None and source.existing.kind == "photo" else None
    sim.flood.acquire(chat.id)
    if photo is None:
        photo = sim.store_file(
            source.data, kind="photo", mime_type=_IMAGE_MIME[kind], width=width, height=height
        )
    record = sim.add_message(
        chat,
        sender_id=sim.config.bot_id,
        from_bot=True,
        photo_file_id=photo.file_id,
        caption=caption,
        caption_entities=caption_entities,
        reply_markup=markup,
        reply_to_message_id=reply_to,
    )
    return sim.message_json(record)


async def answer_callback_query(sim: Simulator, params: Params) -> Any:
    """``answerCallbackQuery``: once per query, within ``Limits.callback_answer_timeout`` seconds."""
    callback = sim.state.callbacks.get(params.text("callback_query_id").strip())
    timeout = sim.flood.limits.callback_answer_timeout
    if (
        callback is None
        or callback.answered_at is not None
        or (timeout > 0 and sim.clock() - callback.created_at > timeout)
    ):
        raise fail(QUERY_ID_INVALID)
    text = params.text("text")
    if len(text) > MAX_CALLBACK_ANSWER_CHARS:
        raise bad_request("MESSAGE_TOO_LONG")
    callback.answered_at = sim.clock()
    callback.answer = {
        "text": text or None,
        "show_alert": params.flag("show_alert"),
        "url": params.text("url") or None,
        "cache_time": params.integer("cache_time"),
    }
    sim.touch()
    return True


HANDLERS: dict[str, Handler] = {
    "sendMessage": send_message,
    "editMessageText": edit_message_text,
    "editMessageReplyMarkup": edit_message_reply_markup,
    "deleteMessage": delete_message,
    "sendChatAction": send_chat_action,
    "sendSticker": send_sticker,
    "sendPhoto": send_photo,
    "answerCallbackQuery": answer_callback_query,
}
