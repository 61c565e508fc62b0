"""Leads at full depth: contact identity, card publication state, button actors, repeats, chat pacing.

``leads`` gains the normalised contact (``contact_key``, unique: a second lead from the same contact is a
repeat), the publication state of its card (``post_state``, ``attempts``, ``probes``, ``probe_after``,
``last_error``, ``alerted_at``) and who last pressed a button. ``lead_repeats`` holds repeat submissions
and the state of their notice under the first card. ``lead_chats`` holds per-chat pacing: the flood-control
pause, the token bucket of the group's 20 messages per minute and the highest message id seen.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)
CARD_STATES = "('pending', 'sending', 'unsure', 'checking', 'posted')"
NOTICE_STATES = "('pending', 'sending', 'unsure', 'checking', 'posted', 'failed')"


def upgrade() -> None:
    op.add_column("leads", sa.Column("contact_kind", sa.Text, nullable=False, server_default="other"))
    op.add_column("leads", sa.Column("contact_key", sa.Text))
    op.add_column("leads", sa.Column("post_state", sa.Text, nullable=False, server_default="pending"))
    op.add_column("leads", sa.Column("attempts", sa.Integer, nullable=False, server_default="0"))
    op.add_column("leads", sa.Column("probes", sa.Integer, nullable=False, server_default="0"))
    op.add_column("leads", sa.Column("last_attempt_at", TZ))
    op.add_column("leads", sa.Column("probe_after", sa.BigInteger))
    op.add_column("leads", sa.Column("last_error", sa.Text))
    op.add_column("leads", sa.Column("alerted_at", TZ))
    op.add_column("leads", sa.Column("card_chat_id", sa.BigInteger))
    op.add_column("leads", sa.Column("status_by_id", sa.BigInteger))
    op.add_column("leads", sa.Column("status_by_name", sa.Text))
    op.add_column("leads", sa.Column("status_at", TZ))
    op.add_column("leads", sa.Column("status_version", sa.Integer, nullable=False, server_default="0"))
    op.execute("UPDATE leads SET post_state = 'posted' WHERE published_at IS NOT NULL")
    op.create_check_constraint("ck_leads_status", "leads", "status IN ('new', 'taken', 'done', 'spam')")
    op.create_check_constraint("ck_leads_post_state", "leads", f"post_state IN {CARD_STATES}")
    op.create_index(
        "uq_leads_contact_key",
        "leads",
        ["contact_key"],
        unique=True,
        postgresql_where=sa.text("contact_key IS NOT NULL"),
    )
    op.create_index("ix_leads_post_state_next", "leads", ["post_state", "next_attempt_at"])
    op.create_table(
        "lead_repeats",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("lead_id", sa.BigInteger, sa.ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
        sa.Column("request_id", sa.Text, nullable=False, unique=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("contact", sa.Text, nullable=False),
        sa.Column("message", sa.Text, nullable=False, server_default=""),
        sa.Column("source_page", sa.Text),
        sa.Column("utm", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
        sa.Column("post_state", sa.Text, nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("probes", sa.Integer, nullable=False, server_default="0"),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", TZ),
        sa.Column("last_attempt_at", TZ),
        sa.Column("probe_after", sa.BigInteger),
        sa.Column("last_error", sa.Text),
        sa.Column("message_id", sa.BigInteger),
        sa.Column("notified_at", TZ),
        sa.CheckConstraint(f"post_state IN {NOTICE_STATES}", name="ck_lead_repeats_post_state"),
    )
    op.create_index("ix_lead_repeats_lead", "lead_repeats", ["lead_id"])
    op.create_index("ix_lead_repeats_post_state_next", "lead_repeats", ["post_state", "next_attempt_at"])
    op.create_table(
        "lead_chats",
        sa.Column("chat_id", sa.BigInteger, primary_key=True),
        sa.Column("last_message_id", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("flood_until", TZ),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("tokens_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lead_chats")
    op.drop_table("lead_repeats")
    op.drop_index("ix_leads_post_state_next", table_name="leads")
    op.drop_index("uq_leads_contact_key", table_name="leads")
    op.drop_constraint("ck_leads_post_state", "leads")
    op.drop_constraint("ck_leads_status", "leads")
    for column in (
        "status_version",
        "status_at",
        "status_by_name",
        "status_by_id",
        "card_chat_id",
        "alerted_at",
        "last_error",
        "probe_after",
        "last_attempt_at",
        "probes",
        "attempts",
        "post_state",
        "contact_key",
        "contact_kind",
    ):
        op.drop_column("leads", column)
