"""What the simulated Telegram remembers: users, chats, messages, updates, files, sticker sets, callbacks.

Records are pydantic models so the whole state can be dumped to and loaded from JSON (``persistence``).
Timestamps are Unix seconds (UTC). File bytes live apart, in ``blobs.BlobStore``, keyed by ``blob_id``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

ChatType = Literal["private", "group", "supergroup"]
StickerFormat = Literal["static", "animated", "video"]
StickerType = Literal["regular", "mask", "custom_emoji"]


class UserRecord(BaseModel):
    """A Telegram user the bot has seen (in its private chat or in a group)."""

    id: int
    first_name: str
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None


class ChatRecord(BaseModel):
    """A chat with the bot. Private chats have ``id`` = the user's id; groups have negative ids.

    ``started``: the user opened the private chat (only then may the bot write first); ``blocked``: the user
    blocked the bot afterwards.
    """

    id: int
    type: ChatType
    title: str | None = None
    started: bool = False
    blocked: bool = False
    next_message_id: int = 1


class MessageRecord(BaseModel):
    """One message in a chat, sent by a user (``sender_id`` = user id) or by the bot (``from_bot``).

    ``reply_markup`` is the markup as the bot sent it (any kind; only inline keyboards are echoed on the
    wire). ``sticker_file_id`` / ``photo_file_id`` point into ``SimState.files``.
    """

    message_id: int
    chat_id: int
    sender_id: int
    from_bot: bool
    date: int
    edit_date: int | None = None
    text: str | None = None
    entities: list[dict[str, Any]] = Field(default_factory=list)
    caption: str | None = None
    caption_entities: list[dict[str, Any]] = Field(default_factory=list)
    reply_markup: dict[str, Any] | None = None
    reply_to_message_id: int | None = None
    sticker_file_id: str | None = None
    photo_file_id: str | None = None


class FileRecord(BaseModel):
    """A file the bot uploaded or was given; ``file_path`` is what ``getFile`` hands out."""

    file_id: str
    file_unique_id: str
    blob_id: str
    file_size: int
    file_path: str
    mime_type: str
    kind: Literal["sticker", "photo", "document"]
    width: int = 0
    height: int = 0
    sticker_format: StickerFormat | None = None
    set_name: str | None = None
    owner_user_id: int | None = None


class StickerRecord(BaseModel):
    """A sticker inside a set: its own file (``file_id``) plus the InputSticker fields.

    ``source_file_id`` is the file it was made from: an ``uploadStickerFile`` result given by ``file_id``, or
    the file that the call's own upload became (a new one per call, as on Telegram).
    """

    file_id: str
    emoji_list: list[str]
    keywords: list[str] = Field(default_factory=list)
    source_blob_id: str
    source_file_id: str | None = None


class StickerSetRecord(BaseModel):
    """A sticker set created by the bot on behalf of ``owner_user_id``."""

    name: str
    title: str
    owner_user_id: int
    sticker_type: StickerType = "regular"
    needs_repainting: bool = False
    stickers: list[StickerRecord] = Field(default_factory=list)
    created_at: int


class CallbackRecord(BaseModel):
    """A press of an inline button, and the bot's ``answerCallbackQuery`` (``answer``) once it came."""

    id: str
    user_id: int
    chat_id: int
    message_id: int
    data: str
    chat_instance: str
    created_at: float
    update_id: int | None = None
    answered_at: float | None = None
    answer: dict[str, Any] | None = None


class UpdateRecord(BaseModel):
    """A pending update: ``kind`` names the Update field (``message``, ``callback_query``), ``payload``
    holds its value."""

    update_id: int
    kind: str
    payload: dict[str, Any]


class SimState(BaseModel):
    """The whole simulated world of one bot. ``next_update_id`` never goes back, not even on reset, so an
    ``offset`` a bot already confirmed keeps its meaning."""

    users: dict[int, UserRecord] = Field(default_factory=dict)
    chats: dict[int, ChatRecord] = Field(default_factory=dict)
    messages: dict[int, dict[int, MessageRecord]] = Field(default_factory=dict)
    updates: list[UpdateRecord] = Field(default_factory=list)
    next_update_id: int = 1
    allowed_updates: list[str] | None = None
    webhook_url: str = ""
    #: ``setWebhook``'s ``secret_token`` (sent as ``X-Telegram-Bot-Api-Secret-Token``) and
    #: ``max_connections``; the last failed delivery (``getWebhookInfo``), Unix seconds and text.
    webhook_secret_token: str = ""
    webhook_max_connections: int = 40
    webhook_last_error_date: int | None = None
    webhook_last_error_message: str | None = None
    files: dict[str, FileRecord] = Field(default_factory=dict)
    next_file_number: int = 1
    sticker_sets: dict[str, StickerSetRecord] = Field(default_factory=dict)
    callbacks: dict[str, CallbackRecord] = Field(default_factory=dict)
    #: The bot's command lists by ``<scope>|<language code>`` (``methods.commands.scope_key``).
    command_lists: dict[str, list[dict[str, str]]] = Field(default_factory=dict)

    def chat_messages(self, chat_id: int) -> dict[int, MessageRecord]:
        """The messages of one chat by message id (empty for an unknown chat)."""
        return self.messages.setdefault(chat_id, {}) if chat_id in self.chats else {}

    def find_sticker_set(self, name: str) -> StickerSetRecord | None:
        """A set by name; names compare case-insensitively, like ``t.me/addstickers/<name>`` links."""
        return self.sticker_sets.get(name.lower())
