"""The job use cases several services share: fail a job and tell the guest, republish the queue, retry.

Where does a job become ``failed``? Always here, in :func:`fail_job` (the one caller of
:meth:`shared.repositories.jobs.JobRepository.fail`), which also queues the guest's single failure text and
the admin alert. Its callers are the reasons:

* the worker (:mod:`worker.outcomes`): a permanent error (photo missing, unknown outfit, no face,
  ``JOB_COST_LIMIT``, content refused), a charged failure that reaches ``MAX_ATTEMPTS``, or a crashed
  owner on its last attempt (DESIGN.md §5);
* delivery (:mod:`delivery.deadlines`): the 15-minute deadline of any active job (DESIGN.md §6);
* delivery (:mod:`delivery.packs`): Telegram refused the sticker set, or the link failed ``LINK_ATTEMPTS``
  times.

Around a delivered job: :func:`resend_link` (the admin page's "Resend link"). Which failures an admin
Retry can fix: :func:`retry_can_help`.

The state machine itself (which moves are allowed, the SQL of each) is
:mod:`shared.repositories.jobs`; the only way out of ``failed`` is :func:`retry_failed_job`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import structlog

from shared import command_ids, metrics, streams
from shared.alerts import queue_alert
from shared.domain import Job, JobStatus, KioskSession
from shared.downloads import download_url
from shared.errors import NO_FACE_MARK, ErrorClass
from shared.link_message import queue_link_message
from shared.logging import redact
from shared.messages import JobQueued
from shared.outbox import tell_guest
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.subjects import JobStep

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class FailedJob:
    """A job just moved to ``failed`` and the Telegram commands to dispatch after the commit (the guest's
    failure text, the admin alert)."""

    job: Job
    commands: list[str]


def guest_failure_text(error_class: str | None, error: str | None, *, last_capture: bool = False) -> str:
    """The key in :mod:`shared.texts` of the guest's failure message for a job failed with
    ``error_class`` and stored ``error``: ``no_face`` (a :class:`~shared.errors.NoFaceError`, whose
    message starts with ``no_face:``), ``content_refused`` (class ``content``), else ``failed``.
    With ``last_capture`` (the session has taken its last allowed photo, :func:`is_last_capture`)
    the first two are ``no_face_last`` and ``content_refused_last``, which send the guest to the staff
    instead of asking for another selfie the booth would refuse.

    The worker picks the text it sends with this, and the kiosk shows the same case from the same
    function (``GET /sessions/{id}``), so the booth and the bot never say different things.
    """
    if error_class == ErrorClass.CONTENT:
        key = "content_refused"
    elif error_class == ErrorClass.PERMANENT and (error or "").startswith(NO_FACE_MARK):
        key = "no_face"
    else:
        return "failed"
    return f"{key}_last" if last_capture else key


def is_last_capture(session: KioskSession, max_captures: int) -> bool:
    """Whether the session has taken all the photos it may (``MAX_CAPTURES_PER_SESSION``, DESIGN.md §4),
    so a failed job of it cannot be fixed by another selfie. Once true it stays true (captures only
    grow), and no job is newer than the one that used the last capture: the worker (when it fails that
    job) and the kiosk (when it shows it) give the same answer for it."""
    return session.captures >= max_captures


#: The failure texts that ask for another selfie: a new photo can fix these; a Retry of the same one cannot.
RETAKE_TEXTS = frozenset({"no_face", "content_refused"})


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
    from_statuses: Iterable[JobStatus] = (JobStatus.PROCESSING,),
    guest_text: str = "failed",
    where_created_at: datetime | None = None,
) -> FailedJob | None:
    """Move the job to ``failed`` inside the caller's transaction and queue the guest's failure text (the
    transition cancels the job's pending texts that no longer apply, :data:`shared.repositories.jobs.
    GUEST_TEXTS`; the failure text stays until an admin retry starts a fresh run).

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
    failed = await repos.jobs.fail(
        job.id,
        from_statuses=from_statuses,
        error_class=error_class,
        error=clean,
        owner=owner,
        created_at=where_created_at,
    )
    if failed is None:
        return None
    commands: list[str] = []
    ctx = await repos.jobs.get_context(job.id)
    if ctx is not None and ctx.tg_chat_id is not None:
        commands.append(failure_command_id(failed))
        subject = JobStep(id=job.id, step="failure_text", n=command_ids.run(failed.created_at))
        await tell_guest(
            repos, commands[-1], ctx.tg_chat_id, guest_text, ctx.language, event=ctx.event, subject=subject
        )
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
        queued = await repos.jobs.in_status(JobStatus.QUEUED, limit=limit)
    published = [j.id for j in queued if await publisher.try_publish(streams.JOBS, JobQueued(job_id=j.id))]
    if published:
        async with db.transaction() as repos:
            await repos.jobs.mark_dispatched(published, JobStatus.QUEUED)
    return len(published)


async def retry_failed_job(repos: Repositories, job_id: UUID, *, note: str) -> Job | None:
    """Admin retry: ``failed → queued`` with a fresh cost ceiling and deadline (``created_at`` reset,
    attempts cleared) while the selfie still exists (spec/002 "Job-level outcomes"; DESIGN.md §3).

    Returns the queued job, or ``None`` when it is not ``failed``, its selfie is gone, or its failure is
    one a retry cannot fix (:data:`UNFIXABLE_BY_RETRY`).
    """
    current = await repos.jobs.get(job_id)
    if current is None or current.error_class in UNFIXABLE_BY_RETRY:
        return None
    if not await repos.blobs.ids_for_job(job_id, "selfie"):
        return None
    return await repos.jobs.retry_failed(job_id, note=note)


#: Failure classes an admin Retry cannot fix: the same selfie would fail the same way (DESIGN.md §5
#: "Error classes": ``permanent`` is a missing photo, an unknown outfit or no face; ``content`` means every
#: provider refused the selfie). The guest was asked for a new photo instead (issue 8, issue 13).
UNFIXABLE_BY_RETRY = frozenset({str(ErrorClass.PERMANENT), str(ErrorClass.CONTENT)})


def retry_can_help(job: Job) -> bool:
    """Whether an admin Retry of ``job`` can succeed: it is ``failed``, its selfie still exists, and its
    failure class is not one of :data:`UNFIXABLE_BY_RETRY`."""
    return (
        job.status == JobStatus.FAILED
        and job.selfie_deleted_at is None
        and job.error_class not in UNFIXABLE_BY_RETRY
    )


async def resend_link(repos: Repositories, job_id: UUID, *, public_base_url: str | None = None) -> str | None:
    """Queue the link message of a delivered job again (the admin page's "Resend link"), under a new
    command id per press (:func:`shared.command_ids.resend_link`), with the builder delivery uses
    (:func:`shared.link_message.queue_link_message`), with the download page's button when
    ``public_base_url`` (``PUBLIC_BASE_URL``) is set. Dispatch the returned id after the commit.

    Returns the command id, or ``None`` when the job is not ``delivered``, has no sticker set or its guest
    no Telegram chat.
    """
    ctx = await repos.jobs.get_context(job_id)
    if ctx is None or ctx.job.status != JobStatus.DELIVERED:
        return None
    if ctx.job.sticker_set_name is None or ctx.tg_chat_id is None:
        return None
    press = 1 + len(await repos.tg_commands.for_subject("job", job_id, step="resend_link"))
    while True:
        command_id = command_ids.resend_link(job_id, press)
        queued = await queue_link_message(
            repos,
            command_id,
            subject=JobStep(id=job_id, step="resend_link", n=press),
            chat_id=ctx.tg_chat_id,
            language=ctx.language,
            set_name=ctx.job.sticker_set_name,
            download_url=await download_url(repos, public_base_url, job_id),
            event=ctx.event,
        )
        if queued:
            log.info("LINK_RESEND_QUEUED", job_id=str(job_id), press=press)
            return command_id
        press += 1  # a press of another admin took this number meanwhile
