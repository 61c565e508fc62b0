"""The worker's periodic duties: crash recovery and the ``stk:jobs`` outbox reconciler (DESIGN.md §3, §9).

Scheduled by :func:`worker.main.duties`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog

from shared import maintenance, metrics, streams
from shared.domain import JobStatus
from shared.joblife import republish_queued
from shared.maintenance import current_pause, export_gauges
from shared.messages import JobQueued
from shared.repositories import Database
from shared.streams import Publisher
from worker import outcomes
from worker.settings import WorkerSettings

log = structlog.get_logger(__name__)


async def sweep_once(db: Database, publisher: Publisher, settings: WorkerSettings) -> None:
    """Recover crashed jobs; end an ``auto`` pause whose time has come; unless paused, publish hints for
    due ``queued`` jobs whose hint is missing or old."""
    await outcomes.recover_crashed(
        db, publisher, heartbeat_timeout_s=settings.heartbeat_timeout_sec, max_attempts=settings.max_attempts
    )
    if await resume_expired_pause(db, publisher):
        return
    async with db.transaction() as repos:
        pause = await current_pause(repos, env_on=settings.maintenance_mode)
    export_gauges(pause)
    if pause is not None:
        return
    async with db.transaction() as repos:
        due = await repos.jobs.due_for_dispatch(
            JobStatus.QUEUED,
            grace=timedelta(seconds=settings.reconcile_grace_sec),
            republish_after=timedelta(seconds=settings.republish_after_sec),
            limit=200,
        )
        metrics.JOB_QUEUE_DEPTH.set((await repos.jobs.count_by_status()).get(JobStatus.QUEUED, 0))
    published = [j.id for j in due if await publisher.try_publish(streams.JOBS, JobQueued(job_id=j.id))]
    if published:
        log.info("JOBS_REPUBLISHED", count=len(published))
        async with db.transaction() as repos:
            await repos.jobs.mark_dispatched(published, JobStatus.QUEUED)


async def resume_expired_pause(db: Database, publisher: Publisher) -> bool:
    """End a stored ``auto`` pause whose ``resume_at`` passed (outage backoff, budget day) and republish
    the queued jobs. Returns whether it ended one; replicas racing here end it once."""
    async with db.transaction() as repos:
        stored = await repos.settings.get(maintenance.KEY)
        if not stored:
            return False
        pause = maintenance.Pause.from_json(stored)
        if pause.resume_at is None or pause.resume_at > datetime.now(UTC):
            return False
        if await maintenance.end_pause_if(repos, pause) is None:
            return False
    log.warning("AUTO_RESUMED", reason=pause.reason, paused_since=pause.since.isoformat())
    await republish_queued(db, publisher)
    return True
