"""The control API, the wire formats other than python-telegram-bot's, the watch page and persistence."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from telegram import Bot, InputSticker

from tests.simulators.tgsim_helpers import TOKEN, RunningSim, png, serve, sim_config

pytestmark = pytest.mark.integration


async def call(tgsim: RunningSim, method: str, **kwargs: object) -> tuple[int, dict[str, object]]:
    async with tgsim.http.post(f"{tgsim.url}/bot{TOKEN}/{method}", **kwargs) as response:  # type: ignore[arg-type]
        return response.status, await response.json()


async def test_form_json_and_query_bodies_are_all_understood(tgsim: RunningSim, guest: int) -> None:
    keyboard = json.dumps({"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]})
    status, form = await call(
        tgsim, "SendMessage", data={"chat_id": str(guest), "text": "a", "reply_markup": keyboard}
    )
    assert status == 200 and form["ok"] is True
    status, body = await call(
        tgsim, "sendmessage", json={"chat_id": guest, "text": "b", "disable_notification": True}
    )
    assert status == 200 and body["result"]["text"] == "b"  # type: ignore[index]
    async with tgsim.http.get(
        f"{tgsim.url}/bot{TOKEN}/sendMessage", params={"chat_id": guest, "text": "c"}
    ) as r:
        assert (await r.json())["result"]["text"] == "c"
    status, bad = await call(tgsim, "sendMessage", json={"chat_id": guest, "text": "d", "reply_markup": "{"})
    assert (
        status == 400 and bad["description"] == "Bad Request: can't parse reply keyboard markup JSON object"
    )
    long_data = {"inline_keyboard": [[{"text": "x", "callback_data": "y" * 65}]]}
    status, bad = await call(
        tgsim, "sendMessage", json={"chat_id": guest, "text": "e", "reply_markup": long_data}
    )
    assert bad["description"] == "Bad Request: BUTTON_DATA_INVALID"


async def test_markdown_v2_reserved_characters_must_be_escaped(tgsim: RunningSim, guest: int) -> None:
    status, bad = await call(
        tgsim, "sendMessage", json={"chat_id": guest, "text": "Done.", "parse_mode": "MarkdownV2"}
    )
    assert status == 400
    assert bad["description"] == (
        "Bad Request: can't parse entities: "
        "Character '.' is reserved and must be escaped with the preceding '\\'"
    )
    status, good = await call(
        tgsim, "sendMessage", json={"chat_id": guest, "text": "*Done*\\.", "parse_mode": "MarkdownV2"}
    )
    assert good["result"]["text"] == "Done." and good["result"]["entities"][0]["type"] == "bold"  # type: ignore[index]


async def test_callbacks_need_a_real_button(tgsim: RunningSim, guest: int) -> None:
    async with tgsim.http.post(
        tgsim.url + "/sim/callbacks", json={"user_id": guest, "message_id": 99, "data": "x"}
    ) as r:
        assert r.status == 404
    await call(tgsim, "sendMessage", json={"chat_id": guest, "text": "no buttons"})
    async with tgsim.http.post(
        tgsim.url + "/sim/callbacks", json={"user_id": guest, "message_id": 2, "data": "x"}
    ) as r:
        assert r.status == 400
    async with tgsim.http.get(tgsim.url + "/sim/callbacks/nope") as r:
        assert r.status == 404


async def test_call_log_filters_by_method(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await bot.get_me()
    await bot.send_message(guest, "one")
    await bot.send_message(guest, "two")

    sends = await tgsim.get("/sim/calls?method=SENDMESSAGE")
    assert [c["params"]["text"] for c in sends] == ["one", "two"]
    assert all(c["ok"] for c in sends)
    later = await tgsim.get(f"/sim/calls?since={sends[0]['seq']}")
    assert [c["method"] for c in later] == ["sendMessage"]


async def test_uploads_are_logged_without_their_bytes(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    await bot.upload_sticker_file(guest, png(), "static")

    (upload,) = await tgsim.get("/sim/calls?method=uploadStickerFile")
    assert upload["params"]["sticker"]["size"] == len(png())
    assert upload["params"]["sticker_format"] == "static"


async def test_reset_forgets_everything_but_update_ids_keep_growing(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    (before,) = await bot.get_updates()
    await tgsim.post("/sim/limits", {"private_per_second": 5})
    await tgsim.post("/sim/faults", {"method": "getMe"})

    assert await tgsim.post("/sim/reset") == {"ok": True}

    assert await tgsim.get("/sim/chats") == []
    assert await tgsim.get("/sim/faults") == []
    assert (await tgsim.get("/sim/limits"))["private_per_second"] == 0
    await tgsim.say(guest, "/start")
    (after,) = await bot.get_updates(offset=before.update_id + 1)
    assert after.update_id == before.update_id + 1


async def test_limits_and_faults_reject_bad_bodies(tgsim: RunningSim) -> None:
    for path, body in [
        ("/sim/limits", {"private_per_second": -1}),
        ("/sim/limits", {"no_such_limit": 1}),
        ("/sim/faults", {"method": "sendMessage", "kind": "explode"}),
        ("/sim/users/1/messages", {"text": ""}),
    ]:
        async with tgsim.http.post(tgsim.url + path, json=body) as response:
            assert response.status == 400, path
            assert "error" in await response.json()
    assert (await tgsim.post("/sim/limits", {"group_per_minute": 3}))["group_per_minute"] == 3


async def test_group_flood_limit_counts_per_minute(bot: Bot, tgsim: RunningSim) -> None:
    await tgsim.say(1, "hello", chat_id=-42, chat_title="Crew")
    await tgsim.post("/sim/limits", {"group_per_minute": 2})

    await bot.send_message(-42, "1")
    await bot.send_message(-42, "2")
    status, body = await call(tgsim, "sendMessage", json={"chat_id": -42, "text": "3"})

    assert status == 429
    assert body["description"] == "Too Many Requests: retry after 30"
    assert body["parameters"] == {"retry_after": 30}
    assert (await tgsim.get("/sim/chats"))[0]["type"] == "group"


async def test_allowed_updates_filter_what_is_queued(bot: Bot, tgsim: RunningSim, guest: int) -> None:
    sent = await bot.send_message(
        guest, "pick", reply_markup={"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
    )
    (last,) = await bot.get_updates(offset=-1, allowed_updates=["callback_query"])

    await tgsim.say(guest, "ignored text")
    await tgsim.post("/sim/callbacks", {"user_id": guest, "message_id": sent.message_id, "data": "a"})

    updates = await bot.get_updates(offset=last.update_id + 1)
    assert [u.callback_query is not None for u in updates] == [True]


async def test_watch_page_shows_chats_buttons_and_sticker_images(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await bot.send_message(
        guest, "Pick <one>", reply_markup={"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]}
    )
    await bot.create_new_sticker_set(
        guest, "page_by_stickerbooth_bot", "Page set", [InputSticker(png(), ["😀"], "static")]
    )
    sticker_id = (await bot.get_sticker_set("page_by_stickerbooth_bot")).stickers[0].file_id

    async with tgsim.http.get(tgsim.url + "/") as response:
        page = await response.text()
    async with tgsim.http.get(tgsim.url + "/?fragment=1") as response:
        fragment = await response.text()
    async with tgsim.http.get(tgsim.url + "/healthz") as response:
        assert await response.text() == "ok"

    assert "<html" in page and "Ann" in page and "Pick &lt;one&gt;" in page and ">Yes<" in page
    assert f"/sim/files/{sticker_id}" in page and "class='chk'" in page
    assert "<html" not in fragment and "Page set" in fragment


async def test_state_survives_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    config = sim_config(data_dir=tmp_path)
    runner, running = await serve(config)
    try:
        await running.say(7, "/start")
        async with running.bot() as ptb:
            await ptb.create_new_sticker_set(
                7, "kept_by_stickerbooth_bot", "Kept", [InputSticker(png(), ["😀"], "static")]
            )
    finally:
        await running.http.close()
        await runner.cleanup()

    runner, running = await serve(config)
    try:
        async with running.bot() as ptb:
            kept = await ptb.get_sticker_set("kept_by_stickerbooth_bot")
            data = await (await ptb.get_file(kept.stickers[0].file_id)).download_as_bytearray()
        assert bytes(data) == png()
        assert (await running.get("/sim/chats"))[0]["started"] is True
    finally:
        await running.http.close()
        await runner.cleanup()


async def test_file_download_needs_the_token(tgsim: RunningSim) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{tgsim.url}/file/bot1:nope/stickers/file_1.png") as r,
    ):
        assert r.status == 401
    async with tgsim.http.get(f"{tgsim.url}/file/bot{TOKEN}/stickers/missing.png") as r:
        assert r.status == 404


async def test_an_unreadable_state_file_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{not json")

    runner, running = await serve(sim_config(data_dir=tmp_path))
    try:
        assert await running.get("/sim/chats") == []
    finally:
        await running.http.close()
        await runner.cleanup()

    assert (tmp_path / "state.json.corrupt").read_text() == "{not json"


async def test_a_control_body_with_a_lone_surrogate_is_a_400_not_a_500(tgsim: RunningSim) -> None:
    body = b'{"text": "/start \\ud800"}'
    async with tgsim.http.post(
        f"{tgsim.url}/sim/users/7010/messages", data=body, headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status < 500, await response.text()


async def test_faults_aimed_at_one_chat_can_be_taken_back(tgsim: RunningSim) -> None:
    for chat_id in (701, 702, None):
        await tgsim.post("/sim/faults", {"method": "sendMessage", "error_code": 502, "chat_id": chat_id})
    async with tgsim.http.delete(f"{tgsim.url}/sim/faults?chat_id=701") as response:
        dropped = (await response.json())["dropped"]
    assert [f["chat_id"] for f in dropped] == [701]
    async with tgsim.http.get(f"{tgsim.url}/sim/faults") as response:
        assert [f["chat_id"] for f in await response.json()] == [702, None]
    async with tgsim.http.delete(f"{tgsim.url}/sim/faults?chat_id=x") as response:
        assert response.status == 400
    async with tgsim.http.delete(f"{tgsim.url}/sim/faults") as response:
        assert len((await response.json())["dropped"]) == 2
