"""How a worker lives through a Postgres outage without being taken for dead (issue 19).

Crash recovery (:func:`worker.outcomes.recover_crashed`) used to judge an owner by ``jobs.heartbeat_at``
alone: a heartbeat is a write to Postgres, so while Postgres is down (or this worker is cut off it) no live
owner can beat, and the first sweep after the store came back took every running job for ``crashed``
(an attempt consumed; the second such outage in one render failed the guest). Meanwhile the render itself
failed at its first write (a provider call recorded in ``api_usage``), leaving the job ``processing``
with nobody beating for it.

Two mends:

- **An ownership lease outside Postgres.** While a job runs, its owner also holds ``stk:job-owner:<id>``
  in Redis (``SET … PX HEARTBEAT_TIMEOUT_SEC``, refreshed every ``HEARTBEAT_SEC`` by a task that never
  touches Postgres). A job whose Postgres heartbeat is stale but whose lease its owner still holds is
  alive: the sweeper leaves it. A dead owner's lease expires ``HEARTBEAT_TIMEOUT_SEC`` after its last
  beat, as its heartbeat does, so a dead owner is recovered as before; when Redis cannot be asked, the
  sweeper cannot tell and recovers nothing this round (a dead owner's job waits, a live one is not lost).
- **Writes wait for the store.** The worker's writes during a job (:func:`patiently`: ``api_usage``
  rows, artefacts, the job's outcome) are tried again while Postgres is unavailable, up to
  ``STORE_WAIT_MAX_SEC``, instead of failing the render.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

import redis.asyncio as aioredis
import structlog

from shared.errors import DatabaseUnavailable
from shared.streams import REDIS_ERRORS

__all__ = ["DEFAULT_PATIENCE_S", "hold_lease", "keep_lease", "lease_holder", "patiently"]

log = structlog.get_logger(__name__)
T = TypeVar("T")

#: ``STORE_WAIT_MAX_SEC``'s default: how long a write waits for Postgres to come back (s).
DEFAULT_PATIENCE_S = 300.0


def _key(job_id: UUID) -> str:
    return f"stk:job-owner:{job_id}"


async def hold_lease(redis: aioredis.Redis, job_id: UUID, owner: str, *, ttl_s: float) -> None:
    """Hold (or refresh) the job's ownership lease for ``ttl_s`` seconds.

    Raises:
        redis.exceptions.RedisError, OSError: Redis could not be reached.
    """
    await redis.set(_key(job_id), owner, px=max(1, int(ttl_s * 1000)))


async def lease_holder(redis: aioredis.Redis, job_id: UUID) -> str | None:
    """The owner whose lease on the job has not expired, or ``None``.

    Raises:
        redis.exceptions.RedisError, OSError: Redis could not be reached.
    """
    value = await redis.get(_key(job_id))
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else None


async def keep_lease(
    redis: aioredis.Redis, job_id: UUID, owner: str, *, every_s: float, ttl_s: float
) -> None:
    """Refresh the lease every ``every_s`` seconds until cancelled (a Redis error is logged and the next
    beat tried)."""
    while True:
        try:
            await hold_lease(redis, job_id, owner, ttl_s=ttl_s)
        except REDIS_ERRORS as exc:
            log.warning("LEASE_FAILED", job_id=str(job_id), error=type(exc).__name__)
        await asyncio.sleep(every_s)


async def patiently(
    write: Callable[[], Awaitable[T]], *, patience_s: float = DEFAULT_PATIENCE_S, what: str = "write"
) -> T:
    """Run ``write`` (which opens its own transaction); while Postgres is unavailable, run it again after
    0.5 s, doubling up to 5 s, for at most ``patience_s`` seconds (logs ``STORE_WAIT`` once, and
    ``STORE_BACK`` when it went through).

    Raises:
        DatabaseUnavailable: Postgres was still unavailable after ``patience_s``.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + patience_s
    delay = 0.5
    waited = False
    while True:
        try:
            result = await write()
        except DatabaseUnavailable as exc:
            if loop.time() + delay > give_up:
                raise
            if not waited:
                log.warning("STORE_WAIT", what=what, error=str(exc), patience_s=patience_s)
                waited = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
            continue
        if waited:
            log.info("STORE_BACK", what=what)
        return result
