"""How a job leaves ``processing`` when it does not render: retry, fail, requeue or crash recovery.

The rules are DESIGN.md §5 and spec/002 "Job-level outcomes": a charged failure consumes an attempt and
retries after ``RETRY_DELAY_SEC`` (a due time in Postgres, not a sleep) until ``MAX_ATTEMPTS``; a permanent
failure fails at once; the guest gets exactly one failure text (its command id is fixed per job). A content
refusal by every provider (:class:`shared.errors.ContentRefused`) is permanent: ``failed`` with class
``content`` and no retry, since any retry would send the refused selfie again (issue 8).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import structlog

from shared import command_ids, maintenance, metrics
from shared.alerts import queue_alert
from shared.domain import Job, JobStatus
from shared.errors import ContentRefused, ErrorClass, JobError, ProviderUnavailable
from shared.joblife import fail_job, failure_command_id, guest_failure_text, is_last_capture
from shared.logging import redact
from shared.outbox import dispatch_commands, tell_guest
from shared.repositories import Database
from shared.streams import REDIS_ERRORS, Publisher
from shared.subjects import JobStep
from worker.store_outage import lease_holder

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
) -> JobStatus | None:
    """Consume an attempt: back to ``queued`` after ``retry_delay_s``, or ``failed`` at ``max_attempts``.

    Returns the job's new status, or ``None`` when it was no longer ours.
    """
    attempts = job.attempts + 1
    commands: list[str] = []
    status: JobStatus | None = None
    async with db.transaction() as repos:
        if attempts >= max_attempts:
            failed = await fail_job(repos, job, error_class=error_class, error=error, owner=owner)
            status = failed.job.status if failed else None
            commands = failed.commands if failed else []  # the guest's failure text, the admin alert
        else:
            requeued = await repos.jobs.requeue_for_retry(
                job.id,
                owner=owner,
                error_class=error_class,
                error=redact(error),
                not_before=datetime.now(UTC) + timedelta(seconds=retry_delay_s),
            )
            status = requeued.status if requeued else None
    if status == JobStatus.FAILED:
        await dispatch_commands(db, publisher, commands)
    elif status == JobStatus.QUEUED:
        metrics.JOBS.labels(outcome="retried", error_class=str(error_class)).inc()
        log.warning("JOB_RETRY", job_id=str(job.id), attempt=attempts, error_class=str(error_class))
    return status


async def fail_permanently(
    db: Database, publisher: Publisher, job: Job, *, owner: str, exc: JobError, max_captures: int
) -> None:
    """Fail at once (photo missing, unknown outfit, no face, ``JOB_COST_LIMIT``, every provider refused the
    selfie as content), telling the guest once in their language: ``no_face`` and ``content_refused`` ask
    for another selfie, or, once the session has taken ``max_captures`` photos
    (``MAX_CAPTURES_PER_SESSION``), ``no_face_last`` and ``content_refused_last`` send them to the staff;
    everything else is the generic ``failed`` text (:func:`shared.joblife.guest_failure_text`)."""
    if isinstance(exc, ContentRefused):
        log.warning("JOB_CONTENT_REFUSED", job_id=str(job.id), error=redact(str(exc))[:300])
    async with db.transaction() as repos:
        session = await repos.sessions.get(job.session_id)
        last = session is not None and is_last_capture(session, max_captures)
        guest_text = guest_failure_text(exc.error_class, str(exc), last_capture=last)
        failed = await fail_job(
            repos, job, error_class=exc.error_class, error=str(exc), owner=owner, guest_text=guest_text
        )
    if failed:
        await dispatch_commands(db, publisher, failed.commands)


async def requeue_on_shutdown(db: Database, job: Job, *, owner: str, free_requeues: int) -> None:
    """``processing → queued`` for a job cancelled by shutdown; the first ``free_requeues`` cost no attempt.

    Source: spec/000 "Graceful shutdown and requeue" (``SHUTDOWN_FREE_REQUEUES`` = 2).
    """
    free = job.free_requeues < free_requeues
    async with db.transaction() as repos:
        await repos.jobs.requeue_after_shutdown(job.id, owner=owner, free=free)
    log.warning("JOB_REQUEUED_ON_SHUTDOWN", job_id=str(job.id), free=free)


async def requeue_after_store_outage(db: Database, job: Job, *, owner: str) -> None:
    """``processing → queued`` without consuming an attempt: Postgres was unavailable longer than the
    worker waits for it (``STORE_WAIT_MAX_SEC``), so the attempt could not go on; due at once."""
    async with db.transaction() as repos:
        await repos.jobs.requeue_refunded(job.id, owner=owner, error_class=ErrorClass.INTERNAL)
    log.warning("JOB_REQUEUED_STORE_OUTAGE", job_id=str(job.id))


async def recover_crashed(
    db: Database, publisher: Publisher, *, heartbeat_timeout_s: float, max_attempts: int
) -> int:
    """Recover ``processing`` jobs whose owner stopped heart-beating (killed, OOM): ``crashed``.

    A heartbeat is a write to Postgres, so a stale one also means an owner that could not reach Postgres
    (an outage, a cut connection): a job whose owner still holds its lease in Redis
    (:mod:`worker.store_outage`) is alive and left alone; when Redis cannot be asked, nothing is recovered
    this round (issue 19).

    A crashed attempt is charged (spec/000 "After a hard kill"): the job is requeued with one attempt
    consumed, or failed with the guest's failure text when that reaches ``max_attempts``. Returns how many
    jobs were recovered.
    """
    cutoff = datetime.now(UTC) - timedelta(seconds=heartbeat_timeout_s)
    async with db.transaction() as repos:
        stale = await repos.jobs.stale_processing(heartbeat_before=cutoff)
    recovered = 0
    for job in stale:
        try:
            holder = await lease_holder(publisher.redis, job.id)
        except REDIS_ERRORS as exc:
            log.warning("CRASH_RECOVERY_DEFERRED", job_id=str(job.id), error=type(exc).__name__)
            return recovered  # cannot tell a dead owner from one cut off Postgres: wait
        if holder is not None and holder == job.owner:
            log.info("JOB_OWNER_ALIVE", job_id=str(job.id), owner=job.owner)
            continue
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
            elif await repos.jobs.requeue_crashed(job):
                recovered += 1
                log.warning("JOB_CRASHED_REQUEUED", job_id=str(job.id), owner=job.owner)
        await dispatch_commands(db, publisher, failed_ids)
    return recovered


OUTAGE_STREAK_KEY = "outage_streak"
PAUSE_TEXT = {
    ErrorClass.CREDIT: "AI provider credit is exhausted; the queue is paused until /resume.",
    ErrorClass.AUTH: "AI provider rejected our key; the queue is paused until /resume.",
    ErrorClass.CONFIG: (
        "An AI provider says our settings are wrong (a model, a parameter or the account); the queue is "
        "paused until /resume."
    ),
    ErrorClass.OUTAGE: "AI providers are unreachable; the queue is paused and resumes by itself.",
    ErrorClass.BUDGET: "The daily AI budget is spent; the queue is paused until 00:00 UTC.",
}


def pause_text(exc: ProviderUnavailable) -> str:
    """The admins' alert (and ``NOTIFY_URL`` text) of a pause: the class's fixed text, or for ``config``
    the cause and the setting to fix (:func:`worker.providers.classify.config_alert`, secret-free)."""
    if exc.error_class is ErrorClass.CONFIG and exc.alert:
        return f"{exc.alert} The queue is paused until /resume."
    return PAUSE_TEXT[ErrorClass(exc.error_class)]


def pause_until(
    error_class: ErrorClass, *, now: datetime, outage_streak: int, retry_after_s: float | None
) -> datetime | None:
    """When an ``auto`` pause of ``error_class`` ends by itself (DESIGN.md §5); ``None``: only ``/resume``.

    ``outage``: 1, 2, 4 … 60 minutes for the 1st, 2nd, 3rd … consecutive outage pause, or the provider's
    ``retry-after`` when it gave one. ``budget``: the next 00:00 UTC.
    """
    if error_class is ErrorClass.OUTAGE:
        if retry_after_s is not None:
            return now + timedelta(seconds=retry_after_s)
        return now + timedelta(minutes=min(60, 2 ** max(0, outage_streak - 1)))
    if error_class is ErrorClass.BUDGET:
        return datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    return None


async def pause_and_refund(
    db: Database,
    publisher: Publisher,
    job: Job,
    *,
    owner: str,
    exc: ProviderUnavailable,
    notify: Callable[[str], Awaitable[None]] | None = None,
) -> None:
    """No provider could serve: put the job back to ``queued`` without charging an attempt, pause the queue
    (source ``auto``), tell the guest once that generation is unavailable and their photo is saved, and on
    the first pause of an episode raise one admin alert and call ``notify`` (``NOTIFY_URL``) with a fixed,
    secret-free text (DESIGN.md §5; spec/004).
    """
    error_class = ErrorClass(exc.error_class)
    text = pause_text(exc)
    now = datetime.now(UTC)
    commands: list[str] = []
    async with db.transaction() as repos:
        refunded = await repos.jobs.requeue_refunded(job.id, owner=owner, error_class=error_class)
        streak = 0
        if error_class is ErrorClass.OUTAGE:
            streak = int((await repos.settings.get(OUTAGE_STREAK_KEY)) or 0) + 1
            await repos.settings.put(OUTAGE_STREAK_KEY, streak)
        resume_at = pause_until(error_class, now=now, outage_streak=streak, retry_after_s=exc.retry_after_s)
        new_episode = await maintenance.start_pause(
            repos, source="auto", reason=str(error_class), resume_at=resume_at
        )
        ctx = await repos.jobs.get_context(job.id) if refunded else None
        if ctx is not None and ctx.tg_chat_id is not None:
            command_id = command_ids.unavailable_notice(job.id, job.created_at)
            subject = JobStep(id=job.id, step="unavailable", n=command_ids.run(job.created_at))
            if await tell_guest(
                repos,
                command_id,
                ctx.tg_chat_id,
                "unavailable",
                ctx.language,
                event=ctx.event,
                subject=subject,
            ):
                commands.append(command_id)
        if new_episode:
            alert = await queue_alert(repos, key=f"pause:{error_class}", text=text)
            if alert:
                commands.append(alert)
    marker = {
        ErrorClass.CREDIT: "BILLING_EXHAUSTED",
        ErrorClass.AUTH: "BILLING_EXHAUSTED",
        ErrorClass.CONFIG: "PROVIDER_CONFIG_FAULT",
    }.get(error_class, "QUEUE_PAUSED")
    log.error(
        marker,
        job_id=str(job.id),
        error_class=str(error_class),
        resume_at=str(resume_at),
        error=redact(str(exc)),
    )
    metrics.JOBS.labels(outcome="refunded", error_class=str(error_class)).inc()
    await dispatch_commands(db, publisher, commands)
    if new_episode and notify is not None:
        await notify(text)


async def clear_outage_streak(db: Database) -> None:
    """A job rendered: providers answer again, so the next outage pause starts at 1 minute."""
    async with db.transaction() as repos:
        if await repos.settings.get(OUTAGE_STREAK_KEY):
            await repos.settings.delete(OUTAGE_STREAK_KEY)
