"""Sessions of guests without Telegram: ``sessions.delivery`` is ``telegram`` or ``download`` (issue 23
item 3). A ``download`` session takes a photo without a Telegram link and its pack is delivered as the
download page (:mod:`shared.downloads`) instead of a sticker set.

Every existing session is a Telegram one (the server default), so today's deployments keep working.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("delivery", sa.Text, nullable=False, server_default="telegram"))
    op.create_check_constraint("ck_sessions_delivery", "sessions", "delivery IN ('telegram', 'download')")


def downgrade() -> None:
    # A download session's jobs would otherwise look like Telegram jobs whose guest never linked.
    op.execute("DELETE FROM sessions WHERE delivery = 'download'")
    op.drop_constraint("ck_sessions_delivery", "sessions")
    op.drop_column("sessions", "delivery")
