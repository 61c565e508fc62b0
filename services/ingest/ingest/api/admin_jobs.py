"""Admin API for jobs and the queue (DESIGN.md §2, §9; issue 13 item 3): the evening's overview, the job
list with its guest and a search, one job with its timeline, stickers, provider calls and link messages,
Retry, "Resend link", pause and resume. Behind ``Authorization: Bearer <ADMIN_TOKEN>`` like every
``/admin`` route (:func:`ingest.api.admin_leads.admin_required`).

Retry follows spec/002 "Job-level outcomes": ``failed → queued`` with a fresh cost ceiling and deadline
(``created_at`` reset), only while the selfie still exists, and never for a failure a retry cannot fix
(:data:`shared.joblife.UNFIXABLE_BY_RETRY`: ``content``, every provider refused that selfie; ``permanent``,
no face, no photo or an unknown outfit): the guest has been asked for a new photo instead (issue 8).
Every job carries ``retryable`` and ``resendable``, which the admin page follows.

Codes of this router besides the common ones (:mod:`ingest.api.errors`):

=====================  ======  ====================================================================
code                   status  when
=====================  ======  ====================================================================
``not_found``          404     no such job, or no such sticker of it (deleted after retention)
``invalid_cursor``     422     ``cursor`` is not one this API returned
``not_retryable``      409     Retry of a job that is not failed, or whose selfie is gone
``content_refused``    409     Retry of a job whose selfie every provider refused
``retry_cannot_help``  409     Retry of a ``permanent`` failure (no face, no photo, unknown outfit)
``not_delivered``      409     "Resend link" of a job that is not delivered (or has no Telegram chat)
=====================  ======  ====================================================================
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ingest.api.admin_leads import admin_required
from ingest.api.errors import ApiError
from ingest.context import Ctx
from ingest.sheet import contact_sheet_png
from shared import maintenance
from shared.domain import Job, JobStatus
from shared.errors import ErrorClass
from shared.joblife import republish_queued, resend_link, retry_can_help, retry_failed_job
from shared.likeness import LIKENESS_MAX_DISTANCE
from shared.outbox import dispatch_commands
from shared.overview import gather_overview
from shared.repositories.blobs import StickerSummary
from shared.repositories.job_search import JobListing, PageCursor
from shared.repositories.overview import failure_label

router = APIRouter(dependencies=[Depends(admin_required)])

#: Jobs per page of the job list: the default and the most a caller may ask for.
PAGE_SIZE, MAX_PAGE_SIZE = 50, 100
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
#: Images of guests: never cached by a browser or a proxy, never embedded by another origin.
_PRIVATE = {"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"}
#: ``likeness_reason`` of a sticker stored before the worker scored likeness (issue 20): its blob has no
#: ``likeness`` key, so nothing was judged and nothing failed.
NOT_SCORED = "not_scored"


# --- the job page's answer (GET /admin/jobs/{id}), for the OpenAPI document ------------------------------
# ``extra="forbid"``: a key the route adds without adding it here fails the answer (a 500 in the tests)
# instead of being dropped silently.


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuestOut(_Out):
    name: str | None = Field(description="first name from Telegram")
    username: str | None = Field(description="Telegram @username, without the @")
    user_id: int | None = Field(description="Telegram user id")
    language: str | None = Field(description="the guest's language code (e.g. en)")


class EventOut(_Out):
    from_: str | None = Field(alias="from", description="status before (null for the first event)")
    to: str
    note: str | None
    at: str = Field(description="ISO 8601, UTC")


class StickerOut(_Out):
    position: int = Field(description="0-11, the sticker's place in the pack")
    emoji: str | None
    url: str = Field(description="the PNG under this API (admin token)")
    likeness: float | None = Field(
        description="face-descriptor distance between the sticker's face and the guest's selfie's face "
        "(shared.imaging.faces.descriptor_distance): 0 = the same descriptor, smaller is more alike; "
        "over `likeness_bound` the sticker does not look like the guest. null when no face was judged "
        "(`likeness_reason` says why)."
    )
    likeness_reason: str | None = Field(
        description="null when a distance was judged; else why not, as the worker stored it (e.g. "
        "no_face_found, eyes_hidden, no_selfie_face, scorer_unavailable), or `not_scored` for a sticker "
        "stored before likeness was scored"
    )


class CallOut(_Out):
    provider: str
    model: str
    kind: str
    call_type: str
    outcome: str
    cost_usd: float = Field(description="USD")
    latency_s: float = Field(description="seconds")
    error: str | None


class LinkMessageOut(_Out):
    command_id: str
    status: str
    at: str = Field(description="ISO 8601, UTC: the command's last change")


class JobDetailOut(_Out):
    """One job as the admin job page shows it."""

    id: str
    status: JobStatus
    requeues: int
    queued_again: bool
    outfit_id: str
    attempts: int
    error_class: str | None
    failure: str | None
    error: str | None
    sticker_set_name: str | None
    created_at: str
    updated_at: str
    link_sent_at: str | None
    selfie_deleted: bool
    retryable: bool
    resendable: bool
    station: str | None
    guest: GuestOut
    events: list[EventOut]
    stickers: list[StickerOut]
    likeness_bound: float = Field(
        description="the likeness distance above which a sticker does not look like its guest "
        "(shared.likeness.LIKENESS_MAX_DISTANCE, the worker's pack QA bound); the page marks stickers over it"
    )
    contact_sheet_url: str | None
    calls: list[CallOut]
    cost_usd: float = Field(description="USD, all calls")
    link_messages: list[LinkMessageOut]


def _job(job: Job, requeues: int) -> dict[str, Any]:
    """A job as the admin API shows it. ``requeues``: how often it went back to ``queued`` (an admin Retry
    or a worker's requeue); ``queued_again``: it is waiting in the queue again right now. The admin page
    shows "queued again" only then; once the job has moved on (being made, delivered, failed) it shows a
    neutral "retried", so a delivered job no longer reads as waiting."""
    return {
        "id": str(job.id),
        "status": job.status,
        "requeues": requeues,
        "queued_again": job.status == JobStatus.QUEUED and requeues > 0,
        "outfit_id": job.outfit_id,
        "attempts": job.attempts,
        "error_class": job.error_class,
        "failure": failure_label(job.error_class, job.error) if job.status == JobStatus.FAILED else None,
        "error": job.error,
        "sticker_set_name": job.sticker_set_name,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "link_sent_at": job.link_sent_at.isoformat() if job.link_sent_at else None,
        "selfie_deleted": job.selfie_deleted_at is not None,
        "retryable": retry_can_help(job),
        "resendable": job.status == JobStatus.DELIVERED and job.sticker_set_name is not None,
    }


def _requeues(events: list[tuple[str | None, str, str | None, datetime]]) -> int:
    """How often a job went back to ``queued``, from its events (as
    :func:`shared.repositories.job_search.requeues_sql` counts in the job list)."""
    return sum(1 for e in events if e[1] == JobStatus.QUEUED.value and e[0] is not None)


def _listing(row: JobListing) -> dict[str, Any]:
    return {
        **_job(row.job, row.requeues),
        "station": row.station,
        "guest": {"name": row.guest_name, "username": row.tg_username, "user_id": row.tg_user_id},
    }


def _sticker(base: str, sticker: StickerSummary) -> dict[str, Any]:
    """A sticker of the job page: ``likeness_reason`` is :data:`NOT_SCORED` for a sticker whose blob has
    no ``likeness`` key (stored before issue 20)."""
    return {
        "position": sticker.position,
        "emoji": sticker.emoji,
        "url": f"{base}/stickers/{sticker.position}",
        "likeness": sticker.likeness,
        "likeness_reason": sticker.likeness_reason if sticker.scored else NOT_SCORED,
    }


def format_cursor(cursor: PageCursor) -> str:
    """``<µs since the epoch>_<job id hex>``: exact to Postgres' precision, safe in a query string."""
    return f"{(cursor.created_at - _EPOCH) // _MICROSECOND}_{cursor.job_id.hex}"


def parse_cursor(value: str) -> PageCursor:
    """The cursor :func:`format_cursor` wrote. Raises ``ApiError`` 422 ``invalid_cursor`` otherwise."""
    micros, _, job_hex = value.partition("_")
    try:
        return PageCursor(_EPOCH + int(micros) * _MICROSECOND, UUID(hex=job_hex))
    except (ValueError, OverflowError) as exc:
        raise ApiError(422, "invalid_cursor", "cursor is not one this API returned") from exc


@router.get("/admin/overview")
async def evening_overview(ctx: Ctx) -> dict[str, Any]:
    """The overview row (:mod:`shared.overview`): guests served and time to link (last hour), failures
    by class, spend and image requests today against their limits, provider health, streams, pause, and
    each event of today (its local day) with its figures against its budgets."""
    view = await gather_overview(
        ctx.db, ctx.publisher.redis, budget=ctx.settings, env_maintenance=ctx.settings.maintenance_mode
    )
    return view.to_json()


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
    q: Annotated[str | None, Query(max_length=100)] = None,
    status: Annotated[JobStatus | None, Query()] = None,
    cursor: Annotated[str | None, Query(max_length=80)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
) -> dict[str, Any]:
    """One page of jobs, newest first, with guest (first name, ``@username``, Telegram user id), station
    and outfit. ``q`` searches guest name, ``@username``, user id, job id (prefix) and set name;
    ``next_cursor`` (``null`` on the last page) is the ``cursor`` of the next page."""
    after = parse_cursor(cursor) if cursor else None
    async with ctx.db.transaction() as repos:
        rows, following = await repos.job_search.search(query=q, status=status, after=after, limit=limit)
    return {
        "jobs": [_listing(r) for r in rows],
        "next_cursor": format_cursor(following) if following else None,
    }


@router.get("/admin/jobs/{job_id}", response_model=JobDetailOut, response_model_by_alias=True)
async def show_job(ctx: Ctx, job_id: UUID) -> dict[str, Any]:
    """One job: its guest, its transitions, its stickers (image paths under this API, each with its
    likeness to the guest: a distance or the reason there is none), the bound the page marks likeness
    against, its provider calls with cost (USD) and latency (s), and its link messages (delivery's and
    every "Resend link"). 404 ``not_found`` for an unknown job."""
    async with ctx.db.transaction() as repos:
        job_ctx = await repos.jobs.get_context(job_id)
        if job_ctx is None:
            raise ApiError(404, "not_found", f"job {job_id} does not exist")
        session = await repos.sessions.get(job_ctx.job.session_id)
        events = await repos.jobs.events(job_id)
        stickers = await repos.blobs.sticker_summaries(job_id)
        calls = await repos.usage.for_job(job_id)
        links = await repos.tg_commands.for_subject("job", job_id, step="link")
        links += await repos.tg_commands.for_subject("job", job_id, step="resend_link")
    base = f"/admin/jobs/{job_id}"
    return {
        **_job(job_ctx.job, _requeues(events)),
        "station": session.station if session else None,
        "guest": {
            "name": session.guest_name if session else None,
            "username": session.tg_username if session else None,
            "user_id": job_ctx.tg_user_id,
            "language": job_ctx.language,
        },
        "events": [{"from": e[0], "to": e[1], "note": e[2], "at": e[3].isoformat()} for e in events],
        "stickers": [_sticker(base, s) for s in stickers],
        "likeness_bound": LIKENESS_MAX_DISTANCE,
        "contact_sheet_url": f"{base}/contact-sheet" if stickers else None,
        "calls": [
            {
                "provider": c.provider,
                "model": c.model,
                "kind": c.kind,
                "call_type": c.call_type,
                "outcome": c.outcome,
                "cost_usd": round(c.cost_usd, 6),
                "latency_s": round(c.latency_s, 3),
                "error": c.error,
            }
            for c in calls
        ],
        "cost_usd": round(sum(c.cost_usd for c in calls), 6),
        "link_messages": [
            {"command_id": r.command_id, "status": r.status, "at": r.updated_at.isoformat()}
            for r in sorted(links, key=lambda r: r.created_at)
        ],
    }


@router.get("/admin/jobs/{job_id}/stickers/{position}")
async def sticker_image(ctx: Ctx, job_id: UUID, position: Annotated[int, Path(ge=0, le=63)]) -> Response:
    """The job's sticker at ``position`` (0–11) as PNG, for admins only; 404 ``not_found`` when the job
    has none there (never rendered, or deleted after ``STICKER_RETENTION_DAYS``)."""
    async with ctx.db.transaction() as repos:
        blob = await repos.blobs.at_position(job_id, "sticker", position)
    if blob is None:
        raise ApiError(404, "not_found", f"job {job_id} has no sticker {position}")
    return Response(blob.data, media_type=blob.content_type, headers=_PRIVATE)


@router.get("/admin/jobs/{job_id}/contact-sheet")
async def contact_sheet(ctx: Ctx, job_id: UUID) -> Response:
    """The job's stickers side by side on one PNG (4 columns, numbered 1–12 in reading order, as the
    worker's pack QA sees them); 404 ``not_found`` when it has none."""
    async with ctx.db.transaction() as repos:
        blobs = await repos.blobs.for_job(job_id, "sticker")
    if not blobs:
        raise ApiError(404, "not_found", f"job {job_id} has no stickers")
    return Response(contact_sheet_png([b.data for b in blobs]), media_type="image/png", headers=_PRIVATE)


@router.post("/admin/jobs/{job_id}/retry")
async def retry_job(ctx: Ctx, job_id: UUID) -> dict[str, Any]:
    """Queue a failed job again; 404 ``not_found`` for an unknown job, 409 ``content_refused`` when the
    providers refused its selfie, 409 ``retry_cannot_help`` for a ``permanent`` failure (no face, no
    photo, unknown outfit), 409 ``not_retryable`` when it is not failed or its selfie is gone."""
    async with ctx.db.transaction() as repos:
        current = await repos.jobs.get(job_id)
        if current is None:
            raise ApiError(404, "not_found", f"job {job_id} does not exist")
        if current.status == JobStatus.FAILED and current.error_class == str(ErrorClass.CONTENT):
            raise ApiError(
                409,
                "content_refused",
                "The AI providers refused this photo; the guest must take a new selfie at the booth.",
            )
        if current.status == JobStatus.FAILED and current.error_class == str(ErrorClass.PERMANENT):
            label = failure_label(current.error_class, current.error)
            raise ApiError(
                409,
                "retry_cannot_help",
                f"This job failed for good ({label}): the same photo would fail again; the guest must "
                "take a new selfie at the booth.",
            )
        job = await retry_failed_job(repos, job_id, note="admin retry (web)")
        events = await repos.jobs.events(job_id) if job is not None else []
    if job is None:
        raise ApiError(409, "not_retryable", "Only a failed job whose selfie still exists can be retried.")
    await republish_queued(ctx.db, ctx.publisher)
    return _job(job, _requeues(events))


@router.post("/admin/jobs/{job_id}/resend-link")
async def resend_job_link(ctx: Ctx, job_id: UUID) -> dict[str, Any]:
    """Send the guest their link message again (the same message as delivery's, a new command id per
    press); 404 ``not_found`` for an unknown job, 409 ``not_delivered`` when the job is not delivered or
    its guest has no Telegram chat. Answers the queued ``command_id``."""
    async with ctx.db.transaction() as repos:
        if await repos.jobs.get(job_id) is None:
            raise ApiError(404, "not_found", f"job {job_id} does not exist")
        command_id = await resend_link(repos, job_id, public_base_url=ctx.settings.public_base_url)
    if command_id is None:
        raise ApiError(409, "not_delivered", "Only a delivered job's link can be sent again.")
    await dispatch_commands(ctx.db, ctx.publisher, [command_id])
    return {"command_id": command_id}


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
