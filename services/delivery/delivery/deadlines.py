"""The guest's deadlines, computed from ``jobs.created_at`` and guarded by columns, never by timers
(DESIGN.md §6; spec/000 "Deadlines persisted in the database").

* ``DELAY_NOTICE_SEC`` (5 min) after the photo: one "still working" message (``delay_notice_sent_at``).
* ``DELIVERY_DEADLINE_SEC`` (15 min): the job fails with the guest's failure text. A job already past
  the deadline when first seen (after an outage) gets only the failure text, never the notice first.
  Not a ``delivering`` job whose link has been queued (its set is complete, the link waits out a
  Telegram flood wait): its set exists and will be linked, so "something went wrong" would be false;
  the link goes when Telegram allows, with "sorry for the wait" (:mod:`delivery.packs`, issue 19). Such
  a job still fails if its link fails ``LINK_ATTEMPTS`` times. The link is found by its subject
  (step ``link``), not by its id. A link queued before the deadline and still waiting (a flood wait) past
  it would arrive without the "sorry": it is cancelled and the next readiness poll queues it again with
  the late words (:func:`_reword_waiting_links`; a cancelled link is no attempt).
* Flood control is the outbox's (issue 21): a text Telegram holds back is sent by the gateway when the wait
  ends. The notice expires at the job's delivery deadline (``expires_at``), and the job's failure or
  delivery cancels it while it is pending (:data:`shared.repositories.jobs.GUEST_TEXTS`): the failure text
  replaces it, never both late.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog

from shared import command_ids, metrics
from shared.domain import ACTIVE_JOB_STATUSES, CommandStatus, Job, JobStatus, TelegramCommandRecord
from shared.errors import ErrorClass
from shared.joblife import fail_job
from shared.outbox import dispatch_commands, tell_guest
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.subjects import JobStep

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
            links = await repos.tg_commands.for_subject("job", job.id, step="link")
            if job.status == JobStatus.DELIVERING and links:
                await _reword_waiting_links(repos, job, links, deadline_s=deadline_s)
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
                notice = JobStep(id=job.id, step="still_working", n=command_ids.run(job.created_at))
                await tell_guest(
                    repos,
                    command_id,
                    ctx.tg_chat_id,
                    "still_working",
                    ctx.language,
                    event=ctx.event,
                    subject=notice,
                    expires_at=job.created_at + timedelta(seconds=deadline_s),
                )
                commands.append(command_id)
                noticed += 1
                metrics.DEADLINE_MISSES.labels(kind="delay_notice").inc()
    if failed or noticed:
        log.warning("DEADLINES", failed=failed, noticed=noticed)
    await dispatch_commands(db, publisher, commands)
    return failed, noticed


async def _reword_waiting_links(
    repos: Repositories, job: Job, links: list[TelegramCommandRecord], *, deadline_s: float
) -> None:
    """Cancel the job's pending link messages queued before the deadline (their words say nothing of the
    wait) and make its next readiness poll due now: :mod:`delivery.packs` then queues the link again,
    "sorry for the wait" (issue 19's words, kept under issue 21's deferral)."""
    accepted = await repos.jobs.accepted_at(job.id) or job.created_at
    deadline = accepted + timedelta(seconds=deadline_s)
    cancelled: list[str] = []
    for link in links:
        n = (link.subject or {}).get("n")
        if link.status == CommandStatus.PENDING and link.created_at <= deadline and isinstance(n, int):
            cancelled += await repos.tg_commands.cancel_pending("job", job.id, step="link", n=n)
    if cancelled:
        await repos.jobs.schedule_poll(job.id, at=datetime.now(UTC))
        log.info("LINK_REWORDED_LATE", job_id=str(job.id), cancelled=len(cancelled))
