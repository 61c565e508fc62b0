"""The gateway's leadership lease on a real Postgres (issue 22): taken, renewed, expired and taken over as
the next epoch, fenced (a leader that cannot renew stops before its lease ends, and a claim of a
``tg_commands`` row on a lapsed or taken-over lease claims nothing), released on a graceful stop; the
standby's ``tg:outbox`` consumer reads nothing; polling waits while the replica does not lead."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from telegram.ext import ApplicationBuilder, ExtBot, TypeHandler

from shared import streams
from shared.db import create_engine
from shared.db.tables import gateway_lease
from shared.domain import CommandStatus
from shared.messages import TelegramCommand, decode
from shared.repositories import Database
from shared.repositories.gateway_lease import LeaseClaim
from shared.streams import Publisher, StreamConsumer, route
from telegram_gateway.executor import CommandExecutor, NotLeading
from telegram_gateway.lease import GatewayLease
from telegram_gateway.polling import poll_updates
from tests.simulators.tgsim_helpers import TOKEN, RunningSim, serve, sim_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]  # the first waits for a free test slot
TTL = timedelta(seconds=30)
STALE = timedelta(seconds=60)


async def lapse(db: Database) -> None:
    """Make the lease's ``expires_at`` pass now (instead of sleeping out a TTL)."""
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.update(gateway_lease).values(expires_at=sa.func.clock_timestamp() - timedelta(seconds=1))
        )


async def take(db: Database, holder: str, ttl: timedelta = TTL) -> LeaseClaim | None:
    async with db.transaction() as repos:
        return await repos.gateway_lease.take(holder, ttl=ttl)


async def test_the_first_take_is_epoch_1_and_nobody_else_takes_a_running_lease(db: Database) -> None:
    first = await take(db, "a")
    assert first is not None and (first.holder, first.epoch) == ("a", 1)
    assert await take(db, "b") is None
    assert await take(db, "a") is None  # not even its own holder: a lost lease is taken anew, never resumed


async def test_a_renewal_extends_only_the_holders_current_epoch(db: Database) -> None:
    first = await take(db, "a", timedelta(seconds=5))
    assert first is not None
    async with db.transaction() as repos:
        renewed = await repos.gateway_lease.renew("a", 1, ttl=TTL)
        assert renewed is not None and renewed.expires_at > first.expires_at and renewed.epoch == 1
        assert await repos.gateway_lease.renew("b", 1, ttl=TTL) is None
        assert await repos.gateway_lease.renew("a", 2, ttl=TTL) is None


async def test_an_expired_lease_is_taken_as_the_next_epoch_and_the_old_holder_cannot_renew_it(
    db: Database,
) -> None:
    assert await take(db, "a") is not None
    await lapse(db)
    async with db.transaction() as repos:
        assert await repos.gateway_lease.renew("a", 1, ttl=TTL) is None  # expired: no quiet resumption
    second = await take(db, "b")
    assert second is not None and (second.holder, second.epoch) == ("b", 2)
    async with db.transaction() as repos:
        assert await repos.gateway_lease.renew("a", 1, ttl=TTL) is None
        assert await repos.gateway_lease.release("a", 1) is False
        current = await repos.gateway_lease.current()
    assert current is not None and (current.holder, current.epoch) == ("b", 2)


async def add_pending(db: Database, command_id: str) -> None:
    async with db.transaction() as repos:
        await repos.tg_commands.add(
            command_id, method="send_message", params={"chat_id": 1, "text": "hi"}, reply_to=None
        )


async def claim(db: Database, command_id: str, lease: LeaseClaim) -> bool:
    async with db.transaction() as repos:
        return await repos.tg_commands.start_sending(command_id, stale_after=STALE, lease=lease) is not None


async def status(db: Database, command_id: str) -> CommandStatus:
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None
    return record.status


async def test_a_command_is_claimed_only_on_the_current_lease(db: Database) -> None:
    old = await take(db, "a")
    assert old is not None
    await add_pending(db, "c1")
    await add_pending(db, "c2")
    await add_pending(db, "c3")
    assert await claim(db, "c1", old)
    await lapse(db)
    assert not await claim(db, "c2", old)  # lapsed, not yet taken: still nothing
    assert await status(db, "c2") == CommandStatus.PENDING
    new = await take(db, "b")
    assert new is not None
    assert not await claim(db, "c2", old)  # the old leader woke after a partition: claims nothing
    assert await claim(db, "c2", new) and await claim(db, "c3", new)
    assert [await status(db, c) for c in ("c1", "c2", "c3")] == [CommandStatus.SENDING] * 3


async def test_a_graceful_stop_releases_the_lease_for_the_standby_at_once(db: Database) -> None:
    leader = GatewayLease(db, holder="a", ttl_s=30)
    standby = GatewayLease(db, holder="b", ttl_s=30)
    await leader.step()
    await standby.step()
    assert leader.held.is_set() and not standby.held.is_set()
    stop = asyncio.Event()
    stop.set()
    assert await leader.keep(stop) == 0  # one more renewal, then the release
    assert not leader.held.is_set() and leader.current is None
    await standby.step()  # not 30 s later: at its next try
    assert standby.held.is_set() and standby.current is not None and standby.current.epoch == 2


async def test_a_killed_leader_fences_itself_before_the_standby_takes_over(db: Database) -> None:
    """The leader renews once and is then never heard of again (SIGKILL, a lost node): its own timer
    clears ``held`` before its lease ends in Postgres, so the standby only ever takes a fenced lease."""
    leader = GatewayLease(db, holder="a", ttl_s=1.2)
    standby = GatewayLease(db, holder="b", ttl_s=1.2)
    await leader.step()
    assert leader.held.is_set()
    stop = asyncio.Event()
    keeper = asyncio.create_task(standby.keep(stop))
    try:
        async with asyncio.timeout(20):
            await standby.held.wait()
        assert not leader.held.is_set() and leader.current is None
        assert standby.current is not None and standby.current.epoch == 2
    finally:
        stop.set()
        await keeper


async def test_a_leader_cut_off_from_postgres_fences_itself_and_does_not_get_the_lease_back(
    db: Database, database_url: str
) -> None:
    """A partition: the leader's renewals cannot reach Postgres (its connections go to a port where
    nothing answers). Its lease expires there, it stops leading, the standby takes epoch 2; when the
    leader reaches Postgres again it is a standby and its old epoch claims nothing."""
    unreachable = Database(create_engine("postgresql://sb:sb@127.0.0.1:9/none", connect_timeout_s=0.2))
    leader = GatewayLease(db, holder="a", ttl_s=1.5)
    standby = GatewayLease(db, holder="b", ttl_s=1.5)
    await leader.step()
    old = leader.current
    assert old is not None
    await add_pending(db, "late")
    leader.db = unreachable
    stop = asyncio.Event()
    keepers = [asyncio.create_task(leader.keep(stop)), asyncio.create_task(standby.keep(stop))]
    try:
        async with asyncio.timeout(20):
            await standby.held.wait()
        assert not leader.held.is_set()
        leader.db = db  # the partition heals
        await asyncio.sleep(0.5)  # a few of the leader's tries: it stays a standby
        assert not leader.held.is_set() and standby.held.is_set()
        assert not await claim(db, "late", old)
    finally:
        stop.set()
        await asyncio.gather(*keepers)
        await unreachable.dispose()


async def test_a_replica_that_does_not_lead_executes_nothing(db: Database, redis: aioredis.Redis) -> None:
    await add_pending(db, "c1")
    held = asyncio.Event()
    executor = CommandExecutor(bot=ExtBot(TOKEN), db=db, publisher=Publisher(redis), held=held)
    with pytest.raises(NotLeading):
        await executor.execute("c1")
    lapsed = CommandExecutor(
        bot=ExtBot(TOKEN), db=db, publisher=Publisher(redis), held=asyncio.Event(), lease=lambda: None
    )
    lapsed.held.set()  # type: ignore[union-attr]
    with pytest.raises(NotLeading):
        await lapsed.execute("c1")
    assert await status(db, "c1") == CommandStatus.PENDING


async def test_the_standbys_outbox_consumer_reads_nothing_until_it_leads(redis: aioredis.Redis) -> None:
    seen: list[str] = []

    async def handle(message: TelegramCommand) -> None:
        seen.append(message.command_id)

    held, stop = asyncio.Event(), asyncio.Event()
    consumer = StreamConsumer(
        redis,
        stream="tg:outbox:lease-test",
        group="telegram-gateway",
        consumer="standby",
        routes=[route(TelegramCommand, handle)],
        block_ms=100,
        gate=held,
    )
    await consumer.ensure_group()
    await Publisher(redis).publish("tg:outbox:lease-test", TelegramCommand(command_id="c1"))
    reader = asyncio.create_task(consumer.run(stop))
    try:
        await asyncio.sleep(0.5)
        assert seen == []
        info = await redis.xinfo_groups("tg:outbox:lease-test")
        assert info[0]["pending"] == 0 and info[0]["lag"] == 1  # not even read into its pending list
        held.set()
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.05)
        assert seen == ["c1"]
    finally:
        stop.set()
        await reader
        await consumer.drain(5)


@contextlib.asynccontextmanager
async def polling_recorder(
    held: asyncio.Event, *, timeout_s: int
) -> AsyncIterator[tuple[RunningSim, list[int]]]:
    """``poll_updates`` gated on ``held`` against a fresh Telegram simulator; yields the simulator and the
    ids of the updates handled so far."""
    runner, running = await serve(sim_config())
    application = ApplicationBuilder().token(TOKEN).base_url(f"{running.url}/bot").updater(None).build()
    seen: list[int] = []

    async def record(update: object, _context: object) -> None:
        seen.append(update.update_id)  # type: ignore[attr-defined]

    application.add_handler(TypeHandler(object, record))
    await application.initialize()
    stop = asyncio.Event()
    poller = asyncio.create_task(poll_updates(application, stop, timeout_s=timeout_s, held=held))
    try:
        yield running, seen
    finally:
        stop.set()
        poller.cancel()  # as the runtime stops an intake task (shared.runtime), not after its 30 s long poll
        await asyncio.gather(poller, return_exceptions=True)
        await application.shutdown()
        await running.http.close()
        await runner.cleanup()


async def test_polling_waits_while_the_replica_does_not_lead() -> None:
    held = asyncio.Event()
    async with polling_recorder(held, timeout_s=0) as (running, seen):
        await running.say(5001, "/start", first_name="Ann")
        await asyncio.sleep(1)
        assert await running.get("/sim/calls?method=getUpdates") == [] and seen == []
        held.set()
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.05)
        assert await running.get("/sim/calls?method=getUpdates") != []


async def test_a_new_leaders_first_reconcile_hints_every_pending_row_at_once(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    """The old leader's hints sit in its dead consumer's pending list (the stream lease, 60 s) and a row it
    re-hinted waits ``REPUBLISH_AFTER_SEC`` (120 s): a new lease epoch's first tick hints them all; later
    ticks keep the grace period."""
    from telegram_gateway.main import duties
    from tests.telegram_gateway.gateway_helpers import gateway_settings

    settings = gateway_settings(database_url, redis_url, "http://127.0.0.1:9")
    await add_pending(db, "fresh")  # just written: within the grace period
    lease = GatewayLease(db, holder="b", ttl_s=30)
    await lease.step()
    reconcile = duties(db, Publisher(redis), settings, held=lease.held, lease=lease)[0].tick

    async def hinted() -> list[str]:
        entries = await redis.xrange(streams.TG_OUTBOX)
        return [decode(fields).command_id for _id, fields in entries]  # type: ignore[union-attr]

    await reconcile()
    assert await hinted() == ["fresh"]
    await add_pending(db, "fresher")
    await reconcile()  # the same epoch: the grace period again
    assert await hinted() == ["fresh"]


async def test_a_long_poll_in_flight_stops_when_the_replica_stops_leading() -> None:
    """Fenced mid-``getUpdates`` (a 30 s long poll): the call is cancelled, so a guest's message that comes
    after the fence is not fetched by this replica (its long poll would have returned it at once)."""
    held = asyncio.Event()
    held.set()
    async with polling_recorder(held, timeout_s=30) as (running, seen):
        await running.say(5002, "/start", first_name="Ann")
        async with asyncio.timeout(10):
            while not seen:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the next long poll is waiting at Telegram
        held.clear()
        await asyncio.sleep(0.5)
        await running.say(5002, "hello again", first_name="Ann")
        await asyncio.sleep(1.5)
        assert len(seen) == 1
        held.set()  # leading again: the message is fetched now
        async with asyncio.timeout(10):
            while len(seen) < 2:
                await asyncio.sleep(0.05)
