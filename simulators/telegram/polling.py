"""Long polling as the Bot API server does it: one waiting ``getUpdates`` per bot.

From tdlib/telegram-bot-api ``Client.cpp`` (``do_get_updates``, ``abort_long_poll``, ``fail_query_conflict``):
a ``getUpdates`` that finds nothing and has ``timeout`` > 0 becomes *the* long poll; if another long poll was
waiting, that older request is answered 409 ``Conflict: terminated by other getUpdates request; make sure that
only one bot instance is running`` and the newer one waits. A request with ``timeout`` = 0 never disturbs the
waiting one. Conflict answers are spaced at least 3 s apart (later ones are delayed), which keeps two
competing pollers from spinning.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from simulators.telegram.errors import TERMINATED_BY_GET_UPDATES, BotApiError

CONFLICT_SPACING_S = 3.0


@dataclass
class _Waiter:
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    terminated_by: str | None = None


class LongPoll:
    """Parks the current long poll until updates arrive, its timeout passes or a newer one replaces it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._waiter: _Waiter | None = None
        self._next_conflict_at = 0.0
        self._closing = False

    @property
    def waiting(self) -> bool:
        """Whether a long poll is parked now."""
        return self._waiter is not None

    def notify(self) -> None:
        """New updates exist: wake the parked long poll."""
        if self._waiter is not None:
            self._waiter.wake.set()

    def terminate(self, description: str) -> None:
        """End the parked long poll with a 409 ``description`` (a newer poll, or ``setWebhook``)."""
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.terminated_by = description
            waiter.wake.set()

    def shutdown(self) -> None:
        """The server is stopping: the parked long poll (and any later one) returns at once."""
        self._closing = True
        self.notify()

    async def wait(self, timeout_s: float, has_updates: Callable[[], bool]) -> None:
        """Park until ``has_updates()`` is true or ``timeout_s`` passes; the caller then reads the updates.

        Raises ``BotApiError`` 409 when a newer long poll or ``setWebhook`` ends this one.
        """
        self.terminate(TERMINATED_BY_GET_UPDATES)
        waiter = _Waiter()
        self._waiter = waiter
        deadline = self._clock() + timeout_s
        try:
            while True:
                if waiter.terminated_by is not None:
                    await self._space_conflicts()
                    raise BotApiError(409, waiter.terminated_by)
                if has_updates() or self._closing:
                    return
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return
                waiter.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.wake.wait(), remaining)
        finally:
            if self._waiter is waiter:
                self._waiter = None

    async def _space_conflicts(self) -> None:
        now = self._clock()
        if now >= self._next_conflict_at:
            self._next_conflict_at = now + CONFLICT_SPACING_S
        else:
            await asyncio.sleep(CONFLICT_SPACING_S)
