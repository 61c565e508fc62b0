"""The outbox owns "later" (issue 21): ``tg_commands`` gains ``not_before`` (a command deferred by
Telegram's flood control is not sent before it), ``attempt`` (1, plus one per deferral), ``subject`` (what
the command is about, :mod:`shared.subjects`, JSONB) with an index on ``(subject->>'kind',
subject->>'id')`` that serves the subject queries (``for_subject``, ``cancel_pending``), ``expires_at``
(a command still pending then is finished ``cancelled`` unsent), and the final status ``cancelled``.

The existing rows' ``subject`` is backfilled from their ids (the id shapes of :mod:`shared.command_ids`
before this revision, a trailing ``:again`` resend included), so no consumer needs an id parser for old
rows. A row whose id matches none of the shapes (a test's, or an unknown one) keeps a NULL subject: its
result is routed nowhere and logged (``DELIVERY_UNKNOWN_RESULT`` / ``LEADS_COMMAND_FAILED``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_AGAIN = "(?::again)*$"
#: ``(pattern, subject)``: the pattern's groups are ``m[1]``, ``m[2]`` … in the SQL of the subject.
BACKFILL: tuple[tuple[str, str], ...] = (
    (
        rf"^job:({_UUID}):(generating|preview|create_set)(?::(\d+))?{_AGAIN}",
        "jsonb_build_object('kind', 'job', 'id', m[1], 'step', m[2], 'n', m[3]::int)",
    ),
    (
        rf"^job:({_UUID}):(unavailable|still_working|failure_text|poll|resend_link|find_link):(\d+){_AGAIN}",
        "jsonb_build_object('kind', 'job', 'id', m[1], 'step', m[2], 'n', m[3]::int)",
    ),
    (
        rf"^job:({_UUID}):link(?::(\d+))?{_AGAIN}",
        "jsonb_build_object('kind', 'job', 'id', m[1], 'step', 'link', 'n', coalesce(m[2]::int, 1))",
    ),
    (
        rf"^(lead|repeat):(\d+):(card|notice|find|edit):(\d+){_AGAIN}",
        "jsonb_build_object('kind', 'lead_post', 'id', m[2]::bigint,"
        " 'post', CASE m[1] WHEN 'lead' THEN 'card' ELSE 'notice' END,"
        " 'op', CASE m[3] WHEN 'card' THEN 'send' WHEN 'notice' THEN 'send' ELSE m[3] END, 'n', m[4]::int)",
    ),
    (
        rf"^repeat:(\d+):seen{_AGAIN}",
        "jsonb_build_object('kind', 'lead_post', 'id', m[1]::bigint, 'post', 'notice', 'op', 'seen')",
    ),
    (
        rf"^erase_set:([0-9a-f]{{16}})(?::(\d+))?{_AGAIN}",
        "jsonb_build_object('kind', 'erase_set', 'id', m[1], 'n', coalesce(m[2]::int, 1))",
    ),
    (rf"^erase_post:(-?\d+:\d+){_AGAIN}", "jsonb_build_object('kind', 'erase_post', 'id', m[1])"),
    (
        rf"^alert:([0-9a-f]{{16}}):\d+{_AGAIN}",
        "jsonb_build_object('kind', 'admin', 'id', m[1], 'what', 'alert')",
    ),
    (
        rf"^digest:(\d{{4}}-\d{{2}}-\d{{2}}){_AGAIN}",
        "jsonb_build_object('kind', 'admin', 'id', m[1], 'what', 'digest')",
    ),
    (rf"^update:(\d+){_AGAIN}", "jsonb_build_object('kind', 'update', 'id', m[1]::bigint)"),
    (rf"^cbq:(.+?){_AGAIN}", "jsonb_build_object('kind', 'callback', 'id', m[1])"),
    (
        rf"^session:({_UUID}):unlinked:(\d+){_AGAIN}",
        "jsonb_build_object('kind', 'unlink', 'id', m[1], 'bound_us', m[2]::bigint)",
    ),
)


def backfill_statements() -> list[sa.TextClause]:
    """One ``UPDATE`` per id shape of :data:`BACKFILL`, each setting the subject of the rows still without
    one whose id matches (tests run them against the ids the builders make)."""
    return [
        sa.text(
            f"UPDATE tg_commands SET subject = jsonb_strip_nulls({subject}) "
            "FROM (SELECT command_id AS cid, regexp_match(command_id, :pattern) AS m FROM tg_commands"
            " WHERE subject IS NULL) AS matched "
            "WHERE tg_commands.command_id = matched.cid AND matched.m IS NOT NULL"
        ).bindparams(pattern=pattern)
        for pattern, subject in BACKFILL
    ]


def upgrade() -> None:
    op.add_column("tg_commands", sa.Column("not_before", sa.DateTime(timezone=True), nullable=True))
    op.add_column("tg_commands", sa.Column("attempt", sa.Integer, nullable=False, server_default="1"))
    op.add_column("tg_commands", sa.Column("subject", JSONB, nullable=True))
    op.add_column("tg_commands", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_constraint("ck_tg_commands_status", "tg_commands", type_="check")
    statuses = "status IN ('pending', 'sending', 'sent', 'failed', 'cancelled')"
    op.create_check_constraint("ck_tg_commands_status", "tg_commands", statuses)
    for statement in backfill_statements():
        op.execute(statement)
    op.create_index(
        "ix_tg_commands_subject",
        "tg_commands",
        [sa.text("(subject->>'kind')"), sa.text("(subject->>'id')")],
    )


def downgrade() -> None:
    op.drop_index("ix_tg_commands_subject", table_name="tg_commands")
    op.execute("UPDATE tg_commands SET status = 'failed' WHERE status = 'cancelled'")
    op.drop_constraint("ck_tg_commands_status", "tg_commands", type_="check")
    op.create_check_constraint(
        "ck_tg_commands_status", "tg_commands", "status IN ('pending', 'sending', 'sent', 'failed')"
    )
    for name in ("expires_at", "subject", "attempt", "not_before"):
        op.drop_column("tg_commands", name)
