"""How a job leaves ``processing`` when it does not render: retry, fail, requeue or crash recovery.

The rules are DESIGN.md §5 and spec/002 "Job-level outcomes": a charged failure consumes an attempt and
retries after ``RETRY_DELAY_SEC`` (a due time in Postgres, not a sleep) until ``MAX_ATTEMPTS``; a permanent
failure fails at once; the guest gets exactly one failure text (its command id is fixed per job).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
import structlog

from shared import metrics
from shared.db.tables import jobs
from shared.domain import Job
from shared.errors import ErrorClass, NoFaceError
from shared.joblife import fail_job, failure_command_id
from shared.logging import redact
from shared.outbox import dispatch_commands
from shared.repositories import Database
from shared.streams import Publisher

log = structlog.get_logger(__name__)


async def retry_or_fail(
    db: Database,
    publisher: Publisher,
    job: Job,
    *,
    owner: str,
    error_class: ErrorClass,
    error: str,
    max_attempts: int,
    retry_delay_s: float,
) -> str:
    """Consume an attempt: back to ``queued`` after ``retry_delay_s``, or ``failed`` at ``max_attempts``.

    Returns the job's new status (``queued``/``failed``), or ``""`` when it was no longer ours.
    """
    attempts = job.attempts + 1
    commands: list[str] = []
    async with db.transaction() as repos:
        if attempts >= max_attempts:
            failed = await fail_job(repos, job, error_class=error_class, error=error, owner=owner)
            status = "failed" if failed else ""
            commands = failed.commands if failed else []  # the guest's failure text, the admin alert
        else:
            requeued = await repos.jobs.transition(
                job.id,
                from_statuses=("processing",),
                to_status="queued",
                owner=owner,
                note=f"retry after {error_class}",
                values={
                    "attempts": attempts,
                    "owner": None,
                    "error_class": str(error_class),
                    "error": redact(error)[:2000],
                    "not_before": datetime.now(UTC) + timedelta(seconds=retry_delay_s),
                    "dispatched_at": None,
                },
            )
            status = "queued" if requeued else ""
    if status == "failed":
        await dispatch_commands(db, publisher, commands)
    elif status == "queued":
        metrics.JOBS.labels(outcome="retried", error_class=str(error_class)).inc()
        log.warning("JOB_RETRY", job_id=str(job.id), attempt=attempts, error_class=str(error_class))
    return status


async def fail_permanently(
    db: Database, publisher: Publisher, job: Job, *, owner: str, exc: Exception
) -> None:
    """Fail at once (photo missing, unknown outfit, no face), telling the guest."""
    guest_text = "no_face" if isinstance(exc, NoFaceError) else "failed"
    async with db.transaction() as repos:
        failed = await fail_job(
            repos, job, error_class=ErrorClass.PERMANENT, error=str(exc), owner=owner, guest_text=guest_text
        )
    if failed:
        await dispatch_commands(db, publisher, failed.commands)


async def requeue_on_shutdown(db: Database, job: Job, *, owner: str, free_requeues: int) -> None:
    """``processing → queued`` for a job cancelled by shutdown; the first ``free_requeues`` cost no attempt.

    Source: spec/000 "Graceful shutdown and requeue" (``SHUTDOWN_FREE_REQUEUES`` = 2).
    """
    free = job.free_requeues < free_requeues
    async with db.transaction() as repos:
        await repos.jobs.transition(
            job.id,
            from_statuses=("processing",),
            to_status="queued",
            owner=owner,
            note="requeued on shutdown",
            values={
                "owner": None,
                "dispatched_at": None,
                "free_requeues": jobs.c.free_requeues + 1 if free else jobs.c.free_requeues,
                "attempts": jobs.c.attempts if free else jobs.c.attempts + 1,
            },
        )
    log.warning("JOB_REQUEUED_ON_SHUTDOWN", job_id=str(job.id), free=free)


async def recover_crashed(
    db: Database, publisher: Publisher, *, heartbeat_timeout_s: float, max_attempts: int
) -> int:
    """Recover ``processing`` jobs whose owner stopped heart-beating (killed, OOM): ``crashed``.

    A crashed attempt is charged (spec/000 "After a hard kill"): the job is requeued with one attempt
    consumed, or failed with the guest's failure text when that reaches ``max_attempts``. Returns how many
    jobs were recovered.
    """
    cutoff = datetime.now(UTC) - timedelta(seconds=heartbeat_timeout_s)
    async with db.transaction() as repos:
        stale = await repos.jobs.stale_processing(heartbeat_before=cutoff)
    recovered = 0
    for job in stale:
        same_heartbeat = (jobs.c.heartbeat_at == job.heartbeat_at,)
        failed_ids: list[str] = []
        async with db.transaction() as repos:
            if job.attempts + 1 >= max_attempts:
                if await fail_job(
                    repos,
                    job,
                    error_class=ErrorClass.CRASHED,
                    error=f"owner {job.owner} died",
                    owner=job.owner,
                ):
                    failed_ids.append(failure_command_id(job))
                    recovered += 1
            elif await repos.jobs.transition(
                job.id,
                from_statuses=("processing",),
                to_status="queued",
                note=f"crashed: owner {job.owner} died",
                where=same_heartbeat,
                values={
                    "attempts": job.attempts + 1,
                    "owner": None,
                    "error_class": str(ErrorClass.CRASHED),
                    "not_before": sa.func.now(),
                    "dispatched_at": None,
                },
            ):
                recovered += 1
                log.warning("JOB_CRASHED_REQUEUED", job_id=str(job.id), owner=job.owner)
        await dispatch_commands(db, publisher, failed_ids)
    return recovered
