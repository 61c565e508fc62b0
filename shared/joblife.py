"""Job lifecycle steps shared by the worker and delivery: failing a job and telling the guest once."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

import structlog

from shared import metrics
from shared.domain import Job
from shared.errors import ErrorClass
from shared.logging import redact
from shared.outbox import add_command
from shared.repositories import Repositories
from shared.texts import text

log = structlog.get_logger(__name__)


def failure_command_id(job_id: UUID) -> str:
    """The one failure-text command of a job: whatever fails it, the guest gets one failure message."""
    return f"job:{job_id}:failure_text"


async def fail_job(
    repos: Repositories,
    job: Job,
    *,
    error_class: ErrorClass,
    error: str,
    owner: str | None = None,
    from_statuses: Iterable[str] = ("processing",),
    guest_text: str = "failed",
) -> bool:
    """Move the job to ``failed`` inside the caller's transaction and queue the guest's failure text.

    After the commit, dispatch :func:`failure_command_id` (``shared.outbox.dispatch_commands``).

    Args:
        owner: when given, the job must still be owned by this worker.
        from_statuses: states the job may be failed from.
        guest_text: key in :mod:`shared.texts` (``failed``, ``no_face``, ``unavailable``).

    Returns:
        ``False`` when the job had already moved (nothing changed).
    """
    clean = redact(error)
    failed = await repos.jobs.transition(
        job.id,
        from_statuses=tuple(from_statuses),
        to_status="failed",
        owner=owner,
        note=f"{error_class}: {clean[:200]}",
        values={"error_class": str(error_class), "error": clean[:2000], "owner": None},
    )
    if failed is None:
        return False
    ctx = await repos.jobs.get_context(job.id)
    if ctx is not None and ctx.tg_chat_id is not None:
        await add_command(
            repos,
            failure_command_id(job.id),
            method="send_message",
            params={"chat_id": ctx.tg_chat_id, "text": text(guest_text, ctx.language)},
        )
    metrics.JOBS.labels(outcome="failed", error_class=str(error_class)).inc()
    log.error("JOB_FAILED", job_id=str(job.id), error_class=str(error_class), error=clean[:300])
    return True
