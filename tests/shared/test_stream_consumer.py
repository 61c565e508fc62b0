"""The consumer base against a real Redis: ack after the handler, routes by message class, failures by
kind (store down, bug, time limit), lease takeover, dead letters, NOGROUP self-heal, free-slot reads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from shared.errors import DatabaseUnavailable
from shared.messages import JobQueued, JobRendered, TelegramResult
from shared.streams import Publisher, Route, StreamConsumer, dead_letter_stream, route

pytestmark = pytest.mark.integration
STREAM = "test:jobs"


def consumer(
    redis: aioredis.Redis,
    handler: Callable[[JobQueued], Awaitable[None]] | None = None,
    *,
    routes: Sequence[Route[Any]] = (),
    name: str = "c1",
    **kw: Any,
) -> StreamConsumer:
    """A consumer of :data:`STREAM` with ``handler`` as the route of ``JobQueued``, else ``routes``."""
    options: dict[str, Any] = {"slots": 1, "lease_s": 0.5, "max_deliveries": 3, "block_ms": 100, **kw}
    if handler is not None:
        routes = [route(JobQueued, handler)]
    return StreamConsumer(redis, stream=STREAM, group="g", consumer=name, routes=routes, **options)


async def run_until(
    stop: asyncio.Event, *consumers: StreamConsumer, predicate: Callable[[], bool], timeout: float = 10
) -> None:
    tasks = [asyncio.create_task(c.run(stop)) for c in consumers]
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def pending(redis: aioredis.Redis) -> int:
    info = await redis.xpending(STREAM, "g")
    return int(info["pending"])


async def test_entries_are_acked_after_the_handler_returns(redis: aioredis.Redis) -> None:
    seen: list[uuid.UUID] = []

    async def handler(message: JobQueued) -> None:
        seen.append(message.job_id)

    ids = [uuid.uuid4() for _ in range(5)]
    publisher = Publisher(redis)
    for job_id in ids:
        await publisher.publish(STREAM, JobQueued(job_id=job_id))
    await run_until(asyncio.Event(), consumer(redis, handler, slots=2), predicate=lambda: len(seen) == 5)
    assert seen == ids
    assert await pending(redis) == 0


async def until_pending_is(redis: aioredis.Redis, count: int, *, timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while await pending(redis) != count:
            await asyncio.sleep(0.05)


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


async def test_each_message_class_goes_to_its_own_route(redis: aioredis.Redis) -> None:
    queued: list[JobQueued] = []
    rendered: list[JobRendered] = []

    async def on_queued(message: JobQueued) -> None:
        queued.append(message)

    async def on_rendered(message: JobRendered) -> None:
        rendered.append(message)

    sent_queued, sent_rendered = JobQueued(job_id=uuid.uuid4()), JobRendered(job_id=uuid.uuid4())
    publisher = Publisher(redis)
    await publisher.publish(STREAM, sent_rendered)
    await publisher.publish(STREAM, sent_queued)
    c = consumer(redis, routes=[route(JobQueued, on_queued), route(JobRendered, on_rendered)], slots=2)
    await run_until(asyncio.Event(), c, predicate=lambda: bool(queued and rendered))
    assert queued == [sent_queued] and rendered == [sent_rendered]
    assert type(queued[0]) is JobQueued and type(rendered[0]) is JobRendered
    await until_pending_is(redis, 0)


def test_a_message_class_has_one_route(redis: aioredis.Redis) -> None:
    async def on_queued(_message: JobQueued) -> None:
        pass

    with pytest.raises(ValueError, match="two routes for JobQueued"):
        consumer(redis, routes=[route(JobQueued, on_queued), route(JobQueued, on_queued)])


async def test_an_unrouted_message_is_warned_about_once_and_acked(redis: aioredis.Redis) -> None:
    handled: list[JobQueued] = []

    async def handler(message: JobQueued) -> None:
        handled.append(message)

    publisher = Publisher(redis)
    await publisher.publish(STREAM, TelegramResult(command_id="x", ok=True))
    await publisher.publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    stop = asyncio.Event()
    with capture_logs() as logs:
        task = asyncio.create_task(consumer(redis, handler).run(stop))
        async with asyncio.timeout(10):
            while not handled:
                await asyncio.sleep(0.05)
        await until_pending_is(redis, 0)
        await asyncio.sleep(1.0)  # two leases: an unacked entry would have been delivered again
        stop.set()
        await task
    (warning,) = events(logs, "STREAM_UNROUTED_MESSAGE")
    assert warning["log_level"] == "warning" and warning["message_type"] == "tg.result"
    assert len(handled) == 1
    assert await pending(redis) == 0


async def test_a_store_outage_leaves_the_entry_pending_with_a_warning_without_traceback(
    redis: aioredis.Redis,
) -> None:
    async def handler(_message: JobQueued) -> None:
        raise DatabaseUnavailable("connection refused")

    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    with capture_logs() as logs:
        c = consumer(redis, handler, lease_s=30)
        await run_until(
            asyncio.Event(), c, predicate=lambda: bool(events(logs, "STREAM_HANDLER_UNAVAILABLE"))
        )
    (warning,) = events(logs, "STREAM_HANDLER_UNAVAILABLE")
    assert warning["log_level"] == "warning"
    assert warning["error"] == "DatabaseUnavailable: connection refused"
    assert "exc_info" not in warning
    assert not [e for e in logs if e["log_level"] == "error"]
    assert await pending(redis) == 1  # retried after the lease, counted toward MAX_DELIVERIES


@pytest.mark.parametrize("bug", [ValueError("bad value"), TimeoutError("the handler's own time-out")])
async def test_a_bug_leaves_the_entry_pending_with_an_error_and_its_traceback(
    redis: aioredis.Redis, bug: Exception
) -> None:
    """Any exception but a store outage is a bug, also a ``TimeoutError`` that is not the consumer's limit."""

    async def handler(_message: JobQueued) -> None:
        raise bug

    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    with capture_logs() as logs:
        c = consumer(redis, handler, lease_s=30)
        await run_until(asyncio.Event(), c, predicate=lambda: bool(events(logs, "STREAM_HANDLER_FAILED")))
    (error,) = events(logs, "STREAM_HANDLER_FAILED")
    assert error["log_level"] == "error" and error["message_type"] == "job.queued"
    assert error["exc_info"] is bug and bug.__traceback__ is not None
    assert not events(logs, "STREAM_HANDLER_TIMEOUT")
    assert await pending(redis) == 1


async def test_a_handler_past_its_time_limit_is_cancelled_and_its_entry_stays_pending(
    redis: aioredis.Redis,
) -> None:
    cancelled: list[JobQueued] = []

    async def handler(message: JobQueued) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(message)
            raise

    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    with capture_logs() as logs:
        c = consumer(redis, handler, lease_s=30, handler_timeout_s=0.2)
        await run_until(asyncio.Event(), c, predicate=lambda: bool(events(logs, "STREAM_HANDLER_TIMEOUT")))
    (error,) = events(logs, "STREAM_HANDLER_TIMEOUT")
    assert error["log_level"] == "error" and error["limit_s"] == 0.2
    assert len(cancelled) == 1 and c.busy == 0
    assert await pending(redis) == 1


async def test_a_failing_entry_is_retried_after_the_lease_then_dead_lettered(redis: aioredis.Redis) -> None:
    attempts = 0
    dead_reasons: list[str] = []

    async def handler(_message: JobQueued) -> None:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("poison")

    async def on_dead(_stream: str, _entry: str, reason: str) -> None:
        dead_reasons.append(reason)

    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    c = consumer(redis, handler, on_dead=on_dead)
    await run_until(asyncio.Event(), c, predicate=lambda: bool(dead_reasons), timeout=15)
    assert attempts == 3  # max_deliveries
    assert await redis.xlen(dead_letter_stream(STREAM)) == 1
    assert await pending(redis) == 0
    assert "delivered 4 times" in dead_reasons[0]


async def test_undecodable_entries_go_straight_to_the_dead_letter_stream(redis: aioredis.Redis) -> None:
    async def handler(_message: JobQueued) -> None:
        raise AssertionError("must not be called")

    await redis.xadd(STREAM, {"data": '{"type": "nonsense"}'})
    stop = asyncio.Event()
    task = asyncio.create_task(consumer(redis, handler).run(stop))
    async with asyncio.timeout(20):
        while await redis.xlen(dead_letter_stream(STREAM)) == 0:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    assert await pending(redis) == 0


async def test_a_dead_consumers_entries_are_taken_over(redis: aioredis.Redis) -> None:
    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    await redis.xgroup_create(STREAM, "g", id="0")
    # consumer "dead" reads the entry and never acks it (killed mid-handler)
    await redis.xreadgroup("g", "dead", {STREAM: ">"}, count=1)
    handled: list[JobQueued] = []

    async def handler(message: JobQueued) -> None:
        handled.append(message)

    await run_until(asyncio.Event(), consumer(redis, handler, name="alive"), predicate=lambda: bool(handled))
    assert len(handled) == 1
    assert await pending(redis) == 0


async def test_a_long_handler_keeps_its_lease(redis: aioredis.Redis) -> None:
    """A job running longer than the lease is not handed to a second consumer."""
    calls: list[str] = []

    def handler_for(name: str) -> Callable[[JobQueued], Awaitable[None]]:
        async def handler(_message: JobQueued) -> None:
            calls.append(name)
            await asyncio.sleep(6.0)  # three leases long

        return handler

    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    first = consumer(redis, handler_for("first"), name="first", lease_s=2.0)
    stop = asyncio.Event()
    t1 = asyncio.create_task(first.run(stop))
    async with asyncio.timeout(20):
        while not calls:
            await asyncio.sleep(0.02)
    second = consumer(redis, handler_for("second"), name="second", lease_s=2.0)
    t2 = asyncio.create_task(second.run(stop))
    async with asyncio.timeout(20):
        while await pending(redis):
            await asyncio.sleep(0.1)
    stop.set()
    await asyncio.gather(t1, t2)
    assert calls == ["first"]


async def test_the_group_is_recreated_when_redis_loses_it(redis: aioredis.Redis) -> None:
    handled: list[JobQueued] = []

    async def handler(message: JobQueued) -> None:
        handled.append(message)

    stop = asyncio.Event()
    task = asyncio.create_task(consumer(redis, handler).run(stop))
    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    async with asyncio.timeout(20):
        while len(handled) < 1:
            await asyncio.sleep(0.05)
    await redis.flushdb()  # as if Redis restarted without persistence: stream and group are gone
    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    async with asyncio.timeout(10):
        while len(handled) < 2:
            await asyncio.sleep(0.05)
    stop.set()
    await task


async def test_only_as_many_entries_as_free_slots_are_read(redis: aioredis.Redis) -> None:
    release = asyncio.Event()

    async def handler(_message: JobQueued) -> None:
        await release.wait()

    publisher = Publisher(redis)
    for _ in range(6):
        await publisher.publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    c = consumer(redis, handler, slots=2, lease_s=30)
    stop = asyncio.Event()
    task = asyncio.create_task(c.run(stop))
    async with asyncio.timeout(20):
        while c.busy < 2:
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    assert c.busy == 2
    assert await pending(redis) == 2  # the other 4 stay undelivered, visible as lag, not hidden in the PEL
    release.set()
    async with asyncio.timeout(20):
        while (await redis.xlen(STREAM) and (await redis.xinfo_groups(STREAM))[0]["lag"] > 0) or c.busy:
            await asyncio.sleep(0.05)
    stop.set()
    await task


async def test_an_entry_deleted_while_pending_is_dropped_without_stopping_the_consumer(
    redis: aioredis.Redis,
) -> None:
    """Trimmed or deleted entries come back from XAUTOCLAIM as deleted ids; the reconciler re-publishes."""
    entry = await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    await redis.xgroup_create(STREAM, "g", id="0")
    await redis.xreadgroup("g", "dead", {STREAM: ">"}, count=1)
    await redis.xdel(STREAM, entry)
    handled: list[JobQueued] = []

    async def handler(message: JobQueued) -> None:
        handled.append(message)

    stop = asyncio.Event()
    task = asyncio.create_task(consumer(redis, handler, name="alive").run(stop))
    async with asyncio.timeout(10):
        while await pending(redis):
            await asyncio.sleep(0.05)
    await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    async with asyncio.timeout(20):
        while not handled:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    assert len(handled) == 1


async def test_the_consumer_exports_its_lag_and_pending_gauges(redis: aioredis.Redis) -> None:
    from shared import metrics

    release = asyncio.Event()

    async def handler(_message: JobQueued) -> None:
        await release.wait()

    for _ in range(3):
        await Publisher(redis).publish(STREAM, JobQueued(job_id=uuid.uuid4()))
    c = consumer(redis, handler, slots=1, lease_s=0.5)
    stop = asyncio.Event()
    task = asyncio.create_task(c.run(stop))
    pending_gauge = metrics.STREAM_PENDING.labels(stream=STREAM, group="g")
    lag_gauge = metrics.STREAM_LAG.labels(stream=STREAM, group="g")
    async with asyncio.timeout(20):
        while pending_gauge._value.get() != 1 or lag_gauge._value.get() != 2:
            await asyncio.sleep(0.05)
    release.set()
    stop.set()
    await task
