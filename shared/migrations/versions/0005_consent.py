"""The guest's consent on the kiosk: ``sessions.consent_version``, ``consent_language``, ``consented_at``.

Recorded when the guest presses "Agree" on the consent screen before the camera opens (issue 11 item 1);
a photo upload is refused without it. ``consent_version`` names the exact text shown (the venue's
``CONSENT_VERSION`` plus a digest of the rendered text, :mod:`ingest.consent`), ``consent_language`` the
kiosk language it was shown in. Nullable: sessions opened before this migration have no consent.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("consent_version", sa.Text))
    op.add_column("sessions", sa.Column("consent_language", sa.Text))
    op.add_column("sessions", sa.Column("consented_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("sessions", "consented_at")
    op.drop_column("sessions", "consent_language")
    op.drop_column("sessions", "consent_version")
