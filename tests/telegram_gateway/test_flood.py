"""Flood control through python-telegram-bot against the Telegram simulator: a 429 pauses only its chat or
method, a long wait goes back to the producer as a 429 result, and the gateway keeps Telegram's 1 message
per second per private chat itself (issue 8)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from telegram.ext import Application

from shared import streams
from shared.db.tables import tg_commands
from shared.domain import TelegramCommandRecord
from shared.messages import TelegramResult, decode
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.flood import FloodLimiter
from telegram_gateway.main import build_application, reconcile_outbox, register_handlers
from telegram_gateway.polling import poll_updates
from telegram_gateway.settings import GatewaySettings
from tests.simulators.tgsim_helpers import BOT_USERNAME, TOKEN, RunningSim, serve, sim_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST, OTHER, ADMIN = 5001, 5002, 1000
LEADS_CHAT = -1001234567890


@dataclass
class Gateway:
    """The gateway's real application (rate limiter, handlers, polling) and command executor."""

    sim: RunningSim
    application: Application  # type: ignore[type-arg]
    executor: CommandExecutor
    db: Database
    redis: aioredis.Redis
    settings: GatewaySettings
    since: int = 0  # the call log's sequence number after the setup's greetings

    async def command(self, command_id: str, method: str, params: dict[str, Any]) -> None:
        async with self.db.transaction() as repos:
            await repos.tg_commands.add(command_id, method=method, params=params, reply_to="tests")

    async def results(self) -> dict[str, TelegramResult]:
        entries = await self.redis.xrange(streams.results_stream("tests"))
        decoded = [decode(fields) for _id, fields in entries]
        return {r.command_id: r for r in decoded if isinstance(r, TelegramResult)}

    async def sends(self) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = await self.sim.get(f"/sim/calls?method=sendMessage&since={self.since}")
        return calls

    async def bot_texts(self, chat_id: int) -> list[str]:
        messages = await self.sim.get(f"/sim/chats/{chat_id}/messages")
        return [m["text"] for m in messages if m["from_bot"] and not m["text"].startswith("Hi!")]


async def start_gateway(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, **sim: Any
) -> tuple[Gateway, Callable[[], Awaitable[None]]]:
    runner, running = await serve(sim_config(**sim))
    settings = GatewaySettings(  # type: ignore[call-arg]
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        TELEGRAM_BOT_TOKEN=TOKEN,
        BOT_USERNAME=BOT_USERNAME,
        TELEGRAM_API_BASE_URL=running.url,
        ADMIN_USER_IDS=str(ADMIN),
        LEADS_CHAT_ID=str(LEADS_CHAT),
        POLL_TIMEOUT_SEC=1,
        SENDING_STALE_SEC=1,
    )
    application = build_application(settings)
    publisher = Publisher(redis)
    register_handlers(application, db=db, publisher=publisher, settings=settings)
    await application.initialize()
    await application.start()
    stop = asyncio.Event()
    poller = asyncio.create_task(poll_updates(application, stop, timeout_s=1))
    executor = CommandExecutor(
        bot=application.bot, db=db, publisher=publisher, sending_stale_s=settings.sending_stale_sec
    )
    await running.say(ADMIN, "Lead cards go here", chat_id=LEADS_CHAT, chat_title="Leads")
    made = Gateway(running, application, executor, db, redis, settings)
    async with asyncio.timeout(10):  # both guests have the bot's greeting before a test injects faults
        for user in (GUEST, OTHER):
            await running.say(user, "hello", first_name="Ann", language_code="en")
            await wait_for_text(made, user, "Hi!")
    made.since = max(c["seq"] for c in await running.get("/sim/calls"))

    async def cleanup() -> None:
        poller.cancel()
        await asyncio.gather(poller, return_exceptions=True)
        await application.stop()
        await application.shutdown()
        await running.http.close()
        await runner.cleanup()

    return made, cleanup


@pytest.fixture
async def gateway(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[Gateway]:
    made, cleanup = await start_gateway(db, redis, database_url, redis_url)
    yield made
    await cleanup()


def chat_of(call: dict[str, Any]) -> int:
    """The chat of a logged call (the simulator logs form parameters as strings)."""
    return int(call["params"]["chat_id"])


async def wait_for_text(gateway: Gateway, chat_id: int, prefix: str) -> None:
    while True:
        messages = await gateway.sim.get(f"/sim/chats/{chat_id}/messages")
        if any(m["from_bot"] and m["text"].startswith(prefix) for m in messages):
            return
        await asyncio.sleep(0.05)


async def test_a_long_flood_wait_on_a_lead_card_does_not_delay_a_guests_start(gateway: Gateway) -> None:
    """The issue's "done when": a 120 s ``retry_after`` on one lead card; a guest presses Start meanwhile
    and gets the bot's answer within seconds (AIORateLimiter made every request wait ~120 s)."""
    await gateway.sim.post(
        "/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 120, "count": 1}
    )
    card = {"chat_id": LEADS_CHAT, "text": "Lead #1"}
    await gateway.command("lead:1:card:1", "send_message", card)
    async with asyncio.timeout(10):
        await gateway.executor.execute("lead:1:card:1")
    async with gateway.db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="kiosk-token-flood")
    await gateway.sim.say(GUEST, "/start kiosk-token-flood", first_name="Ann", language_code="en")
    async with asyncio.timeout(10):
        await wait_for_text(gateway, GUEST, "You're linked!")
    async with gateway.db.transaction() as repos:
        bound = await repos.sessions.get(session.id)
    assert bound is not None and bound.tg_chat_id == GUEST
    # the card waits in the outbox: the same row, pending until the wait is over, nothing was posted
    assert "lead:1:card:1" not in await gateway.results()
    await assert_deferred(gateway, "lead:1:card:1", about_s=120)
    assert await gateway.bot_texts(LEADS_CHAT) == []


async def test_a_call_to_a_chat_still_paused_longer_than_the_bound_is_deferred_at_once_without_a_request(
    gateway: Gateway,
) -> None:
    await gateway.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 120})
    await gateway.command("lead:1:card:1", "send_message", {"chat_id": LEADS_CHAT, "text": "Lead #1"})
    await gateway.command("lead:2:card:1", "send_message", {"chat_id": LEADS_CHAT, "text": "Lead #2"})
    await gateway.executor.execute("lead:1:card:1")
    async with asyncio.timeout(30):  # at once, not after the 120 s pause
        await gateway.executor.execute("lead:2:card:1")
    await assert_deferred(gateway, "lead:2:card:1", about_s=120)
    to_group = [c for c in await gateway.sends() if chat_of(c) == LEADS_CHAT]
    assert len(to_group) == 1  # only the first card reached the simulator (and got the 429)
    await gateway.executor.execute("lead:2:card:1")  # a redelivered hint before not_before sends nothing
    assert len([c for c in await gateway.sends() if chat_of(c) == LEADS_CHAT]) == 1
    assert await gateway.results() == {}  # a deferral publishes nothing: the producer sees no 429


async def test_a_guest_whose_chat_is_under_a_120_s_flood_wait_gets_youre_linked_when_it_ends(
    gateway: Gateway,
) -> None:
    """Issue 21's "done when": the polling handler's reply in a chat paused for 120 s (beyond the
    handler's 2 s bound) is deferred, not dropped; nothing goes early, not even on a redelivered hint; when
    the wait is over the gateway's reconciler publishes it and the guest gets "You're linked!" once."""
    async with gateway.db.transaction() as repos:
        await repos.sessions.create(station="s", token="kiosk-token-paused")
    fault = {"method": "sendMessage", "chat_id": GUEST, "error_code": 429, "retry_after": 120, "count": 1}
    await gateway.sim.post("/sim/faults", fault)
    await gateway.sim.say(GUEST, "/start kiosk-token-paused", first_name="Ann", language_code="en")
    async with asyncio.timeout(10):
        while not await gateway.sends():  # the handler's reply met the 429
            await asyncio.sleep(0.05)
        reply = await reply_row(gateway)
        while reply.status != "pending":
            reply = await reply_row(gateway)
    await assert_deferred(gateway, reply.command_id, about_s=120)
    assert reply.subject is not None and reply.subject["kind"] == "update"
    await gateway.executor.execute(reply.command_id)  # a redelivered hint before not_before
    await reconcile(gateway)  # and the reconciler: not due yet
    assert [c["ok"] for c in await gateway.sends()] == [False]
    assert not [t for t in await gateway.bot_texts(GUEST) if t.startswith("You're linked!")]

    await let_the_wait_pass(gateway, 121)
    assert await reconcile(gateway) == [reply.command_id]
    texts = await gateway.bot_texts(GUEST)
    assert len([t for t in texts if t.startswith("You're linked!")]) == 1
    assert [c["ok"] for c in await gateway.sends()] == [False, True]
    assert (await reply_row(gateway)).status == "sent"
    assert await reconcile(gateway) == []  # sent once: nothing left to publish


async def reply_row(gateway: Gateway) -> TelegramCommandRecord:
    """The gateway's latest reply (subject ``update``) into the guest's chat."""
    async with gateway.db.transaction() as repos:
        command_id = (
            await repos.conn.execute(
                sa.select(tg_commands.c.command_id)
                .where(tg_commands.c.subject["kind"].astext == "update")
                .where(tg_commands.c.params["chat_id"].astext == str(GUEST))
                .order_by(tg_commands.c.created_at.desc())
                .limit(1)
            )
        ).scalar_one()
        record = await repos.tg_commands.get(command_id)
    assert record is not None
    return record


async def assert_deferred(gateway: Gateway, command_id: str, *, about_s: float) -> None:
    """The row is ``pending`` again as its 2nd attempt, not before ~``about_s`` from now."""
    async with gateway.db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
        now = (await repos.conn.execute(sa.select(sa.func.now()))).scalar_one()
    assert record is not None and record.status == "pending" and record.attempt == 2
    assert record.not_before is not None and abs((record.not_before - now).total_seconds() - about_s) < 10


async def let_the_wait_pass(gateway: Gateway, seconds: float) -> None:
    """As if ``seconds`` had passed: the rows' ``not_before`` moves back, and the limiter's clock on."""
    async with gateway.db.transaction() as repos:
        back = timedelta(seconds=seconds)
        await repos.conn.execute(sa.update(tg_commands).values(not_before=tg_commands.c.not_before - back))
    limiter = gateway.application.bot.rate_limiter
    assert isinstance(limiter, FloodLimiter)
    limiter._clock = lambda: time.monotonic() + seconds


async def reconcile(gateway: Gateway) -> list[str]:
    """One tick of the gateway's outbox reconciler; the hints it published are executed (as the
    ``tg:outbox`` consumer would). Returns their command ids."""
    before = await gateway.redis.xrange(streams.TG_OUTBOX)
    await reconcile_outbox(gateway.db, Publisher(gateway.redis), gateway.settings)
    hints = (await gateway.redis.xrange(streams.TG_OUTBOX))[len(before) :]
    ids = [decode(fields).command_id for _, fields in hints]  # type: ignore[union-attr]
    for command_id in ids:
        await gateway.executor.execute(command_id)
    return ids


async def test_a_short_flood_wait_pauses_only_that_chat_and_its_message_is_sent_once(
    gateway: Gateway,
) -> None:
    await gateway.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 2})
    await gateway.command("cmd:guest", "send_message", {"chat_id": GUEST, "text": "for the guest"})
    await gateway.command("cmd:other", "send_message", {"chat_id": OTHER, "text": "for another guest"})
    waiting = asyncio.create_task(gateway.executor.execute("cmd:guest"))
    while not await gateway.sends():
        await asyncio.sleep(0.02)
    await gateway.executor.execute("cmd:other")  # another chat goes on while the guest's chat waits
    await waiting
    results = await gateway.results()
    assert results["cmd:guest"].ok and results["cmd:other"].ok
    assert await gateway.bot_texts(GUEST) == ["for the guest"]
    calls = [(chat_of(c), c["ok"]) for c in await gateway.sends()]
    assert calls == [(GUEST, False), (OTHER, True), (GUEST, True)]


async def test_messages_to_one_private_chat_are_paced_one_per_second_while_another_chat_is_not(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    # the simulator enforces Telegram's 1 message/s per private chat (with a burst of 3) and answers 429
    made, cleanup = await start_gateway(db, redis, database_url, redis_url, private_per_second=1)
    try:
        for n in range(4):
            await made.command(f"cmd:guest:{n}", "send_message", {"chat_id": GUEST, "text": f"#{n}"})
        await made.command("cmd:other", "send_message", {"chat_id": OTHER, "text": "hi"})
        guest = [asyncio.create_task(made.executor.execute(f"cmd:guest:{n}")) for n in range(4)]
        async with asyncio.timeout(20):  # the guest's first message is out before the other chat's
            while not await made.sends():
                await asyncio.sleep(0.02)
        await made.executor.execute("cmd:other")
        await asyncio.gather(*guest)
        calls = await made.sends()
        assert all(c["ok"] for c in calls)  # the gateway caused no 429
        to_guest = [c["at"] for c in calls if chat_of(c) == GUEST]
        assert len(to_guest) == 4
        assert all(b - a >= 0.95 for a, b in itertools.pairwise(to_guest))
        order = [chat_of(c) for c in calls]
        assert order.index(OTHER) == 1  # the other chat did not queue behind the guest's messages
    finally:
        await cleanup()


async def test_a_handler_reply_in_a_paused_chat_does_not_hold_up_other_guests_updates(
    gateway: Gateway,
) -> None:
    """Polling handles updates one at a time: a handler must not sleep one guest's 20 s pause (it fails
    its reply at once, logged), or every other guest's answer waits those 20 s too."""
    await gateway.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 20})
    await gateway.sim.say(GUEST, "hello again", first_name="Ann", language_code="en")
    while not await gateway.sends():  # the guest's reply got the 429
        await asyncio.sleep(0.05)
    await gateway.sim.say(OTHER, "/start", first_name="Bob", language_code="en")
    # under the 20 s pause (itself under the 30 s TELEGRAM_FLOOD_WAIT_MAX_SEC a handler must not sleep)
    async with asyncio.timeout(15):
        while len(await gateway.sends()) < 2:
            await asyncio.sleep(0.05)
    first, second = await gateway.sends()
    assert (chat_of(first), first["ok"], chat_of(second), second["ok"]) == (GUEST, False, OTHER, True)


async def test_a_call_waiting_out_a_flood_wait_longer_than_sending_stale_is_not_marked_unknown(
    gateway: Gateway,
) -> None:
    """``SENDING_STALE_SEC`` is 1 s here; the call waits 3 s in the limiter. A redelivery meanwhile must
    neither record "outcome unknown" nor stop the call; the message goes out once and is stored sent."""
    await gateway.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 3})
    await gateway.command("cmd:slow", "send_message", {"chat_id": GUEST, "text": "your link"})
    waiting = asyncio.create_task(gateway.executor.execute("cmd:slow"))
    async with asyncio.timeout(20):  # the first try got the 429; the row has been "sending" since before it
        while not await gateway.sends():
            await asyncio.sleep(0.02)
    await asyncio.sleep(1.5)  # longer than SENDING_STALE_SEC, well within the 3 s wait
    async with gateway.db.transaction() as repos:
        due = await repos.tg_commands.due_for_dispatch(
            grace=timedelta(hours=1),
            republish_after=timedelta(hours=1),
            limit=10,
            sending_stale=timedelta(seconds=1),
        )
    assert [r.command_id for r in due] == []  # the reconciler sees a live call
    await gateway.executor.execute("cmd:slow")  # the stream redelivers the hint
    await waiting
    results = await gateway.results()
    assert list(results) == ["cmd:slow"] and results["cmd:slow"].ok
    assert await gateway.bot_texts(GUEST) == ["your link"]
    async with gateway.db.transaction() as repos:
        record = await repos.tg_commands.get("cmd:slow")
    assert record is not None and record.status == "sent"


async def test_a_sticker_method_flood_wait_pauses_that_method_not_the_chats(gateway: Gateway) -> None:
    await gateway.sim.post("/sim/faults", {"method": "getStickerSet", "error_code": 429, "retry_after": 300})
    await gateway.command("job:x:poll:1", "get_sticker_set", {"name": "a_by_stickerbooth_bot"})
    await gateway.command("job:x:poll:2", "get_sticker_set", {"name": "b_by_stickerbooth_bot"})
    await gateway.command("cmd:guest", "send_message", {"chat_id": GUEST, "text": "still here"})
    async with asyncio.timeout(30):  # at once, not after the 300 s pause
        for command_id in ("job:x:poll:1", "job:x:poll:2", "cmd:guest"):
            await gateway.executor.execute(command_id)
    results = await gateway.results()
    for poll in ("job:x:poll:1", "job:x:poll:2"):  # both wait for the method's pause, the 2nd unsent
        assert poll not in results
        await assert_deferred(gateway, poll, about_s=300)
    assert results["cmd:guest"].ok
    assert len(await gateway.sim.get(f"/sim/calls?method=getStickerSet&since={gateway.since}")) == 1


def test_the_limiter_scopes_calls_by_chat_or_by_method() -> None:
    from telegram_gateway.flood import is_message, scope_of

    assert scope_of("sendMessage", {"chat_id": -100}).key == "chat:-100"
    assert (
        scope_of("createNewStickerSet", {"user_id": 5, "name": "n"}).key
        == "method:createNewStickerSet:user:5"
    )
    assert scope_of("getStickerSet", {"name": "n"}).key == "method:getStickerSet"
    assert is_message("sendMessage") and is_message("editMessageText")
    assert not is_message("getStickerSet") and not is_message("answerCallbackQuery")
    assert not is_message("sendChatAction")


async def test_one_guests_sticker_flood_wait_holds_up_no_other_guests_set() -> None:
    """A 429 of 120 s on guest 1's ``createNewStickerSet`` pauses guest 1's sticker calls only: guest 2's
    set is created at once, and guest 1's next call fails at once without being sent (found by the chaos
    run, where a method-wide pause kept every other guest's set waiting)."""
    from datetime import timedelta

    from telegram.error import RetryAfter

    from telegram_gateway.flood import FloodLimiter

    limiter = FloodLimiter()
    sent: list[int] = []

    async def create(user_id: int) -> bool:
        sent.append(user_id)
        if user_id == 1 and sent.count(1) == 1:
            raise RetryAfter(timedelta(seconds=120))
        return True

    async def call(user_id: int) -> bool | dict[str, Any] | list[dict[str, Any]]:
        return await limiter.process_request(
            create, (user_id,), {}, "createNewStickerSet", {"user_id": user_id, "name": f"s{user_id}"}, None
        )

    with pytest.raises(RetryAfter):
        await call(1)
    async with asyncio.timeout(30):  # at once, not after guest 1's 120 s pause
        assert await call(2) is True
    with pytest.raises(RetryAfter):
        await call(1)
    assert sent == [1, 2]
