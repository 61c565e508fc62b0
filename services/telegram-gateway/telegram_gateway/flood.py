"""The gateway's rate limiter for python-telegram-bot: Telegram's limits kept before sending, and a 429
that pauses only what Telegram asked to wait (DESIGN.md §7).

Why not PTB's ``AIORateLimiter``: one ``RetryAfter`` there halts *every* request for the whole wait (a
120 s wait on a lead card delayed an unrelated guest's "You're linked!" by 114 s, issue 8), and it has no
per-private-chat limit (REFERENCE.md "Telegram: rate limits and flood control").

Pacing (before a call, messages only: ``send*`` except ``sendChatAction``, ``edit*``, ``copy*``,
``forward*``; core.telegram.org/bots/faq "My bot is hitting limits"):

| bucket | limit | applies to |
|---|---|---|
| overall | ``overall_per_second`` (30) messages/s | every message |
| private chat | ``private_per_second`` (1) message/s, no burst | a message to a chat id > 0 |
| group | ``group_per_minute`` (20) messages/min | a message to a chat id < 0 (or an ``@channel``) |

Each bucket paces at :data:`HEADROOM` (95 %) of its limit: a message sent exactly on the limit's beat
reaches Telegram a few ms early now and then (network jitter; Telegram's clock is not ours) and finds its
bucket empty, a 429 and a ``retry_after`` wait for that chat. ``make bench`` measured it: pacing at exactly
the limits, 1 × 429 per 300 messages (BENCHMARKS.md "telegram-gateway").

Other calls (``getStickerSet``, ``answerCallbackQuery``, ``createNewStickerSet`` …) are not paced;
``getUpdates`` never reaches a rate limiter (PTB).

Flood control: a ``RetryAfter`` (429 with ``parameters.retry_after``) pauses one **scope** for exactly
``retry_after`` seconds:

- ``chat:<chat_id>`` for a call that names a ``chat_id`` (that chat's other calls wait, other chats go on);
- ``method:<endpoint>:user:<user_id>`` for a call without a chat that names the user it acts for
  (``createNewStickerSet``, ``uploadStickerFile``, ``addStickerToSet``): Telegram does not say what its
  sticker flood limits count, and the narrowest scope the call names is the guest whose set it is. One
  guest's wait then holds up no other guest's set; were the limit wider, every other guest's next call
  gets its own 429 and pauses its own scope, one extra answer each (found by the chaos run: keyed by method
  alone, one guest's 120 s wait on ``createNewStickerSet`` held every other guest's set);
- ``method:<endpoint>`` for any other call (``getStickerSet`` …): a wait on it stops no chat's messages.

No pause is global: a 429 never says it was caused by the overall limit, and the overall bucket keeps the
gateway under 30 messages/s before sending. (``scope="global"`` is therefore never counted.)

A pause up to ``wait_max_s`` (``TELEGRAM_FLOOD_WAIT_MAX_SEC``, 30 s) is waited out for that scope and the
call tried again, at most ``max_retries`` times, except for the calls in :data:`NOT_REPEATED_AFTER_429`:
a 429 on adding stickers often means Telegram already applied the call (REFERENCE.md "Telegram: sticker
sets"), so the limiter records the pause and raises, and the caller reconciles against ``getStickerSet``
before it sends anything again. A longer one is never slept: the call raises
``RetryAfter`` with the remaining seconds at once, and so does any call to that scope while the remaining
pause exceeds the bound (no request is sent). The caller (:mod:`telegram_gateway.executor`) defers the
command's row to the end of the wait (``not_before``, issue 21): the producer never sees a 429, and the
outbox reconciler sends the row when the wait is over. Code that must not sleep that long lowers the
bound for its calls with :func:`flood_wait_bound`: the polling loop does, because it handles updates one
after the other and a handler asleep in one guest's pause would hold up every other guest's update (its
reply is deferred like any command and sent when the pause ends).

Metrics (no chat ids in labels): ``stk_telegram_flood_waits_total{scope=chat|method}`` per 429 answer,
``stk_telegram_paced_total{bucket=overall|private|group}`` per call the limiter held back to keep a limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Coroutine, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import structlog
from aiolimiter import AsyncLimiter
from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter

from shared import metrics

__all__ = [
    "NOT_REPEATED_AFTER_429",
    "FloodLimiter",
    "Scope",
    "flood_wait_bound",
    "is_message",
    "retry_after_seconds",
    "scope_of",
]

log = structlog.get_logger(__name__)
_PRUNE_ABOVE = 1024  # idle per-chat buckets are dropped beyond this many
#: Endpoints a 429 may follow after they applied: never sent again by the limiter itself.
NOT_REPEATED_AFTER_429 = frozenset({"addStickerToSet", "createNewStickerSet", "uploadStickerFile"})
_WAIT_BOUND: ContextVar[float | None] = ContextVar("flood_wait_bound", default=None)


@contextlib.contextmanager
def flood_wait_bound(seconds: float) -> Iterator[None]:
    """Calls made inside (this task and the tasks it starts) sleep at most ``seconds`` of a flood pause;
    a longer one raises ``RetryAfter`` at once. Pacing waits (1 s per private chat …) still apply."""
    token = _WAIT_BOUND.set(seconds)
    try:
        yield
    finally:
        _WAIT_BOUND.reset(token)


@dataclass(frozen=True)
class Scope:
    """What a 429 pauses: ``kind`` ``chat`` or ``method`` (a metric label), ``key`` the dict key."""

    kind: str
    key: str


def is_message(endpoint: str) -> bool:
    """``True`` for the Bot API methods that count against Telegram's message limits."""
    if endpoint == "sendChatAction":
        return False
    return endpoint.startswith(("send", "edit", "copy", "forward"))


def _chat_id(data: dict[str, Any]) -> int | str | None:
    chat_id = data.get("chat_id")
    if chat_id is None:
        return None
    with contextlib.suppress(TypeError, ValueError):
        return int(chat_id)
    return str(chat_id)


def scope_of(endpoint: str, data: dict[str, Any]) -> Scope:
    """The scope a 429 on this call pauses (see the module docstring)."""
    chat_id = _chat_id(data)
    if chat_id is not None:
        return Scope("chat", f"chat:{chat_id}")
    user_id = data.get("user_id")
    if user_id is not None:
        return Scope("method", f"method:{endpoint}:user:{user_id}")
    return Scope("method", f"method:{endpoint}")


def retry_after_seconds(exc: RetryAfter) -> float:
    """``retry_after`` of a PTB ``RetryAfter`` in seconds, without PTB 22's int/timedelta deprecation
    warning (PTB's own ``AIORateLimiter`` reads the same attribute)."""
    return float(exc._retry_after.total_seconds())


#: The share of each message limit the gateway paces at (see the module docstring).
HEADROOM = 0.95


class FloodLimiter(BaseRateLimiter[int]):
    """PTB rate limiter with per-scope flood control (see the module docstring).

    Args:
        overall_per_second, private_per_second, group_per_minute: Telegram's message limits (paced at
            :data:`HEADROOM` of each); ``0`` disables one.
        wait_max_s: the longest flood wait (s) slept here; longer ones raise ``RetryAfter`` at once.
        max_retries: how many times one call is sent again after waiting out a 429.
        clock: monotonic seconds (``time.monotonic``; tests may pass another).
    """

    def __init__(
        self,
        *,
        overall_per_second: float = 30.0,
        private_per_second: float = 1.0,
        group_per_minute: float = 20.0,
        wait_max_s: float = 30.0,
        max_retries: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.wait_max_s = wait_max_s
        self.max_retries = max_retries
        self._clock = clock
        self._private_per_second = private_per_second * HEADROOM
        self._group_per_minute = group_per_minute * HEADROOM
        self._overall = AsyncLimiter(overall_per_second * HEADROOM, 1) if overall_per_second > 0 else None
        self._chats: dict[int | str, AsyncLimiter] = {}
        self._paused_until: dict[str, float] = {}

    async def initialize(self) -> None:
        """Nothing to set up (PTB calls this from ``Bot.initialize``)."""

    async def shutdown(self) -> None:
        """Forget buckets and pauses."""
        self._chats.clear()
        self._paused_until.clear()

    def paused_for(self, scope: Scope) -> float:
        """Seconds the scope is still paused by flood control (0 when it is not)."""
        until = self._paused_until.get(scope.key)
        if until is None:
            return 0.0
        remaining = until - self._clock()
        if remaining <= 0:
            self._paused_until.pop(scope.key, None)
            return 0.0
        return remaining

    def pause(self, scope: Scope, seconds: float) -> None:
        """Pause ``scope`` for ``seconds`` from now (a longer pause already set is kept)."""
        until = self._clock() + seconds
        self._paused_until[scope.key] = max(until, self._paused_until.get(scope.key, until))

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        """Pace the call, respect its scope's pause, send it; wait out a short 429 and send again.

        ``rate_limit_args``: an ``int`` overrides ``max_retries`` for this call.

        Raises:
            RetryAfter: the scope is paused longer than the bound (nothing was sent), or the call
                still got a 429 after ``max_retries`` waits. ``retry_after`` is the remaining pause (s).
        """
        scope = scope_of(endpoint, data)
        bound = self._bound()
        retries = self.max_retries if rate_limit_args is None else rate_limit_args
        message = is_message(endpoint)
        for attempt in range(retries + 1):
            await self._wait_out_pause(scope, bound)
            async with contextlib.AsyncExitStack() as paced:
                if message:
                    for bucket, limiter in self._buckets(data):
                        if not limiter.has_capacity():
                            metrics.TELEGRAM_PACED.labels(bucket=bucket).inc()
                        await paced.enter_async_context(limiter)
                    await self._wait_out_pause(scope, bound)  # a 429 may have come while this was paced
                try:
                    return await callback(*args, **kwargs)
                except RetryAfter as exc:
                    seconds = retry_after_seconds(exc)
                    self.pause(scope, seconds)
                    metrics.TELEGRAM_FLOOD_WAITS.labels(scope=scope.kind).inc()
                    log.warning(
                        "TELEGRAM_FLOOD_CONTROL",
                        method=endpoint,
                        scope=scope.kind,
                        retry_after_s=seconds,
                        attempt=attempt + 1,
                        waits=seconds <= bound and attempt < retries,
                    )
                    if seconds > bound or attempt == retries or endpoint in NOT_REPEATED_AFTER_429:
                        raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _bound(self) -> float:
        """The longest flood pause this call may sleep (s): ``wait_max_s``, or a lower
        :func:`flood_wait_bound`."""
        lowered = _WAIT_BOUND.get()
        return self.wait_max_s if lowered is None else min(lowered, self.wait_max_s)

    async def _wait_out_pause(self, scope: Scope, bound: float) -> None:
        remaining = self.paused_for(scope)
        while remaining > 0:
            if remaining > bound:
                raise RetryAfter(timedelta(seconds=math.ceil(remaining)))
            await asyncio.sleep(remaining)
            remaining = self.paused_for(scope)

    def _buckets(self, data: dict[str, Any]) -> list[tuple[str, AsyncLimiter]]:
        """The limiters one message passes, per-chat first (so a slow chat does not hold an overall
        token while it waits)."""
        buckets: list[tuple[str, AsyncLimiter]] = []
        chat_id = _chat_id(data)
        if chat_id is not None:
            group = isinstance(chat_id, str) or chat_id < 0
            limiter = self._chat_limiter(chat_id, group=group)
            if limiter is not None:
                buckets.append(("group" if group else "private", limiter))
        if self._overall is not None:
            buckets.append(("overall", self._overall))
        return buckets

    def _chat_limiter(self, chat_id: int | str, *, group: bool) -> AsyncLimiter | None:
        rate, period = (self._group_per_minute, 60.0) if group else (self._private_per_second, 1.0)
        if rate <= 0:
            return None
        limiter = self._chats.get(chat_id)
        if limiter is None:
            if len(self._chats) > _PRUNE_ABOVE:
                for key, idle in list(self._chats.items()):
                    if idle.has_capacity(idle.max_rate):
                        del self._chats[key]
            # private: 1 token per 1/rate s with a bucket of one (no burst); group: a bucket of 20 per 60 s
            limiter = AsyncLimiter(rate, period) if group else AsyncLimiter(1, 1.0 / rate)
            self._chats[chat_id] = limiter
        return limiter
