"""Key/value rows shared by every replica (maintenance pause, queue state, last digest day)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import settings


class SettingsRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def get(self, key: str, *, for_update: bool = False) -> Any:
        """The JSON value stored under ``key``, or ``None`` (``for_update``: lock the row until commit)."""
        query = sa.select(settings.c.value).where(settings.c.key == key)
        if for_update:
            query = query.with_for_update()
        return (await self.conn.execute(query)).scalar()

    async def put(self, key: str, value: Any) -> None:
        stmt = insert(settings).values(key=key, value=value)
        await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[settings.c.key],
                set_={"value": stmt.excluded.value, "updated_at": sa.func.now()},
            )
        )

    async def claim_value(self, key: str, value: Any) -> bool:
        """Store ``value`` under ``key`` unless it is already the stored value: ``True`` for exactly one of
        any number of concurrent callers with the same ``value`` (one conditional upsert), ``False`` for
        the others and for every later one (e.g. the digest's day, :mod:`shared.digest`)."""
        stmt = insert(settings).values(key=key, value=value)
        claimed = await self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[settings.c.key],
                set_={"value": stmt.excluded.value, "updated_at": sa.func.now()},
                where=settings.c.value != stmt.excluded.value,
            ).returning(settings.c.key)
        )
        return claimed.one_or_none() is not None

    async def put_if_absent(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` unless the key has a row already (then nothing changes)."""
        await self.conn.execute(
            insert(settings)
            .values(key=key, value=value)
            .on_conflict_do_nothing(index_elements=[settings.c.key])
        )

    async def delete(self, key: str) -> None:
        await self.conn.execute(sa.delete(settings).where(settings.c.key == key))
