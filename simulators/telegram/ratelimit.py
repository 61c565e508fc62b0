"""Flood control: token buckets per private chat, per group and across all chats.

A message-sending call takes one token from its chat's bucket and one from the global bucket; when either
is empty the call fails with 429 ``Too Many Requests: retry after N`` and takes nothing, so waiting exactly
``retry_after`` seconds and repeating succeeds (core.telegram.org/bots/faq;
core.telegram.org/bots/api#responseparameters).
Numbers come from ``config.Limits``; a rate of ``0`` disables that bucket.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from simulators.telegram.config import Limits
from simulators.telegram.errors import too_many_requests


@dataclass
class TokenBucket:
    """``capacity`` tokens, refilled at ``rate`` tokens/s; ``tokens``/``updated`` are the state at a time."""

    capacity: float
    rate: float
    tokens: float
    updated: float

    def wait(self, now: float) -> float:
        """Seconds until one token is available (0 if one is now); refills as a side effect."""
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        """Consume one token (call ``wait`` first)."""
        self.tokens -= 1


class FloodControl:
    """Decides whether a message to a chat may go now. ``clock`` returns seconds (monotonic)."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._limits = limits
        self._chats: dict[int, TokenBucket] = {}
        self._global: TokenBucket | None = None

    @property
    def limits(self) -> Limits:
        """The limits in force."""
        return self._limits

    def configure(self, limits: Limits) -> None:
        """Apply new limits; every bucket starts full again."""
        self._limits = limits
        self.reset()

    def reset(self) -> None:
        """Forget all buckets (they refill to full)."""
        self._chats.clear()
        self._global = None

    def acquire(self, chat_id: int) -> None:
        """Count one message to ``chat_id`` (> 0 private, < 0 group).

        Raises ``BotApiError`` 429 with ``retry_after`` = whole seconds until both buckets have a token.
        """
        now = self._clock()
        buckets = [bucket for bucket in (self._chat_bucket(chat_id, now), self._global_bucket(now)) if bucket]
        waits = [bucket.wait(now) for bucket in buckets]
        longest = max(waits, default=0.0)
        if longest > 0:
            raise too_many_requests(math.ceil(longest))
        for bucket in buckets:
            bucket.take()

    def _chat_bucket(self, chat_id: int, now: float) -> TokenBucket | None:
        if chat_id < 0:
            rate, capacity = self._limits.group_per_minute / 60.0, self._limits.group_per_minute
        else:
            rate, capacity = self._limits.private_per_second, float(self._limits.private_burst)
        if rate <= 0:
            return None
        bucket = self._chats.get(chat_id)
        if bucket is None:
            bucket = self._chats[chat_id] = TokenBucket(max(capacity, 1.0), rate, max(capacity, 1.0), now)
        return bucket

    def _global_bucket(self, now: float) -> TokenBucket | None:
        rate = self._limits.global_per_second
        if rate <= 0:
            return None
        if self._global is None:
            self._global = TokenBucket(max(rate, 1.0), rate, max(rate, 1.0), now)
        return self._global
