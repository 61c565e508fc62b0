"""Sticker sets through the real python-telegram-bot ``Bot``: Telegram's rules and error texts.

python-telegram-bot capitalises error messages (``Bad Request: STICKER_PNG_DIMENSIONS`` becomes
``Sticker_png_dimensions``), hence the case-insensitive matches.
"""

from __future__ import annotations

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, InputSticker
from telegram.error import BadRequest, NetworkError, RetryAfter

from simulators.telegram.keyboards import url_problem
from simulators.telegram.state import StickerRecord
from tests.simulators.tgsim_helpers import GUEST_ID, RunningSim, jpeg, png, serve, sim_config

pytestmark = pytest.mark.integration

NAME = "ann_at_the_booth_by_stickerbooth_bot"


async def upload(bot: Bot, user_id: int, count: int) -> list[InputSticker]:
    files = [await bot.upload_sticker_file(user_id, png(seed=seed), "static") for seed in range(count)]
    return [InputSticker(file.file_id, ["😀"], "static", keywords=["booth"]) for file in files]


async def test_twelve_uploaded_pngs_become_a_set_that_reads_back(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    stickers = await upload(bot, guest, 12)

    assert await bot.create_new_sticker_set(guest, NAME, "Ann at the booth", stickers)

    sticker_set = await bot.get_sticker_set(NAME)
    assert sticker_set.title == "Ann at the booth" and sticker_set.sticker_type == "regular"
    assert len(sticker_set.stickers) == 12
    first = sticker_set.stickers[0]
    assert (first.width, first.height, first.emoji, first.set_name) == (512, 512, "😀", NAME)
    assert not first.is_animated and not first.is_video
    assert len({sticker.file_unique_id for sticker in sticker_set.stickers}) == 12
    downloaded = await (await bot.get_file(first.file_id)).download_as_bytearray()
    assert bytes(downloaded) == png(seed=0)

    listed = await tgsim.get("/sim/sticker-sets")
    assert [(s["name"], s["owner_user_id"], s["sticker_count"]) for s in listed] == [(NAME, guest, 12)]
    detail = await tgsim.get(f"/sim/sticker-sets/{NAME}")
    assert detail["stickers"][3]["keywords"] == ["booth"]
    async with tgsim.http.get(tgsim.url + detail["stickers"][3]["url"]) as response:
        assert await response.read() == png(seed=3)


async def test_input_stickers_may_carry_their_files_as_attachments(bot: Bot, guest: int) -> None:
    stickers = [InputSticker(png(seed=seed), ["🎉", "🥳"], "static") for seed in range(3)]

    assert await bot.create_new_sticker_set(guest, "party_by_StickerBooth_Bot", "Party", stickers)

    sticker_set = await bot.get_sticker_set("PARTY_by_stickerbooth_bot")
    assert sticker_set.name == "party_by_StickerBooth_Bot"
    assert [sticker.emoji for sticker in sticker_set.stickers] == ["🎉"] * 3


async def test_an_occupied_name_is_refused_case_insensitively(bot: Bot, guest: int) -> None:
    stickers = await upload(bot, guest, 2)
    await bot.create_new_sticker_set(guest, NAME, "First", stickers)

    with pytest.raises(BadRequest, match="Sticker set name is already occupied"):
        await bot.create_new_sticker_set(guest, NAME, "Second", stickers)
    with pytest.raises(BadRequest, match="Sticker set name is already occupied"):
        await bot.create_new_sticker_set(guest, NAME.upper().replace("_BY_", "_by_"), "Third", stickers)


@pytest.mark.parametrize(
    "name",
    [
        "no_suffix_at_all",
        "ann_by_otherbot",
        "1ann_by_stickerbooth_bot",
        "ann__x_by_stickerbooth_bot",
        "_by_stickerbooth_bot",
        "ann-x_by_stickerbooth_bot",
        "a" * 45 + "_by_stickerbooth_bot",
    ],
)
async def test_invalid_set_names_are_refused(bot: Bot, guest: int, name: str) -> None:
    stickers = [InputSticker(png(), ["😀"], "static")]

    with pytest.raises(BadRequest, match="Invalid sticker set name is specified"):
        await bot.create_new_sticker_set(guest, name, "Title", stickers)


@pytest.mark.parametrize(("width", "height"), [(500, 500), (513, 512), (512, 600), (256, 256)])
async def test_a_sticker_without_a_512_px_side_is_refused(
    bot: Bot, guest: int, width: int, height: int
) -> None:
    with pytest.raises(BadRequest, match=r"(?i)STICKER_PNG_DIMENSIONS"):
        await bot.upload_sticker_file(guest, png(width, height), "static")


@pytest.mark.parametrize(("width", "height"), [(512, 300), (120, 512)])
async def test_one_side_of_512_px_is_enough(bot: Bot, guest: int, width: int, height: int) -> None:
    uploaded = await bot.upload_sticker_file(guest, png(width, height), "static")
    assert uploaded.file_size == len(png(width, height))


async def test_a_sticker_over_512_kb_is_too_big(bot: Bot, guest: int) -> None:
    heavy = png(noise=True)
    assert len(heavy) > 512 * 1024

    with pytest.raises(BadRequest, match="File is too big"):
        await bot.upload_sticker_file(guest, heavy, "static")
    with pytest.raises(BadRequest, match="File is too big"):
        await bot.create_new_sticker_set(guest, NAME, "Heavy", [InputSticker(heavy, ["😀"], "static")])


async def test_a_jpeg_is_not_a_sticker(bot: Bot, guest: int) -> None:
    with pytest.raises(BadRequest, match=r"(?i)STICKER_PNG_NOPNG"):
        await bot.upload_sticker_file(guest, jpeg(), "static")


async def test_a_user_who_never_started_the_bot_is_not_found(bot: Bot, tgsim: RunningSim) -> None:
    await tgsim.say(31337, "hi all", chat_id=-100777)

    with pytest.raises(BadRequest, match="User not found"):
        await bot.upload_sticker_file(31337, png(), "static")
    with pytest.raises(BadRequest, match="User not found"):
        await bot.create_new_sticker_set(31337, NAME, "Title", [InputSticker(png(), ["😀"], "static")])
    with pytest.raises(BadRequest, match=r"(?i)USER_ID_INVALID"):
        await bot.upload_sticker_file(123456789, png(), "static")


async def test_input_sticker_fields_are_checked(bot: Bot, guest: int) -> None:
    # python-telegram-bot leaves an empty list out of the JSON, so Telegram misses the field.
    with pytest.raises(BadRequest, match=r"(?i)can't parse inputsticker: can't find field \"emoji_list\""):
        await bot.create_new_sticker_set(guest, NAME, "T", [InputSticker(png(), [], "static")])
    with pytest.raises(BadRequest, match=r"(?i)too many emoji specified"):
        await bot.create_new_sticker_set(guest, NAME, "T", [InputSticker(png(), ["😀"] * 21, "static")])
    with pytest.raises(BadRequest, match=r"(?i)expected a unicode emoji"):
        await bot.create_new_sticker_set(guest, NAME, "T", [InputSticker(png(), ["abc"], "static")])
    with pytest.raises(BadRequest, match=r"(?i)too many stickers specified"):
        await bot.create_new_sticker_set(guest, NAME, "T", [InputSticker("x", ["😀"], "static")] * 51)
    with pytest.raises(BadRequest, match=r"(?i)STICKERS_EMPTY"):
        await bot.create_new_sticker_set(guest, NAME, "T", [])
    with pytest.raises(BadRequest, match=r"(?i)PACK_TITLE_INVALID"):
        await bot.create_new_sticker_set(guest, NAME, "x" * 65, [InputSticker(png(), ["😀"], "static")])
    with pytest.raises(BadRequest, match="Wrong file identifier/http url specified"):
        await bot.create_new_sticker_set(guest, NAME, "T", [InputSticker("no-such-file", ["😀"], "static")])


async def test_add_sticker_then_delete_the_set(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    stickers = await upload(bot, guest, 2)
    await bot.create_new_sticker_set(guest, NAME, "Growing", stickers)

    assert await bot.add_sticker_to_set(guest, NAME, InputSticker(png(seed=9), ["🔥"], "static"))
    assert [s.emoji for s in (await bot.get_sticker_set(NAME)).stickers] == ["😀", "😀", "🔥"]

    assert await bot.delete_sticker_set(NAME)
    with pytest.raises(BadRequest, match=r"(?i)STICKERSET_INVALID"):
        await bot.get_sticker_set(NAME)
    assert await tgsim.get("/sim/sticker-sets") == []


async def test_the_same_bytes_uploaded_twice_are_added_twice(bot: Bot, guest: int) -> None:
    """Every upload is a new file, so repeating an add whose outcome was unknown makes a duplicate."""
    await bot.create_new_sticker_set(guest, NAME, "Growing", await upload(bot, guest, 1))

    assert await bot.add_sticker_to_set(guest, NAME, InputSticker(png(seed=9), ["🔥"], "static"))
    assert await bot.add_sticker_to_set(guest, NAME, InputSticker(png(seed=9), ["🔥"], "static"))

    stickers = (await bot.get_sticker_set(NAME)).stickers
    assert [s.emoji for s in stickers] == ["😀", "🔥", "🔥"]
    assert len({s.file_id for s in stickers}) == 3


async def test_exactly_the_same_sticker_added_again_leaves_the_set_unchanged(bot: Bot, guest: int) -> None:
    """core.telegram.org/bots/api#addstickertoset: the same file (an upload's or a set sticker's
    ``file_id``) given again changes nothing."""
    await bot.create_new_sticker_set(guest, NAME, "Growing", await upload(bot, guest, 1))
    uploaded = await bot.upload_sticker_file(guest, png(seed=7), "static")
    extra = InputSticker(uploaded.file_id, ["🔥"], "static")

    assert await bot.add_sticker_to_set(guest, NAME, extra)
    assert await bot.add_sticker_to_set(guest, NAME, extra)
    in_set = (await bot.get_sticker_set(NAME)).stickers
    assert await bot.add_sticker_to_set(guest, NAME, InputSticker(in_set[0].file_id, ["😀"], "static"))

    assert len((await bot.get_sticker_set(NAME)).stickers) == 2


async def test_a_static_set_holds_at_most_120_stickers(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await bot.create_new_sticker_set(guest, NAME, "Full", await upload(bot, guest, 1))
    record = tgsim.sim.state.find_sticker_set(NAME)
    assert record is not None
    first = record.stickers[0]
    record.stickers.extend(
        StickerRecord(file_id=first.file_id, emoji_list=["😀"], source_blob_id=f"copy{n}") for n in range(119)
    )

    with pytest.raises(BadRequest, match=r"(?i)STICKERS_TOO_MUCH"):
        await bot.add_sticker_to_set(guest, NAME, InputSticker(png(seed=5), ["😀"], "static"))


async def test_a_429_after_apply_leaves_a_set_to_reconcile_with_get_sticker_set(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    stickers = await upload(bot, guest, 3)
    fault = {
        "method": "createNewStickerSet",
        "kind": "error_after_apply",
        "error_code": 429,
        "retry_after": 2,
    }
    await tgsim.post("/sim/faults", fault)

    with pytest.raises(RetryAfter):
        await bot.create_new_sticker_set(guest, NAME, "Applied anyway", stickers)

    assert len((await bot.get_sticker_set(NAME)).stickers) == 3
    (call,) = await tgsim.get("/sim/calls?method=createNewStickerSet")
    assert (call["ok"], call["error_code"], call["fault"]) == (False, 429, "error_after_apply")


async def test_a_body_over_the_request_limit_is_a_413_that_applies_nothing() -> None:
    """python-telegram-bot raises an HTTP 413 as a plain ``NetworkError`` with Telegram's description."""
    stickers = [InputSticker(png(seed=seed), ["😀"], "static") for seed in range(4)]
    runner, tgsim = await serve(sim_config(max_request_bytes=len(png()) * 2))
    try:
        await tgsim.say(GUEST_ID, "/start", first_name="Ann")
        async with tgsim.bot() as bot:
            with pytest.raises(NetworkError, match="Request Entity Too Large"):
                await bot.create_new_sticker_set(GUEST_ID, NAME, "Too big", stickers)
            assert await tgsim.get("/sim/sticker-sets") == []

            assert await bot.create_new_sticker_set(GUEST_ID, NAME, "Fits", stickers[:1])
        (refused, created) = await tgsim.get("/sim/calls?method=createNewStickerSet")
        assert (refused["ok"], refused["error_code"], created["ok"]) == (False, 413, True)
    finally:
        await tgsim.http.close()
        await runner.cleanup()


async def test_an_injected_413_reads_as_telegram_words_it(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await tgsim.post("/sim/faults", {"method": "createNewStickerSet", "error_code": 413})

    with pytest.raises(NetworkError, match="Request Entity Too Large"):
        await bot.create_new_sticker_set(guest, NAME, "Too big", [InputSticker(png(), ["😀"], "static")])
    assert await tgsim.get("/sim/sticker-sets") == []


async def test_a_sticker_of_a_set_is_sent_by_its_file_id_under_a_url_button(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await bot.create_new_sticker_set(guest, NAME, "Ann", await upload(bot, guest, 2))
    first = (await bot.get_sticker_set(NAME)).stickers[0]
    add = InlineKeyboardMarkup(
        [[InlineKeyboardButton("Add stickers", url=f"https://t.me/addstickers/{NAME}")]]
    )
    sent = await bot.send_sticker(guest, first.file_id, reply_markup=add)
    assert sent.sticker is not None and sent.sticker.file_id == first.file_id
    assert sent.sticker.set_name == NAME and sent.sticker.emoji == "😀"
    assert sent.reply_markup == add
    stored = (await tgsim.get(f"/sim/chats/{guest}/messages"))[-1]
    assert stored["sticker"]["file_id"] == first.file_id and stored["reply_markup"] == add.to_dict()
    with pytest.raises(BadRequest, match=r"(?i)wrong file identifier/http url specified"):
        await bot.send_sticker(guest, first.file_id + "x")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://t.me/addstickers/x_by_bot", None),
        ("t.me/addstickers/x_by_bot", None),  # TDLib takes a URL without a scheme as http
        ("http://example.com:8080/a?b#c", None),
        ("tg://resolve?domain=stickers", None),
        ("happ://add/https://example.com", "Unsupported URL protocol"),
        ("https://", "Wrong HTTP URL"),
        ("https://exa mple.com", "Wrong HTTP URL"),
        ("https://example.com:99999/", "Wrong port number specified in the URL"),
    ],
)
def test_a_url_buttons_url_is_checked_as_tdlib_does(url: str, reason: str | None) -> None:
    assert url_problem(url) == reason


async def test_a_url_button_with_a_bad_url_is_refused_with_telegrams_words(bot: Bot, guest: int) -> None:
    bad = InlineKeyboardMarkup([[InlineKeyboardButton("Go", url="happ://add/x")]])
    with pytest.raises(BadRequest) as refused:
        await bot.send_message(guest, "hi", reply_markup=bad)
    assert refused.value.message.lower() == (
        "inline keyboard button url 'happ://add/x' is invalid: unsupported url protocol"
    )


async def test_an_incomplete_fault_hides_the_last_stickers_of_one_read_only(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    assert await bot.create_new_sticker_set(guest, NAME, "Ann at the booth", await upload(bot, guest, 12))
    await tgsim.post("/sim/faults", {"method": "getStickerSet", "kind": "incomplete", "visible_stickers": 5})
    await tgsim.post("/sim/faults", {"method": "getStickerSet", "kind": "incomplete"})

    reads = [len((await bot.get_sticker_set(NAME)).stickers) for _ in range(3)]

    assert reads == [5, 11, 12]  # the set itself stays whole
    assert len((await tgsim.get(f"/sim/sticker-sets/{NAME}"))["stickers"]) == 12


async def test_an_incomplete_fault_is_for_get_sticker_set_only(tgsim: RunningSim) -> None:
    await tgsim.post("/sim/faults", {"method": "sendMessage", "kind": "incomplete"}, status=400)
