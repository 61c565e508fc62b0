"""Sticker-set creation through the executor, python-telegram-bot and the Telegram simulator, whose request
limit answers a real HTTP 413 when a body is too large: a smaller set plus ``addStickerToSet`` for the rest,
resumable after any failure, never two sets and never a sticker twice."""

from __future__ import annotations

import asyncio
import io
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from aiohttp import web
from PIL import Image
from telegram.ext import ExtBot
from telegram.request import HTTPXRequest

from shared import streams
from shared.messages import TelegramResult, decode
from shared.repositories import Database
from shared.streams import Publisher
from simulators.telegram.app import create_app
from simulators.telegram.config import SimConfig
from telegram_gateway.executor import CommandExecutor, TelegramUnreachable
from telegram_gateway.flood import FloodLimiter
from telegram_gateway.sticker_sets import MEDIA_TIMEOUT_S, first_batches

pytestmark = pytest.mark.integration
TOKEN = "123456789:TEST-token-for-the-simulator-000000000"
GUEST = 4343
NAME = "sbbigset_by_stickerbooth_bot"
EMOJI = ["😀", "😃", "😄", "😁", "😆", "😅", "😂", "🤣", "😊", "😇", "🙂", "🙃"]


def sticker_png(seed: int) -> bytes:
    """A 512x512 PNG with an incompressible band, so that its size (about 64 KB) dominates a request."""
    image = Image.new("RGBA", (512, 512), (seed * 20, 0, 0, 255))
    band = random.Random(seed).randbytes(512 * 32 * 4)
    image.paste(Image.frombytes("RGBA", (512, 32), band), (0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def solid_png(seed: int) -> bytes:
    """A 512x512 single-colour PNG (a few KB)."""
    buffer = io.BytesIO()
    Image.new("RGBA", (512, 512), (0, seed * 20, 0, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


STICKERS = [sticker_png(seed) for seed in range(12)]
#: Bytes of the largest sticker: a body of 12 is over 8 of them, a body of 6 well under.
BIGGEST = max(len(data) for data in STICKERS)


class Stack:
    """The simulator at ``url`` and a way to build gateways (executors) talking to it."""

    def __init__(self, url: str, db: Database, redis: aioredis.Redis) -> None:
        self.url = url
        self.db = db
        self.redis = redis
        self.bots: list[ExtBot[None]] = []

    async def executor(
        self,
        *,
        sending_stale_s: float = 60.0,
        read_timeout: float = 5.0,
        media_timeout_s: float | None = None,
    ) -> CommandExecutor:
        """A gateway's executor: python-telegram-bot's default read timeout (5 s) unless ``read_timeout``
        is given, which is then the sticker calls' timeout too unless ``media_timeout_s`` is given (the
        gateway's ``TELEGRAM_MEDIA_TIMEOUT_SEC`` default when both are left out)."""
        if media_timeout_s is None:
            media_timeout_s = read_timeout if read_timeout != 5.0 else MEDIA_TIMEOUT_S
        bot: ExtBot[None] = ExtBot(
            TOKEN,
            base_url=f"{self.url}/bot",
            base_file_url=f"{self.url}/file/bot",
            rate_limiter=FloodLimiter(),
            request=HTTPXRequest(read_timeout=read_timeout),
        )
        await bot.initialize()
        self.bots.append(bot)
        return CommandExecutor(
            bot=bot,
            db=self.db,
            publisher=Publisher(self.redis),
            sending_stale_s=sending_stale_s,
            media_timeout_s=media_timeout_s,
        )

    async def sim(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        async with httpx.AsyncClient(base_url=self.url) as client:
            response = await client.request(method, path, json=body)
            response.raise_for_status()
            return response.json()

    async def fault(self, **spec: Any) -> None:
        await self.sim("POST", "/sim/faults", spec)

    async def calls(self, method: str) -> list[tuple[bool, int | None]]:
        return [(c["ok"], c["error_code"]) for c in await self.sim("GET", f"/sim/calls?method={method}")]

    async def set_contents(self) -> list[tuple[str, bytes]]:
        """The set's stickers as (emoji, bytes) in order, read from the simulator."""
        detail = await self.sim("GET", f"/sim/sticker-sets/{NAME}")
        async with httpx.AsyncClient(base_url=self.url) as client:
            return [(s["emoji_list"][0], (await client.get(s["url"])).content) for s in detail["stickers"]]


@pytest.fixture
async def serve(db: Database, redis: aioredis.Redis) -> AsyncIterator[Callable[[int], Awaitable[Stack]]]:
    runners: list[web.AppRunner] = []
    stacks: list[Stack] = []

    async def start(max_request_bytes: int) -> Stack:
        config = SimConfig(
            token=TOKEN,
            bot_username="stickerbooth_bot",
            private_per_second=0,
            global_per_second=0,
            max_request_bytes=max_request_bytes,
        )
        runner = web.AppRunner(create_app(config), shutdown_timeout=5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        host, port = runner.addresses[0][:2]
        stack = Stack(f"http://{host}:{port}", db, redis)
        stacks.append(stack)
        await stack.sim("POST", f"/sim/users/{GUEST}/messages", {"text": "/start", "first_name": "Ann"})
        return stack

    yield start
    for stack in stacks:
        for bot in stack.bots:
            await bot.shutdown()
    for runner in runners:
        await runner.cleanup()


async def add_command(db: Database, command_id: str, stickers: list[bytes] = STICKERS) -> None:
    async with db.transaction() as repos:
        blob_ids = [
            str(await repos.blobs.put(kind="sticker", data=data, content_type="image/png"))
            for data in stickers
        ]
        await repos.tg_commands.add(
            command_id,
            method="create_sticker_set",
            reply_to="tests",
            params={
                "user_id": GUEST,
                "name": NAME,
                "title": "Big pack",
                "stickers": [{"blob_id": b, "emoji": e} for b, e in zip(blob_ids, EMOJI, strict=True)],
            },
        )


async def results(redis: aioredis.Redis) -> list[TelegramResult]:
    return [decode(fields) for _id, fields in await redis.xrange(streams.results_stream("tests"))]  # type: ignore[misc]


async def execute_until_done(executor: CommandExecutor, command_id: str, *, runs: int = 5) -> int:
    """Run the command as the stream would redeliver it; returns how many runs handed it back."""
    handed_back = 0
    for _ in range(runs):
        try:
            await executor.execute(command_id)
        except TelegramUnreachable:
            handed_back += 1
            continue
        return handed_back
    raise AssertionError(f"{command_id} still handed back after {runs} runs")


def test_the_first_batch_halves_down_to_one_sticker() -> None:
    assert first_batches(12) == [12, 6, 3, 1]
    assert first_batches(1) == [1]


async def test_a_413_creates_a_smaller_set_then_adds_the_rest_in_order(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    stack = await serve(BIGGEST * 8)
    executor = await stack.executor()
    await add_command(db, "job:big:create_set")

    await executor.execute("job:big:create_set")

    (result,) = await results(redis)
    assert result.ok and result.result == {"created": True, "sticker_count": 12}
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))
    assert await stack.calls("createNewStickerSet") == [(False, 413), (True, None)]
    assert await stack.calls("addStickerToSet") == [(True, None)] * 6


async def test_an_injected_413_falls_back_the_same_way(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    stack = await serve(BIGGEST * 20)
    executor = await stack.executor()
    await stack.fault(method="createNewStickerSet", error_code=413)
    await add_command(db, "job:big:create_set")

    await executor.execute("job:big:create_set")

    (result,) = await results(redis)
    assert result.ok and result.result == {"created": True, "sticker_count": 12}
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))
    assert await stack.calls("createNewStickerSet") == [(False, 413), (True, None)]


@pytest.mark.parametrize(
    ("fault", "hand_backs"),
    [
        # a short 429 is reconciled inside the run (the production limiter never repeats an add itself)
        ({"kind": "error_after_apply", "error_code": 429, "retry_after": 1}, 0),
        ({"kind": "error", "error_code": 429, "retry_after": 1}, 0),
        ({"kind": "error_after_apply", "error_code": 500}, 1),
        ({"kind": "drop_after_apply"}, 1),
        ({"kind": "delay_after_apply", "seconds": 2.0}, 1),
        ({"kind": "error", "error_code": 502}, 1),
    ],
    ids=["429-after-apply", "429", "500-after-apply", "dropped-after-apply", "timed-out-after-apply", "502"],
)
async def test_an_add_that_fails_is_resumed_from_the_set_and_never_doubled(
    serve: Callable[[int], Awaitable[Stack]],
    db: Database,
    redis: aioredis.Redis,
    fault: dict[str, Any],
    hand_backs: int,
) -> None:
    stack = await serve(BIGGEST * 8)
    executor = await stack.executor(read_timeout=1.0)
    await stack.fault(method="addStickerToSet", count=1, **fault)
    await add_command(db, "job:big:create_set")

    handed_back = await execute_until_done(executor, "job:big:create_set")

    assert handed_back == hand_backs
    (result,) = await results(redis)
    assert result.ok and result.result is not None and result.result["sticker_count"] == 12
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))
    assert [ok for ok, _code in await stack.calls("createNewStickerSet")].count(True) == 1


async def test_a_gateway_killed_mid_way_is_finished_by_the_next_one(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    stack = await serve(BIGGEST * 8)
    first = await stack.executor()
    # Set of 6 created, 7th added (a zero delay uses up the first add's turn), the 8th is added and the
    # gateway dies before Telegram's answer arrives.
    await stack.fault(method="addStickerToSet", kind="delay", seconds=0.0)
    await stack.fault(method="addStickerToSet", kind="delay_after_apply", seconds=3.0)
    await add_command(db, "job:big:create_set")
    running = asyncio.create_task(first.execute("job:big:create_set"))
    async with asyncio.timeout(30):  # the 8th sticker arrives: a deadline, not a count of polls
        while True:
            listed = await stack.sim("GET", "/sim/sticker-sets")
            if listed and listed[0]["sticker_count"] == 8:
                break
            await asyncio.sleep(0.02)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("job:big:create_set")
    assert record is not None and record.status == "sending"

    restarted = await stack.executor(sending_stale_s=0.0)
    await restarted.execute("job:big:create_set")

    (result,) = await results(redis)
    assert result.ok and result.result == {"created": False, "sticker_count": 12}
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))
    assert [ok for ok, _code in await stack.calls("createNewStickerSet")].count(True) == 1

    await add_command(db, "job:big:create_set:second")  # a second command for the same set
    await restarted.execute("job:big:create_set:second")
    assert len(await stack.set_contents()) == 12


async def test_a_413_with_a_single_sticker_is_a_failed_result_not_a_loop(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    stack = await serve(BIGGEST // 2)
    executor = await stack.executor()
    await add_command(db, "job:big:create_set")

    await executor.execute("job:big:create_set")

    (result,) = await results(redis)
    assert not result.ok and result.error is not None
    assert "413" in result.error.description and "single sticker" in result.error.description
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("job:big:create_set")
    assert record is not None and record.status == "failed"
    assert await stack.calls("createNewStickerSet") == [(False, 413)] * 4
    assert await stack.sim("GET", "/sim/sticker-sets") == []


async def test_an_occupied_name_whose_set_is_not_readable_yet_is_tried_again_not_failed(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    """A create that applied but whose answer was lost is read back at once; Telegram can report the fresh
    set as ``STICKERSET_INVALID`` for a moment (REFERENCE.md): that is no reason to fail the job, the
    command is tried again, and its create reads "occupied" and the set."""
    stack = await serve(BIGGEST * 20)
    executor = await stack.executor()
    await stack.fault(method="createNewStickerSet", kind="drop_after_apply")
    await stack.fault(method="getStickerSet", error_code=400, description="Bad Request: STICKERSET_INVALID")
    await add_command(db, "job:big:create_set")

    handed_back = await execute_until_done(executor, "job:big:create_set")

    assert handed_back == 1
    (result,) = await results(redis)
    assert result.ok and result.result == {"created": False, "sticker_count": 12}
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))


async def test_a_create_slower_than_the_default_read_timeout_is_waited_for(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    """Telegram answers ``createNewStickerSet`` once it has processed all 12 stickers; under
    python-telegram-bot's default 5 s read timeout a slower answer was a time-out (issue 18)."""
    stack = await serve(BIGGEST * 20)
    executor = (
        await stack.executor()
    )  # PTB's default 5 s read timeout on the bot, the gateway's own on stickers
    await stack.fault(method="createNewStickerSet", kind="delay", seconds=6.0)
    await add_command(db, "job:big:create_set")

    await executor.execute("job:big:create_set")

    (result,) = await results(redis)
    assert result.ok and result.result == {"created": True, "sticker_count": 12}
    assert await stack.calls("createNewStickerSet") == [(True, None)]
    assert await stack.calls("getStickerSet") == []


@pytest.mark.parametrize("fault", ["delay_after_apply", "drop_after_apply"], ids=["timed-out", "dropped"])
async def test_a_create_whose_answer_is_lost_is_reconciled_not_repeated(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis, fault: str
) -> None:
    """A create that applied but timed out (or lost its connection) is read back with ``getStickerSet``
    in the same run, never sent again (that would upload the 12 stickers once more)."""
    stack = await serve(BIGGEST * 20)
    executor = await stack.executor(read_timeout=1.0)
    await stack.fault(method="createNewStickerSet", kind=fault, seconds=2.0)
    await add_command(db, "job:big:create_set")

    handed_back = await execute_until_done(executor, "job:big:create_set")

    assert handed_back == 0
    (result,) = await results(redis)
    assert result.ok and result.result == {"created": False, "sticker_count": 12}
    async with asyncio.timeout(
        10
    ):  # the simulator logs the delayed call when it answers, after the client left
        while not await stack.calls("createNewStickerSet"):
            await asyncio.sleep(0.05)
    assert await stack.calls("createNewStickerSet") == [(True, None)]
    assert await stack.calls("getStickerSet") == [(True, None)]
    assert await stack.set_contents() == list(zip(EMOJI, STICKERS, strict=True))


async def test_a_413_on_adding_one_sticker_is_a_failed_result_not_a_loop(
    serve: Callable[[int], Awaitable[Stack]], db: Database, redis: aioredis.Redis
) -> None:
    stickers = [STICKERS[n] if n == 9 else solid_png(n) for n in range(12)]
    stack = await serve(len(STICKERS[9]) // 2)
    executor = await stack.executor()
    await add_command(db, "job:big:create_set", stickers)

    await executor.execute("job:big:create_set")

    (result,) = await results(redis)
    assert not result.ok and result.error is not None and "single sticker" in result.error.description
    assert await stack.calls("createNewStickerSet") == [(False, 413), (True, None)]
    assert await stack.calls("addStickerToSet") == [(True, None)] * 3 + [(False, 413)]
