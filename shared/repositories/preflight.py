"""What the preflight reads from Postgres (:mod:`shared.preflight.stores`): the schema revision Alembic
stamped and the server's clock."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection


class PreflightRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def schema_revisions(self) -> frozenset[str]:
        """The revisions in ``alembic_version`` (one at a time with a linear history); empty when the
        table does not exist (a database that was never migrated)."""
        exists = await self.conn.scalar(sa.text("SELECT to_regclass('public.alembic_version') IS NOT NULL"))
        if not exists:
            return frozenset()
        rows = await self.conn.execute(sa.text("SELECT version_num FROM alembic_version"))
        return frozenset(str(r[0]) for r in rows)

    async def server_now(self) -> datetime:
        """Postgres's ``clock_timestamp()`` (the time of this statement, not of the transaction's start)."""
        value = await self.conn.scalar(sa.text("SELECT clock_timestamp()"))
        assert isinstance(value, datetime)
        return value
