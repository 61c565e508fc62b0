"""What the Telegram gateway accepts: one typed, versioned model per gateway command (DESIGN.md §7).

A producer builds a model and hands it to :func:`shared.outbox.add_command`; the gateway loads the stored
row back with :func:`load` and dispatches on the class. Each model has a fixed ``method`` (the
discriminator) and a version ``v``, like :mod:`shared.messages`: a row the gateway cannot validate (an
unknown ``method``, a newer ``v``, a missing or extra field) is finished ``failed`` with the validation
error as its reason, never retried.

Stored shape in ``tg_commands`` (unchanged since migration 0001): the ``method`` column holds the
discriminator, the ``params`` JSONB column the model's other fields as JSON (``v`` included, ``None``
fields left out). Rows written before ``v`` existed have no ``v`` and read as version 1.

| model | ``method`` | Bot API call(s) |
|---|---|---|
| :class:`SendMessage` | ``send_message`` | ``sendMessage`` |
| :class:`SendSetSticker` | ``send_set_sticker`` | ``getStickerSet`` + ``sendSticker`` |
| :class:`SendAdminMessage` | ``send_admin_message`` | ``sendMessage`` to the gateway's ``ADMIN_CHAT_ID`` |
| :class:`EditMessageText` | ``edit_message_text`` | ``editMessageText`` |
| :class:`EditMessageReplyMarkup` | ``edit_message_reply_markup`` | ``editMessageReplyMarkup`` |
| :class:`AnswerCallbackQuery` | ``answer_callback_query`` | ``answerCallbackQuery`` |
| :class:`CreateStickerSet` | ``create_sticker_set`` | ``createNewStickerSet`` + ``addStickerToSet`` |
| :class:`GetStickerSet` | ``get_sticker_set`` | ``getStickerSet`` |
| :class:`DeleteStickerSet` | ``delete_sticker_set`` | ``deleteStickerSet`` |
| :class:`FindBotMessage` | ``find_bot_message`` | ``editMessageReplyMarkup`` probes (``message_probe``) |

Field names and meanings follow core.telegram.org/bots/api for the call each model makes.

Results (issue 11, data minimisation): what the gateway stores in ``tg_commands.result`` and publishes in
:class:`shared.messages.TelegramResult` is :func:`minimal_result` of the call's answer: only the fields a
producer reads, never Telegram's ``chat``/``from`` objects, names, usernames, texts or set names.

| ``method`` | result | read by |
|---|---|---|
| ``send_message``, ``send_admin_message``, ``edit_message_*`` | ``{"message_id"}`` (1) | leads (ids) |
| ``send_set_sticker`` | ``{"message_id"}`` (no file id) | nobody |
| ``create_sticker_set`` | ``{"created", "sticker_count"}`` | delivery (only ``ok``) |
| ``get_sticker_set`` | ``{"sticker_count"}`` | delivery (readiness poll) |
| ``find_bot_message`` | ``{"message_id", "conclusive", "probes"}`` | leads (an unsure send) |
| ``answer_callback_query``, ``delete_sticker_set`` | ``true`` | nobody |

(1) ``true`` for an edit that changed nothing; ``{"sent": false}`` for an admin message without an
``ADMIN_CHAT_ID``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "AnswerCallbackQuery",
    "Command",
    "CreateStickerSet",
    "DeleteStickerSet",
    "EditMessageReplyMarkup",
    "EditMessageText",
    "FindBotMessage",
    "GetStickerSet",
    "InlineKeyboard",
    "SendAdminMessage",
    "SendMessage",
    "SendSetSticker",
    "StickerRef",
    "load",
    "minimal_result",
    "stored",
]

#: An ``InlineKeyboardMarkup`` as Bot API JSON: ``{"inline_keyboard": [[{"text": …, "callback_data": …}]]}``.
InlineKeyboard = dict[str, Any]
ParseMode = Literal["HTML", "MarkdownV2", "Markdown"]


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = 1


class SendMessage(_Command):
    """A message to ``chat_id``; at most once (the executor never repeats a send of unknown outcome).

    ``reply_to_message_id`` makes it a reply (a repeat notice under its lead card).
    """

    method: Literal["send_message"] = "send_message"
    chat_id: int
    text: str
    parse_mode: ParseMode | None = None
    reply_markup: InlineKeyboard | None = None
    reply_to_message_id: int | None = None
    disable_web_page_preview: bool | None = None


class SendSetSticker(_Command):
    """``sendSticker`` of sticker ``index`` (0-based, in the set's order) of set ``name`` to ``chat_id``,
    e.g. one sticker of a guest's new pack as its preview. At most once, like every send.

    The gateway reads the set (``getStickerSet``) for that sticker's ``file_id`` when it executes the
    command, so no file id is stored in a row or a result (issue 11, data minimisation). Telegram's
    sendSticker takes "a file_id to send a file that exists on the Telegram servers"
    (core.telegram.org/bots/api#sendsticker); a set without sticker ``index`` fails the command (400).
    """

    method: Literal["send_set_sticker"] = "send_set_sticker"
    chat_id: int
    name: str
    index: int = Field(0, ge=0)


class SendAdminMessage(_Command):
    """An admin alert or digest (:mod:`shared.alerts`, :mod:`shared.digest`); the gateway alone knows the
    admin chat, and without one it only logs the text."""

    method: Literal["send_admin_message"] = "send_admin_message"
    text: str


class EditMessageText(_Command):
    """Replace the text (and keyboard) of bot message ``message_id`` in ``chat_id``; repeatable."""

    method: Literal["edit_message_text"] = "edit_message_text"
    chat_id: int
    message_id: int
    text: str
    parse_mode: ParseMode | None = None
    reply_markup: InlineKeyboard | None = None


class EditMessageReplyMarkup(_Command):
    """Replace the keyboard of bot message ``message_id``; ``None`` removes it. Repeatable."""

    method: Literal["edit_message_reply_markup"] = "edit_message_reply_markup"
    chat_id: int
    message_id: int
    reply_markup: InlineKeyboard | None = None


class AnswerCallbackQuery(_Command):
    """Answer a button press; ``text`` (0-200 characters) is shown to the presser as a toast, or with
    ``show_alert`` as an alert they must dismiss (core.telegram.org/bots/api#answercallbackquery).
    Repeatable."""

    method: Literal["answer_callback_query"] = "answer_callback_query"
    callback_query_id: str
    text: str | None = None
    show_alert: bool | None = None


class StickerRef(BaseModel):
    """One sticker of a set: its stored image (``blobs.id``, PNG/WEBP of at most 512 KB) and its emoji."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    blob_id: UUID
    emoji: str


class CreateStickerSet(_Command):
    """Create set ``name`` owned by ``user_id`` with ``stickers`` in order, or finish one an earlier run
    started (:mod:`telegram_gateway.sticker_sets`). Repeatable: names are deterministic per job.

    Telegram allows 1-50 stickers at creation and ``name`` of at most 64 characters ending in
    ``_by_<bot username>`` (core.telegram.org/bots/api#createnewstickerset). Those limits are Telegram's to
    enforce (its refusal becomes the command's failed result), not this model's: a producer never fails
    to record a command over them.
    """

    method: Literal["create_sticker_set"] = "create_sticker_set"
    user_id: int
    name: str
    title: str
    stickers: tuple[StickerRef, ...]


class GetStickerSet(_Command):
    """Read set ``name``; the result is ``{"sticker_count"}``. Repeatable."""

    method: Literal["get_sticker_set"] = "get_sticker_set"
    name: str


class DeleteStickerSet(_Command):
    """Delete set ``name``. Repeatable."""

    method: Literal["delete_sticker_set"] = "delete_sticker_set"
    name: str


class FindBotMessage(_Command):
    """Search ``chat_id`` for the bot message that carries ``reply_markup`` (it identifies the message),
    above ``after_message_id``, skipping ``skip_message_ids``, within ``max_probes`` Bot API calls and
    stopping after ``end_gap`` consecutive missing ids (:mod:`telegram_gateway.message_probe`). Repeatable.

    With ``before_message_id`` (the id of a message known to have been sent after the one looked for) the
    search walks down from below it to ``after_message_id`` instead, and is conclusive only when it got
    there (issue 19: a guest's link message whose answer was lost).
    """

    method: Literal["find_bot_message"] = "find_bot_message"
    chat_id: int
    reply_markup: InlineKeyboard
    after_message_id: int = 0
    before_message_id: int | None = None
    skip_message_ids: tuple[int, ...] = ()
    max_probes: int = 30
    end_gap: int = 3


Command = Annotated[
    SendMessage
    | SendSetSticker
    | SendAdminMessage
    | EditMessageText
    | EditMessageReplyMarkup
    | AnswerCallbackQuery
    | CreateStickerSet
    | GetStickerSet
    | DeleteStickerSet
    | FindBotMessage,
    Field(discriminator="method"),
]
_ADAPTER: TypeAdapter[Command] = TypeAdapter(Command)


def stored(command: Command) -> tuple[str, dict[str, Any]]:
    """The ``tg_commands`` columns for ``command``: ``(method, params)``, ``params`` JSON-safe (UUIDs as
    strings) without ``method`` and without ``None`` fields."""
    params = command.model_dump(mode="json", exclude={"method"}, exclude_none=True)
    return command.method, params


def load(method: str, params: Mapping[str, Any]) -> Command:
    """The command stored as ``method`` and ``params`` (a ``tg_commands`` row).

    Raises:
        pydantic.ValidationError: unknown ``method``, newer ``v``, missing, extra or malformed field.
    """
    return _ADAPTER.validate_python({**params, "method": method})


_MESSAGE_FIELDS = frozenset({"message_id", "sent"})
#: The keys of a dict result kept per ``method`` (module docstring "Results"); a method not listed keeps none.
RESULT_FIELDS: dict[str, frozenset[str]] = {
    "send_message": _MESSAGE_FIELDS,
    "send_admin_message": _MESSAGE_FIELDS,
    "send_set_sticker": _MESSAGE_FIELDS,
    "edit_message_text": _MESSAGE_FIELDS,
    "edit_message_reply_markup": _MESSAGE_FIELDS,
    "create_sticker_set": frozenset({"created", "sticker_count"}),
    "get_sticker_set": frozenset({"sticker_count"}),
    "find_bot_message": frozenset({"message_id", "conclusive", "probes"}),
}


def minimal_result(method: str, result: Any) -> Any:
    """The part of the gateway's answer to ``method`` that is stored and published (module docstring
    "Results"): a dict keeps only the :data:`RESULT_FIELDS` of its method (an allowlist: a field Telegram
    adds later is dropped), a ``bool`` or ``None`` stays as it is, anything else becomes ``None``.

    Idempotent, so a result stored before this rule is reduced the same way when it is announced again.
    """
    if result is None or isinstance(result, bool):
        return result
    if isinstance(result, Mapping):
        kept = RESULT_FIELDS.get(method, frozenset())
        return {key: value for key, value in result.items() if key in kept}
    return None
