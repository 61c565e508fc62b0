"""Admin alert cooldowns: one row per alert key (DESIGN.md §9)."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import alerts


class AlertRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def claim_send(self, key: str, *, cooldown: timedelta) -> int | None:
        """Decide whether alert ``key`` may be sent now; replicas racing on one key get one "yes".

        Returns:
            How many alerts with this key were suppressed since the last one sent (mention them), or
            ``None`` when the key is inside its ``cooldown`` (the suppression is counted instead).
        """
        inserted = (
            await self.conn.execute(
                insert(alerts)
                .values(key=key, last_sent_at=sa.func.now())
                .on_conflict_do_nothing(index_elements=[alerts.c.key])
                .returning(alerts.c.key)
            )
        ).one_or_none()
        if inserted is not None:
            return 0
        row = (
            await self.conn.execute(
                sa.select(alerts.c.suppressed, alerts.c.last_sent_at <= sa.func.now() - cooldown)
                .where(alerts.c.key == key)
                .with_for_update()
            )
        ).one()
        suppressed, due = int(row[0]), bool(row[1])
        if due:
            await self.conn.execute(
                sa.update(alerts)
                .where(alerts.c.key == key)
                .values(last_sent_at=sa.func.now(), suppressed=0, sent_count=alerts.c.sent_count + 1)
            )
            return suppressed
        await self.conn.execute(
            sa.update(alerts).where(alerts.c.key == key).values(suppressed=alerts.c.suppressed + 1)
        )
        return None
