"""Events (issue 23 items 1, 2 and 5): a deployment serves one event after another, or several at once.

- ``events``: one row per event: name, venue, IANA time zone, start and end (``NULL``: open), its outfits
  (catalogue ids and its own uploaded ones; an empty list is the whole catalogue), branding (title, accent
  colour, logo URL; a missing key falls back to the ``KIOSK_*`` settings), set title and guest-text
  overrides per language, its languages (empty: every catalogue language; the first is the kiosk's), and
  its budgets (USD per local day and per event).
- ``event_stations``: the kiosk stations that belong to an event.
- ``event_outfits``: outfits an operator uploaded for one event: title, prompt for the AI models, the
  catalogue outfit it is ``based_on`` (body template and offline drawing), an optional thumbnail PNG.
- ``sessions.event_id``, ``api_usage.event_id`` and ``leads.event_id``: what a guest, a provider call and a
  lead count towards (budgets and reports); ``api_usage.event_id`` has no foreign key, so the cost stays
  attributed after erasure.

Today's deployments keep working: the migration creates the ``default`` event (UTC, open-ended, no
stations, no overrides), and every existing session and provider call belongs to it (the columns' server
default, so a writer that names no event writes the default one). A station that no
event lists is served by the default event (:mod:`shared.events`).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("venue", sa.Text, nullable=False, server_default=""),
        sa.Column("time_zone", sa.Text, nullable=False, server_default="UTC"),
        sa.Column("starts_at", TZ),
        sa.Column("ends_at", TZ),
        sa.Column("outfits", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
        sa.Column("branding", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("set_title", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("texts", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("languages", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
        sa.Column("daily_budget_usd", sa.Numeric(12, 2)),
        sa.Column("total_budget_usd", sa.Numeric(12, 2)),
        sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("id ~ '^[a-z0-9][a-z0-9-]{0,39}$'", name="ck_events_id"),
        sa.CheckConstraint(
            "starts_at IS NULL OR ends_at IS NULL OR starts_at < ends_at", name="ck_events_times"
        ),
        sa.CheckConstraint("daily_budget_usd IS NULL OR daily_budget_usd > 0", name="ck_events_daily_budget"),
        sa.CheckConstraint("total_budget_usd IS NULL OR total_budget_usd > 0", name="ck_events_total_budget"),
    )
    op.create_table(
        "event_stations",
        sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("station", sa.Text, primary_key=True),
    )
    op.create_index("ix_event_stations_station", "event_stations", ["station"])
    op.create_table(
        "event_outfits",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("based_on", sa.Text, nullable=False),
        sa.Column("thumbnail", sa.LargeBinary),
        sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("id ~ '^[a-z][a-z0-9_]{1,31}$'", name="ck_event_outfits_id"),
    )
    op.create_index("ix_event_outfits_event", "event_outfits", ["event_id"])
    op.execute("INSERT INTO events (id, name) VALUES ('default', 'Sticker Booth')")
    # Every existing row belongs to the default event, and so does a row written without one.
    op.add_column(
        "sessions",
        sa.Column("event_id", sa.Text, sa.ForeignKey("events.id"), nullable=False, server_default="default"),
    )
    op.create_index("ix_sessions_event", "sessions", ["event_id", "created_at"])
    op.add_column("api_usage", sa.Column("event_id", sa.Text, nullable=False, server_default="default"))
    op.create_index("ix_api_usage_event", "api_usage", ["event_id", "created_at"])
    op.add_column("leads", sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="SET NULL")))


def downgrade() -> None:
    """Back to 0013: the events and what points at them go; sessions, calls and leads stay."""
    op.drop_column("leads", "event_id")
    op.drop_index("ix_api_usage_event", "api_usage")
    op.drop_column("api_usage", "event_id")
    op.drop_index("ix_sessions_event", "sessions")
    op.drop_column("sessions", "event_id")
    op.drop_table("event_outfits")
    op.drop_table("event_stations")
    op.drop_table("events")
