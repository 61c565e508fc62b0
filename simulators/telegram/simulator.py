"""The simulated Telegram of one bot: state plus the services the Bot API and the control API share.

Bot API methods (``methods/``) and the control API (``control``) change the world only through this object,
so both sides see the same chats, updates, files and sticker sets. Nothing here does I/O at construction;
``aiohttp`` hooks in ``app`` load and save persisted state.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from typing import Any, Literal

import aiohttp

from simulators.telegram import wire
from simulators.telegram.blobs import BlobStore
from simulators.telegram.calls import CallLog
from simulators.telegram.config import SimConfig
from simulators.telegram.errors import FILE_TOO_BIG, URL_FETCH_FAILED, fail
from simulators.telegram.faults import FaultQueue, FloodHolds
from simulators.telegram.formatting import bot_commands, command_entities
from simulators.telegram.polling import LongPoll
from simulators.telegram.ratelimit import FloodControl
from simulators.telegram.state import (
    CallbackRecord,
    ChatRecord,
    FileRecord,
    MessageRecord,
    SimState,
    StickerFormat,
    UpdateRecord,
    UserRecord,
)
from simulators.telegram.webhook import WebhookDelivery

#: Update types delivered when a bot never set ``allowed_updates`` (core.telegram.org/bots/api#getupdates).
DEFAULT_EXCLUDED_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
#: How much a URL given instead of an upload may weigh before the simulator stops reading (bytes).
MAX_URL_DOWNLOAD_BYTES = 20 * 1024 * 1024

_FILE_ID_PREFIX = {"sticker": "CAACAgIAAxkBAA", "photo": "AgACAgIAAxkBAA", "document": "BQACAgIAAxkBAA"}
_EXTENSIONS = {
    "image/png": "png",
    "image/webp": "webp",
    "image/jpeg": "jpg",
    "application/x-tgsticker": "tgs",
}


class ControlError(Exception):
    """A control-API request that cannot be done (unknown message, no such button ...): HTTP ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Simulator:
    """One bot's Telegram: ``state`` (persistable), file bytes, flood control, faults, call log, long poll."""

    def __init__(self, config: SimConfig, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.state = SimState()
        files_dir = config.data_dir / "files" if config.data_dir is not None else None
        self.blobs = BlobStore(files_dir)
        self.flood = FloodControl(config.limits())
        self.faults = FaultQueue()
        self.holds = FloodHolds()
        self.calls = CallLog()
        self.poll = LongPoll()
        self.webhook = WebhookDelivery(
            self, target=config.webhook_target, max_retry_s=config.webhook_max_retry_s
        )
        self.revision = 0
        #: Called with the id after the last update of a batch before ``getUpdates`` hands the batch out;
        #: persistence sets it so a restarted simulator never numbers an update below one a bot has seen.
        self.before_handout: Callable[[int], None] | None = None
        self._http: aiohttp.ClientSession | None = None

    # --- bookkeeping -------------------------------------------------------------------------------------

    def touch(self) -> None:
        """Note that state changed (the persistence loop saves when the revision moves)."""
        self.revision += 1

    def now(self) -> int:
        """Current Unix time in whole seconds (message dates)."""
        return int(self.clock())

    def reset(self) -> None:
        """Forget everything except the update counter; limits and groups go back to the start-up values."""
        next_update_id = self.state.next_update_id
        self.state = SimState(next_update_id=next_update_id)
        self.seed_groups()
        self.blobs.clear()
        self.flood.configure(self.config.limits())
        self.faults.clear()
        self.holds.lift()
        self.calls.clear()
        self.poll.notify()
        self.webhook.reset()
        self.touch()

    async def close(self) -> None:
        """Release the HTTP client used for URL downloads."""
        if self._http is not None:
            await self._http.close()
            self._http = None

    # --- users and chats ----------------------------------------------------------------------------------

    def seed_groups(self) -> None:
        """Create the configured group chats (``SimConfig.groups``) that do not exist; others are kept."""
        for chat_id, title in self.config.groups.items():
            if chat_id not in self.state.chats:
                self.remember_chat(chat_id, title=title)
                self.touch()

    def remember_user(
        self,
        user_id: int,
        *,
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = None,
    ) -> UserRecord:
        """Create or update a user; fields left ``None`` keep their old value."""
        record = self.state.users.get(user_id)
        if record is None:
            record = UserRecord(id=user_id, first_name=first_name or f"User {user_id}")
            self.state.users[user_id] = record
        if first_name:
            record.first_name = first_name
        if last_name is not None:
            record.last_name = last_name or None
        if username is not None:
            record.username = username or None
        if language_code is not None:
            record.language_code = language_code or None
        return record

    def remember_chat(self, chat_id: int, *, title: str | None = None) -> ChatRecord:
        """Create a chat on first sight: private for ids > 0, supergroup for ``-100...``, else group."""
        record = self.state.chats.get(chat_id)
        if record is None:
            if chat_id > 0:
                kind: Literal["private", "group", "supergroup"] = "private"
            else:
                kind = "supergroup" if str(chat_id).startswith("-100") else "group"
            record = ChatRecord(id=chat_id, type=kind, title=title)
            self.state.chats[chat_id] = record
            self.state.messages[chat_id] = {}
        elif title:
            record.title = title
        return record

    # --- messages and updates -----------------------------------------------------------------------------

    def add_message(
        self, chat: ChatRecord, *, sender_id: int, from_bot: bool, **content: Any
    ) -> MessageRecord:
        """Append a message to ``chat`` with the chat's next message id and the current date."""
        record = MessageRecord(
            message_id=chat.next_message_id,
            chat_id=chat.id,
            sender_id=sender_id,
            from_bot=from_bot,
            date=self.now(),
            **content,
        )
        chat.next_message_id += 1
        self.state.messages.setdefault(chat.id, {})[record.message_id] = record
        self.touch()
        return record

    def message_json(self, record: MessageRecord) -> dict[str, Any]:
        """A message as the Bot API renders it."""
        return wire.message(self.state, self.config, record)

    def enqueue_update(self, kind: str, payload: dict[str, Any]) -> int | None:
        """Queue an update for ``getUpdates`` unless the bot's ``allowed_updates`` excludes ``kind``.

        Returns the update id, or ``None`` when filtered out.
        """
        allowed = self.state.allowed_updates
        if (allowed and kind not in allowed) or (not allowed and kind in DEFAULT_EXCLUDED_UPDATES):
            return None
        update_id = self.state.next_update_id
        self.state.next_update_id += 1
        self.state.updates.append(UpdateRecord(update_id=update_id, kind=kind, payload=payload))
        self.touch()
        self.poll.notify()
        self.webhook.notify()
        return update_id

    def confirm_updates(self, offset: int) -> int:
        """Apply a ``getUpdates`` offset: forget updates below it; a negative offset counts back from the end.

        Returns the effective offset (core.telegram.org/bots/api#getupdates, Client.cpp ``do_get_updates``).
        """
        if offset < 0:
            offset += self.state.next_update_id
        if offset > self.state.next_update_id:
            # The bot confirmed ids this simulator has not numbered yet (it restarted without its state):
            # number from there, as Telegram, whose counter never goes back, would.
            self.state.next_update_id = offset
            self.touch()
        if offset > 0:
            before = len(self.state.updates)
            self.state.updates = [update for update in self.state.updates if update.update_id >= offset]
            if len(self.state.updates) != before:
                self.touch()
        return offset

    def pending_updates(self, offset: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` updates with id >= ``offset``, as ``Update`` objects."""
        batch = [update for update in self.state.updates if update.update_id >= offset][:limit]
        if batch and self.before_handout is not None:
            self.before_handout(batch[-1].update_id + 1)
        return [{"update_id": update.update_id, update.kind: update.payload} for update in batch]

    def post_user_message(
        self,
        user: UserRecord,
        chat: ChatRecord,
        text: str,
        *,
        reply_to_message_id: int | None = None,
    ) -> MessageRecord:
        """A user writes ``text`` in ``chat``; queues the ``message`` update (in groups only what privacy
        mode lets through, see ``_meant_for_bot``).

        Commands get ``bot_command`` entities. Any private message means the user opened the chat (a Telegram
        client only lets a user write after pressing Start, which sends ``/start``) and unblocks the bot.
        """
        if chat.type == "private":
            chat.started = True
            chat.blocked = False
        known_reply = reply_to_message_id in self.state.messages.get(chat.id, {})
        record = self.add_message(
            chat,
            sender_id=user.id,
            from_bot=False,
            text=text,
            entities=command_entities(text),
            reply_to_message_id=reply_to_message_id if known_reply else None,
        )
        if chat.type == "private" or self._meant_for_bot(record):
            self.enqueue_update("message", self.message_json(record))
        return record

    def _meant_for_bot(self, record: MessageRecord) -> bool:
        """Privacy mode (on by default; ``getMe`` says ``can_read_all_group_messages: false``): in groups the
        bot gets commands (bare or ``@<bot>``), replies to its messages and mentions of ``@<bot>`` only
        (core.telegram.org/bots/features#privacy-mode)."""
        text = record.text or ""
        username = self.config.bot_username.lower()
        for command in bot_commands(text):
            if "@" not in command or command.lower().endswith("@" + username):
                return True
        replied = self.state.messages.get(record.chat_id, {}).get(record.reply_to_message_id or 0)
        return bool(replied and replied.from_bot) or f"@{username}" in text.lower()

    def press_button(self, user: UserRecord, chat_id: int, message_id: int, data: str) -> CallbackRecord:
        """``user`` presses the inline button with ``callback_data == data`` under a bot message.

        Raises ``ControlError`` 404 (no such message) or 400 (not a bot message / no such button).
        """
        message = self.state.messages.get(chat_id, {}).get(message_id)
        if message is None:
            raise ControlError(404, f"message {message_id} not found in chat {chat_id}")
        if not message.from_bot:
            raise ControlError(400, "only messages sent by the bot have inline buttons")
        rows = (message.reply_markup or {}).get("inline_keyboard") or []
        datas = {button.get("callback_data") for row in rows for button in row if isinstance(button, dict)}
        if data not in datas:
            raise ControlError(400, f"message {message_id} has no button with callback_data {data!r}")
        callback = CallbackRecord(
            id=str(secrets.randbits(63)),
            user_id=user.id,
            chat_id=chat_id,
            message_id=message_id,
            data=data,
            chat_instance=self._chat_instance(chat_id),
            created_at=self.clock(),
        )
        self.state.callbacks[callback.id] = callback
        callback.update_id = self.enqueue_update(
            "callback_query",
            {
                "id": callback.id,
                "from": wire.user(user),
                "message": self.message_json(message),
                "chat_instance": callback.chat_instance,
                "data": data,
            },
        )
        return callback

    def _chat_instance(self, chat_id: int) -> str:
        digest = hashlib.sha256(f"{self.config.bot_id}:{chat_id}".encode()).digest()
        return str(int.from_bytes(digest[:8], "big", signed=True))

    # --- files --------------------------------------------------------------------------------------------

    def store_file(
        self,
        data: bytes,
        *,
        kind: Literal["sticker", "photo", "document"],
        mime_type: str,
        width: int = 0,
        height: int = 0,
        sticker_format: StickerFormat | None = None,
        set_name: str | None = None,
        owner_user_id: int | None = None,
    ) -> FileRecord:
        """Keep ``data`` and give it a fresh ``file_id`` (same bytes keep the same ``file_unique_id``)."""
        blob_id = self.blobs.put(data)
        number = self.state.next_file_number
        self.state.next_file_number += 1
        extension = _EXTENSIONS.get(mime_type, "bin")
        record = FileRecord(
            file_id=_FILE_ID_PREFIX[kind] + secrets.token_urlsafe(24),
            file_unique_id="AgAD" + blob_id[:12],
            blob_id=blob_id,
            file_size=len(data),
            file_path=f"{kind}s/file_{number}.{extension}",
            mime_type=mime_type,
            kind=kind,
            width=width,
            height=height,
            sticker_format=sticker_format,
            set_name=set_name,
            owner_user_id=owner_user_id,
        )
        self.state.files[record.file_id] = record
        self.touch()
        return record

    def file_bytes(self, record: FileRecord) -> bytes | None:
        """The stored bytes of a file, ``None`` if lost."""
        return self.blobs.get(record.blob_id)

    async def download(self, url: str, max_bytes: int) -> bytes:
        """Fetch a file the bot gave by HTTP URL.

        Raises ``BotApiError`` 400 ``failed to get HTTP URL content`` or ``file is too big``.
        """
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20))
        try:
            async with self._http.get(url) as response:
                if response.status != 200:
                    raise fail(URL_FETCH_FAILED)
                data = await response.content.read(max_bytes + 1)
        except (aiohttp.ClientError, TimeoutError, ValueError):
            raise fail(URL_FETCH_FAILED) from None
        if len(data) > max_bytes:
            raise fail(FILE_TOO_BIG)
        return data
