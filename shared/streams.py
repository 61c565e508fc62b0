"""Redis Streams: names, the publisher, and the one consumer base every service uses.

:class:`StreamConsumer` implements the rules of DESIGN.md §3 and REFERENCE.md "Redis Streams": one consumer
group per consuming service and one named consumer per replica; read only as many entries as there are free
slots; ack after the handler's commit; take over entries idle longer than the lease (``XAUTOCLAIM``) while
refreshing the lease of entries still being worked on; dead-letter an entry delivered more than
``max_deliveries`` times to ``<stream>:dead``; create groups idempotently (``MKSTREAM``, ``BUSYGROUP`` is
success) and re-create them on ``NOGROUP`` (Redis restarted empty), backing off instead of spinning.

Routes: a consumer is given one :class:`Route` per message class it handles (:func:`route` checks with mypy
that the handler takes exactly that class); a decoded message of a class without a route is logged
(``STREAM_UNROUTED_MESSAGE``) and acked, in this one place rather than in every handler.

Trimming: :class:`Publisher` caps each stream by length (``STREAM_MAXLEN``, approximate) at every ``XADD``;
:func:`trim_before` deletes entries by age (the housekeeping job
:func:`shared.housekeeping.trim_streams`, ``STREAM_RETENTION_HOURS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import redis.asyncio as aioredis
import redis.exceptions
import structlog
from pydantic import ValidationError

from shared import metrics
from shared.errors import RedisUnavailable, UnavailableError
from shared.messages import _Message, decode, encode
from shared.settings import ServiceSettings

log = structlog.get_logger(__name__)

JOBS = "stk:jobs"
DELIVERY = "stk:delivery"
LEADS = "stk:leads"
TG_OUTBOX = "tg:outbox"
TG_UPDATES_LEADS = "tg:updates:leads"


#: Key prefixes of every stream the services write: the names above, ``tg:results:<service>`` and each
#: one's ``<stream>:dead``. Other keys under them (``stk:ratelimit:…``) are no streams and are left alone.
STREAM_PREFIXES = ("stk:", "tg:")


def results_stream(service: str) -> str:
    """``tg:results:<service>``: where the gateway answers commands asked for by ``service``."""
    return f"tg:results:{service}"


def consumed_streams() -> tuple[str, ...]:
    """Every stream a service consumes in a consumer group (the group is named after the consuming
    service, :meth:`shared.runtime.ServiceRuntime.consumer`): what the admin page and ``/status`` watch."""
    return (
        JOBS,
        DELIVERY,
        LEADS,
        TG_OUTBOX,
        TG_UPDATES_LEADS,
        results_stream("delivery"),
        results_stream("leads"),
    )


def dead_letter_stream(stream: str) -> str:
    return f"{stream}:dead"


REDIS_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    OSError,
)


def create_redis(url: str, *, block_ms: int = 2000) -> aioredis.Redis:
    """Redis client whose socket timeout exceeds the blocking-read time (REFERENCE.md: Redis Streams).

    Opens no connection until first use.
    """
    return aioredis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=block_ms / 1000 + 5,
        socket_connect_timeout=5,
        socket_keepalive=True,
        health_check_interval=15,
        retry_on_timeout=False,
    )


class Publisher:
    """``XADD`` with approximate trimming. Call only after the row the message points at is committed."""

    def __init__(self, redis: aioredis.Redis, *, maxlen: int = 100_000) -> None:
        self.redis = redis
        self.maxlen = maxlen

    async def publish(self, stream: str, message: _Message) -> str:
        """Append ``message`` to ``stream``; returns the entry id.

        Raises:
            RedisUnavailable: Redis could not be reached; the caller's outbox row stays pending.
        """
        try:
            fields: dict[Any, Any] = encode(message)
            entry_id = await self.redis.xadd(stream, fields, maxlen=self.maxlen, approximate=True)
        except REDIS_ERRORS as exc:
            raise RedisUnavailable(f"XADD {stream}: {type(exc).__name__}") from exc
        return str(entry_id)

    async def try_publish(self, stream: str, message: _Message) -> bool:
        """Like :meth:`publish` but logs and returns ``False`` when Redis is down (the reconciler repairs)."""
        try:
            await self.publish(stream, message)
        except RedisUnavailable as exc:
            log.warning("PUBLISH_DEFERRED", stream=stream, error=str(exc))
            return False
        return True


M = TypeVar("M", bound=_Message)

#: Seconds one handler call may run before it is cancelled and its entry left pending (``handler_timeout_s``
#: of :class:`StreamConsumer`): the lease's length (``STREAM_LEASE_SEC``' default), far above what a handler
#: that writes a few rows and publishes a hint needs. Consumers whose handlers legitimately run longer pass
#: their own bound or ``None``.
HANDLER_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Route(Generic[M]):
    """Entries whose message is a ``message_type`` go to ``handler``; build with :func:`route`."""

    message_type: type[M]
    handler: Callable[[M], Awaitable[None]]


def route(message_type: type[M], handler: Callable[[M], Awaitable[None]]) -> Route[M]:
    """The route of ``message_type`` (a class of :mod:`shared.messages`) to ``handler``, which takes
    exactly that class; mypy rejects a handler of another message class."""
    return Route(message_type, handler)


DEPTHS_EVERY_S = 1.0  # how often a consumer refreshes its stream's lag/pending gauges (s)


class Backoff:
    """Exponential backoff with jitter: 0.5 s doubling to ``cap_s``; :meth:`reset` after a success."""

    def __init__(self, *, base_s: float = 0.5, cap_s: float = 10.0) -> None:
        self.base_s = base_s
        self.cap_s = cap_s
        self.failures = 0

    def next_delay(self) -> float:
        delay = min(self.cap_s, self.base_s * 2**self.failures)
        self.failures += 1
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self.failures = 0


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds`` s, returning early when ``stop`` is set (the backoff wait of a stoppable loop)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


class StreamConsumer:
    """Reads one stream in one consumer group and hands each entry to the route of its message's class,
    ``slots`` at a time.

    Handlers must be idempotent: an entry can be delivered again after a crash, a lease expiry or a Redis
    restart. The entry is acked when its handler returns. An entry of a message class without a route is
    logged as a warning (``STREAM_UNROUTED_MESSAGE``) and acked: each consumer reads only its own stream,
    so such a message is one its service has no use for (each handler used to ignore them on its own).
    An entry that does not decode is dead-lettered at once.

    When the handler fails, the entry stays pending and is retried after the lease, until
    ``max_deliveries`` is exceeded and it is dead-lettered. How the failure is logged depends on its kind:

    * :class:`shared.errors.UnavailableError` (Postgres, Redis or another dependency is down): a warning
      ``STREAM_HANDLER_UNAVAILABLE`` without traceback; retrying later is the remedy.
    * past ``handler_timeout_s``: the handler is cancelled, an error ``STREAM_HANDLER_TIMEOUT``.
    * any other exception (a bug): an error ``STREAM_HANDLER_FAILED`` with its traceback (``exc_info``).

    Cancellation from outside (shutdown) is never caught: the entry stays pending for the next consumer.

    Args:
        redis: a client from :func:`create_redis` (``decode_responses=True``).
        stream, group, consumer: stream key, consumer group (the service) and consumer (the replica).
        routes: one :class:`Route` per message class handled (:func:`route`); a class may appear once.
        slots: entries handled concurrently; only that many are read.
        lease_s: seconds an entry may sit unacked before another consumer takes it over. Entries of this
            consumer's running handlers are re-claimed every ``lease_s / 3`` so long jobs keep their lease;
            once a handler has ended (failed, timed out) its entry is no longer re-claimed and is taken
            over ``lease_s`` later, whatever ``handler_timeout_s`` is.
        max_deliveries: deliveries allowed before dead-lettering (DESIGN.md §3 ``MAX_DELIVERIES``).
        handler_timeout_s: seconds one handler call may run (:data:`HANDLER_TIMEOUT_S`, 60 s); ``None``:
            no limit, for handlers bounded by their own timeouts (the worker's jobs run minutes).
        on_dead: awaited with ``(stream, entry_id, reason)`` after an entry was dead-lettered (alerts).
        gate: when given, nothing is read or reclaimed while it is cleared (the telegram-gateway's
            standby replica, issue 22: it must not take entries only the leader may execute); handlers
            already running go on.

    Raises:
        ValueError: two routes for one message class.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        stream: str,
        group: str,
        consumer: str,
        routes: Sequence[Route[Any]],
        slots: int = 1,
        lease_s: float = 60.0,
        max_deliveries: int = 5,
        block_ms: int = 2000,
        handler_timeout_s: float | None = HANDLER_TIMEOUT_S,
        on_dead: Callable[[str, str, str], Awaitable[None]] | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.redis = redis
        self.gate = gate
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.routes: dict[type[_Message], Callable[[Any], Awaitable[None]]] = {}
        for each in routes:
            if each.message_type in self.routes:
                raise ValueError(f"{stream}: two routes for {each.message_type.__name__}")
            self.routes[each.message_type] = each.handler
        self.slots = slots
        self.lease_s = lease_s
        self.max_deliveries = max_deliveries
        self.block_ms = block_ms
        self.handler_timeout_s = handler_timeout_s
        self.on_dead = on_dead
        self._running: dict[str, asyncio.Task[None]] = {}
        self._last_reclaim = 0.0
        self._last_depths = 0.0
        self._last_refresh = time.monotonic()
        self._backoff = Backoff()

    @property
    def busy(self) -> int:
        """Entries being handled right now."""
        return len(self._running)

    async def ensure_group(self) -> None:
        """Create the group at the stream's start (``MKSTREAM``); an existing group is success."""
        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
            log.info("STREAM_GROUP_CREATED", stream=self.stream, group=self.group)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set, then return without waiting for running handlers.

        Use :meth:`drain` afterwards to let running handlers finish (graceful shutdown).
        """
        group_ready = False
        while not stop.is_set():
            try:
                if not group_ready:
                    await self.ensure_group()
                    group_ready = True
                await self._step(stop)
                self._backoff.reset()
            except redis.exceptions.ResponseError as exc:
                if not _group_lost(exc):
                    raise
                group_ready = False
                delay = self._backoff.next_delay()
                log.warning(
                    "STREAM_NOGROUP", stream=self.stream, group=self.group, retry_in_s=round(delay, 2)
                )
                await sleep_or_stop(stop, delay)
            except REDIS_ERRORS as exc:
                group_ready = False
                delay = self._backoff.next_delay()
                log.warning(
                    "REDIS_UNAVAILABLE",
                    stream=self.stream,
                    error=type(exc).__name__,
                    retry_in_s=round(delay, 2),
                )
                await sleep_or_stop(stop, delay)

    async def drain(self, timeout_s: float) -> list[asyncio.Task[None]]:
        """Wait up to ``timeout_s`` for running handlers; returns the tasks still running (not cancelled)."""
        tasks = list(self._running.values())
        if not tasks:
            return []
        _done, pending = await asyncio.wait(tasks, timeout=timeout_s)
        return list(pending)

    async def _step(self, stop: asyncio.Event) -> None:
        now = time.monotonic()
        if now - self._last_depths >= DEPTHS_EVERY_S:
            self._last_depths = now
            await stream_depths(self.redis, {self.stream: self.group})
        if self._running and now - self._last_refresh >= self.lease_s / 3:
            await self._refresh_leases()
            self._last_refresh = now
        if self.gate is not None and not self.gate.is_set():
            await _until_set(self.gate, stop, self.block_ms / 1000)
            return
        free = self.slots - len(self._running)
        if free <= 0:
            await asyncio.wait(
                list(self._running.values()),
                timeout=self.block_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
            return
        if now - self._last_reclaim >= min(self.lease_s / 2, 5.0):
            self._last_reclaim = now
            reclaimed = await self._reclaim(free)
            if reclaimed:
                return
        response: Any = await self.redis.xreadgroup(
            self.group, self.consumer, {self.stream: ">"}, count=free, block=self.block_ms
        )
        for _stream, entries in response or []:
            for entry_id, fields in entries:
                self._dispatch(entry_id, fields)

    async def _reclaim(self, free: int) -> int:
        """Take over entries idle longer than the lease; dead-letter those delivered too often."""
        _next, entries, deleted = await self.redis.xautoclaim(
            self.stream,
            self.group,
            self.consumer,
            min_idle_time=int(self.lease_s * 1000),
            start_id="0-0",
            count=free,
        )
        for entry_id in deleted or []:
            log.warning("STREAM_ENTRY_DELETED_WHILE_PENDING", stream=self.stream, entry_id=entry_id)
        if not entries:
            return 0
        counts = await self._delivery_counts([e[0] for e in entries])
        for entry_id, fields in entries:
            if fields is None:
                continue
            if counts.get(entry_id, 0) > self.max_deliveries:
                await self._dead_letter(entry_id, fields, f"delivered {counts[entry_id]} times")
            else:
                self._dispatch(entry_id, fields)
        return len(entries)

    async def _delivery_counts(self, entry_ids: list[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry_id in entry_ids:
            info = await self.redis.xpending_range(
                self.stream, self.group, min=entry_id, max=entry_id, count=1
            )
            if info:
                counts[entry_id] = int(info[0]["times_delivered"])
        return counts

    async def _refresh_leases(self) -> None:
        ids: list[Any] = list(self._running)
        if ids:
            await self.redis.xclaim(
                self.stream, self.group, self.consumer, min_idle_time=0, message_ids=ids, justid=True
            )

    async def _dead_letter(self, entry_id: str, fields: dict[str, Any], reason: str) -> None:
        dead = dead_letter_stream(self.stream)
        body: dict[Any, Any] = {**fields, "entry_id": entry_id, "group": self.group, "reason": reason}
        await self.redis.xadd(
            dead,
            body,
            maxlen=10_000,
            approximate=True,
        )
        await self.redis.xack(self.stream, self.group, entry_id)
        metrics.STREAM_DEAD.labels(stream=self.stream).inc()
        log.error(
            "STREAM_DEAD_LETTER", stream=self.stream, group=self.group, entry_id=entry_id, reason=reason
        )
        if self.on_dead is not None:
            with contextlib.suppress(Exception):
                await self.on_dead(self.stream, entry_id, reason)

    def _dispatch(self, entry_id: str, fields: dict[str, Any]) -> None:
        if entry_id in self._running:
            return
        task = asyncio.create_task(self._handle(entry_id, fields), name=f"{self.stream}:{entry_id}")
        self._running[entry_id] = task
        task.add_done_callback(lambda _t: self._running.pop(entry_id, None))

    async def _handle(self, entry_id: str, fields: dict[str, Any]) -> None:
        try:
            message = decode(fields)
        except (ValidationError, KeyError, ValueError) as exc:
            await self._safe_dead_letter(entry_id, fields, f"undecodable: {type(exc).__name__}")
            return
        context = {"stream": self.stream, "entry_id": entry_id, "message_type": message.type}
        handler = self.routes.get(type(message))
        if handler is None:
            log.warning("STREAM_UNROUTED_MESSAGE", group=self.group, **context)
            await self._ack(entry_id)
            return
        limit = asyncio.timeout(self.handler_timeout_s)
        try:
            async with limit:
                await handler(message)
        except asyncio.CancelledError:
            raise  # shutdown: the entry stays pending for whoever runs next
        except UnavailableError as exc:
            log.warning("STREAM_HANDLER_UNAVAILABLE", error=f"{type(exc).__name__}: {exc}", **context)
            return
        except Exception as exc:
            if isinstance(exc, TimeoutError) and limit.expired():
                log.error("STREAM_HANDLER_TIMEOUT", limit_s=self.handler_timeout_s, **context)
            else:
                log.error("STREAM_HANDLER_FAILED", exc_info=exc, **context)
            return
        await self._ack(entry_id)

    async def _ack(self, entry_id: str) -> None:
        try:
            await self.redis.xack(self.stream, self.group, entry_id)
        except REDIS_ERRORS:
            log.warning("STREAM_ACK_FAILED", stream=self.stream, entry_id=entry_id)

    async def _safe_dead_letter(self, entry_id: str, fields: dict[str, Any], reason: str) -> None:
        try:
            await self._dead_letter(entry_id, fields, reason)
        except REDIS_ERRORS:
            log.warning("STREAM_DEAD_LETTER_FAILED", stream=self.stream, entry_id=entry_id)


async def _until_set(event: asyncio.Event, stop: asyncio.Event, timeout_s: float) -> None:
    """Until ``event`` or ``stop`` is set, or ``timeout_s`` seconds passed."""
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _group_lost(exc: redis.exceptions.ResponseError) -> bool:
    """``NOGROUP`` (Redis restarted empty) or ``UNBLOCKED`` (the stream was deleted under a blocking read)."""
    return str(exc).startswith(("NOGROUP", "UNBLOCKED"))


async def stream_depths(client: aioredis.Redis, groups: dict[str, str]) -> None:
    """Refresh the lag and pending gauges for ``{stream: group}`` (XINFO GROUPS; lag may be NULL)."""
    for stream, group in groups.items():
        try:
            infos = await client.xinfo_groups(stream)
        except redis.exceptions.ResponseError:
            continue
        for info in infos:
            if info.get("name") == group:
                metrics.STREAM_PENDING.labels(stream=stream, group=group).set(info.get("pending") or 0)
                lag = info.get("lag")
                if lag is not None:
                    metrics.STREAM_LAG.labels(stream=stream, group=group).set(lag)


@dataclass(frozen=True, slots=True)
class GroupHealth:
    """One consumer group of a stream (``XINFO GROUPS``, ``XPENDING``): ``lag`` entries not yet read by
    the group (``None`` when Redis cannot tell, e.g. after an ``XDEL``), ``pending`` read but not acked,
    ``oldest_pending_s`` how long ago the oldest pending entry was added (s, from its id; ``None``: none
    pending)."""

    group: str
    lag: int | None
    pending: int
    oldest_pending_s: float | None


@dataclass(frozen=True, slots=True)
class StreamHealth:
    """A stream's length, its groups and the entries dead-lettered to ``<stream>:dead`` (kept
    ``STREAM_RETENTION_HOURS``)."""

    stream: str
    length: int
    groups: list[GroupHealth]
    dead_letters: int


async def stream_health(
    client: aioredis.Redis, names: tuple[str, ...], *, now_ms: int | None = None
) -> list[StreamHealth]:
    """Length, groups (lag, pending, oldest pending) and dead letters of each stream in ``names``; a
    stream that does not exist yet is length 0 with no groups.

    Raises:
        RedisUnavailable: Redis could not be reached.
    """
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    result = []
    try:
        for name in names:
            length = int(await client.xlen(name))
            dead = int(await client.xlen(dead_letter_stream(name)))
            groups: list[GroupHealth] = []
            infos = await client.xinfo_groups(name) if length or await client.exists(name) else []
            for info in infos:
                group = str(info.get("name"))
                pending = int(info.get("pending") or 0)
                oldest = None
                if pending:
                    summary = await client.xpending(name, group)
                    first = summary.get("min") if summary else None
                    if first:
                        oldest = max(0.0, (now - int(str(first).split("-")[0])) / 1000)
                lag = info.get("lag")
                groups.append(GroupHealth(group, None if lag is None else int(lag), pending, oldest))
            result.append(StreamHealth(name, length, groups, dead))
    except REDIS_ERRORS as exc:
        raise RedisUnavailable(f"stream health: {exc}") from exc
    return result


async def trim_before(client: aioredis.Redis, before: datetime) -> dict[str, int]:
    """Delete the entries added before ``before`` from every stream under :data:`STREAM_PREFIXES`
    (``XTRIM <key> MINID <unix ms of before>-0``, an entry id being its ``XADD`` time in ms).

    Exact, not ``~``: an approximate trim removes only whole radix-tree nodes whose newest entry is older,
    so in a quiet stream an old entry would stay as long as its node keeps receiving new ones. One run
    costs a ``SCAN`` and one ``XTRIM`` per stream (a handful). Consumer groups are left as they are; a
    pending entry trimmed away is dropped from the group by the next ``XAUTOCLAIM``
    (``STREAM_ENTRY_DELETED_WHILE_PENDING``).

    Returns:
        entries deleted per stream key, streams that lost none left out.

    Raises:
        redis.exceptions.RedisError: Redis failed or could not be reached (the streams trimmed so far stay
            trimmed; a later run does the rest).
    """
    min_id = f"{int(before.timestamp() * 1000)}-0"
    deleted: dict[str, int] = {}
    for prefix in STREAM_PREFIXES:
        async for key in client.scan_iter(match=f"{prefix}*", count=1000, _type="stream"):
            name = key.decode() if isinstance(key, bytes) else str(key)
            count = int(await client.xtrim(name, minid=min_id, approximate=False))
            if count:
                deleted[name] = count
    return deleted


#: Deletes consumer ARGV[2] of group ARGV[1] of stream KEYS[1] only if, at that moment, it has no pending
#: entry and has been idle at least ARGV[3] ms (``XINFO CONSUMERS`` ``pending``, ``idle``); a script runs
#: atomically, so a consumer that reads an entry between the look and the delete is never deleted with it.
#: Returns ``XGROUP DELCONSUMER``'s answer (its pending count, 0) or -1 when it was kept.
_DELETE_IF_GONE = """
for _, info in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local consumer = {}
  for i = 1, #info, 2 do consumer[info[i]] = info[i + 1] end
  if consumer['name'] == ARGV[2] then
    if tonumber(consumer['pending']) == 0 and tonumber(consumer['idle']) >= tonumber(ARGV[3]) then
      return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
    end
    return -1
  end
end
return -1
"""


async def remove_gone_consumers(client: aioredis.Redis, *, idle_s: float) -> list[str]:
    """Delete, from every consumer group of every stream under :data:`STREAM_PREFIXES`, the consumers
    that are gone: idle (no read, claim or ack) for at least ``idle_s`` seconds and without a pending
    entry, either because they acked all they read or because another consumer claimed what they left
    (``XAUTOCLAIM`` after ``STREAM_LEASE_SEC``). Every replica start adds a consumer named
    ``<service>-<host>-<pid>`` (:func:`shared.runtime.consumer_name`) and Redis keeps it until
    ``XGROUP DELCONSUMER``. A live consumer reads every ``STREAM_BLOCK_MS`` (or, with every slot busy, holds
    pending entries), so it is never idle that long; a consumer with pending entries nobody claimed is
    kept whatever its idle time, since deleting it would drop them from the group. The check and the
    delete are one script (atomic).

    Returns:
        ``<stream>/<group>/<consumer>`` of each consumer deleted.

    Raises:
        redis.exceptions.RedisError: Redis failed or could not be reached (a later run does the rest).
    """
    delete_if_gone = client.register_script(_DELETE_IF_GONE)
    idle_ms = int(idle_s * 1000)
    removed: list[str] = []
    for prefix in STREAM_PREFIXES:
        async for key in client.scan_iter(match=f"{prefix}*", count=1000, _type="stream"):
            name = key.decode() if isinstance(key, bytes) else str(key)
            for group_info in await client.xinfo_groups(name):
                group = _text(group_info["name"])
                for info in await client.xinfo_consumers(name, group):
                    consumer = _text(info["name"])
                    if int(info["pending"]) or int(info["idle"]) < idle_ms:
                        continue
                    if int(await delete_if_gone(keys=[name], args=[group, consumer, idle_ms])) >= 0:
                        removed.append(f"{name}/{group}/{consumer}")
    return removed


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def build_consumer(
    redis: aioredis.Redis,
    settings: ServiceSettings,
    *,
    stream: str,
    group: str,
    consumer: str,
    routes: Sequence[Route[Any]],
    slots: int,
    handler_timeout_s: float | None = HANDLER_TIMEOUT_S,
    on_dead: Callable[[str, str, str], Awaitable[None]] | None = None,
    gate: asyncio.Event | None = None,
) -> StreamConsumer:
    """A :class:`StreamConsumer` with the lease, delivery cap and block time from the service's settings."""
    return StreamConsumer(
        redis,
        stream=stream,
        group=group,
        consumer=consumer,
        routes=routes,
        slots=slots,
        lease_s=settings.stream_lease_sec,
        max_deliveries=settings.max_deliveries,
        block_ms=settings.stream_block_ms,
        handler_timeout_s=handler_timeout_s,
        on_dead=on_dead,
        gate=gate,
    )
