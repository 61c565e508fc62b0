"""The simulator driven by the real python-telegram-bot ``Bot``: messages, updates, callbacks, errors."""

from __future__ import annotations

import asyncio
import datetime as dtm

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.error import BadRequest, Conflict, Forbidden, InvalidToken, NetworkError, RetryAfter

from tests.simulators.tgsim_helpers import TOKEN, RunningSim

pytestmark = pytest.mark.integration

KEYBOARD = InlineKeyboardMarkup(
    [
        [InlineKeyboardButton("Make my sticker", callback_data="make:1")],
        [InlineKeyboardButton("Privacy", url="https://example.org/privacy")],
    ]
)


async def parked(tgsim: RunningSim) -> None:
    """Wait until a long poll is parked in the simulator (a fixed sleep could be too short on a busy
    machine, and a newer poll would then arrive first)."""
    async with asyncio.timeout(20):
        while not tgsim.sim.poll.waiting:
            await asyncio.sleep(0.02)


async def test_get_me_returns_the_configured_bot(bot: Bot) -> None:
    me = await bot.get_me()
    assert me.id == 123456789
    assert me.is_bot
    assert me.username == "stickerbooth_bot"
    assert me.can_join_groups is True


async def test_send_message_with_inline_keyboard_is_returned_and_stored(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    sent = await bot.send_message(guest, "<b>Hello</b>, Ann!", parse_mode="HTML", reply_markup=KEYBOARD)

    assert sent.text == "Hello, Ann!"
    assert sent.entities[0].type == "bold"
    assert sent.reply_markup == KEYBOARD
    assert sent.chat.id == guest
    assert sent.from_user is not None and sent.from_user.is_bot
    messages = await tgsim.get(f"/sim/chats/{guest}/messages")
    assert [m["from_bot"] for m in messages] == [False, True]
    assert messages[1]["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "make:1"


async def test_reply_parameters_link_the_reply(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    question = await tgsim.say(guest, "Where is my sticker?")

    sent = await bot.send_message(guest, "Coming!", reply_parameters=ReplyParameters(question["message_id"]))

    assert sent.reply_to_message is not None
    assert sent.reply_to_message.text == "Where is my sticker?"
    with pytest.raises(BadRequest, match="Message to be replied not found"):
        await bot.send_message(guest, "?", reply_parameters=ReplyParameters(999))


async def test_long_poll_returns_a_start_sent_through_the_control_api(bot: Bot, tgsim: RunningSim) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await parked(tgsim)
    assert not poll.done()

    await tgsim.say(777, "/start promo_42", first_name="Bob")
    updates = await asyncio.wait_for(poll, 20)  # woken by the update, not ended by its 30 s timeout

    assert len(updates) == 1
    message = updates[0].message
    assert message is not None and message.text == "/start promo_42"
    assert message.entities[0].type == "bot_command" and message.entities[0].length == len("/start")
    assert message.chat.type == "private" and message.from_user is not None
    assert message.from_user.first_name == "Bob"
    assert await bot.get_updates(offset=updates[0].update_id + 1, timeout=0) == ()
    assert await tgsim.get("/sim/updates") == []


async def test_updates_stay_until_confirmed_by_offset(bot: Bot, tgsim: RunningSim) -> None:
    for text in ("/start", "one", "two"):
        await tgsim.say(900, text)

    first = await bot.get_updates(limit=2)
    again = await bot.get_updates()
    rest = await bot.get_updates(offset=first[-1].update_id + 1)

    assert [u.message.text for u in first if u.message] == ["/start", "one"]
    assert len(again) == 3
    assert [u.message.text for u in rest if u.message] == ["two"]


async def test_a_second_long_poll_ends_the_first_with_409(tgsim: RunningSim) -> None:
    async with tgsim.bot() as first, tgsim.bot() as second:
        older = asyncio.create_task(first.get_updates(timeout=30))
        await parked(tgsim)  # the older poll must be the parked one before the newer arrives
        newer = asyncio.create_task(second.get_updates(timeout=1))

        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await asyncio.wait_for(older, 20)  # ended by the newer poll, not by its 30 s timeout
        assert await asyncio.wait_for(newer, 20) == ()


async def test_callback_query_is_delivered_and_its_answer_recorded(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    sent = await bot.send_message(guest, "Ready?", reply_markup=KEYBOARD)
    updates = await bot.get_updates()
    await bot.get_updates(offset=updates[-1].update_id + 1)

    pressed = await tgsim.post(
        "/sim/callbacks", {"user_id": guest, "message_id": sent.message_id, "data": "make:1"}
    )
    (update,) = await bot.get_updates(timeout=1)
    query = update.callback_query
    assert query is not None and query.data == "make:1" and query.id == pressed["id"]
    assert query.message is not None and query.message.message_id == sent.message_id

    assert await query.answer("On it!")
    answered = await tgsim.get(f"/sim/callbacks/{query.id}")
    assert answered["answered"] is True
    assert answered["answer"]["text"] == "On it!"
    with pytest.raises(BadRequest, match="Query is too old"):
        await bot.answer_callback_query(query.id)


async def test_edit_message_text_and_not_modified(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    sent = await bot.send_message(guest, "Working…", reply_markup=KEYBOARD)

    edited = await bot.edit_message_text("Done!", chat_id=guest, message_id=sent.message_id)

    assert edited.text == "Done!" and edited.edit_date is not None
    assert edited.reply_markup is None
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("Done!", chat_id=guest, message_id=sent.message_id)
    with pytest.raises(BadRequest, match="Message to edit not found"):
        await bot.edit_message_text("x", chat_id=guest, message_id=9999)
    restored = await bot.edit_message_reply_markup(
        chat_id=guest, message_id=sent.message_id, reply_markup=KEYBOARD
    )
    assert isinstance(restored, Message) and restored.reply_markup == KEYBOARD


async def test_writing_to_unknown_users_and_chats_fails_like_telegram(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(424242, "hi")
    await tgsim.say(31337, "hello group", chat_id=-100555, chat_title="Booth staff")
    with pytest.raises(Forbidden, match="bot can't initiate conversation with a user"):
        await bot.send_message(31337, "hi")
    assert (await bot.send_message(-100555, "hi group")).chat.type == "supergroup"

    await tgsim.post(f"/sim/users/{guest}/block")
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(guest, "hi")
    with pytest.raises(BadRequest, match="Message text is empty"):
        await bot.send_message(-100555, " ")


async def test_flood_control_raises_retry_after_and_waiting_it_out_works(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await tgsim.post("/sim/limits", {"private_per_second": 1, "private_burst": 3})
    for number in range(3):
        await bot.send_message(guest, f"burst {number}")

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(guest, "one too many")

    assert caught.value.retry_after == dtm.timedelta(seconds=1)
    await asyncio.sleep(1.05)
    assert (await bot.send_message(guest, "after waiting")).text == "after waiting"
    calls = await tgsim.get("/sim/calls?method=sendMessage")
    assert [c["error_code"] for c in calls] == [None, None, None, 429, None]


async def test_injected_429_surfaces_as_retry_after(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await tgsim.post(
        "/sim/faults", {"method": "sendMessage", "count": 2, "error_code": 429, "retry_after": 3}
    )

    for _ in range(2):
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(guest, "hi")
        assert caught.value.retry_after == dtm.timedelta(seconds=3)
    assert (await bot.send_message(guest, "third time")).text == "third time"
    assert await tgsim.get("/sim/faults") == []


async def test_drop_after_apply_delivers_the_message_but_the_bot_sees_a_network_error(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await tgsim.post("/sim/faults", {"method": "sendmessage", "kind": "drop_after_apply"})

    with pytest.raises(NetworkError):
        await bot.send_message(guest, "did it arrive?")

    texts = [m.get("text") for m in await tgsim.get(f"/sim/chats/{guest}/messages")]
    assert texts[-1] == "did it arrive?"


async def test_injected_500_and_delay(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await tgsim.post("/sim/faults", {"method": "getMe", "error_code": 500})
    await tgsim.post("/sim/faults", {"method": "getMe", "kind": "delay", "seconds": 0.3})

    with pytest.raises(NetworkError, match="Internal Server Error"):
        await bot.get_me()
    started = asyncio.get_running_loop().time()
    await bot.get_me()
    assert asyncio.get_running_loop().time() - started >= 0.3


async def test_wrong_token_is_unauthorized_and_unknown_method_not_found(bot: Bot, tgsim: RunningSim) -> None:
    async with tgsim.http.post(f"{tgsim.url}/bot{TOKEN}/noSuchMethod") as response:
        assert response.status == 404
        assert await response.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
    async with tgsim.http.get(f"{tgsim.url}/bot{TOKEN}/GETME") as response:
        assert (await response.json())["result"]["username"] == "stickerbooth_bot"
    with pytest.raises(InvalidToken):
        async with Bot("1:wrong", base_url=f"{tgsim.url}/bot") as stranger:
            await stranger.get_me()


async def test_privacy_mode_lets_only_commands_replies_and_mentions_through_in_groups(
    bot: Bot, tgsim: RunningSim
) -> None:
    await tgsim.say(41, "just chatting", chat_id=-500)
    await tgsim.say(41, "/help@some_other_bot", chat_id=-500)
    await tgsim.say(41, "/stats@StickerBooth_Bot", chat_id=-500)
    announcement = await bot.send_message(-500, "Booth opens at 10")
    await tgsim.say(41, "great!", chat_id=-500, reply_to_message_id=announcement.message_id)
    await tgsim.say(41, "thanks @stickerbooth_bot", chat_id=-500)

    texts = [u.message.text for u in await bot.get_updates() if u.message]

    assert texts == ["/stats@StickerBooth_Bot", "great!", "thanks @stickerbooth_bot"]
    assert len(await tgsim.get("/sim/chats/-500/messages")) == 6
