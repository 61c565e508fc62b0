"""Submissions per client, counted in Redis so every ingest replica shares one limit (DESIGN.md §8).

A window starts with a client's first submission and lasts ``window_s``; within it at most ``limit`` are
allowed. One round trip: ``SET key 0 EX window NX`` (start the window), ``INCR`` (``INCR`` keeps the TTL),
``TTL``. The client id is hashed, so no address is stored. :meth:`RateLimiter.hit_once` counts distinct
items instead (the captures of a session: a retry of one capture is not counted again). When Redis does
not answer within ``timeout_s`` the request is allowed: the landing must keep taking leads while Redis
is down (DESIGN.md §3, "HTTP endpoints that only need Postgres keep working").
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

import redis.asyncio as aioredis
import redis.exceptions
import structlog

log = structlog.get_logger(__name__)

# KEYS[1]: the client's set of items in its window; ARGV: item, limit, window (s). An item already in the
# set is allowed and not counted again; a new one is added (starting the window) unless the set is full.
_HIT_ONCE = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return {1, 0} end
local n = redis.call('SCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return {0, redis.call('TTL', KEYS[1])} end
redis.call('SADD', KEYS[1], ARGV[1])
if n == 0 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
return {1, 0}
"""


@dataclass(frozen=True)
class Decision:
    """``allowed``; when not, ``retry_after_s`` seconds until the client's window ends."""

    allowed: bool
    retry_after_s: int = 0


class RateLimiter:
    """``limit`` submissions per ``window_s`` seconds per client, shared through ``redis``."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        limit: int,
        window_s: int,
        prefix: str = "stk:ratelimit:leads:",
        timeout_s: float = 0.5,
    ) -> None:
        self.redis = redis
        self.limit = limit
        self.window_s = window_s
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._hit_once = redis.register_script(_HIT_ONCE)

    async def hit(self, client: str) -> Decision:
        """Count one submission of ``client`` (e.g. its IP address) and decide."""
        key = self.prefix + hashlib.sha256(client.encode()).hexdigest()[:24]
        try:
            async with asyncio.timeout(self.timeout_s):
                pipe = self.redis.pipeline(transaction=True)
                pipe.set(key, 0, ex=self.window_s, nx=True)
                pipe.incr(key)
                pipe.ttl(key)
                _started, count, ttl = await pipe.execute()
        except (TimeoutError, OSError, redis.exceptions.RedisError) as exc:
            log.warning("RATE_LIMIT_UNAVAILABLE", error=type(exc).__name__)
            return Decision(True)
        if int(count) > self.limit:
            return Decision(False, retry_after_s=max(1, int(ttl)))
        return Decision(True)

    async def hit_once(self, client: str, item: str) -> Decision:
        """Count ``item`` (e.g. a capture id) once for ``client`` (e.g. a session) and decide: an item
        counted before in the window is allowed again; a new one only while fewer than ``limit`` are."""
        key = self.prefix + "once:" + hashlib.sha256(client.encode()).hexdigest()[:24]
        try:
            async with asyncio.timeout(self.timeout_s):
                allowed, ttl = await self._hit_once(keys=[key], args=[item, self.limit, self.window_s])
        except (TimeoutError, OSError, redis.exceptions.RedisError) as exc:
            log.warning("RATE_LIMIT_UNAVAILABLE", error=type(exc).__name__)
            return Decision(True)
        if not int(allowed):
            return Decision(False, retry_after_s=max(1, int(ttl)))
        return Decision(True)
