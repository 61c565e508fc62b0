"""Compatibility shim for ``tg_commands`` rows written by pre-0010 code (a rolling deploy's old pods).

Migration 0010 backfilled ``subject`` once, from the ids' shapes. An old delivery, leads, ingest or worker
pod that still runs after the migration inserts its commands with ``subject = NULL``: such a result would
be routed nowhere, and :meth:`~shared.repositories.tg_commands.TelegramCommandRepository.for_subject` /
``cancel_pending`` would not see the row (an old pod's ``job:<id>:link`` sent by the new gateway, dropped
by the new delivery, rebuilt each poll, the job failed at the deadline although its link arrived). So the
gateway fills the subject from the id before it executes or re-announces a row
(:func:`fill_subject`), and its reconciler tick fills every recent row still without one
(:func:`fill_missing_subjects`, served by the partial index ``ix_tg_commands_subject_null``).

This is the one place at run time that reads command ids' shapes (:data:`LEGACY_SHAPES`: the id formats
of :mod:`shared.command_ids` before 0010, a trailing ``:again`` resend included). Migration 0010 keeps
its own frozen copy of the same table, so a later change here cannot change what the migration did.
Remove this module (and the partial index) once no pre-0010 pod can run.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["LEGACY_SHAPES", "fill_missing_subjects", "fill_subject"]

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_AGAIN = "(?::again)*$"
#: ``(pattern, subject)``: the pattern's groups are ``m[1]``, ``m[2]`` … in the SQL of the subject.
LEGACY_SHAPES: tuple[tuple[str, str], ...] = (
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
#: The reconciler fills the rows without a subject created this recently: an id of no known shape keeps
#: its NULL subject, and is not looked at again after this long.
FILL_WITHIN = timedelta(days=1)


def _statement(scope: str, returning: str = "") -> list[sa.TextClause]:
    return [
        sa.text(
            f"UPDATE tg_commands SET subject = jsonb_strip_nulls({subject}) "
            "FROM (SELECT command_id AS cid, regexp_match(command_id, :pattern) AS m FROM tg_commands"
            f" WHERE subject IS NULL AND {scope}) AS matched "
            "WHERE tg_commands.command_id = matched.cid AND matched.m IS NOT NULL"
            f"{returning}"
        ).bindparams(pattern=pattern)
        for pattern, subject in LEGACY_SHAPES
    ]


_ONE = _statement("command_id = :command_id", " RETURNING tg_commands.subject")
_RECENT = _statement("created_at >= now() - make_interval(secs => :within_s)")
_ANY_RECENT = sa.text(
    "SELECT EXISTS (SELECT 1 FROM tg_commands WHERE subject IS NULL"
    " AND created_at >= now() - make_interval(secs => :within_s))"
)


async def fill_subject(conn: AsyncConnection, command_id: str) -> dict[str, Any] | None:
    """Give row ``command_id`` the subject of its id's shape when it has none.

    Returns the subject it got (the JSON object stored in ``tg_commands.subject``), ``None`` when the row
    has one already, does not exist, or its id has none of the :data:`LEGACY_SHAPES`.
    """
    for statement in _ONE:
        subject = (await conn.execute(statement, {"command_id": command_id})).scalar_one_or_none()
        if subject is not None:
            return dict(subject)
    return None


async def fill_missing_subjects(conn: AsyncConnection, *, within: timedelta = FILL_WITHIN) -> int:
    """Give every row created within ``within`` and still without a subject the one of its id's shape;
    returns how many got one (one cheap ``EXISTS`` when there are none)."""
    params = {"within_s": within.total_seconds()}
    if not (await conn.execute(_ANY_RECENT, params)).scalar():
        return 0
    return sum([(await conn.execute(statement, params)).rowcount for statement in _RECENT])
