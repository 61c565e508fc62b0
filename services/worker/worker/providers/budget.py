"""The fleet-wide provider budget (issue 12, item 4): image and vision calls in flight and per minute, per
provider account, shared through Redis by every worker replica.

``AI_MAX_PARALLEL_IMAGES`` (spec/002: 9 per process) bounds one process; with N replicas (KEDA, Compose
``--scale``) the provider would see N times that, and each replica would back off alone on a 429. This
budget is the account-wide limit in front of it; a call needs both: first the process's semaphore (held by
:class:`worker.providers.chain.ProviderChain`), then a fleet slot from :meth:`FleetBudget.slot`.

Keys (``{prefix}{provider}:{call}:…``, ``call`` is ``image`` or ``vision``; one account per provider name: the
replicas that share a Redis share the provider keys, one deployment per venue):

- ``…:leases``: a sorted set of lease ids scored by their expiry (ms, Redis ``TIME``). A lease is taken,
  renewed every ``lease_s / 3`` while the call runs, and released by one Lua script each
  (``register_script``); expired members are dropped before every count, so the slots of a crashed or
  SIGKILLed replica come back by themselves after at most ``lease_s``.
- ``…:window``: a sorted set of the calls started in the last 60 s (a sliding window, scored by start ms).
- ``{prefix}{provider}:cooldown``: set by any replica that got a 429 (:meth:`FleetBudget.cool_down`), for
  the provider's ``Retry-After`` (or the chain's next wait); while it lives no replica starts a call to that
  provider, image or vision. It is only ever lengthened, never shortened.

All times are Redis's clock (``TIME`` inside the scripts), so replicas' clock skew does not matter.

Waiting for a slot sleeps (cancellable, ``asyncio.sleep``) for the hint the script returns (the oldest call
leaving the window, the cool-down's end) or ``poll_s``, with jitter, and gives up after ``wait_max_s``
(``AI_FLEET_WAIT_MAX_SEC``) with :class:`~worker.providers.base.ProviderCallError` of class ``rate_limit``:
the chain then moves to the next provider (whose account has its own budget), nothing was sent and nothing
is recorded in ``api_usage``.

When Redis does not answer (in ``timeout_s``, 3 s, or refuses the connection) the budget **fails open**: the
call goes ahead under the process's own ``AI_MAX_PARALLEL_IMAGES`` semaphore, with a
``FLEET_BUDGET_UNAVAILABLE`` log line (once per outage) and ``stk_provider_budget_unavailable_total``. Why
not raise ``RedisUnavailable``: the calls waiting here belong to jobs already claimed and paid for in part;
failing them would charge guests' attempts for our own outage, while the per-process limit still bounds each
replica and a provider 429 is still handled by the chain's backoff. During a Redis outage the replicas
cannot claim new jobs either (the stream is in Redis), so the excess is bounded by the jobs already running.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import redis.asyncio as aioredis
import redis.exceptions
import structlog

from shared.errors import ErrorClass
from shared.metrics import (
    PROVIDER_BUDGET_HELD,
    PROVIDER_BUDGET_UNAVAILABLE,
    PROVIDER_BUDGET_WAIT_SECONDS,
    PROVIDER_BUDGET_WAITS,
)
from worker.providers.base import ProviderCallError

__all__ = ["BudgetLimits", "CallType", "FleetBudget"]

log = structlog.get_logger(__name__)
CallType = Literal["image", "vision"]
WINDOW_MS = 60_000

# KEYS: leases, window, cooldown. ARGV: lease id, lease ms, max in flight (0: no cap), per minute (0: no cap).
# Returns {granted (1/0), wait hint ms, reason, in flight after}.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cool = redis.call('PTTL', KEYS[3])
if cool > 0 then return {0, cool, 'cooldown', 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[3])
if cap > 0 and held >= cap then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now, 'in_flight', held}
end
local per = tonumber(ARGV[4])
if per > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
  if redis.call('ZCARD', KEYS[2]) >= per then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {0, tonumber(oldest[2]) + 60000 - now, 'per_minute', held}
  end
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 61000)
end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
return {1, 0, 'ok', held + 1}
"""

# KEYS: leases. ARGV: lease id, lease ms. Returns 1 when the lease was still held (and is extended), else 0.
_RENEW = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1
"""

# KEYS: cooldown. ARGV: ms. Lengthens the cool-down to ms from now, never shortens it; returns its PTTL.
_COOL_DOWN = """
local ms = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ms then redis.call('SET', KEYS[1], '1', 'PX', ms) end
return redis.call('PTTL', KEYS[1])
"""


@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """One call type's fleet-wide limits for one provider account: ``in_flight`` calls at once and
    ``per_minute`` calls started in any 60 s; 0 means no fleet limit of that kind."""

    in_flight: int = 0
    per_minute: int = 0


class FleetBudget:
    """Fleet-wide slots for provider calls (see the module docstring).

    Args:
        redis: the replica's client (the worker's ``ServiceRuntime.redis``).
        limits: per call type (``image``, ``vision``); a missing type has no fleet limit.
        providers: the provider names the budget applies to (``gemini``, ``openai``); other names (the
            offline ``local`` renderer) get a slot at once.
        lease_s: a lease's life (s) without renewal (``AI_FLEET_LEASE_SEC``, 30): how soon a crashed
            replica's slots come back.
        wait_max_s: the longest wait for a slot (s) before ``rate_limit`` (``AI_FLEET_WAIT_MAX_SEC``, 120).
        poll_s: the longest sleep between two tries (s).
        timeout_s: how long one Redis round trip may take before the budget fails open (s; 3: well above a
            round trip, and above the event-loop stalls of a worker busy post-processing on a loaded machine,
            which would otherwise read as a Redis outage and send calls without a slot).
        prefix: the keys' prefix (tests give each budget group its own).
        sleep, rand: ``asyncio.sleep`` and uniform [0, 1) (jitter of up to 20 % on each sleep).
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        limits: dict[CallType, BudgetLimits],
        *,
        providers: frozenset[str] = frozenset({"gemini", "openai"}),
        lease_s: float = 30.0,
        wait_max_s: float = 120.0,
        poll_s: float = 0.25,
        timeout_s: float = 3.0,
        prefix: str = "stk:budget:",
        sleep: Callable[[float], Any] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.redis = redis
        self.limits = limits
        self.providers = providers
        self.lease_ms = max(1, int(lease_s * 1000))
        self.wait_max_s = wait_max_s
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.prefix = prefix
        self.sleep = sleep
        self.rand = rand
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._cool_down = redis.register_script(_COOL_DOWN)
        self._release = redis.register_script("return redis.call('ZREM', KEYS[1], ARGV[1])")
        self._down = False
        self._tasks: set[asyncio.Task[Any]] = set()
        for provider in sorted(providers):  # the series exist at 0 from the start (dashboard, compose-check)
            PROVIDER_BUDGET_UNAVAILABLE.labels(provider=provider)
            for call in ("image", "vision"):
                PROVIDER_BUDGET_HELD.labels(provider=provider, call=call)
                PROVIDER_BUDGET_WAIT_SECONDS.labels(provider=provider, call=call)
                for reason in ("in_flight", "per_minute", "cooldown"):
                    PROVIDER_BUDGET_WAITS.labels(provider=provider, call=call, reason=reason)

    def _keys(self, provider: str, call: CallType) -> list[str]:
        base = f"{self.prefix}{provider}:{call}:"
        return [base + "leases", base + "window", f"{self.prefix}{provider}:cooldown"]

    def applies(self, provider: str, call: CallType) -> bool:
        """Whether calls of ``call`` type to ``provider`` go through the fleet budget at all."""
        limits = self.limits.get(call)
        return (
            provider in self.providers and limits is not None and (limits.in_flight or limits.per_minute) > 0
        )

    async def _redis(self, coro: Any) -> Any:
        """One round trip under ``timeout_s``; ``None`` when Redis did not answer (fail open)."""
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await coro
        except (TimeoutError, OSError, redis.exceptions.RedisError) as exc:
            if not self._down:
                log.warning(
                    "FLEET_BUDGET_UNAVAILABLE", error=type(exc).__name__, fallback="AI_MAX_PARALLEL_IMAGES"
                )
            self._down = True
            return None
        if self._down:
            log.info("FLEET_BUDGET_AVAILABLE")
            self._down = False
        return result

    @contextlib.asynccontextmanager
    async def slot(self, provider: str, call: CallType) -> AsyncIterator[None]:
        """Hold one fleet slot of ``call`` type for ``provider`` for the body (the request in flight).

        Waits while the account is at its in-flight cap, its per-minute window is full, or a 429
        cool-down is on; the wait is cancellable. The lease is renewed while the body runs and released
        when it ends (also on cancellation).

        Raises:
            ProviderCallError: ``rate_limit`` (not billed, nothing sent) when no slot came in
                ``wait_max_s``.
        """
        if not self.applies(provider, call):
            yield
            return
        lease = await self._wait(provider, call)
        if lease is None:  # Redis did not answer: fail open
            PROVIDER_BUDGET_UNAVAILABLE.labels(provider=provider).inc()
            yield
            return
        held = PROVIDER_BUDGET_HELD.labels(provider=provider, call=call)
        held.inc()
        keys = self._keys(provider, call)
        renewer = asyncio.create_task(self._keep(keys[0], lease), name=f"budget-lease-{provider}-{call}")
        try:
            yield
        finally:
            held.dec()
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            # shielded: a cancelled call still gives its slot back at once instead of after lease_s
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(self._redis(self._release(keys=keys[:1], args=[lease])))

    async def _wait(self, provider: str, call: CallType) -> str | None:
        """A granted lease id, or ``None`` when Redis is unavailable (fail open)."""
        limits = self.limits[call]
        keys = self._keys(provider, call)
        started = time.monotonic()
        deadline = started + self.wait_max_s
        waited: str | None = None
        while True:
            lease = uuid.uuid4().hex
            try:
                answer = await self._redis(
                    self._acquire(keys=keys, args=[lease, self.lease_ms, limits.in_flight, limits.per_minute])
                )
            except asyncio.CancelledError:  # the script may have granted it: give it back
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(self._redis(self._release(keys=keys[:1], args=[lease])))
                raise
            if answer is None:  # the script may have run: give the lease back when Redis answers again
                self._background(self._redis(self._release(keys=keys[:1], args=[lease])))
                return None
            granted, hint_ms, reason = int(answer[0]), int(answer[1]), _text(answer[2])
            if granted:
                if waited is not None:
                    PROVIDER_BUDGET_WAIT_SECONDS.labels(provider=provider, call=call).observe(
                        time.monotonic() - started
                    )
                return lease
            if waited is None:
                PROVIDER_BUDGET_WAITS.labels(provider=provider, call=call, reason=reason).inc()
                log.info("FLEET_BUDGET_WAIT", provider=provider, call=call, reason=reason)
            waited = reason
            now = time.monotonic()
            if now >= deadline:
                PROVIDER_BUDGET_WAIT_SECONDS.labels(provider=provider, call=call).observe(now - started)
                raise ProviderCallError(
                    ErrorClass.RATE_LIMIT,
                    f"fleet budget: no {call} slot for {provider} in {self.wait_max_s:.0f} s ({reason})",
                )
            # in flight: a slot frees when a call ends, so poll; window/cool-down: sleep until the hint
            pause = self.poll_s if reason == "in_flight" else max(self.poll_s, hint_ms / 1000)
            pause = min(pause * (1.0 + 0.2 * self.rand()), deadline - now)
            await self.sleep(max(pause, 0.0))

    def _background(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _keep(self, key: str, lease: str) -> None:
        """Renew ``lease`` every third of its life until cancelled."""
        while True:
            await asyncio.sleep(self.lease_ms / 3000)
            kept = await self._redis(self._renew(keys=[key], args=[lease, self.lease_ms]))
            if kept == 0:  # it expired (e.g. the event loop stalled past lease_s): the cap may be passed once
                log.warning("FLEET_BUDGET_LEASE_LOST", key=key)
                return

    async def cool_down(self, provider: str, seconds: float) -> None:
        """Make every replica hold calls to ``provider`` for ``seconds`` (a 429's ``Retry-After``, or the
        chain's next wait); an existing longer cool-down is kept. Redis errors are logged, not raised."""
        if provider not in self.providers or seconds <= 0:
            return
        key = self._keys(provider, "image")[2]
        await self._redis(self._cool_down(keys=[key], args=[max(1, int(seconds * 1000))]))
        log.warning("FLEET_COOL_DOWN", provider=provider, seconds=round(seconds, 2))

    async def in_flight(self, provider: str, call: CallType) -> int:
        """Unexpired leases of ``call`` type for ``provider`` across the fleet (for tests and ``/status``)."""
        key = self._keys(provider, call)[0]
        now_s, now_us = await self.redis.time()
        return int(await self.redis.zcount(key, f"({now_s * 1000 + now_us // 1000}", "+inf"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
