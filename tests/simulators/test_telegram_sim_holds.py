"""Flood holds and chat-targeted faults: after a 429 with ``retry_after`` N on a chat or a method, the
simulator keeps refusing it with the seconds left until N has passed, as Telegram does (driven by PTB)."""

from __future__ import annotations

import datetime as dtm

import pytest
from telegram import Bot
from telegram.error import RetryAfter

from simulators.telegram.faults import FaultSpec, FloodHolds
from tests.simulators.tgsim_helpers import RunningSim

pytestmark = pytest.mark.integration
OTHER = 777001


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


async def test_a_chat_hold_refuses_that_chat_only_until_lifted(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await tgsim.say(OTHER, "/start")
    await tgsim.post(
        "/sim/faults",
        {"method": "sendMessage", "error_code": 429, "retry_after": 7200, "chat_id": guest, "hold": True},
    )
    await bot.send_message(OTHER, "not held")  # the fault is aimed at the guest's chat only
    for _ in range(2):
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(guest, "held")
        assert dtm.timedelta(seconds=7100) < caught.value.retry_after <= dtm.timedelta(seconds=7200)
    await bot.send_message(OTHER, "still not held")
    holds = await tgsim.get("/sim/holds")
    assert [h["chat_id"] for h in holds] == [guest]
    calls = await tgsim.get("/sim/calls?method=sendMessage")
    assert [c["fault"] for c in calls if not c["ok"]] == ["error", "hold"]
    assert await tgsim.post("/sim/holds/lift") == {"lifted": 1}
    assert (await bot.send_message(guest, "after the wait")).text == "after the wait"
    texts = [m["text"] for m in await tgsim.get(f"/sim/chats/{guest}/messages") if m["from_bot"]]
    assert texts == ["after the wait"]


async def test_a_method_hold_refuses_the_method_for_every_chat(
    bot: Bot, tgsim: RunningSim, guest: int
) -> None:
    await tgsim.post(
        "/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 90, "hold": True}
    )
    await tgsim.say(OTHER, "/start")
    for chat in (guest, OTHER):
        with pytest.raises(RetryAfter):
            await bot.send_message(chat, "held")
    assert (await bot.get_me()).is_bot  # other methods pass
    await tgsim.post("/sim/holds/lift")
    await bot.send_message(OTHER, "free")


async def test_a_hold_must_be_a_429(tgsim: RunningSim) -> None:
    await tgsim.post("/sim/faults", {"method": "sendMessage", "error_code": 500, "hold": True}, status=400)


def test_holds_count_down_and_end_by_themselves() -> None:
    clock = Clock()
    holds = FloodHolds(clock)
    holds.start(
        FaultSpec(method="uploadStickerFile", error_code=429, retry_after=30, hold=True), "uploadStickerFile"
    )
    refusal = holds.refusal("uploadstickerfile", 5)
    assert refusal is not None and refusal.retry_after == 30
    clock.now += 12.5
    refusal = holds.refusal("uploadStickerFile", None)
    assert refusal is not None and refusal.retry_after == 18 and refusal.error_code == 429
    assert refusal.description == "Too Many Requests: retry after 18"
    clock.now += 18
    assert holds.refusal("uploadStickerFile", 5) is None
    assert holds.active() == []


def test_a_chat_fault_is_taken_only_by_that_chat() -> None:
    from simulators.telegram.faults import FaultQueue

    queue = FaultQueue()
    queue.add(FaultSpec(method="createNewStickerSet", error_code=413, chat_id=42))
    assert queue.take("createNewStickerSet", 41) is None
    taken = queue.take("createnewstickerset", 42)
    assert taken is not None and taken.error_code == 413
    assert queue.pending() == []


def test_a_fault_can_be_aimed_at_requests_with_many_stickers() -> None:
    from simulators.telegram.faults import FaultQueue

    queue = FaultQueue()
    queue.add(FaultSpec(method="createNewStickerSet", error_code=413, count=5, min_stickers=12, chat_id=42))
    assert queue.take("createNewStickerSet", 42, stickers=6) is None  # a smaller request passes
    assert queue.take("createNewStickerSet", 42, stickers=12) is not None
    assert queue.pending()[0].count == 4
