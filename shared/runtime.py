"""The service runtime of the four non-HTTP services (worker, delivery, leads, telegram-gateway).

A service's ``main.py`` only wires its parts and hands them to :class:`ServiceRuntime`:

- stream consumers (:meth:`ServiceRuntime.consumer`: group = the service, one named consumer per replica,
  dead letters alerted; the Redis Streams rules themselves are :class:`shared.streams.StreamConsumer`'s);
- periodic duties (:class:`Duty`: a name, an interval in seconds and a coroutine run once per tick);
- long-running tasks (:class:`LongTask`, e.g. the gateway's long polling and lease keeper).

The runtime owns the rest: SIGTERM/SIGINT, the ops server (``/healthz`` answers 503 once any loop ended,
``/readyz`` pings Postgres; :mod:`shared.ops`), running until stopped, the bounded drain and the closing
of the clients it built.

Running (DESIGN.md §9 "Graceful shutdown"; spec/000 "Graceful shutdown and requeue" and "Isolation
between the guest flow and leads"): the service runs until SIGTERM/SIGINT sets the stop event or any of
its loops ends. A loop that ends on its own stops the whole process (exit 1, or the code a
:class:`LongTask` returned) so that the orchestrator restarts it; a duty therefore never ends on its own:
a failing tick is logged under the duty's ``failed_event`` and counted in ``stk_duty_failures_total``,
and the next tick comes as usual.

Shutdown order, each step bounded:

1. ``SHUTDOWN`` is logged; intake tasks (:attr:`LongTask.intake`, e.g. Telegram polling) are cancelled,
   and consumers stop reading: their read loops return within ``STREAM_BLOCK_MS`` and are cancelled after
   :data:`STOP_INTAKE_S` (5 s, "stop taking work").
2. Running handlers get ``drain_timeout_s`` seconds to finish (the worker's ``SHUTDOWN_GRACE_SEC``); the
   rest are cancelled and awaited (handlers requeue their work; ``CancelledError`` is never swallowed).
3. Duties and the other long-running tasks are cancelled (their state is in the database).
4. The ops server stops; then, on leaving ``async with``, the resources the runtime owns close in the
   reverse order of their creation (:meth:`ServiceRuntime.closing`; the clients it built last of all).
   Clients passed in by the caller (tests) are never closed by the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypedDict

import redis.asyncio as aioredis
import structlog

from shared import metrics
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.ops import ReadyCheck, start_ops_server
from shared.repositories import Database
from shared.settings import ServiceSettings
from shared.streams import (
    HANDLER_TIMEOUT_S,
    Publisher,
    Route,
    StreamConsumer,
    build_consumer,
    create_redis,
)

log = structlog.get_logger(__name__)

#: Seconds the consumers' read loops get to return after the stop event (DESIGN.md §9 "stop taking work").
STOP_INTAKE_S = 5.0


@dataclass(frozen=True)
class Duty:
    """A periodic duty: ``tick()`` is awaited at start and then ``interval_s`` seconds after each tick.

    Attributes:
        name: the task's name (``stk_duty_failures_total{duty=…}``, ``/healthz``).
        interval_s: seconds between the end of one tick and the start of the next.
        tick: the duty's body; what it raises is logged and counted, never ends the loop.
        failed_event: the log event of a failed tick (``SWEEP_FAILED``, ``RECONCILE_FAILED``, …), with
            ``duty`` and ``error`` (the exception's class name) and, with ``log_detail``, ``detail`` (its
            text, 200 characters at most).
        gate: when given, no tick starts while it is cleared (e.g. the gateway replica leading, issue 22).
        wake: when given, a set event starts the next tick at once; it is cleared before each tick.
        repeat_on_progress: a tick that returns ``True`` (it did some work) is followed by the next at
            once, without the interval.
    """

    name: str
    interval_s: float
    tick: Callable[[], Awaitable[object]]
    failed_event: str = "DUTY_FAILED"
    log_detail: bool = False
    gate: asyncio.Event | None = None
    wake: asyncio.Event | None = None
    repeat_on_progress: bool = False


@dataclass(frozen=True)
class LongTask:
    """A task that runs until the stop event: ``run(stop)``. Ending before the stop event stops the
    service; an ``int`` it returns is the exit code (e.g. 2: a refused configuration).
    ``intake`` tasks take new work from outside (Telegram polling) and are cancelled first at shutdown."""

    name: str
    run: Callable[[asyncio.Event], Awaitable[int | None]]
    intake: bool = False


def consumer_name(configured: str, service: str) -> str:
    """``CONSUMER_NAME`` when set, else ``<service>-<host>-<pid>``: one named consumer per replica."""
    return configured or f"{service}-{socket.gethostname()}-{os.getpid()}"


async def wait_any(*events: asyncio.Event | None, timeout_s: float | None = None) -> None:
    """Until one of ``events`` (``None`` ones are skipped) is set, or ``timeout_s`` seconds passed."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events if event is not None]
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def run_duty(duty: Duty, stop: asyncio.Event) -> None:
    """Tick ``duty`` until ``stop`` (see :class:`Duty`); returns only when ``stop`` is set.

    Its ``stk_duty_failures_total{duty}`` series exists at 0 from the start, so a dashboard shows 0, not
    "No data", for a duty that never failed."""
    metrics.DUTY_FAILURES.labels(duty=duty.name)
    while not stop.is_set():
        if duty.gate is not None and not duty.gate.is_set():
            await wait_any(duty.gate, stop)
            continue
        if duty.wake is not None:
            duty.wake.clear()
        progressed: object = False
        try:
            progressed = await duty.tick()
        except Exception as exc:
            metrics.DUTY_FAILURES.labels(duty=duty.name).inc()
            detail = {"detail": str(exc)[:200]} if duty.log_detail else {}
            log.warning(duty.failed_event, duty=duty.name, error=type(exc).__name__, **detail)
        if duty.repeat_on_progress and progressed is True:
            continue
        await wait_any(stop, duty.wake, timeout_s=duty.interval_s)


async def _cancel(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and await them (their exceptions are retrieved, not raised)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def wait_any_task(stop: asyncio.Event, tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Until ``stop`` is set or any of ``tasks`` ends."""
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()


def _error_name(task: asyncio.Task[Any]) -> str | None:
    if task.cancelled():
        return "CancelledError"
    error = task.exception()
    return type(error).__name__ if error is not None else None


def _exit_code(longs: Sequence[asyncio.Task[Any]], ended: Sequence[asyncio.Task[Any]]) -> int:
    """The first non-zero ``int`` a long-running task returned, else 1 if a loop ended before the stop
    event, else 0."""
    for task in longs:
        if task.done() and not task.cancelled() and task.exception() is None:
            code = task.result()
            if isinstance(code, int) and code != 0:
                return code
    return 1 if ended else 0


class Given(TypedDict, total=False):
    """What a caller (a test) gives a service's ``run(settings, **given)`` instead of what the runtime
    builds from the settings, like ``ingest.main.create_app(settings, db=, publisher=)``: the caller closes
    the clients it gave. ``stop``: an event that stops the service (no signal handlers are installed)."""

    db: Database
    redis: aioredis.Redis
    stop: asyncio.Event


class ServiceRuntime:
    """Runs one non-HTTP service; use as ``async with ServiceRuntime(...) as rt: return await rt.run(...)``.

    Args:
        service: the service name: consumer group, ``STARTUP``/``SHUTDOWN`` field, consumer name prefix.
        settings: the service's settings (``DATABASE_URL``, ``REDIS_URL``, ``OPS_PORT``, stream limits).
        db, redis: clients to use instead of building them from ``settings``; the caller closes them.
        stop: an event to stop the service with; when ``None`` the runtime makes one that SIGTERM and
            SIGINT set (its handlers are installed by :meth:`run` and removed when it returns).

    Attributes:
        db, redis, publisher: the clients, given or built (built ones close on leaving ``async with``).
        consumer_name: this replica's consumer name (:func:`consumer_name`).
        stop: set to stop the service.
    """

    def __init__(
        self,
        service: str,
        settings: ServiceSettings,
        *,
        db: Database | None = None,
        redis: aioredis.Redis | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        self.service = service
        self.settings = settings
        self.consumer_name = consumer_name(settings.consumer_name, service)
        self.stop = stop if stop is not None else asyncio.Event()
        self._signals = stop is None
        self._owned = AsyncExitStack()
        if db is None:
            db = Database(create_engine(settings.database_url))
            self.closing(db.dispose)
        if redis is None:
            redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
            self.closing(redis.aclose)
        self.db = db
        self.redis = redis
        self.publisher = Publisher(redis, maxlen=settings.stream_maxlen)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._owned.aclose()

    def closing(self, close: Callable[[], Awaitable[object]]) -> None:
        """Await ``close()`` on leaving ``async with``, before what was registered earlier (LIFO)."""
        self._owned.push_async_callback(close)

    def consumer(
        self,
        stream: str,
        *routes: Route[Any],
        slots: int,
        handler_timeout_s: float | None = HANDLER_TIMEOUT_S,
        gate: asyncio.Event | None = None,
    ) -> StreamConsumer:
        """A consumer of ``stream`` in the service's group, as this replica, handing each message class to
        its route (:func:`shared.streams.route`), with the settings' lease, delivery cap and block time;
        ``handler_timeout_s`` and ``gate`` (read nothing while it is cleared) as in
        :class:`StreamConsumer`; dead letters raise an admin alert
        (:func:`dead_letter_alerter`)."""
        return build_consumer(
            self.redis,
            self.settings,
            stream=stream,
            group=self.service,
            consumer=self.consumer_name,
            routes=routes,
            slots=slots,
            handler_timeout_s=handler_timeout_s,
            on_dead=dead_letter_alerter(self.db, self.publisher),
            gate=gate,
        )

    async def run(
        self,
        *,
        drain_timeout_s: float,
        consumers: Sequence[StreamConsumer] = (),
        duties: Sequence[Duty] = (),
        tasks: Sequence[LongTask] = (),
        startup: Mapping[str, object] | None = None,
        shutdown: Callable[[], Mapping[str, object]] | None = None,
        ready: ReadyCheck | None = None,
    ) -> int:
        """Run the parts until stopped, then shut down in the order of the module docstring.

        Args:
            drain_timeout_s: seconds running handlers get to finish after the stop (step 2).
            startup: extra fields of the ``STARTUP`` log line (logged once everything runs).
            shutdown: called for extra fields of the ``SHUTDOWN`` log line (e.g. jobs still running).
            ready: the ``/readyz`` check; ``db.ping`` by default.

        Returns:
            The exit code: 0 when stopped by the stop event; the ``int`` a :class:`LongTask` returned when
            not 0; 1 when a loop ended (returned or raised) before the stop event.
        """
        if self._signals:
            self._install_signal_handlers()
        ended: list[asyncio.Task[Any]] = []

        def start(coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
            task = asyncio.ensure_future(coro)
            task.set_name(name)
            task.add_done_callback(lambda t: None if self.stop.is_set() else ended.append(t))
            return task

        every: list[asyncio.Task[Any]] = []
        ops = await start_ops_server(
            self.settings.ops_port,
            ready=ready or self.db.ping,
            alive=lambda: all(not task.done() for task in every),
        )
        try:
            readers = [start(c.run(self.stop), c.stream) for c in consumers]
            loops = [start(run_duty(d, self.stop), d.name) for d in duties]
            longs = [start(t.run(self.stop), t.name) for t in tasks]
            intake = [task for task, t in zip(longs, tasks, strict=True) if t.intake]
            every.extend([*readers, *loops, *longs])
            log.info("STARTUP", service=self.service, **(startup or {}))
            await wait_any_task(self.stop, every)
            self.stop.set()
            for task in ended:
                log.error(
                    "TASK_ENDED",
                    service=self.service,
                    task=task.get_name(),
                    error=_error_name(task),
                    exc_info=None if task.cancelled() else task.exception(),
                )
            log.info("SHUTDOWN", service=self.service, **(shutdown() if shutdown else {}))
            await _cancel(intake)
            if readers:
                _done, reading = await asyncio.wait(readers, timeout=STOP_INTAKE_S)
                await _cancel(list(reading))
            stragglers = [h for c in consumers for h in await c.drain(timeout_s=drain_timeout_s)]
            await _cancel(stragglers)
        finally:
            await _cancel(every)
            if ops is not None:
                await ops.cleanup()
            if self._signals:
                self._remove_signal_handlers()
        return _exit_code(longs, ended)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)

    def _remove_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(sig)
