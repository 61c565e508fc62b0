"""AI provider calls as they happen: ``api_usage`` (provider, model, kind, outcome, cost in USD).

One row per call, success or failure, written when the call ends: the job cost ceiling
(``JOB_MAX_COST_USD``) sums a job's rows since ``jobs.created_at``, the optional daily budget sums the
UTC day, and the image-requests-per-day warning counts a Pacific-time day (spec/002 "Cost ceiling").

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_usage",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("job_id", UUID(as_uuid=True), sa.ForeignKey("jobs.id", ondelete="SET NULL")),
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("call_type", sa.Text, nullable=False),
        sa.Column("image_size", sa.Text),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("cost_usd", sa.Numeric(12, 6), nullable=False, server_default="0"),
        sa.Column("latency_ms", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("call_type IN ('image', 'vision')", name="ck_api_usage_call_type"),
    )
    op.create_index("ix_api_usage_job", "api_usage", ["job_id", "created_at"])
    op.create_index("ix_api_usage_created", "api_usage", ["created_at"])


def downgrade() -> None:
    op.drop_table("api_usage")
