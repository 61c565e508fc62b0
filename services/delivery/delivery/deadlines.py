"""The guest's deadlines, computed from ``jobs.created_at`` and guarded by columns, never by timers
(DESIGN.md §6; spec/000 "Deadlines persisted in the database").

* ``DELAY_NOTICE_SEC`` (5 min) after the photo: one "still working" message (``delay_notice_sent_at``).
* ``DELIVERY_DEADLINE_SEC`` (15 min): the job fails with the guest's failure text. A job already past
  the deadline when first seen (after an outage) gets only the failure text, never the notice first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
import structlog

from shared import metrics
from shared.db.tables import jobs
from shared.errors import ErrorClass
from shared.joblife import fail_job
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database
from shared.repositories.jobs import ACTIVE_STATUSES
from shared.streams import Publisher
from shared.texts import text

log = structlog.get_logger(__name__)


def delay_notice_command_id(job_id: object, created_at: datetime) -> str:
    return f"job:{job_id}:still_working:{int(created_at.timestamp())}"


async def enforce_deadlines(
    db: Database,
    publisher: Publisher,
    *,
    notice_after_s: float,
    deadline_s: float,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Fail overdue jobs, then send due "still working" notices. Returns ``(failed, noticed)``.

    Safe on many replicas: each step is a conditional update; the command ids are fixed per job run.
    """
    now = now or datetime.now(UTC)
    deadline_cutoff = now - timedelta(seconds=deadline_s)
    notice_cutoff = now - timedelta(seconds=notice_after_s)
    commands: list[str] = []
    failed = noticed = 0
    async with db.transaction() as repos:
        overdue = await repos.jobs.active_created_before(deadline_cutoff)
    for job in overdue:
        async with db.transaction() as repos:
            done = await fail_job(
                repos,
                job,
                error_class=ErrorClass.DEADLINE,
                error=f"no link within {deadline_s:.0f}s of the photo",
                from_statuses=ACTIVE_STATUSES,
                where_created_at=job.created_at,
            )
        if done:
            failed += 1
            commands.extend(done.commands)
            metrics.DEADLINE_MISSES.labels(kind="failed").inc()
    async with db.transaction() as repos:
        late = await repos.jobs.active_created_before(notice_cutoff, without_delay_notice=True)
    for job in late:
        if job.created_at <= deadline_cutoff:
            continue
        async with db.transaction() as repos:
            claimed = await repos.jobs.update_fields(
                job.id,
                {"delay_notice_sent_at": sa.func.now()},
                where=(
                    jobs.c.delay_notice_sent_at.is_(None),
                    jobs.c.status.in_(ACTIVE_STATUSES),
                    jobs.c.created_at == job.created_at,
                ),
            )
            ctx = await repos.jobs.get_context(job.id) if claimed else None
            if ctx is not None and ctx.tg_chat_id is not None:
                command_id = delay_notice_command_id(job.id, job.created_at)
                await add_command(
                    repos,
                    command_id,
                    method="send_message",
                    params={"chat_id": ctx.tg_chat_id, "text": text("still_working", ctx.language)},
                )
                commands.append(command_id)
                noticed += 1
                metrics.DEADLINE_MISSES.labels(kind="delay_notice").inc()
    if failed or noticed:
        log.warning("DEADLINES", failed=failed, noticed=noticed)
    await dispatch_commands(db, publisher, commands)
    return failed, noticed
