"""Job lifecycle steps shared by the worker and delivery: failing a job and telling the guest once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
import structlog

from shared import command_ids, metrics, streams
from shared.alerts import queue_alert
from shared.db.tables import jobs
from shared.domain import Job
from shared.errors import ErrorClass
from shared.logging import redact
from shared.messages import JobQueued
from shared.outbox import tell_guest
from shared.repositories import Database, Repositories
from shared.streams import Publisher

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class FailedJob:
    """A job just moved to ``failed`` and the Telegram commands to dispatch after the commit (the guest's
    failure text, the admin alert)."""

    job: Job
    commands: list[str]


def failure_command_id(job: Job) -> str:
    """The one failure-text command of a job run: whatever fails it, the guest gets one failure message.

    A run is identified by ``created_at``, which an admin retry resets, so a retried job that fails again
    tells the guest again.
    """
    return command_ids.failure_text(job.id, job.created_at)


async def fail_job(
    repos: Repositories,
    job: Job,
    *,
    error_class: ErrorClass,
    error: str,
    owner: str | None = None,
    from_statuses: Iterable[str] = ("processing",),
    guest_text: str = "failed",
    where_created_at: datetime | None = None,
) -> FailedJob | None:
    """Move the job to ``failed`` inside the caller's transaction and queue the guest's failure text.

    After the commit, dispatch :func:`failure_command_id` (``shared.outbox.dispatch_commands``).

    Args:
        owner: when given, the job must still be owned by this worker.
        from_statuses: states the job may be failed from.
        where_created_at: only if the run is still the one created then (an admin retry starts a new one).
        guest_text: key in :mod:`shared.texts` (``failed``, ``no_face``, ``unavailable``).

    Also raises the admin alert ``Job <id> FAILED`` (key ``job_failed``: a burst of failures is one alert
    with a count, spec/002 "Job-level outcomes").

    Returns:
        The failed job with the commands to dispatch, or ``None`` when it had already moved.
    """
    clean = redact(error)
    failed = await repos.jobs.transition(
        job.id,
        from_statuses=tuple(from_statuses),
        to_status="failed",
        owner=owner,
        note=f"{error_class}: {clean[:200]}",
        values={"error_class": str(error_class), "error": clean[:2000], "owner": None},
        where=() if where_created_at is None else (jobs.c.created_at == where_created_at,),
    )
    if failed is None:
        return None
    commands: list[str] = []
    ctx = await repos.jobs.get_context(job.id)
    if ctx is not None and ctx.tg_chat_id is not None:
        commands.append(failure_command_id(failed))
        await tell_guest(repos, commands[-1], ctx.tg_chat_id, guest_text, ctx.language)
    alert = await queue_alert(
        repos, key="job_failed", text=f"Job {job.id} FAILED ({error_class}): {clean[:300]}"
    )
    if alert is not None:
        commands.append(alert)
    metrics.JOBS.labels(outcome="failed", error_class=str(error_class)).inc()
    log.error("JOB_FAILED", job_id=str(job.id), error_class=str(error_class), error=clean[:300])
    return FailedJob(failed, commands)


async def republish_queued(db: Database, publisher: Publisher, *, limit: int = 1000) -> int:
    """Publish a ``stk:jobs`` hint for every ``queued`` job now (after a pause ends: paused workers acked
    hints without claiming). Returns how many hints were published."""
    async with db.transaction() as repos:
        queued = await repos.jobs.in_status("queued", limit=limit)
    published = [j.id for j in queued if await publisher.try_publish(streams.JOBS, JobQueued(job_id=j.id))]
    if published:
        async with db.transaction() as repos:
            await repos.jobs.mark_dispatched(published, "queued")
    return len(published)


async def retry_failed_job(repos: Repositories, job_id: UUID, *, note: str) -> Job | None:
    """Admin retry: ``failed → queued`` with a fresh cost ceiling and deadline (``created_at`` reset,
    attempts cleared) while the selfie still exists (spec/002 "Job-level outcomes"; DESIGN.md §3).

    Returns the queued job, or ``None`` when it is not ``failed`` or its selfie is gone.
    """
    if not await repos.blobs.ids_for_job(job_id, "selfie"):
        return None
    return await repos.jobs.transition(
        job_id,
        from_statuses=("failed",),
        to_status="queued",
        note=note,
        values={
            "created_at": sa.func.now(),
            "attempts": 0,
            "free_requeues": 0,
            "not_before": None,
            "dispatched_at": None,
            "owner": None,
            "error_class": None,
            "error": None,
            "delay_notice_sent_at": None,
            "failure_notice_sent_at": None,
        },
    )
