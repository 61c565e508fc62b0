"""Retention housekeeping (issue 11 item 2): what is past its window is deleted, in small batches, by arq
cron jobs that run once per period across all replicas.

The jobs (each ``async def purge_…(db, policy, *, now, max_batches=None) -> Purged``; ``now`` is passed in,
so tests advance the clock instead of sleeping), each window a setting of
:class:`shared.settings.RetentionSettings`:

- ``purge_selfies``: the selfie, ``anchor`` and ``passport`` blobs, whatever the job's state,
  ``SELFIE_RETENTION_HOURS`` after upload (inside it a failed job keeps them for the admin Retry);
- ``purge_stickers``: sticker blobs ``STICKER_RETENTION_DAYS`` after delivery (of a failed job, never handed
  over: ``SELFIE_RETENTION_HOURS`` after it failed);
- ``purge_sessions``: sessions ``SESSION_RETENTION_DAYS`` after they began, with their jobs, events, blobs
  and Telegram commands (:meth:`~shared.repositories.erasure.ErasureRepository.erase_sessions`;
  ``api_usage`` kept with ``job_id`` cleared; the sticker sets stay in Telegram);
- ``purge_tg_commands``: ``sent``/``failed`` Telegram commands and their results
  ``TG_COMMAND_RETENTION_DAYS`` after they ended (never a ``pending`` or ``sending`` one);
- ``purge_leads``: leads and their repeat notices ``LEAD_RETENTION_DAYS`` after the last contact;
- ``trim_streams``: Redis stream entries (``stk:*``, ``tg:*``, their ``:dead`` streams)
  ``STREAM_RETENTION_HOURS`` after they were added (:func:`shared.streams.trim_before`; why that is safe:
  :class:`shared.settings.RetentionSettings`). Its first argument is arq's Redis pool, not the database;
  it has no batches (one ``XTRIM`` per stream); its kind is ``stream_entries``;
- ``remove_gone_consumers``: stream consumers (one per replica start) idle ``STREAM_CONSUMER_IDLE_MIN``
  with no pending entry are deleted from their groups (:func:`shared.streams.remove_gone_consumers`;
  never a live one, never one holding entries nobody claimed); on arq's Redis pool too; its kind is
  ``stream_consumers``.

Each job loops over batches of ``RETENTION_BATCH_SIZE`` rows, one transaction each, rows locked by others
skipped (:mod:`shared.repositories.retention`), until a batch finds fewer than that; so it never holds
many locks or a long transaction against the guest flow, and a run that crashes mid-way has committed its
finished batches and the next run carries on. Each batch counts its deletions in
``stk_retention_deleted_total{kind}`` after its commit; each job logs ``RETENTION_PURGED`` with the counts
(no ids, no names), or ``RETENTION_FAILED`` when it raised.

Scheduling (:func:`scheduler_task`, a :class:`~shared.runtime.LongTask` of the delivery service): an arq
:class:`arq.worker.Worker` with one :func:`arq.cron.cron` per job, every ``HOUSEKEEPING_EVERY_MIN``
minutes, ``unique=True``. How arq keeps replicas from running a job twice (arq 0.28 ``Worker.run_cron``,
``ArqRedis.enqueue_job``, ``Worker.start_jobs``):

1. every replica computes the same next run time from the cron fields and, within a second of it,
   enqueues the job under the id ``<job name>:<run time in unix ms>``; ``enqueue_job`` ``WATCH``es
   ``arq:job:<id>`` and adds nothing when it or ``arq:result:<id>`` exists, so one replica's enqueue wins;
2. the job is started by the replica that sets ``arq:in-progress:<id>`` (``WATCH`` + ``MULTI``), the others
   skip it; after the run the in-progress key is kept 60 s and the result ``HOUSEKEEPING_KEEP_RESULT_S``,
   so a late replica's enqueue of the same run finds them and adds nothing.

Failure modes. A run that crashes mid-way (process killed) leaves its queue entry and in-progress key; once
that key expires (the job's timeout + 10 s) another replica, or the restarted one, runs it again (arq
retries it, ``max_tries`` 5) and, the jobs being idempotent, carries on from the first uncommitted batch.
A run cancelled at shutdown is put back by arq and picked up by another replica the same way. If Redis
loses its data (a restart without persistence), the run ids already done are forgotten but no replica
looks back at past run times, so nothing runs twice; a run whose time passed while Redis was unreachable
is skipped, and the next one deletes what it would have (the windows are "at least", never "exactly").
The worker's loop itself ends on a Redis error; :func:`scheduler_task` logs ``HOUSEKEEPING_SCHEDULER_FAILED``
and starts a fresh worker after :data:`RESTART_DELAY_S`, without stopping the service. Clock skew between
replicas larger than the result's lifetime could run a job twice; the jobs are idempotent, so that would
only cost a query.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis
import structlog
from arq.connections import ArqRedis
from arq.cron import CronJob, cron
from arq.typing import WorkerCoroutine
from arq.worker import Worker

from shared import metrics, streams
from shared.repositories import Database
from shared.repositories.retention import PurgedBatch, RetentionRepository
from shared.runtime import LongTask, wait_any, wait_any_task
from shared.settings import RetentionSettings

log = structlog.get_logger(__name__)

#: The arq queue (a Redis sorted set) of the housekeeping jobs; arq's job keys are ``arq:job:<id>`` etc.
QUEUE = "arq:stk:housekeeping"
#: Seconds a job may run before arq cancels it (and, 10 s later, another replica may take it over).
JOB_TIMEOUT_S = 600
#: Seconds arq keeps a run's result: a replica enqueuing the same run later adds nothing meanwhile.
HOUSEKEEPING_KEEP_RESULT_S = 3600
#: Seconds between a failed scheduler (e.g. Redis unreachable) and a fresh one.
RESTART_DELAY_S = 5.0
#: The ``kind`` label of stream entries in ``stk_retention_deleted_total``.
STREAM_ENTRIES = "stream_entries"
#: The ``kind`` label of deleted stream consumers in ``stk_retention_deleted_total``.
STREAM_CONSUMERS = "stream_consumers"


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """The windows and batch size of :class:`shared.settings.RetentionSettings`."""

    selfie: timedelta
    sticker: timedelta
    session: timedelta
    tg_command: timedelta
    lead: timedelta
    stream: timedelta
    batch_size: int
    consumer_idle: timedelta = timedelta(hours=1)

    @classmethod
    def from_settings(cls, settings: RetentionSettings) -> RetentionPolicy:
        return cls(
            selfie=timedelta(hours=settings.selfie_retention_hours),
            sticker=timedelta(days=settings.sticker_retention_days),
            session=timedelta(days=settings.session_retention_days),
            tg_command=timedelta(days=settings.tg_command_retention_days),
            lead=timedelta(days=settings.lead_retention_days),
            stream=timedelta(hours=settings.stream_retention_hours),
            batch_size=settings.retention_batch_size,
            consumer_idle=timedelta(minutes=settings.stream_consumer_idle_min),
        )


@dataclass(frozen=True, slots=True)
class Purged:
    """One job's run: batches committed, deletions per kind, ``api_usage`` rows unlinked, and whether it
    stopped at ``max_batches`` with more due (``done`` false)."""

    batches: int
    deleted: dict[str, int]
    api_usage_unlinked: int
    done: bool


Batch = Callable[[RetentionRepository, int], Awaitable[PurgedBatch]]


async def purge_in_batches(
    db: Database, job: str, batch: Batch, *, batch_size: int, max_batches: int | None = None
) -> Purged:
    """Run ``batch(repo, batch_size)`` in one transaction after another until a batch selects fewer than
    ``batch_size`` rows, or ``max_batches`` batches ran; count and log what went (module docstring)."""
    deleted: Counter[str] = Counter()
    unlinked = batches = 0
    done = False
    while max_batches is None or batches < max_batches:
        async with db.transaction() as repos:
            found = await batch(repos.retention, batch_size)
        batches += 1
        for kind, count in found.deleted.items():
            if count:
                metrics.RETENTION_DELETED.labels(kind=kind).inc(count)
                deleted[kind] += count
        unlinked += found.api_usage_unlinked
        if found.selected < batch_size:
            done = True
            break
    extra = {"api_usage_unlinked": unlinked} if unlinked else {}
    log.info(
        "RETENTION_PURGED",
        job=job,
        batches=batches,
        done=done,
        deleted=dict(sorted(deleted.items())),
        **extra,
    )
    return Purged(batches=batches, deleted=dict(deleted), api_usage_unlinked=unlinked, done=done)


async def purge_selfies(
    db: Database, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """The selfie and its ``anchor``/``passport`` blobs of every job uploaded more than ``policy.selfie``
    before ``now``, whatever its state; inside the window a failed job keeps them for the admin Retry."""

    async def batch(repo: RetentionRepository, limit: int) -> PurgedBatch:
        return await repo.purge_personal_blobs(uploaded_before=now - policy.selfie, at=now, limit=limit)

    return await purge_in_batches(
        db, "purge_selfies", batch, batch_size=policy.batch_size, max_batches=max_batches
    )


async def purge_stickers(
    db: Database, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Sticker files ``policy.sticker`` after delivery; a failed job's ``policy.selfie`` after it failed."""

    async def batch(repo: RetentionRepository, limit: int) -> PurgedBatch:
        return await repo.purge_stickers(
            delivered_before=now - policy.sticker, failed_before=now - policy.selfie, limit=limit
        )

    return await purge_in_batches(
        db, "purge_stickers", batch, batch_size=policy.batch_size, max_batches=max_batches
    )


async def purge_sessions(
    db: Database, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Sessions begun more than ``policy.session`` before ``now``, with everything below them."""

    async def batch(repo: RetentionRepository, limit: int) -> PurgedBatch:
        return await repo.purge_sessions(created_before=now - policy.session, limit=limit)

    return await purge_in_batches(
        db, "purge_sessions", batch, batch_size=policy.batch_size, max_batches=max_batches
    )


async def purge_tg_commands(
    db: Database, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Telegram commands that ended more than ``policy.tg_command`` before ``now``."""

    async def batch(repo: RetentionRepository, limit: int) -> PurgedBatch:
        return await repo.purge_tg_commands(settled_before=now - policy.tg_command, limit=limit)

    return await purge_in_batches(
        db, "purge_tg_commands", batch, batch_size=policy.batch_size, max_batches=max_batches
    )


async def purge_leads(
    db: Database, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Leads last heard of more than ``policy.lead`` before ``now``, with their repeat notices."""

    async def batch(repo: RetentionRepository, limit: int) -> PurgedBatch:
        return await repo.purge_leads(active_before=now - policy.lead, limit=limit)

    return await purge_in_batches(
        db, "purge_leads", batch, batch_size=policy.batch_size, max_batches=max_batches
    )


async def trim_streams(
    redis: aioredis.Redis, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Stream entries added more than ``policy.stream`` before ``now`` (``max_batches`` unused: one
    ``XTRIM`` per stream). Logs ``RETENTION_PURGED`` with the total, no stream contents.

    Raises:
        redis.exceptions.RedisError: Redis failed; a later run trims the rest.
    """
    per_stream = await streams.trim_before(redis, now - policy.stream)
    total = sum(per_stream.values())
    if total:
        metrics.RETENTION_DELETED.labels(kind=STREAM_ENTRIES).inc(total)
    log.info("RETENTION_PURGED", job="trim_streams", batches=1, done=True, deleted={STREAM_ENTRIES: total})
    return Purged(batches=1, deleted={STREAM_ENTRIES: total}, api_usage_unlinked=0, done=True)


async def remove_gone_consumers(
    redis: aioredis.Redis, policy: RetentionPolicy, *, now: datetime, max_batches: int | None = None
) -> Purged:
    """Stream consumers idle ``policy.consumer_idle`` with no pending entry (``now`` and ``max_batches``
    unused: Redis's clock measures idleness). Logs ``STREAM_CONSUMERS_REMOVED`` with their names (a
    replica's ``<service>-<host>-<pid>``, nothing personal) and ``RETENTION_PURGED`` with the count.

    Raises:
        redis.exceptions.RedisError: Redis failed; a later run removes the rest.
    """
    removed = await streams.remove_gone_consumers(redis, idle_s=policy.consumer_idle.total_seconds())
    if removed:
        metrics.RETENTION_DELETED.labels(kind=STREAM_CONSUMERS).inc(len(removed))
        log.info("STREAM_CONSUMERS_REMOVED", consumers=removed)
    deleted = {STREAM_CONSUMERS: len(removed)}
    log.info("RETENTION_PURGED", job="remove_gone_consumers", batches=1, done=True, deleted=deleted)
    return Purged(batches=1, deleted=deleted, api_usage_unlinked=0, done=True)


Job = Callable[..., Awaitable[Purged]]
#: Every housekeeping job, in the order they run in one period.
JOBS: tuple[Job, ...] = (
    purge_selfies,
    purge_stickers,
    purge_sessions,
    purge_tg_commands,
    purge_leads,
    trim_streams,
    remove_gone_consumers,
)
#: The jobs that work on Redis (arq's pool, ``ctx["redis"]``) instead of the database (``ctx["db"]``).
REDIS_JOBS: frozenset[Job] = frozenset({trim_streams, remove_gone_consumers})


def _arq_job(job: Job) -> WorkerCoroutine:
    """``job`` as an arq coroutine: ``ctx`` holds ``db``, ``policy`` and arq's ``redis`` pool; returns the
    counts (arq's result)."""

    async def run(ctx: dict[Any, Any], *args: Any, **kwargs: Any) -> dict[str, int]:
        log.info("HOUSEKEEPING_RUN", job=job.__name__, run=ctx["job_id"], attempt=ctx["job_try"])
        try:
            store = ctx["redis"] if job in REDIS_JOBS else ctx["db"]
            purged = await job(store, ctx["policy"], now=datetime.now(UTC))
        except Exception as exc:
            log.warning("RETENTION_FAILED", job=job.__name__, error=type(exc).__name__)
            raise
        return purged.deleted

    run.__qualname__ = run.__name__ = job.__name__
    return run


def cron_jobs(
    *, minute: set[int] | None = None, second: set[int] | int = 0, jobs: Sequence[Job] = JOBS
) -> list[CronJob]:
    """One unique arq cron job per housekeeping job, at ``minute`` (every minute when ``None``) and
    ``second`` of every hour (UTC)."""
    return [
        cron(
            _arq_job(job),
            name=job.__name__,
            minute=minute,
            second=second,
            unique=True,
            timeout=JOB_TIMEOUT_S,
            keep_result=HOUSEKEEPING_KEEP_RESULT_S,
        )
        for job in jobs
    ]


def every_minutes(step: int) -> set[int]:
    """The minutes of an hour a job every ``step`` minutes runs at (``step`` divides 60)."""
    return set(range(0, 60, step))


def scheduler(db: Database, pool: ArqRedis, policy: RetentionPolicy, jobs: Sequence[CronJob]) -> Worker:
    """An arq worker for the housekeeping ``jobs`` on ``pool`` (closed with the worker): one job at a
    time, no signal handlers of its own (the service runtime has them), UTC schedule."""
    return Worker(
        cron_jobs=jobs,
        redis_pool=pool,
        queue_name=QUEUE,
        ctx={"db": db, "policy": policy},
        handle_signals=False,
        max_jobs=1,
        job_timeout=JOB_TIMEOUT_S,
        keep_result=HOUSEKEEPING_KEEP_RESULT_S,
        timezone=UTC,
        log_results=False,
    )


async def run_scheduler(
    stop: asyncio.Event, db: Database, redis_url: str, policy: RetentionPolicy, jobs: Sequence[CronJob]
) -> None:
    """Run a :func:`scheduler` until ``stop``; a worker that fails (Redis unreachable) is logged and
    replaced by a fresh one after :data:`RESTART_DELAY_S`. At ``stop`` the running job is cancelled (arq
    puts it back for another replica) and the worker closed."""
    while not stop.is_set():
        pool = ArqRedis.from_url(redis_url)
        worker = scheduler(db, pool, policy, jobs)
        main = asyncio.ensure_future(worker.async_run())
        await wait_any_task(stop, [main])
        if main.done() and not main.cancelled() and main.exception() is not None:
            log.warning("HOUSEKEEPING_SCHEDULER_FAILED", error=type(main.exception()).__name__)
        running = [main, *worker.tasks.values()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        with contextlib.suppress(Exception):
            await pool.aclose()
        if not stop.is_set():
            await wait_any(stop, timeout_s=RESTART_DELAY_S)


def scheduler_task(db: Database, redis_url: str, settings: RetentionSettings) -> LongTask:
    """The housekeeping scheduler as a :class:`~shared.runtime.LongTask` (every
    ``HOUSEKEEPING_EVERY_MIN`` minutes, at second 0)."""
    policy = RetentionPolicy.from_settings(settings)
    jobs = cron_jobs(minute=every_minutes(settings.housekeeping_every_min))

    async def run(stop: asyncio.Event) -> None:
        await run_scheduler(stop, db, redis_url, policy, jobs)

    return LongTask("housekeeping", run)
