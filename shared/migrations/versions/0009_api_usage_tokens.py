"""The tokens each AI provider call's answer reported, in ``api_usage`` (issue 18): text and image input,
text and image output, and reasoning ("thinking") tokens, so that a call's ``cost_usd`` is checkable as
the usage the provider reported times the model's sourced price (``shared/ai_models.py``). NULL where the
answer reported none (a failure, or an answer without usage: its cost is then the estimate).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

COLUMNS = (
    "input_text_tokens",
    "input_image_tokens",
    "output_text_tokens",
    "output_image_tokens",
    "reasoning_tokens",
)


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("api_usage", sa.Column(name, sa.Integer, nullable=True))


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("api_usage", name)
