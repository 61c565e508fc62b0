"""Admin API for jobs and the queue (DESIGN.md §2, §9): list and inspect jobs, retry a failed one, pause
and resume. Behind ``Authorization: Bearer <ADMIN_TOKEN>`` like every ``/admin`` route.

Retry follows spec/002 "Job-level outcomes": ``failed → queued`` with a fresh cost ceiling and deadline
(``created_at`` reset), only while the selfie still exists, and never for a job of class ``content``: every
provider refused that selfie, a retry would only send it to them again (the worker would refuse it
itself), so the guest has been asked for a new photo instead (issue 8). Every job carries ``retryable``,
which the admin page follows.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query

from ingest.api.admin_leads import admin_required
from ingest.api.errors import ApiError
from ingest.context import Ctx
from shared import maintenance
from shared.domain import Job, JobStatus
from shared.errors import ErrorClass
from shared.joblife import republish_queued, retry_failed_job

router = APIRouter(dependencies=[Depends(admin_required)])


def _retryable(job: Job) -> bool:
    return (
        job.status == JobStatus.FAILED
        and job.selfie_deleted_at is None
        and job.error_class != str(ErrorClass.CONTENT)
    )


def _job(job: Job) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "status": job.status,
        "outfit_id": job.outfit_id,
        "attempts": job.attempts,
        "error_class": job.error_class,
        "error": job.error,
        "sticker_set_name": job.sticker_set_name,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "selfie_deleted": job.selfie_deleted_at is not None,
        "retryable": _retryable(job),
    }


@router.get("/admin/status")
async def queue_status(ctx: Ctx) -> dict[str, Any]:
    """Jobs by status and the pause in force (``null`` when running)."""
    async with ctx.db.transaction() as repos:
        counts = await repos.jobs.count_by_status()
        pause = await maintenance.current_pause(repos, env_on=ctx.settings.maintenance_mode)
    return {"jobs": counts, "pause": pause.to_json() if pause else None}


@router.get("/admin/jobs")
async def list_jobs(
    ctx: Ctx,
    status: Annotated[JobStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict[str, Any]:
    """The newest jobs first, optionally of one status."""
    async with ctx.db.transaction() as repos:
        jobs = await repos.jobs.recent(limit=limit, status=status)
    return {"jobs": [_job(j) for j in jobs]}


@router.get("/admin/jobs/{job_id}")
async def show_job(ctx: Ctx, job_id: UUID) -> dict[str, Any]:
    """One job with its transition log."""
    async with ctx.db.transaction() as repos:
        job = await repos.jobs.get(job_id)
        events = await repos.jobs.events(job_id) if job else []
    if job is None:
        raise ApiError(404, "not_found", f"job {job_id} does not exist")
    return {
        **_job(job),
        "events": [{"from": e[0], "to": e[1], "note": e[2], "at": e[3].isoformat()} for e in events],
    }


@router.post("/admin/jobs/{job_id}/retry")
async def retry_job(ctx: Ctx, job_id: UUID) -> dict[str, Any]:
    """Queue a failed job again; 404 ``not_found`` for an unknown job, 409 ``not_retryable`` when it is not
    failed or its selfie is gone, 409 ``content_refused`` when the providers refused its selfie (a new
    photo is needed)."""
    async with ctx.db.transaction() as repos:
        current = await repos.jobs.get(job_id)
        if current is None:
            raise ApiError(404, "not_found", f"job {job_id} does not exist")
        if current.error_class == str(ErrorClass.CONTENT):
            raise ApiError(
                409,
                "content_refused",
                "The AI providers refused this photo; the guest must take a new selfie at the booth.",
            )
        job = await retry_failed_job(repos, job_id, note="admin retry (web)")
    if job is None:
        raise ApiError(409, "not_retryable", "Only a failed job whose selfie still exists can be retried.")
    await republish_queued(ctx.db, ctx.publisher)
    return _job(job)


@router.post("/admin/pause")
async def pause_queue(ctx: Ctx) -> dict[str, Any]:
    """The ``admin`` pause: workers claim nothing, kiosks show maintenance."""
    async with ctx.db.transaction() as repos:
        await maintenance.start_pause(repos, source="admin", reason="paused from the admin page")
    return await queue_status(ctx)


@router.post("/admin/resume")
async def resume_queue(ctx: Ctx) -> dict[str, Any]:
    """Clear an ``auto`` or ``admin`` pause (``env`` stays until a restart) and republish queued jobs."""
    async with ctx.db.transaction() as repos:
        await maintenance.end_pause(repos)
    await republish_queued(ctx.db, ctx.publisher)
    return await queue_status(ctx)
