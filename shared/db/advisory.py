"""Postgres session-level advisory locks held on a dedicated connection (``pg_try_advisory_lock``).

A session lock lives as long as its connection: closing the connection frees it, and so does a Postgres
restart, which cuts it. :meth:`SessionLock.still_held` tells the holder it may have lost the lock; the
holder then releases and tries :meth:`SessionLock.acquire` again (the telegram gateway's single-instance
lock, DESIGN.md §2).
"""

from __future__ import annotations

import asyncpg

from shared.db import plain_url

#: What :meth:`SessionLock.acquire` raises when Postgres cannot be reached (retry later).
LOCK_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, asyncpg.PostgresError, TimeoutError)


class SessionLock:
    """Holds ``pg_try_advisory_lock(key)`` (a 64-bit integer key) on its own connection."""

    def __init__(self, database_url: str, key: int) -> None:
        self.key = key
        self._url = plain_url(database_url)
        self._conn: asyncpg.Connection | None = None

    async def acquire(self) -> bool:
        """Try to take the lock (10 s timeouts); ``False`` when another session holds it.

        Raises:
            OSError | asyncpg.PostgresError | TimeoutError: Postgres cannot be reached
                (:data:`LOCK_CONNECTION_ERRORS`).
        """
        conn = await asyncpg.connect(self._url, timeout=10)
        try:
            taken = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", self.key, timeout=10))
        except BaseException:
            conn.terminate()
            raise
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
        except LOCK_CONNECTION_ERRORS:
            return False
        return True

    async def release(self) -> None:
        """Close the lock's connection (which frees the lock); a broken one is dropped without a word."""
        conn, self._conn = self._conn, None
        if conn is None or conn.is_closed():
            return
        try:
            await conn.close(timeout=5)
        except LOCK_CONNECTION_ERRORS:
            conn.terminate()
