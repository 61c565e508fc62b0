"""Photo uploads refused at the kiosk (``photo_refusals``): one row per refusal of
``POST /sessions/{id}/photo`` with the refusal's code (``no_face``, ``corrupt_image``, ...), so the admin
overview can show "refused at the booth (last hour)" by code from Postgres, not only from a replica's
Prometheus counter.

No photo bytes, no guest: the session id, the kiosk station, the code and the time. The rows go with their
session (erasure and retention, :meth:`shared.repositories.erasure.ErasureRepository.erase_sessions`; the
foreign key cascades as a second line).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "photo_refusals",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column(
            "session_id",
            UUID(as_uuid=True),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("station", sa.Text, nullable=False),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("at", TZ, nullable=False, server_default=sa.func.now()),
    )
    op.create_index("ix_photo_refusals_at", "photo_refusals", ["at"])
    op.create_index("ix_photo_refusals_session", "photo_refusals", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_photo_refusals_session", table_name="photo_refusals")
    op.drop_index("ix_photo_refusals_at", table_name="photo_refusals")
    op.drop_table("photo_refusals")
