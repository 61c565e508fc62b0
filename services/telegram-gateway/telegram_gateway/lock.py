"""The single-gateway lock: a Postgres session-level advisory lock held for the process's life.

Telegram allows one ``getUpdates`` consumer per token (REFERENCE.md), so a second gateway must not start:
it fails to take the lock and exits with code 1 (DESIGN.md §2).

A Postgres restart cuts the lock's connection, and with it the lock. :func:`keep_lock` then stops the
gateway's Telegram work (the ``held`` event gates polling and command execution), takes the lock again
once Postgres answers, and carries on; only when another gateway took the lock in between does it end
the process with code 1. ``make chaos`` restarts Postgres and counts every exit it did not cause.
"""

from __future__ import annotations

import asyncio

import structlog

from shared.db.advisory import LOCK_CONNECTION_ERRORS, SessionLock
from shared.streams import Backoff, sleep_or_stop

log = structlog.get_logger(__name__)

GATEWAY_LOCK_KEY = 0x5B_0002


class GatewayLock(SessionLock):
    """Holds ``pg_try_advisory_lock(GATEWAY_LOCK_KEY)`` on a dedicated connection
    (:class:`shared.db.advisory.SessionLock`)."""

    def __init__(self, database_url: str) -> None:
        super().__init__(database_url, GATEWAY_LOCK_KEY)


async def keep_lock(
    lock: GatewayLock,
    *,
    held: asyncio.Event,
    stop: asyncio.Event,
    check_every_s: float = 10.0,
    retry_cap_s: float = 10.0,
) -> int:
    """Watch the held lock every ``check_every_s`` s until ``stop``; re-take it when it is lost.

    ``held`` is set while the lock is ours and cleared while it is not (polling and the executor wait
    for it). Postgres unreachable: retried with backoff (1 s doubling to ``retry_cap_s``), never an exit.

    Returns:
        0 when stopped, 1 when another gateway holds the lock now (``stop`` is set; DESIGN.md §2).
    """
    held.set()
    backoff = Backoff(base_s=1.0, cap_s=retry_cap_s)
    while not stop.is_set():
        await sleep_or_stop(stop, check_every_s)
        if stop.is_set() or await lock.still_held():
            continue
        held.clear()
        log.error("GATEWAY_LOCK_LOST", action="pausing Telegram work until the lock is taken again")
        await lock.release()
        while not stop.is_set():
            try:
                taken = await lock.acquire()
            except LOCK_CONNECTION_ERRORS as exc:
                delay = backoff.next_delay()
                log.warning("GATEWAY_LOCK_RETAKE_FAILED", error=type(exc).__name__, retry_s=round(delay, 1))
                await sleep_or_stop(stop, delay)
                continue
            if not taken:
                log.error("GATEWAY_LOCK_TAKEN_BY_ANOTHER", action="exit 1")
                stop.set()
                return 1
            backoff.reset()
            held.set()
            log.info("GATEWAY_LOCK_RETAKEN")
            break
    return 0
