"""Kiosk API: outfits, sessions, outfit choice, photo upload, status poll (DESIGN.md §4)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import segno
from fastapi import APIRouter, File, Form, Header, Response, UploadFile
from pydantic import BaseModel, Field

from ingest import kiosk
from ingest.api.errors import ApiError
from ingest.context import Ctx
from shared.domain import Job, KioskSession
from shared.errors import UploadRejected
from shared.maintenance import current_pause
from shared.outfits import thumbnail_png

router = APIRouter()


class SessionCreate(BaseModel):
    station: str = Field("kiosk", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class OutfitChoice(BaseModel):
    outfit_id: str = Field(min_length=1, max_length=64)


async def _maintenance_guard(ctx: Ctx) -> None:
    """503 ``maintenance`` while any pause source is on (:mod:`shared.maintenance`)."""
    async with ctx.db.transaction() as repos:
        pause = await current_pause(repos, env_on=ctx.settings.maintenance_mode)
    if pause is not None:
        raise ApiError(503, "maintenance", "The booth is paused for maintenance.")


_KIOSK_STATUS = {
    "queued": "generating",
    "processing": "generating",
    "rendered": "generating",
    "delivering": "delivering",
    "delivered": "delivered",
    "failed": "failed",
}


def _session_body(ctx: Ctx, session: KioskSession, jobs: list[Job]) -> dict[str, Any]:
    link = kiosk.deep_link(ctx.settings.bot_username, session.token)
    if not session.telegram_linked:
        status = "waiting_for_telegram"
    elif session.outfit_id is None:
        status = "choose_outfit"
    elif not jobs:
        status = "ready_for_photo"
    else:
        status = _KIOSK_STATUS[jobs[-1].status]
    return {
        "id": str(session.id),
        "station": session.station,
        "status": status,
        "deep_link": link,
        "qr_svg": segno.make(link, error="m").svg_data_uri(scale=6, border=2),
        "telegram_linked": session.telegram_linked,
        "outfit_id": session.outfit_id,
        "captures": session.captures,
        "captures_left": max(0, ctx.settings.max_captures_per_session - session.captures),
        "jobs": [{"id": str(j.id), "status": j.status, "capture_id": j.capture_id} for j in jobs],
    }


@router.get("/outfits")
async def list_outfits(ctx: Ctx) -> list[dict[str, Any]]:
    """The outfit catalog (id, title, thumbnail URL, prompt, body template)."""
    return [
        {
            "id": o.id,
            "title": o.title,
            "thumbnail_url": f"/outfits/{o.id}/thumbnail.png",
            "prompt": o.prompt,
            "body_template": o.body_template,
        }
        for o in ctx.catalog.values()
    ]


@router.get("/outfits/{outfit_id}/thumbnail.png")
async def outfit_thumbnail(ctx: Ctx, outfit_id: str) -> Response:
    outfit = ctx.catalog.get(outfit_id)
    if outfit is None:
        raise ApiError(404, "unknown_outfit", f"outfit {outfit_id!r} is not in the catalog")
    png = thumbnail_png(outfit.id)
    if png is None:
        raise ApiError(404, "no_thumbnail", "This outfit has no thumbnail.")
    return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=3600"})


@router.post("/sessions", status_code=201)
async def create_session(ctx: Ctx, body: SessionCreate | None = None) -> dict[str, Any]:
    """Open a kiosk session; the answer carries the deep link and its QR code (SVG data URI)."""
    await _maintenance_guard(ctx)
    session = await kiosk.open_session(ctx, (body or SessionCreate()).station)
    return _session_body(ctx, session, [])


@router.get("/sessions/{session_id}")
async def session_status(ctx: Ctx, session_id: UUID) -> dict[str, Any]:
    """Status for the kiosk's 1 s poll."""
    session, jobs = await kiosk.get_session(ctx, session_id)
    return _session_body(ctx, session, jobs)


@router.put("/sessions/{session_id}/outfit")
async def choose_outfit(ctx: Ctx, session_id: UUID, body: OutfitChoice) -> dict[str, Any]:
    await _maintenance_guard(ctx)
    await kiosk.choose_outfit(ctx, session_id, body.outfit_id)
    session, jobs = await kiosk.get_session(ctx, session_id)
    return _session_body(ctx, session, jobs)


@router.post("/sessions/{session_id}/photo", status_code=202)
async def upload_photo(
    ctx: Ctx,
    response: Response,
    session_id: UUID,
    photo: Annotated[UploadFile, File(description="JPEG, PNG, WebP or HEIC/HEIF")],
    capture_id: Annotated[str | None, Form(max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")] = None,
    idempotency_key: Annotated[str | None, Header(max_length=64)] = None,
) -> dict[str, Any]:
    """Upload a selfie; creates the job ``queued``. Idempotent per ``capture_id`` (or ``Idempotency-Key``).

    Answers 202 for a new job, 200 with the same job for a repeated capture id.
    """
    await _maintenance_guard(ctx)
    key = capture_id or idempotency_key
    if not key:
        raise ApiError(
            422, "capture_id_required", "Send a capture_id form field or an Idempotency-Key header."
        )
    limit = ctx.settings.max_upload_bytes
    data = await photo.read(limit + 1)
    if len(data) > limit:
        raise UploadRejected("file_too_large", f"The photo is larger than {limit} bytes.", status=413)
    accepted = await kiosk.accept_photo(ctx, session_id, key, data)
    if not accepted.created:
        response.status_code = 200
    return {"job_id": str(accepted.job.id), "status": accepted.job.status, "capture_id": key}
