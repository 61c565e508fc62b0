"""The outbox owns "later" (issue 21): ``tg_commands`` gains ``not_before`` (a command deferred by
Telegram's flood control is not sent before it), ``attempt`` (1, plus one per deferral), ``subject`` (what
the command is about, :mod:`shared.subjects`, JSONB) with an index on ``(subject->>'kind',
subject->>'id')`` that serves the subject queries (``for_subject``, ``cancel_pending``), ``expires_at``
(a command still pending then is finished ``cancelled`` unsent), and the final status ``cancelled``.

The existing rows' ``subject`` is backfilled from their ids (the id shapes of :mod:`shared.command_ids`
before this revision, a trailing ``:again`` resend included), so no consumer needs an id parser for old
rows. A row whose id matches none of the shapes (a test's, or an unknown one) keeps a NULL subject: its
result is routed nowhere and logged (``DELIVERY_UNKNOWN_RESULT`` / ``LEADS_COMMAND_FAILED``). The id
shapes are a frozen copy here: the same table lives on at run time in
:mod:`shared.repositories.legacy_subjects` (rows
that pre-0010 pods insert during a rolling deploy, filled by the gateway, served by the partial index
``ix_tg_commands_subject_null``), but a migration must not change when app code does later.

The rows the old gateway finished ``failed`` with a 429 before the deploy had no sender left: the old
sweeps that resent them (``<id>:again``, ``create_set:<n+1>``, ``link:<n+1>``) are gone. Those the old
sweeps would still have resent are put back ``pending`` as their next attempt, not before their
``retry_after`` (:data:`REPEND`), and the gateway's reconciler sends them when due.

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


#: The 429-failed rows the old (e8e2e6d) sweeps would still have resent, by their (backfilled) subject:
#: the guest texts of ``delivery.deadlines.GUEST_TEXTS`` and the admin texts within ``RESEND_WITHIN`` (1
#: day; a "still working" notice only before the default 15 min ``DELIVERY_DEADLINE_SEC``), the card
#: edits still showing the lead's status and the "seen" edits within 1 day (leads' ``resend_flooded_edits``),
#: the set deletions within 7 days (``shared.erasure.RESEND_WITHIN``), and delivery's latest
#: ``create_set`` / ``link`` / ``poll`` of a job still ``rendered`` / ``delivering`` (old delivery asked
#: the next attempt at the retry time). A lead card or notice *send* is not here: its post went back to
#: ``pending`` in ``lead_posts`` when old leads read the 429, and leads sends it again itself.
_JOB = "(SELECT j.status, j.created_at FROM jobs j WHERE j.id::text = t.subject->>'id')"
_DAY = "t.created_at >= now() - interval '1 day'"
_LATEST = (
    "NOT EXISTS (SELECT 1 FROM tg_commands u WHERE u.subject->>'kind' = 'job'"
    " AND u.subject->>'id' = t.subject->>'id' AND u.subject->>'step' = t.subject->>'step'"
    " AND coalesce((u.subject->>'n')::int, 1) > coalesce((t.subject->>'n')::int, 1))"
)
REPEND_WHEN = (
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' = 'failure_text' AND {_DAY})",
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' = 'still_working' AND {_DAY} AND EXISTS"
    f" (SELECT 1 FROM {_JOB} AS j WHERE j.status IN ('queued', 'processing', 'rendered', 'delivering')"
    " AND j.created_at > now() - interval '900 seconds'))",
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' = 'generating' AND {_DAY} AND EXISTS"
    f" (SELECT 1 FROM {_JOB} AS j WHERE j.status IN ('queued', 'processing')))",
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' = 'unavailable' AND {_DAY} AND EXISTS"
    f" (SELECT 1 FROM {_JOB} AS j WHERE j.status = 'queued'))",
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' = 'create_set' AND {_LATEST} AND EXISTS"
    f" (SELECT 1 FROM {_JOB} AS j WHERE j.status = 'rendered'))",
    f"(t.subject->>'kind' = 'job' AND t.subject->>'step' IN ('link', 'poll') AND {_LATEST} AND EXISTS"
    f" (SELECT 1 FROM {_JOB} AS j WHERE j.status = 'delivering'))",
    f"(t.subject->>'kind' = 'admin' AND {_DAY})",
    "(t.subject->>'kind' = 'erase_set' AND t.created_at >= now() - interval '7 days')",
    f"(t.subject->>'kind' = 'lead_post' AND t.subject->>'op' = 'seen' AND {_DAY})",
    f"(t.subject->>'kind' = 'lead_post' AND t.subject->>'op' = 'edit' AND {_DAY} AND EXISTS"
    " (SELECT 1 FROM leads l WHERE l.id::text = t.subject->>'id'"
    " AND l.status_version = (t.subject->>'n')::int))",
)
REPEND = sa.text(
    "UPDATE tg_commands t SET status = 'pending',"
    " not_before = t.updated_at + make_interval(secs => coalesce((t.error->>'retry_after')::float, 0)),"
    " attempt = t.attempt + 1, error = NULL, dispatched_at = NULL, updated_at = now()"
    " WHERE t.status = 'failed' AND t.error->>'error_code' = '429'"
    " AND NOT EXISTS (SELECT 1 FROM tg_commands a WHERE a.command_id = t.command_id || :again)"
    f" AND ({' OR '.join(REPEND_WHEN)})"
).bindparams(again=":again")
#: What a downgrade stores as the error of a ``cancelled`` row it turns ``failed`` (the old status set has
#: no ``cancelled``): a 429 whose wait never ends, so the old code neither counts it as a failed attempt
#: (delivery's link and create_set counting skip flood waits) nor resends it (its sweeps resend a 429 only
#: once ``updated_at + retry_after`` has passed: in about 31 years).
CANCELLED_AS_FAILED = (
    '{"error_code": 429, "description": "cancelled unsent (downgraded from 0010)", "retry_after": 1000000000}'
)


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
    op.execute(REPEND)
    op.create_index(
        "ix_tg_commands_subject",
        "tg_commands",
        [sa.text("(subject->>'kind')"), sa.text("(subject->>'id')")],
    )
    op.create_index(
        "ix_tg_commands_subject_null",
        "tg_commands",
        ["created_at"],
        postgresql_where=sa.text("subject IS NULL"),
    )


def downgrade() -> None:
    """Back to 0009's columns and statuses. A ``cancelled`` row becomes ``failed`` with the error
    :data:`CANCELLED_AS_FAILED` (a 429 that is never due), so the old code neither counts it as a failed
    link or set attempt nor resends it; it was never sent. A row deferred ``pending`` stays pending and is
    sent at once by the old gateway (``not_before`` is dropped)."""
    op.drop_index("ix_tg_commands_subject_null", table_name="tg_commands")
    op.drop_index("ix_tg_commands_subject", table_name="tg_commands")
    op.execute(
        sa.text(
            "UPDATE tg_commands SET status = 'failed', error = CAST(:error AS jsonb)"
            " WHERE status = 'cancelled'"
        ).bindparams(error=CANCELLED_AS_FAILED)
    )
    op.drop_constraint("ck_tg_commands_status", "tg_commands", type_="check")
    op.create_check_constraint(
        "ck_tg_commands_status", "tg_commands", "status IN ('pending', 'sending', 'sent', 'failed')"
    )
    for name in ("expires_at", "subject", "attempt", "not_before"):
        op.drop_column("tg_commands", name)
