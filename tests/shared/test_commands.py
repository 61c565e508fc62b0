"""The gateway's command models: they round-trip through ``tg_commands`` and refuse what they do not know."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import ValidationError

from shared.commands import (
    AnswerCallbackQuery,
    Command,
    CreateStickerSet,
    DeleteStickerSet,
    EditMessageReplyMarkup,
    EditMessageText,
    FindBotMessage,
    GetStickerSet,
    SendAdminMessage,
    SendMessage,
    StickerRef,
    load,
    minimal_result,
    stored,
)
from shared.outbox import add_command
from shared.repositories import Database
from shared.subjects import UpdateReply

KEYBOARD = {"inline_keyboard": [[{"text": "Take", "callback_data": "stickers_lead:1:take"}]]}
COMMANDS: list[Command] = [
    SendMessage(chat_id=42, text="hello"),
    SendMessage(
        chat_id=-100,
        text="<b>Lead #1</b>",
        parse_mode="HTML",
        reply_markup=KEYBOARD,
        reply_to_message_id=7,
        disable_web_page_preview=True,
    ),
    SendAdminMessage(text="Job X FAILED"),
    EditMessageText(chat_id=-100, message_id=7, text="taken", parse_mode="HTML", reply_markup=KEYBOARD),
    EditMessageReplyMarkup(chat_id=-100, message_id=7),
    AnswerCallbackQuery(callback_query_id="cbq-1", text="Noted"),
    CreateStickerSet(
        user_id=42,
        name="sbx_by_stickerbooth_bot",
        title="My pack",
        stickers=(StickerRef(blob_id=uuid.uuid4(), emoji="😀"), StickerRef(blob_id=uuid.uuid4(), emoji="🙂")),
    ),
    GetStickerSet(name="sbx_by_stickerbooth_bot"),
    DeleteStickerSet(name="sbx_by_stickerbooth_bot"),
    FindBotMessage(chat_id=-100, reply_markup=KEYBOARD, after_message_id=3, skip_message_ids=(5, 6)),
]


@pytest.mark.unit
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.method)
def test_a_command_round_trips_through_its_stored_columns(command: Command) -> None:
    method, params = stored(command)
    assert method == command.method and "method" not in params and params["v"] == 1
    assert load(method, params) == command


@pytest.mark.integration
async def test_a_command_round_trips_through_a_tg_commands_row(db: Database) -> None:
    async with db.transaction() as repos:
        for i, command in enumerate(COMMANDS):
            assert await add_command(repos, f"cmd:{i}", command, subject=UpdateReply(id=i), reply_to="tests")
        second = SendMessage(chat_id=1, text="a second intent")
        assert not await add_command(repos, "cmd:0", second, subject=UpdateReply(id=0))
    async with db.transaction() as repos:
        records = [await repos.tg_commands.get(f"cmd:{i}") for i in range(len(COMMANDS))]
    assert [load(r.method, r.params) for r in records if r is not None] == COMMANDS


@pytest.mark.unit
def test_the_stored_shape_is_what_the_gateway_has_always_read() -> None:
    """Rows written before the models (no ``v``, ``None`` fields spelled out) still load."""
    blob = uuid.uuid4()
    assert load("send_message", {"chat_id": 42, "text": "hi", "reply_markup": None}) == SendMessage(
        chat_id=42, text="hi"
    )
    old_set = {"user_id": 1, "name": "n", "title": "t", "stickers": [{"blob_id": str(blob), "emoji": "😀"}]}
    assert load("create_sticker_set", old_set) == CreateStickerSet(
        user_id=1, name="n", title="t", stickers=(StickerRef(blob_id=blob, emoji="😀"),)
    )
    assert stored(SendMessage(chat_id=42, text="hi")) == (
        "send_message",
        {"v": 1, "chat_id": 42, "text": "hi"},
    )
    assert stored(
        CreateStickerSet(user_id=1, name="n", title="t", stickers=(StickerRef(blob_id=blob, emoji="😀"),))
    )[1]["stickers"] == [{"blob_id": str(blob), "emoji": "😀"}]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("method", "params", "names"),
    [
        ("send_sticker", {"chat_id": 1}, "does not match any of the expected tags"),
        ("send_message", {"chat_id": 1}, "text"),
        ("send_message", {"chat_id": "not a number", "text": "x"}, "chat_id"),
        ("send_message", {"chat_id": 1, "text": "x", "colour": "red"}, "colour"),
        ("send_message", {"v": 2, "chat_id": 1, "text": "x"}, "v"),
        ("create_sticker_set", {"user_id": 1, "name": "n", "title": "t"}, "stickers"),
        (
            "create_sticker_set",
            {"user_id": 1, "name": "n", "title": "t", "stickers": [{"emoji": "😀"}]},
            "blob_id",
        ),
    ],
)
def test_an_unknown_method_or_a_bad_field_is_a_validation_error_naming_it(
    method: str, params: dict[str, Any], names: str
) -> None:
    with pytest.raises(ValidationError, match=names):
        load(method, params)


@pytest.mark.unit
def test_commands_are_frozen() -> None:
    command = SendMessage(chat_id=1, text="x")
    with pytest.raises(ValidationError):
        command.text = "y"  # type: ignore[misc]


SENT_MESSAGE = {
    "message_id": 7,
    "date": 1700000000,
    "chat": {"id": 4242, "type": "private", "first_name": "Ann", "username": "ann"},
    "from": {"id": 1, "is_bot": True, "first_name": "Sticker Booth", "username": "stickerbooth_bot"},
    "text": "Your pack: https://t.me/addstickers/sbx_by_stickerbooth_bot",
}


@pytest.mark.parametrize(
    ("method", "answer", "kept"),
    [
        ("send_message", SENT_MESSAGE, {"message_id": 7}),
        ("edit_message_text", SENT_MESSAGE, {"message_id": 7}),
        ("edit_message_reply_markup", True, True),
        ("send_admin_message", {"sent": False}, {"sent": False}),
        (
            "create_sticker_set",
            {"name": "sbx_by_b", "created": True, "sticker_count": 12},
            {"created": True, "sticker_count": 12},
        ),
        ("get_sticker_set", {"name": "sbx_by_b", "title": "Mine", "sticker_count": 3}, {"sticker_count": 3}),
        (
            "find_bot_message",
            {"chat_id": -100, "message_id": None, "conclusive": True, "probes": 3},
            {"message_id": None, "conclusive": True, "probes": 3},
        ),
        ("delete_sticker_set", True, True),
        ("answer_callback_query", True, True),
        ("no_such_method", {"message_id": 1}, {}),
        ("send_message", ["a", "list"], None),
        ("send_message", None, None),
    ],
)
def test_a_result_keeps_only_what_its_readers_use(method: str, answer: Any, kept: Any) -> None:
    assert minimal_result(method, answer) == kept
    assert minimal_result(method, minimal_result(method, answer)) == kept  # idempotent
