"""State records rendered as Bot API objects (core.telegram.org/bots/api#available-types).

Optional fields are left out when empty, as Telegram does. Only inline keyboards are echoed in
``Message.reply_markup``; reply keyboards, ``ReplyKeyboardRemove`` and ``ForceReply`` are not part of a
returned message.
"""

from __future__ import annotations

from typing import Any

from simulators.telegram.config import SimConfig
from simulators.telegram.state import (
    ChatRecord,
    FileRecord,
    MessageRecord,
    SimState,
    StickerRecord,
    StickerSetRecord,
    UserRecord,
)

JSON = dict[str, Any]


def bot_user(config: SimConfig, *, full: bool = False) -> JSON:
    """The bot as a ``User``; ``full`` adds the ``getMe``-only capability flags."""
    user: JSON = {
        "id": config.bot_id,
        "is_bot": True,
        "first_name": config.bot_first_name,
        "username": config.bot_username,
    }
    if full:
        user.update(
            can_join_groups=True,
            can_read_all_group_messages=False,
            supports_inline_queries=False,
            can_connect_to_business=False,
            has_main_web_app=False,
        )
    return user


def user(record: UserRecord) -> JSON:
    """A human ``User``."""
    result: JSON = {"id": record.id, "is_bot": False, "first_name": record.first_name}
    for key in ("last_name", "username", "language_code"):
        value = getattr(record, key)
        if value:
            result[key] = value
    return result


def chat(state: SimState, record: ChatRecord) -> JSON:
    """A ``Chat``: private chats carry the user's names, groups their title."""
    result: JSON = {"id": record.id, "type": record.type}
    if record.type == "private":
        person = state.users.get(record.id)
        if person is not None:
            result["first_name"] = person.first_name
            if person.last_name:
                result["last_name"] = person.last_name
            if person.username:
                result["username"] = person.username
    else:
        result["title"] = record.title or f"Group {record.id}"
    return result


def file(record: FileRecord, *, with_path: bool) -> JSON:
    """A ``File``; ``file_path`` only from ``getFile`` (relative to ``/file/bot<token>/``)."""
    result: JSON = {
        "file_id": record.file_id,
        "file_unique_id": record.file_unique_id,
        "file_size": record.file_size,
    }
    if with_path:
        result["file_path"] = record.file_path
    return result


def sticker(record: FileRecord, *, emoji: str | None, sticker_type: str = "regular") -> JSON:
    """A ``Sticker`` built from its file record."""
    result: JSON = {
        "file_id": record.file_id,
        "file_unique_id": record.file_unique_id,
        "type": sticker_type,
        "width": record.width,
        "height": record.height,
        "is_animated": record.sticker_format == "animated",
        "is_video": record.sticker_format == "video",
        "file_size": record.file_size,
    }
    if emoji:
        result["emoji"] = emoji
    if record.set_name:
        result["set_name"] = record.set_name
    return result


def set_sticker(state: SimState, sticker_set: StickerSetRecord, item: StickerRecord) -> JSON:
    """One sticker of a set, as ``getStickerSet`` lists it."""
    record = state.files[item.file_id]
    return sticker(
        record, emoji=item.emoji_list[0] if item.emoji_list else None, sticker_type=sticker_set.sticker_type
    )


def sticker_set(state: SimState, record: StickerSetRecord) -> JSON:
    """A ``StickerSet``."""
    return {
        "name": record.name,
        "title": record.title,
        "sticker_type": record.sticker_type,
        "stickers": [set_sticker(state, record, item) for item in record.stickers],
    }


def photo_sizes(record: FileRecord) -> list[JSON]:
    """``Message.photo``: one ``PhotoSize`` (the simulator keeps only the original)."""
    return [
        {
            "file_id": record.file_id,
            "file_unique_id": record.file_unique_id,
            "width": record.width,
            "height": record.height,
            "file_size": record.file_size,
        }
    ]


def message(state: SimState, config: SimConfig, record: MessageRecord, *, nested: bool = False) -> JSON:
    """A ``Message``; ``reply_to_message`` is included one level deep, like Telegram."""
    sender = bot_user(config) if record.from_bot else _sender(state, record.sender_id)
    result: JSON = {
        "message_id": record.message_id,
        "from": sender,
        "chat": chat(state, state.chats[record.chat_id]),
        "date": record.date,
    }
    if record.edit_date is not None:
        result["edit_date"] = record.edit_date
    if record.text is not None:
        result["text"] = record.text
        if record.entities:
            result["entities"] = record.entities
    if record.sticker_file_id and record.sticker_file_id in state.files:
        sticker_file = state.files[record.sticker_file_id]
        result["sticker"] = sticker(sticker_file, emoji=_set_emoji(state, sticker_file))
    if record.photo_file_id and record.photo_file_id in state.files:
        result["photo"] = photo_sizes(state.files[record.photo_file_id])
    if record.caption is not None:
        result["caption"] = record.caption
        if record.caption_entities:
            result["caption_entities"] = record.caption_entities
    if record.reply_markup and "inline_keyboard" in record.reply_markup:
        result["reply_markup"] = {"inline_keyboard": record.reply_markup["inline_keyboard"]}
    if not nested and record.reply_to_message_id is not None:
        replied = state.messages.get(record.chat_id, {}).get(record.reply_to_message_id)
        if replied is not None:
            result["reply_to_message"] = message(state, config, replied, nested=True)
    return result


def _sender(state: SimState, user_id: int) -> JSON:
    record = state.users.get(user_id)
    return user(record) if record else {"id": user_id, "is_bot": False, "first_name": str(user_id)}


def _set_emoji(state: SimState, record: FileRecord) -> str | None:
    if record.set_name is None:
        return None
    sticker_set_record = state.find_sticker_set(record.set_name)
    if sticker_set_record is None:
        return None
    for item in sticker_set_record.stickers:
        if item.file_id == record.file_id and item.emoji_list:
            return item.emoji_list[0]
    return None
