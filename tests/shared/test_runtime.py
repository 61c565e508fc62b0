"""The service runtime (shared/runtime.py) against real Redis and Postgres: duties that fail keep ticking,
the bounded drain, a dead loop stops the service, SIGTERM ends a real process cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from shared import metrics
from shared.messages import JobQueued
from shared.repositories import Database
from shared.runtime import Duty, LongTask, ServiceRuntime
from shared.settings import ServiceSettings
from shared.streams import Publisher, route

pytestmark = pytest.mark.integration
STREAM = "test:runtime"


@pytest.fixture
def settings(database_url: str, redis_url: str) -> ServiceSettings:
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "STREAM_BLOCK_MS": "100", "OPS_PORT": "0"}
    return ServiceSettings(**env)  # type: ignore[arg-type]


def runtime(settings: ServiceSettings, db: Database, redis: aioredis.Redis) -> ServiceRuntime:
    return ServiceRuntime("test-svc", settings, db=db, redis=redis, stop=asyncio.Event())


async def until(predicate: Any, timeout_s: float = 10) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_a_duty_that_raises_is_logged_counted_and_keeps_ticking(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    ticks: list[float] = []

    async def tick() -> None:
        ticks.append(time.monotonic())
        raise RuntimeError("boom")

    failures = metrics.DUTY_FAILURES.labels(duty="flaky")
    before = failures._value.get()
    async with runtime(settings, db, redis) as rt:
        with capture_logs() as logs:
            run = asyncio.create_task(
                rt.run(duties=[Duty("flaky", 0.05, tick, failed_event="FLAKY_FAILED")], drain_timeout_s=1)
            )
            await until(lambda: len(ticks) >= 3)
            rt.stop.set()
            assert await run == 0
    failed = [e for e in logs if e["event"] == "FLAKY_FAILED"]
    assert len(failed) >= 3
    assert failed[0]["error"] == "RuntimeError" and failed[0]["duty"] == "flaky"
    assert "detail" not in failed[0]
    assert failures._value.get() - before == len(failed)
    assert [e["event"] for e in logs if e["event"] in {"STARTUP", "SHUTDOWN"}] == ["STARTUP", "SHUTDOWN"]


async def test_a_declared_duty_exposes_its_failure_series_at_zero_before_any_failure(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    ticked = asyncio.Event()

    async def tick() -> None:
        ticked.set()

    def exposed() -> bool:
        return 'stk_duty_failures_total{duty="quiet-duty"} 0.0' in metrics.exposition().decode()

    assert not exposed()
    async with runtime(settings, db, redis) as rt:
        run = asyncio.create_task(rt.run(duties=[Duty("quiet-duty", 3600, tick)], drain_timeout_s=1))
        await asyncio.wait_for(ticked.wait(), 10)
        assert exposed()
        rt.stop.set()
        assert await run == 0


async def test_a_gated_duty_waits_and_a_woken_one_ticks_at_once(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    gate, wake = asyncio.Event(), asyncio.Event()
    gated: list[int] = []
    woken: list[int] = []
    progress = [True, True, False]  # two ticks with progress run back to back, then the interval

    async def gated_tick() -> None:
        gated.append(1)

    async def woken_tick() -> bool:
        woken.append(1)
        return progress.pop(0) if progress else False

    async with runtime(settings, db, redis) as rt:
        run = asyncio.create_task(
            rt.run(
                duties=[
                    Duty("gated", 0.01, gated_tick, gate=gate),
                    Duty("woken", 3600, woken_tick, wake=wake, repeat_on_progress=True),
                ],
                drain_timeout_s=1,
            )
        )
        await until(lambda: len(woken) == 3)
        await asyncio.sleep(0.1)
        assert gated == [] and len(woken) == 3  # the hour-long interval holds the fourth tick
        wake.set()
        gate.set()
        await until(lambda: len(woken) == 4 and len(gated) >= 2)
        rt.stop.set()
        assert await run == 0


async def test_stop_drains_consumers_within_the_bound_and_cancels_stragglers(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    started: dict[uuid.UUID, float] = {}
    finished: list[uuid.UUID] = []
    cancelled: list[uuid.UUID] = []
    quick, slow = uuid.uuid4(), uuid.uuid4()

    async def handler(message: JobQueued) -> None:
        started[message.job_id] = time.monotonic()
        try:
            await asyncio.sleep(0.3 if message.job_id == quick else 3600)
        except asyncio.CancelledError:
            cancelled.append(message.job_id)
            raise
        finished.append(message.job_id)

    publisher = Publisher(redis)
    for job_id in (quick, slow):
        await publisher.publish(STREAM, JobQueued(job_id=job_id))
    async with runtime(settings, db, redis) as rt:
        consumer = rt.consumer(STREAM, route(JobQueued, handler), slots=2)
        with capture_logs() as logs:
            run = asyncio.create_task(
                rt.run(consumers=[consumer], drain_timeout_s=1.0, shutdown=lambda: {"running": consumer.busy})
            )
            await until(lambda: len(started) == 2)
            stopped_at = time.monotonic()
            rt.stop.set()
            assert await run == 0
            took = time.monotonic() - stopped_at
    assert finished == [quick] and cancelled == [slow]
    # the read loop ends within STREAM_BLOCK_MS, then the 1 s drain; the bound above it is loose for a busy
    # machine and still far below the slow handler's hour
    assert 0.9 < took < 15.0
    assert [e["running"] for e in logs if e["event"] == "SHUTDOWN"] == [2]
    info = await redis.xpending(STREAM, "test-svc")
    assert info["pending"] == 1  # the cancelled one stays pending, to be taken over after the lease


async def test_a_loop_that_ends_stops_the_service_with_exit_1(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    duty_cancelled = asyncio.Event()

    async def dies(_stop: asyncio.Event) -> None:
        await asyncio.sleep(0.05)
        raise ConnectionError("gone")

    async def long_tick() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            duty_cancelled.set()
            raise

    async with runtime(settings, db, redis) as rt:
        with capture_logs() as logs:
            code = await rt.run(
                duties=[Duty("slow", 1, long_tick)], tasks=[LongTask("dies", dies)], drain_timeout_s=1
            )
    assert code == 1
    assert rt.stop.is_set() and duty_cancelled.is_set()
    ended = [e for e in logs if e["event"] == "TASK_ENDED"]
    assert [(e["task"], e["error"]) for e in ended] == [("dies", "ConnectionError")]
    assert isinstance(ended[0]["exc_info"], ConnectionError)  # rendered as its traceback


async def test_a_long_task_s_exit_code_is_the_service_s(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    """Like the gateway's lock keeper: it sets the stop event itself and returns 1."""

    async def lock_taken(stop: asyncio.Event) -> int:
        await asyncio.sleep(0.05)
        stop.set()
        return 1

    async with runtime(settings, db, redis) as rt:
        with capture_logs() as logs:
            assert await rt.run(tasks=[LongTask("lock", lock_taken)], drain_timeout_s=1) == 1
    assert not [e for e in logs if e["event"] == "TASK_ENDED"]


async def test_owned_resources_close_in_reverse_order_and_given_clients_stay_open(
    settings: ServiceSettings, db: Database, redis: aioredis.Redis
) -> None:
    closed: list[str] = []

    async def close(name: str) -> None:
        closed.append(name)

    async with runtime(settings, db, redis) as rt:
        rt.closing(lambda: close("first"))
        rt.closing(lambda: close("second"))
        rt.stop.set()
        assert await rt.run(drain_timeout_s=1) == 0
    assert closed == ["second", "first"]
    await db.ping()
    assert await redis.ping()


@pytest.mark.timeout(60)
def test_sigterm_ends_a_real_process_cleanly(database_url: str, redis_url: str) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from shared.runtime import Duty, ServiceRuntime
        from shared.settings import ServiceSettings

        async def main() -> int:
            async with ServiceRuntime("tiny", ServiceSettings()) as rt:
                async def tick() -> None:
                    print("TICK", flush=True)
                return await rt.run(duties=[Duty("tick", 0.05, tick)], drain_timeout_s=1)

        sys.exit(asyncio.run(main()))
        """
    )
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "OPS_PORT": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        seen = []
        while "TICK" not in seen:  # structlog's default output goes to stdout too
            seen.append(proc.stdout.readline().strip())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "SHUTDOWN" in out and "TASK_ENDED" not in out
