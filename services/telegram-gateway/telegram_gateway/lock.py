"""The single-gateway lock: a Postgres session-level advisory lock held for the process's life.

Telegram allows one ``getUpdates`` consumer per token (REFERENCE.md), so a second gateway must not start:
it fails to take the lock and exits with code 1 (DESIGN.md §2).
"""

from __future__ import annotations

import asyncpg

from shared.db import plain_url

GATEWAY_LOCK_KEY = 0x5B_0002


class GatewayLock:
    """Holds ``pg_try_advisory_lock(GATEWAY_LOCK_KEY)`` on a dedicated connection."""

    def __init__(self, database_url: str) -> None:
        self._url = plain_url(database_url)
        self._conn: asyncpg.Connection | None = None

    async def acquire(self) -> bool:
        """Try to take the lock; ``False`` when another gateway holds it.

        Raises:
            OSError | asyncpg.PostgresError: Postgres cannot be reached.
        """
        conn = await asyncpg.connect(self._url, timeout=10)
        taken = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", GATEWAY_LOCK_KEY))
        if not taken:
            await conn.close()
            return False
        self._conn = conn
        return True

    async def still_held(self) -> bool:
        """``False`` when the lock's connection died (Postgres restarted): the lock may be someone else's."""
        if self._conn is None or self._conn.is_closed():
            return False
        try:
            await self._conn.fetchval("SELECT 1", timeout=5)
        except (OSError, asyncpg.PostgresError, TimeoutError):
            return False
        return True

    async def release(self) -> None:
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        self._conn = None
