"""Photo uploads the kiosk refused (``photo_refusals``, migration 0008): the durable record behind the
admin overview's "refused at the booth (last hour)" by code.

A row holds the session id, its kiosk station, the refusal code and the time; never the photo or anything
about the guest. The rows go with their session (:meth:`shared.repositories.erasure.ErasureRepository.
erase_sessions`, used by ``/delete``, the admin erasure and retention).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import photo_refusals, sessions

__all__ = ["PhotoRefusalRepository"]


class PhotoRefusalRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def record(self, session_id: UUID, code: str) -> bool:
        """Record one refused upload of session ``session_id`` with its station (read from the session) and
        ``code``; ``False`` when the session does not exist (nothing recorded)."""
        result = await self.conn.execute(
            sa.insert(photo_refusals).from_select(
                ["session_id", "station", "code"],
                sa.select(sessions.c.id, sessions.c.station, sa.literal(code, sa.Text)).where(
                    sessions.c.id == session_id
                ),
            )
        )
        return bool(result.rowcount)

    async def by_code_since(self, since: datetime) -> dict[str, int]:
        """Refused uploads at or after ``since`` by code, most frequent first (ties by code)."""
        count = sa.func.count()
        rows = await self.conn.execute(
            sa.select(photo_refusals.c.code, count)
            .where(photo_refusals.c.at >= since)
            .group_by(photo_refusals.c.code)
            .order_by(count.desc(), photo_refusals.c.code)
        )
        return {str(r[0]): int(r[1]) for r in rows}
