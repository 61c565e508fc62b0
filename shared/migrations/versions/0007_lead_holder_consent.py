"""Leads: who holds a lead (``taken_by_id``, ``taken_by_name``) and when the visitor consented
(``consented_at`` on ``leads`` and ``lead_repeats``), issue 13 item 4.

``taken_by_*`` is the staff member who pressed Take; unlike ``status_by_*`` (whoever pressed last) it
survives Done, Spam and Reopen, so only that person (or an admin) may finish the lead, and a reopened
lead goes back to them (:mod:`leads.cards` "Lead status"). Leads taken before this migration get their
holder from ``status_by_*``; a lead already done or spam has none (who took it is not known), so anyone
may reopen it, and it reopens as ``new``.

``consented_at``: when the landing form was sent with its consent line ticked (``POST /leads`` refuses a
body without ``consent: true``, 422 ``consent_required``). Nullable: rows stored before have none.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("leads", sa.Column("taken_by_id", sa.BigInteger))
    op.add_column("leads", sa.Column("taken_by_name", sa.Text))
    op.add_column("leads", sa.Column("consented_at", TZ))
    op.add_column("lead_repeats", sa.Column("consented_at", TZ))
    op.execute(
        "UPDATE leads SET taken_by_id = status_by_id, taken_by_name = status_by_name WHERE status = 'taken'"
    )


def downgrade() -> None:
    op.drop_column("lead_repeats", "consented_at")
    op.drop_column("leads", "consented_at")
    op.drop_column("leads", "taken_by_name")
    op.drop_column("leads", "taken_by_id")
