"""Telegram updates received by the gateway's webhook (``tg_updates``, migration 0011, issue 22).

Every replica stores what Telegram POSTs (:meth:`TelegramUpdateRepository.store`, idempotent on
``update_id``: Telegram repeats an update until a POST is answered 2xx, core.telegram.org/bots/api#setwebhook
"In case of an unsuccessful request ... we will repeat the request"); the leading replica reads the
unhandled ones in ``update_id`` order (:meth:`~TelegramUpdateRepository.unhandled`), handles them as
polling does and marks them (:meth:`~TelegramUpdateRepository.mark_handled`). Handled rows are pruned after
a day (:meth:`~TelegramUpdateRepository.prune_handled`): Telegram keeps an undelivered update at most 24 h.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import tg_updates

__all__ = ["TelegramUpdateRepository"]


class TelegramUpdateRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def store(self, update_id: int, body: dict[str, Any]) -> bool:
        """Store the Update ``body`` (Telegram's JSON object) under ``update_id``; ``False`` when that
        update was stored before (a retry: nothing changes, ``ON CONFLICT (update_id) DO NOTHING``)."""
        result = await self.conn.execute(
            insert(tg_updates)
            .values(update_id=update_id, body=body)
            .on_conflict_do_nothing(index_elements=[tg_updates.c.update_id])
        )
        return bool(result.rowcount)

    async def unhandled(self, limit: int, *, skip: Collection[int] = ()) -> list[dict[str, Any]]:
        """Up to ``limit`` stored updates not handled yet, oldest ``update_id`` first, leaving out the ids
        in ``skip`` (those being handled now); each is the Update body as stored."""
        query = (
            sa.select(tg_updates.c.body)
            .where(tg_updates.c.handled_at.is_(None))
            .order_by(tg_updates.c.update_id)
            .limit(limit)
        )
        if skip:
            query = query.where(tg_updates.c.update_id.not_in(list(skip)))
        rows = await self.conn.execute(query)
        return [dict(body) for (body,) in rows]

    async def mark_handled(self, update_id: int) -> None:
        """Note that update ``update_id`` was handled (it is not read by :meth:`unhandled` again)."""
        await self.conn.execute(
            sa.update(tg_updates)
            .where(tg_updates.c.update_id == update_id, tg_updates.c.handled_at.is_(None))
            .values(handled_at=sa.func.now())
        )

    async def prune_handled(self, before: datetime) -> int:
        """Delete the updates handled before ``before``; returns how many."""
        result = await self.conn.execute(sa.delete(tg_updates).where(tg_updates.c.handled_at < before))
        return int(result.rowcount or 0)

    async def count_unhandled(self) -> int:
        """How many stored updates wait to be handled (preflight, metrics)."""
        value = await self.conn.scalar(
            sa.select(sa.func.count()).select_from(tg_updates).where(tg_updates.c.handled_at.is_(None))
        )
        return int(value or 0)
