"""Telegram updates received by the gateway's webhook (issue 22): ``tg_updates``, one row per ``update_id``.

In webhook mode (``TELEGRAM_UPDATES=webhook``) every gateway replica accepts Telegram's POSTs and answers
2xx only once the update is stored here (``INSERT ... ON CONFLICT (update_id) DO NOTHING``, so Telegram's
retries of an update it did not see answered store nothing new); the leading replica handles the stored
updates and sets ``handled_at``. ``body`` is the Update as Telegram sent it (JSON). Handled rows are
deleted after a day (Telegram keeps an undelivered update no longer than 24 h, so no retry can come later).

Self-contained on purpose: another revision 0011 is being written beside it; the lead renumbers this one
at merge (its ``down_revision`` then names the other).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tg_updates",
        sa.Column("update_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("body", JSONB, nullable=False),
        sa.Column("received_at", TZ, nullable=False, server_default=sa.func.now()),
        sa.Column("handled_at", TZ),
    )
    op.create_index(
        "ix_tg_updates_unhandled",
        "tg_updates",
        ["update_id"],
        postgresql_where=sa.text("handled_at IS NULL"),
    )
    op.create_index("ix_tg_updates_handled_at", "tg_updates", ["handled_at"])


def downgrade() -> None:
    op.drop_index("ix_tg_updates_handled_at", table_name="tg_updates")
    op.drop_index("ix_tg_updates_unhandled", table_name="tg_updates")
    op.drop_table("tg_updates")
