"""Events as data an operator manages (issue 23 item 1, :mod:`shared.events`).

- ``GET /admin/events``: ``{"events": [event, ...]}``, the default event first.
- ``GET /admin/events/{id}``: one event with its uploaded outfits; 404 ``event_not_found``.
- ``PUT /admin/events/{id}``: create or replace (body :class:`shared.events.EventSpec`); 200 with the
  saved event. 422 ``invalid_event_id`` (id not ``[a-z0-9][a-z0-9-]{0,39}``), 422 ``validation_error``
  (a field), 422 ``unknown_outfit`` (neither a catalogue outfit nor one of the event's uploaded ones),
  409 ``station_overlap`` (a station would belong to two events whose times overlap), 422
  ``event_default`` (a start or end for the default event, which serves every unlisted station always).
- ``DELETE /admin/events/{id}``: 204; 404 ``event_not_found``, 409 ``event_default`` (the default event),
  409 ``event_has_guests`` (sessions belong to it).
- ``PUT /admin/events/{id}/outfits/{outfit_id}``: create or replace an uploaded outfit (JSON
  :class:`OutfitUpload`; the thumbnail as base64 PNG); 409 ``outfit_id_taken`` (a catalogue id or another
  event's outfit), 422 ``invalid_thumbnail``, 422 ``unknown_outfit`` (``based_on``).
- ``DELETE /admin/events/{id}/outfits/{outfit_id}``: 204; 404 ``outfit_not_found``.

Every write runs in one transaction behind the events' advisory lock
(:meth:`shared.repositories.events.EventRepository.lock_for_write`), so two concurrent writes cannot
together break the station rule; nothing is cached, so a change takes effect at once. Same auth as the
other admin routes (:func:`ingest.api.admin_leads.admin_required`).
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Response
from PIL import Image, UnidentifiedImageError
from pydantic import BaseModel, ConfigDict, Field

from ingest.api.admin_leads import admin_required
from ingest.api.errors import ApiError
from ingest.context import Ctx
from shared.events import DEFAULT_EVENT, EVENT_ID, Event, EventOutfit, EventSpec, overlaps
from shared.outfits import load_catalog

router = APIRouter(dependencies=[Depends(admin_required)])

#: An uploaded thumbnail's limits: bytes of PNG, pixels per side.
THUMBNAIL_MAX_BYTES = 512 * 1024
THUMBNAIL_MAX_SIDE = 1024
#: The outfit upload's body limit (bytes): the base64 thumbnail (4/3 of its bytes) and room for the title,
#: prompt and JSON; ``MAX_JSON_BODY_BYTES`` (64 KiB) would refuse a thumbnail over ~48 KB
#: (:mod:`ingest.api.body_limit`).
OUTFIT_BODY_MAX_BYTES = (THUMBNAIL_MAX_BYTES * 4) // 3 + 16 * 1024
OUTFIT_ID = re.compile(r"^[a-z][a-z0-9_]{1,31}$")

EventId = Annotated[str, Path(max_length=64)]


def _check_id(event_id: str) -> None:
    if not EVENT_ID.match(event_id):
        raise ApiError(422, "invalid_event_id", "An event id is [a-z0-9][a-z0-9-]{0,39}.")


def _event_json(event: Event, outfits: list[EventOutfit] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": event.id,
        **event.columns(),
        "starts_at": event.starts_at.isoformat() if event.starts_at else None,
        "ends_at": event.ends_at.isoformat() if event.ends_at else None,
        "stations": list(event.stations),
        "is_default": event.is_default,
    }
    if outfits is not None:
        body["uploaded_outfits"] = [_outfit_json(o) for o in outfits]
    return body


def _outfit_json(outfit: EventOutfit) -> dict[str, Any]:
    return {
        "id": outfit.id,
        "title": outfit.title,
        "prompt": outfit.prompt,
        "based_on": outfit.based_on,
        "has_thumbnail": outfit.has_thumbnail,
    }


@router.get("/admin/events")
async def list_events(ctx: Ctx) -> dict[str, Any]:
    """Every event (default first, then by start): the fields of :class:`shared.events.Event`."""
    async with ctx.db.transaction() as repos:
        found = await repos.events.all()
    return {"events": [_event_json(e) for e in found]}


@router.get("/admin/events/{event_id}")
async def get_event(ctx: Ctx, event_id: EventId) -> dict[str, Any]:
    """One event and its ``uploaded_outfits``; 404 ``event_not_found``."""
    async with ctx.db.transaction() as repos:
        event = await repos.events.get(event_id)
        uploaded = await repos.events.outfits(event_id) if event else []
    if event is None:
        raise ApiError(404, "event_not_found", f"No event {event_id!r}.")
    return _event_json(event, uploaded)


@router.put("/admin/events/{event_id}")
async def put_event(ctx: Ctx, event_id: EventId, spec: EventSpec) -> dict[str, Any]:
    """Create or replace the event (its uploaded outfits are kept); errors in the module docstring."""
    _check_id(event_id)
    if event_id == DEFAULT_EVENT and (spec.starts_at or spec.ends_at):
        raise ApiError(
            422, "event_default", "The default event has no start or end: it serves unlisted stations always."
        )
    event = spec.to_event(event_id)
    async with ctx.db.transaction() as repos:
        await repos.events.lock_for_write()
        uploaded = [o.id for o in await repos.events.outfits(event_id)]
        unknown = spec.unknown_outfits(uploaded)
        if unknown:
            raise ApiError(422, "unknown_outfit", f"Unknown outfit ids: {', '.join(unknown)}.")
        for other in await repos.events.all():
            if other.id == event_id:
                continue
            shared_stations = sorted(set(other.stations) & set(event.stations))
            if shared_stations and overlaps(event, other):
                raise ApiError(
                    409,
                    "station_overlap",
                    f"Station {shared_stations[0]!r} already belongs to event {other.id!r} at overlapping "
                    "times; a station serves one event at a time.",
                )
        saved = await repos.events.save(event)
        outfits = await repos.events.outfits(event_id)
    return _event_json(saved, outfits)


@router.delete("/admin/events/{event_id}", status_code=204)
async def delete_event(ctx: Ctx, event_id: EventId) -> Response:
    """Delete an event with its stations and uploaded outfits; errors in the module docstring."""
    if event_id == DEFAULT_EVENT:
        raise ApiError(409, "event_default", "The default event cannot be deleted.")
    async with ctx.db.transaction() as repos:
        await repos.events.lock_for_write()
        if not await repos.events.lock_row(event_id):
            raise ApiError(404, "event_not_found", f"No event {event_id!r}.")
        if await repos.events.has_sessions(event_id):
            raise ApiError(409, "event_has_guests", "Guests' sessions belong to this event; keep it.")
        await repos.events.delete(event_id)
    return Response(status_code=204)


class OutfitUpload(BaseModel):
    """The body of ``PUT /admin/events/{id}/outfits/{outfit_id}``: :class:`shared.events.EventOutfit`'s
    fields; ``thumbnail_png_base64``: a PNG (≤ 512 KB, ≤ 1024×1024 px), ``None`` keeps the stored one."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=40, pattern=r"^[^\x00-\x1f\x7f]+$")
    # tab and newline, but no other control character (Postgres refuses \x00 in text)
    prompt: str = Field(min_length=20, max_length=2000, pattern=r"^[^\x00-\x08\x0b-\x1f\x7f]+$")
    based_on: str = Field(min_length=1, max_length=64)
    thumbnail_png_base64: str | None = Field(None, max_length=(THUMBNAIL_MAX_BYTES * 4) // 3 + 8)


def check_thumbnail(encoded: str) -> bytes:
    """The PNG bytes of ``encoded`` (base64).

    Raises:
        ApiError: 422 ``invalid_thumbnail``: not base64, over 512 KB, not a PNG Pillow can decode, or
            larger than 1024×1024.
    """
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(422, "invalid_thumbnail", "thumbnail_png_base64 is not base64.") from None
    if len(data) > THUMBNAIL_MAX_BYTES:
        raise ApiError(422, "invalid_thumbnail", "The thumbnail is over 512 KB.")
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format != "PNG":
                raise ApiError(422, "invalid_thumbnail", "The thumbnail must be a PNG.")
            if image.width > THUMBNAIL_MAX_SIDE or image.height > THUMBNAIL_MAX_SIDE:
                raise ApiError(422, "invalid_thumbnail", "The thumbnail is larger than 1024×1024.")
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        raise ApiError(422, "invalid_thumbnail", "The thumbnail is not a readable PNG.") from None
    return data


@router.put("/admin/events/{event_id}/outfits/{outfit_id}")
async def put_outfit(
    ctx: Ctx, event_id: EventId, outfit_id: Annotated[str, Path(max_length=64)], body: OutfitUpload
) -> dict[str, Any]:
    """Create or replace an uploaded outfit of the event; errors in the module docstring."""
    if not OUTFIT_ID.match(outfit_id):
        raise ApiError(422, "invalid_outfit_id", "An uploaded outfit id is [a-z][a-z0-9_]{1,31}.")
    catalogue = load_catalog()
    if outfit_id in catalogue:
        raise ApiError(409, "outfit_id_taken", f"{outfit_id!r} is a catalogue outfit id.")
    if body.based_on not in catalogue:
        raise ApiError(422, "unknown_outfit", f"based_on {body.based_on!r} is not a catalogue outfit.")
    thumbnail = None if body.thumbnail_png_base64 is None else check_thumbnail(body.thumbnail_png_base64)
    async with ctx.db.transaction() as repos:
        await repos.events.lock_for_write()
        if await repos.events.get(event_id) is None:
            raise ApiError(404, "event_not_found", f"No event {event_id!r}.")
        existing = await repos.events.outfit(outfit_id)
        if existing is not None and existing.event_id != event_id:
            raise ApiError(409, "outfit_id_taken", f"{outfit_id!r} belongs to event {existing.event_id!r}.")
        saved = await repos.events.save_outfit(
            EventOutfit(
                id=outfit_id,
                event_id=event_id,
                title=body.title,
                prompt=body.prompt,
                based_on=body.based_on,
            ),
            thumbnail,
        )
    return {"event_id": saved.event_id, **_outfit_json(saved)}


@router.delete("/admin/events/{event_id}/outfits/{outfit_id}", status_code=204)
async def delete_outfit(
    ctx: Ctx, event_id: EventId, outfit_id: Annotated[str, Path(max_length=64)]
) -> Response:
    """Delete an uploaded outfit of the event; 404 ``outfit_not_found``; 409 ``outfit_in_use`` while the
    event's outfit list names it or a guest's session chose it (the worker draws their stickers from it,
    and a retry would find it gone)."""
    async with ctx.db.transaction() as repos:
        await repos.events.lock_for_write()
        existing = await repos.events.outfit(outfit_id)
        if existing is None or existing.event_id != event_id:
            raise ApiError(
                404, "outfit_not_found", f"Event {event_id!r} has no uploaded outfit {outfit_id!r}."
            )
        event = await repos.events.get(event_id)
        if event is not None and outfit_id in event.outfits:
            raise ApiError(409, "outfit_in_use", "The event's outfit list names it; remove it there first.")
        if await repos.events.has_sessions(event_id, outfit_id=outfit_id):
            raise ApiError(409, "outfit_in_use", "Guests chose it; their stickers are drawn from it.")
        await repos.events.delete_outfit(outfit_id)
    return Response(status_code=204)
