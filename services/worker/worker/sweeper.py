"""The worker's periodic duties: crash recovery and the ``stk:jobs`` outbox reconciler (DESIGN.md §3, §9)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import structlog

from shared import metrics, streams
from shared.messages import JobQueued
from shared.repositories import Database
from shared.streams import Publisher
from worker import outcomes
from worker.settings import WorkerSettings

log = structlog.get_logger(__name__)


async def sweep_once(db: Database, publisher: Publisher, settings: WorkerSettings) -> None:
    """Recover crashed jobs, then publish hints for due ``queued`` jobs whose hint is missing or old."""
    await outcomes.recover_crashed(
        db, publisher, heartbeat_timeout_s=settings.heartbeat_timeout_sec, max_attempts=settings.max_attempts
    )
    async with db.transaction() as repos:
        due = await repos.jobs.due_for_dispatch(
            "queued",
            grace=timedelta(seconds=settings.reconcile_grace_sec),
            republish_after=timedelta(seconds=max(settings.stream_lease_sec * 2, 120)),
            limit=200,
        )
        metrics.JOB_QUEUE_DEPTH.set((await repos.jobs.count_by_status()).get("queued", 0))
    published = [j.id for j in due if await publisher.try_publish(streams.JOBS, JobQueued(job_id=j.id))]
    if published:
        log.info("JOBS_REPUBLISHED", count=len(published))
        async with db.transaction() as repos:
            await repos.jobs.mark_dispatched(published, "queued")


async def run_sweeper(
    db: Database, publisher: Publisher, settings: WorkerSettings, stop: asyncio.Event
) -> None:
    """Run :func:`sweep_once` every ``RECONCILE_INTERVAL_SEC`` until ``stop``; errors are only logged."""
    while not stop.is_set():
        try:
            await sweep_once(db, publisher, settings)
        except Exception as exc:
            log.warning("SWEEP_FAILED", error=type(exc).__name__)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=settings.reconcile_interval_sec)
