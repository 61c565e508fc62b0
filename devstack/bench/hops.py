"""The ``make bench`` rows "Queue hop": the latency of one hop between services through our Redis Streams,
next to arq's on the same Redis, measured in the same run.

A hop is the time from just before the producer's call (ours: :meth:`shared.streams.Publisher.publish`,
an ``XADD``; arq: ``ArqRedis.enqueue_job``) to the first line of the handler (ours: the handler of a
:class:`shared.streams.StreamConsumer`, the consumer base every service uses, reading its consumer group
with ``XREADGROUP … BLOCK``; arq: the job function run by an ``arq.Worker``). Hops are sent one at a
time (the next after the previous one arrived, and after a random pause of up to the poll interval so
a polling worker is met anywhere in its cycle), so each measures an idle consumer's wake-up, not a
queue's backlog. Producer, consumer and worker share one process and event loop, so both sides pay the
same scheduling costs; wall seconds (``time.perf_counter``), p50 and p99.

arq is measured twice: with its default ``poll_delay`` (0.5 s: its worker polls the queue's sorted set,
there is no blocking read), which is what an arq user gets, and with ``poll_delay`` 10 ms, which buys
latency with a Redis round trip every 10 ms per worker. Fewer hops are sent to the default worker (each
waits for a poll). Every key is under a fresh prefix and deleted afterwards.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from arq.connections import RedisSettings, create_pool
from arq.worker import Worker, func

from devstack.bench.report import Options, Row
from shared.messages import JobRendered
from shared.streams import Publisher, StreamConsumer, route

__all__ = ["ARQ_FAST_POLL_S", "measure", "percentile", "rows_of", "run"]

ARQ_FAST_POLL_S = 0.01
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear between closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


class _Arrivals:
    """When each hop's handler started (``perf_counter``), and an event per hop awaited by the sender."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.waiting: dict[int, asyncio.Event] = {}

    def arrive(self, k: int) -> None:
        self.at[k] = time.perf_counter()
        event = self.waiting.pop(k, None)
        if event is not None:
            event.set()

    async def hops(self, count: int, send: Callable[[int], Awaitable[None]], jitter_s: float) -> list[float]:
        """Send ``count`` hops one after another, each after a random pause of up to ``jitter_s`` (so a
        polling consumer is met at a random point of its poll interval, as real traffic meets it);
        seconds from send to handler start, per hop."""
        latencies = []
        for k in range(count):
            await asyncio.sleep(random.uniform(0.0, jitter_s))
            event = self.waiting[k] = asyncio.Event()
            started = time.perf_counter()
            await send(k)
            await asyncio.wait_for(event.wait(), timeout=30)
            latencies.append(self.at.pop(k) - started)
        return latencies


async def _ours(redis_url: str, prefix: str, count: int, jitter_s: float) -> list[float]:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    stream = f"{prefix}:stream"
    arrivals = _Arrivals()
    ids: dict[uuid.UUID, int] = {}

    async def handler(message: JobRendered) -> None:
        arrivals.arrive(ids.pop(message.job_id))

    consumer = StreamConsumer(
        client,
        stream=stream,
        group="bench",
        consumer="bench-1",
        routes=[route(JobRendered, handler)],
        slots=4,
        block_ms=2000,
    )
    await consumer.ensure_group()
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    publisher = Publisher(client)

    async def send(k: int) -> None:
        job_id = uuid.uuid4()
        ids[job_id] = k
        await publisher.publish(stream, JobRendered(job_id=job_id))

    try:
        await asyncio.sleep(0.05)  # the consumer is in its blocking read
        return await arrivals.hops(count, send, jitter_s)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=5)
        await client.delete(stream)
        await client.aclose()


async def _arq(redis_url: str, prefix: str, count: int, poll_delay_s: float) -> list[float]:
    arrivals = _Arrivals()

    async def hop(ctx: dict[Any, Any], *args: Any, **kwargs: Any) -> None:  # arq's WorkerCoroutine
        arrivals.arrive(int(args[0]))

    pool = await create_pool(RedisSettings.from_dsn(redis_url))
    queue = f"{prefix}:arq"
    worker = Worker(
        functions=[func(hop, name="hop")],
        queue_name=queue,
        redis_pool=pool,
        handle_signals=False,
        poll_delay=poll_delay_s,
        keep_result=0,
        health_check_key=f"{prefix}:arq:health",
        log_results=False,
    )
    task = asyncio.create_task(worker.async_run())

    async def send(k: int) -> None:
        await pool.enqueue_job("hop", k, _queue_name=queue, _job_id=f"{prefix}:{k}")

    try:
        await asyncio.sleep(0.05)
        return await arrivals.hops(count, send, poll_delay_s)
    finally:
        await asyncio.gather(*worker.tasks.values(), return_exceptions=True)  # the last job's bookkeeping
        task.cancel()  # the worker's poll loop (Worker.close would also close the pool the deprecated way)
        await asyncio.gather(task, return_exceptions=True)
        keys = [key async for key in pool.scan_iter(match=f"{queue}*")]  # queue and health check
        keys += [key async for key in pool.scan_iter(match=f"arq:*{prefix}*")]  # only this run's jobs
        if keys:
            await pool.delete(*keys)
        await pool.aclose()


async def _run(redis_url: str, hops: int, default_hops: int) -> dict[str, list[float]]:
    prefix = f"bench:hops:{uuid.uuid4().hex[:8]}"
    return {
        "ours": await _ours(redis_url, prefix, hops, ARQ_FAST_POLL_S),
        "arq_fast": await _arq(redis_url, prefix, hops, ARQ_FAST_POLL_S),
        "arq_default": await _arq(redis_url, prefix, default_hops, 0.5),
    }


def run(redis_url: str, *, hops: int = 500, default_hops: int = 100) -> dict[str, list[float]]:
    """Hop latencies (seconds) for ``ours``, ``arq_fast`` (poll 10 ms) and ``arq_default`` (poll
    0.5 s, ``default_hops`` of them) through the Redis at ``redis_url``."""
    return asyncio.run(_run(redis_url, hops, default_hops))


def _ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.2f} ms"


def rows_of(result: dict[str, list[float]]) -> list[Row]:
    """The rows of a :func:`run` result: p50 and p99 of ours vs arq at default and 10 ms polling; the
    target is ours p50 ≤ arq's p50 (issue 12)."""
    ours = result["ours"]
    rows = []
    for key, label in (("arq_default", "arq, default poll 0.5 s"), ("arq_fast", "arq, poll 10 ms")):
        arq = result[key]
        met = percentile(ours, 50) <= percentile(arq, 50)
        for q in (50, 99):
            rows.append(
                Row(
                    group="Queue hop",
                    name=f"p{q} publish → handler start, {len(ours)} hops vs {len(arq)} ({label})",
                    ours=_ms(ours, q),
                    reference=f"{_ms(arq, q)} ({label})",
                    ratio=percentile(ours, q) / percentile(arq, q),
                    target="ours p50 ≤ arq p50" if q == 50 else "reported",
                    met=met if q == 50 else None,
                    note=""
                    if met or q != 50
                    else "XREADGROUP BLOCK should wake at once on XADD: look for a tick in the consumer loop",
                )
            )
    return rows


def measure(options: Options) -> list[Row]:
    """:func:`rows_of` a run through the Redis at ``REDIS_URL`` (default the local one): 500 hops each
    and 100 to arq's default worker (quick: 20 and 5)."""
    hops, default_hops = (20, 5) if options.quick else (500, 100)
    return rows_of(run(os.environ.get("REDIS_URL", DEFAULT_REDIS), hops=hops, default_hops=default_hops))
