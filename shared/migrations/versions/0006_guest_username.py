"""The guest's Telegram ``@username`` on the session (``sessions.tg_username``), and the indexes behind
the admin page's job list and evening figures (issue 13 item 3).

``tg_username`` is recorded with the binding (``/start <token>``) next to ``guest_name`` (the first name),
so an operator can find a guest's job by ``@username``; nullable: many Telegram users have none, and
sessions bound before this migration have none. ``ix_jobs_created`` orders the job list (newest first,
keyset paging on ``(created_at, id)``); ``ix_jobs_link_sent`` serves "guests served" and "time to link"
of the last hour.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("tg_username", sa.Text))
    op.create_index("ix_jobs_created", "jobs", ["created_at", "id"])
    op.create_index("ix_jobs_link_sent", "jobs", ["link_sent_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_link_sent", table_name="jobs")
    op.drop_index("ix_jobs_created", table_name="jobs")
    op.drop_column("sessions", "tg_username")
