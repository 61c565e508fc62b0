"""The guest's deadlines, computed from ``jobs.created_at`` and guarded by columns, never by timers
(DESIGN.md §6; spec/000 "Deadlines persisted in the database").

* ``DELAY_NOTICE_SEC`` (5 min) after the photo: one "still working" message (``delay_notice_sent_at``).
* ``DELIVERY_DEADLINE_SEC`` (15 min): the job fails with the guest's failure text. A job already past
  the deadline when first seen (after an outage) gets only the failure text, never the notice first.
  Not a ``delivering`` job whose link has been queued (its set is complete, the link waits out a
  Telegram flood wait): its set exists and will be linked, so "something went wrong" would be false;
  the link goes when Telegram allows, with "sorry for the wait" (:mod:`delivery.packs`, issue 19). Such
  a job still fails if its link fails ``LINK_ATTEMPTS`` times.
* Flood control: a guest text that Telegram answered with a 429 (the gateway hands long waits back,
  nothing was sent) is sent again once its ``retry_after`` has passed, as ``<command id>:again``
  (:func:`resend_flooded_texts`): the failure text always, the others only while they still apply. The
  notice is dropped when its job is no longer active or has reached the deadline: the failure text
  replaces it, never both late.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog

from shared import command_ids, metrics
from shared.command_ids import JobCommandId, JobStep
from shared.commands import load
from shared.domain import ACTIVE_JOB_STATUSES, JobStatus
from shared.errors import ErrorClass
from shared.joblife import fail_job
from shared.outbox import add_command, dispatch_commands, tell_guest
from shared.repositories import Database
from shared.streams import Publisher

log = structlog.get_logger(__name__)


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
            if job.status == JobStatus.DELIVERING and await repos.tg_commands.with_prefix(
                command_ids.link(job.id)
            ):
                continue  # complete and being linked: late, never failed (see the module docstring)
            done = await fail_job(
                repos,
                job,
                error_class=ErrorClass.DEADLINE,
                error=f"no link within {deadline_s:.0f}s of the photo",
                from_statuses=ACTIVE_JOB_STATUSES,
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
            claimed = await repos.jobs.claim_delay_notice(job.id, created_at=job.created_at)
            ctx = await repos.jobs.get_context(job.id) if claimed else None
            if ctx is not None and ctx.tg_chat_id is not None:
                command_id = command_ids.delay_notice(job.id, job.created_at)
                await tell_guest(repos, command_id, ctx.tg_chat_id, "still_working", ctx.language)
                commands.append(command_id)
                noticed += 1
                metrics.DEADLINE_MISSES.labels(kind="delay_notice").inc()
    if failed or noticed:
        log.warning("DEADLINES", failed=failed, noticed=noticed)
    await dispatch_commands(db, publisher, commands)
    return failed, noticed


#: The guest's job texts that are sent again after a 429 (steps of :mod:`shared.command_ids`), each with the
#: job statuses in which it still makes sense (``None``: always; the failure text must arrive).
GUEST_TEXTS: dict[JobStep, frozenset[JobStatus] | None] = {
    "failure_text": None,
    "still_working": frozenset(ACTIVE_JOB_STATUSES),
    "generating": frozenset({JobStatus.QUEUED, JobStatus.PROCESSING}),  # ingest's "Generating…"
    "unavailable": frozenset({JobStatus.QUEUED}),  # the worker's "your photo is saved" during a pause
}
#: Admin alerts and the daily digest (:mod:`shared.alerts`, :mod:`shared.digest`): always sent again; this
#: sweeper runs in every deployment, so it carries them too.
ADMIN_TEXTS = command_ids.ADMIN_PATTERNS
#: A flood-controlled text is no longer worth sending after this long.
RESEND_WITHIN = timedelta(days=1)


async def resend_flooded_texts(
    db: Database, publisher: Publisher, *, deadline_s: float, now: datetime | None = None
) -> int:
    """Send again the guest texts of :data:`GUEST_TEXTS` whose 429 wait is over, while their job is in a
    status where they still make sense (a "still working" notice also only before the deadline: the
    failure text replaces it, never both late), and the admin texts of :data:`ADMIN_TEXTS`. Returns how
    many were queued.

    Each resend is the command ``<id>:again`` with the same parameters (the gateway's at-most-once key:
    a second sweep finds it and queues nothing; a resend that gets a 429 is resent as ``<id>:again:again``).
    """
    now = now or datetime.now(UTC)
    commands: list[str] = []
    async with db.transaction() as repos:
        flooded = await repos.tg_commands.flooded_due(
            patterns=[*map(command_ids.job_pattern, GUEST_TEXTS), *ADMIN_TEXTS],
            newer_than=RESEND_WITHIN,
            limit=200,
        )
        for record in flooded:
            parsed = command_ids.parse(record.command_id)
            statuses = GUEST_TEXTS.get(parsed.step) if isinstance(parsed, JobCommandId) else None
            if isinstance(parsed, JobCommandId) and statuses is not None:
                job = await repos.jobs.get(parsed.job_id)
                if job is None or job.status not in statuses:
                    continue
                notice = parsed.step == "still_working"
                if notice and job.created_at <= now - timedelta(seconds=deadline_s):
                    continue
            command_id = command_ids.resend(record.command_id)
            command = load(record.method, record.params)
            if await add_command(repos, command_id, command, reply_to=record.reply_to):
                commands.append(command_id)
    if commands:
        log.warning("FLOODED_TEXTS_RESENT", count=len(commands))
    await dispatch_commands(db, publisher, commands)
    return len(commands)
