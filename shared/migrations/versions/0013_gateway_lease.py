"""The telegram-gateway's leadership lease (issue 22): one ``gateway_lease`` row per lease name, holding
the replica that leads (``holder``), the lease's generation (``epoch``, + 1 at every takeover) and when it
lapses (``expires_at``, Postgres's clock). It replaces the session-level advisory lock (key ``0x5B0002``)
with which a second gateway refused to start: a lock lives as long as its connection, so a leader on a
lost node or behind a partition held it until Postgres noticed the dead TCP connection (minutes), and a
standby could not take over. A lease lapses on its own (:mod:`shared.repositories.gateway_lease`).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gateway_lease",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("epoch >= 1", name="ck_gateway_lease_epoch"),
    )


def downgrade() -> None:
    """Back to 0012: the table goes; a gateway from before the lease takes its advisory lock again."""
    op.drop_table("gateway_lease")
