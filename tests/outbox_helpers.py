"""Reading the Telegram outbox in tests: what the code under test asked the gateway to send."""

from __future__ import annotations

import sqlalchemy as sa

from shared.db.tables import tg_commands
from shared.repositories import Database


async def stored_texts(db: Database, method: str) -> list[str]:
    """The ``text`` parameter of every stored Telegram command of ``method`` (``send_message`` for the
    guest, ``send_admin_message`` for the admins), oldest first (``created_at``)."""
    query = (
        sa.select(tg_commands.c.params["text"].astext)
        .where(tg_commands.c.method == method)
        .order_by(tg_commands.c.created_at)
    )
    async with db.transaction() as repos:
        return list((await repos.conn.execute(query)).scalars().all())
