"""Leads from the landing page: idempotent insert by the visitor's ``requestId``, publication state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import leads
from shared.domain import Lead


def _lead(row: Any) -> Lead:
    m = row._mapping
    return Lead(**{name: m[name] for name in Lead.__slots__})


class LeadRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def add(
        self,
        *,
        request_id: str,
        name: str,
        contact: str,
        message: str,
        source_page: str | None,
        utm: dict[str, str],
    ) -> tuple[Lead, bool]:
        """Insert the lead unless ``request_id`` exists; returns ``(lead, created)``.

        Concurrent submits with the same ``request_id`` both get the one row (unique index + ON CONFLICT).
        """
        row = (
            await self.conn.execute(
                insert(leads)
                .values(
                    request_id=request_id,
                    name=name,
                    contact=contact,
                    message=message,
                    source_page=source_page,
                    utm=utm,
                )
                .on_conflict_do_nothing(index_elements=[leads.c.request_id])
                .returning(leads)
            )
        ).one_or_none()
        if row is not None:
            return _lead(row), True
        existing = (await self.conn.execute(sa.select(leads).where(leads.c.request_id == request_id))).one()
        return _lead(existing), False

    async def get(self, lead_id: int) -> Lead | None:
        row = (await self.conn.execute(sa.select(leads).where(leads.c.id == lead_id))).one_or_none()
        return _lead(row) if row else None

    async def mark_published(self, lead_id: int, *, card_message_id: int) -> bool:
        """Record the card's message id; ``False`` when it was already published."""
        result = await self.conn.execute(
            sa.update(leads)
            .where(leads.c.id == lead_id, leads.c.published_at.is_(None))
            .values(published_at=sa.func.now(), card_message_id=card_message_id)
        )
        return bool(result.rowcount)

    async def due_for_dispatch(
        self, *, grace: timedelta, republish_after: timedelta, limit: int
    ) -> list[Lead]:
        """Unpublished leads whose stream hint was never sent after ``grace`` or may be lost."""
        now = sa.func.now()
        rows = await self.conn.execute(
            sa.select(leads)
            .where(
                leads.c.published_at.is_(None),
                sa.or_(leads.c.next_attempt_at.is_(None), leads.c.next_attempt_at <= now),
                sa.or_(
                    sa.and_(leads.c.dispatched_at.is_(None), leads.c.created_at <= now - grace),
                    leads.c.dispatched_at <= now - republish_after,
                ),
            )
            .order_by(leads.c.id)
            .limit(limit)
        )
        return [_lead(r) for r in rows]

    async def mark_dispatched(self, lead_ids: list[int]) -> None:
        if lead_ids:
            await self.conn.execute(
                sa.update(leads).where(leads.c.id.in_(lead_ids)).values(dispatched_at=sa.func.now())
            )

    async def list_recent(self, limit: int = 100) -> list[Lead]:
        rows = await self.conn.execute(sa.select(leads).order_by(leads.c.id.desc()).limit(limit))
        return [_lead(r) for r in rows]
