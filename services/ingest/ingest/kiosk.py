"""Kiosk use cases: open a session, choose an outfit, record consent, accept a photo (DESIGN.md §4,
issue 11 "Consent on the kiosk"), unlink a guest who is not the one at the booth and show a delivered
guest their stickers (issue 13).

Accepting a photo writes the job, the selfie and the "Generating…" command in ONE transaction, commits,
then publishes the hints (``stk:jobs``, ``tg:outbox``). A Redis outage after the commit loses nothing: the
rows stay undispatched and the reconcilers publish them.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import structlog

from ingest.consent import ConsentRequired, consent_text
from ingest.context import IngestContext
from shared import command_ids, metrics, streams
from shared.domain import Blob, Job, JobStatus, KioskSession
from shared.downloads import download_url
from shared.errors import Conflict, DatabaseUnavailable, NotFound
from shared.events import Event, StationEvent
from shared.maintenance import current_pause
from shared.messages import JobQueued
from shared.outbox import dispatch_commands, tell_guest
from shared.outfits import Outfit, thumbnail_png
from shared.repositories import Repositories
from shared.subjects import JobStep, UnlinkNotice

log = structlog.get_logger(__name__)


def deep_link(bot_username: str, token: str) -> str:
    """``https://t.me/<bot>?start=<token>`` (core.telegram.org/bots/features#deep-linking)."""
    return f"https://t.me/{bot_username}?start={token}"


def new_token() -> str:
    """A deep-link payload: 22 chars of ``A-Za-z0-9_-`` (the deep-link limit is 64)."""
    return secrets.token_urlsafe(16)


def next_event_body(event: Event | None) -> dict[str, str] | None:
    """``{"name", "starts_at" (ISO 8601, UTC), "time_zone"}`` of a closed station's next event, or
    ``None``."""
    if event is None:
        return None
    return {
        "name": event.name,
        "starts_at": event.starts_at.astimezone(UTC).isoformat() if event.starts_at else "",
        "time_zone": event.time_zone,
    }


async def event_outfits(ctx: IngestContext, repos: Repositories, event: Event | None) -> list[Outfit]:
    """The outfits ``event`` offers, in kiosk order: its list (catalogue outfits still in the catalog and
    its own uploads), or, when it lists none, the whole catalog followed by its uploads. An upload is its
    ``based_on`` catalogue outfit with its own id, title and prompt; one whose ``based_on`` left the
    catalog is not offered (the worker could not draw it). ``None`` (no event): the catalog."""
    uploads = {o.id: o for o in await repos.events.outfits(event.id)} if event else {}
    if event is None or not event.outfits:
        ids: list[str] = [*ctx.catalog, *uploads]
    else:
        ids = [i for i in event.outfits if i in ctx.catalog or i in uploads]
    offered: list[Outfit] = []
    for outfit_id in ids:
        if outfit_id in ctx.catalog:
            offered.append(ctx.catalog[outfit_id])
        elif drawn := uploads[outfit_id].drawn_on(ctx.catalog):
            offered.append(drawn.model_copy(update={"id": outfit_id}))
    return offered


async def station_outfits(ctx: IngestContext, station: str | None) -> list[Outfit]:
    """The outfits the kiosk at ``station`` shows now (its event's, :func:`event_outfits`). ``None``, or a
    closed station: the catalog."""
    if station is None:
        return list(ctx.catalog.values())
    async with ctx.db.transaction() as repos:
        served = await repos.events.for_station(station, datetime.now(UTC))
        return await event_outfits(ctx, repos, served.event)


async def uploaded_thumbnail(ctx: IngestContext, outfit_id: str) -> tuple[bool, bytes | None]:
    """``(known, png)`` for an uploaded outfit: ``known`` whether it exists; ``png`` its stored thumbnail,
    else its ``based_on`` catalogue outfit's (:func:`shared.outfits.thumbnail_png`), else ``None``."""
    async with ctx.db.transaction() as repos:
        outfit = await repos.events.outfit(outfit_id)
        png = await repos.events.outfit_thumbnail(outfit_id) if outfit and outfit.has_thumbnail else None
    if outfit is None:
        return False, None
    return True, png if png is not None else thumbnail_png(outfit.based_on)


async def station_now(ctx: IngestContext, station: str) -> StationEvent:
    """The event ``station`` serves now (``event`` ``None``: closed, ``next``: the next one listing it)."""
    async with ctx.db.transaction() as repos:
        return await repos.events.for_station(station, datetime.now(UTC))


async def open_session(ctx: IngestContext, station: str) -> KioskSession:
    """Open a session at ``station`` for the event it serves now (:func:`shared.events.station_event`),
    recorded as the session's ``event_id``.

    Raises:
        Conflict: ``station_closed`` (``next``: :func:`next_event_body`) when an event lists the station
            and none of them runs now; nothing is written.
    """
    async with ctx.db.transaction() as repos:
        served = await repos.events.for_station(station, datetime.now(UTC))
        if served.event is None:
            raise Conflict(
                "station_closed",
                f"Station {station!r} is closed: no event it belongs to runs now.",
                {"next": next_event_body(served.next)},
            )
        return await repos.sessions.create(station=station, token=new_token(), event_id=served.event.id)


async def get_session(ctx: IngestContext, session_id: UUID) -> tuple[KioskSession, list[Job]]:
    """The session and its jobs. Raises NotFound."""
    async with ctx.db.transaction() as repos:
        session = await repos.sessions.get(session_id)
        if session is None:
            raise NotFound(f"session {session_id} does not exist")
        return session, await repos.jobs.for_session(session_id)


async def session_view(ctx: IngestContext, session_id: UUID) -> tuple[KioskSession, list[Job], bool]:
    """The session, its jobs and whether a pause is on (any source, :mod:`shared.maintenance`), read
    in one transaction for the kiosk's status poll. Raises NotFound."""
    async with ctx.db.transaction() as repos:
        session = await repos.sessions.get(session_id)
        if session is None:
            raise NotFound(f"session {session_id} does not exist")
        jobs = await repos.jobs.for_session(session_id)
        pause = await current_pause(repos, env_on=ctx.settings.maintenance_mode)
    return session, jobs, pause is not None


async def choose_outfit(ctx: IngestContext, session_id: UUID, outfit_id: str) -> KioskSession:
    """Record the session's outfit.

    The outfits a session may choose are its event's (:func:`event_outfits`).

    Raises:
        Conflict: ``unknown_outfit`` when the session's event does not offer ``outfit_id`` (not in the
            catalog, not listed by an event that lists its outfits, or another event's upload).
        NotFound: no such session.
    """
    async with ctx.db.transaction() as repos:
        current = await repos.sessions.get(session_id, for_update=True)
        if current is None:
            raise NotFound(f"session {session_id} does not exist")
        event = await repos.events.get(current.event_id)
        if outfit_id not in {o.id for o in await event_outfits(ctx, repos, event)}:
            raise Conflict("unknown_outfit", f"outfit {outfit_id!r} is not offered at this event")
        session = await repos.sessions.set_outfit(session_id, outfit_id)
    if session is None:
        raise NotFound(f"session {session_id} does not exist")
    return session


async def give_consent(ctx: IngestContext, session_id: UUID, version: str, language: str) -> KioskSession:
    """Record the guest's "Agree" to the consent screen (:mod:`ingest.consent`); idempotent.

    ``version`` is the one the kiosk showed (``GET /consent``); it must be the current one, so the
    recorded version names the words the guest read. ``language``: the kiosk language they were shown
    in (one of :data:`ingest.consent.KIOSK_LANGUAGES`, checked by the route).

    Raises:
        Conflict: ``consent_outdated`` when ``version`` is not the current text's version (the venue
            changed it since the kiosk loaded it: reload and show it again).
        NotFound: no such session.
    """
    async with ctx.db.transaction() as repos:
        session = await repos.sessions.get(session_id, for_update=True)
        if session is None:
            raise NotFound(f"session {session_id} does not exist")
        if version != consent_text(ctx.settings).version:
            raise Conflict("consent_outdated", "The consent text has changed; show the current one.")
        session = await repos.sessions.record_consent(session_id, version=version, language=language)
    if session is None:  # the locked row cannot vanish; the check is for the type
        raise NotFound(f"session {session_id} does not exist")
    log.info("CONSENT_GIVEN", session_id=str(session_id), version=version, language=language)
    return session


async def choose_download(ctx: IngestContext, session_id: UUID) -> KioskSession:
    """ "No Telegram? Get them here" on the kiosk (issue 23 item 3): the session's pack will be delivered
    as its download page (:mod:`shared.downloads`), shown as a QR code on the done screen. Idempotent.

    Raises:
        Conflict: ``download_unavailable`` without ``PUBLIC_BASE_URL`` (a phone could not open the page);
            ``telegram_linked`` when a guest is linked (their pack goes to Telegram, with the same page
            under the link); ``photo_sent`` once the session has taken a photo.
        NotFound: no such session.
    """
    if not ctx.settings.public_base_url:
        raise Conflict("download_unavailable", "Downloads are not offered here: PUBLIC_BASE_URL is not set.")
    async with ctx.db.transaction() as repos:
        session = await repos.sessions.get(session_id, for_update=True)
        if session is None:
            raise NotFound(f"session {session_id} does not exist")
        if session.telegram_linked:
            raise Conflict("telegram_linked", "This guest linked Telegram: the pack comes there.")
        if session.captures > 0:
            raise Conflict("photo_sent", "The photo is sent; its pack goes where the session said then.")
        chosen = await repos.sessions.choose_download(session_id)
    assert chosen is not None  # the locked row was checked above
    log.info("DOWNLOAD_CHOSEN", session_id=str(session_id))
    return chosen


async def unlink(ctx: IngestContext, session_id: UUID) -> KioskSession:
    """ "Not you?" on the kiosk: unbind the Telegram user from the session and give it a new deep-link
    token, so the kiosk shows a new QR code and the old one binds nobody (issue 13). The outfit and the
    consent go too: the next guest to link chooses and agrees for themselves. A session that is not linked
    is answered as it is (a second tap changes nothing).

    Allowed only before the first photo: a job's "Generating…", link and failure messages go to the chat
    of its session, so once a photo is sent the link stays. The unlinked Telegram user is told once, in
    their language, through the outbox (text ``unlinked``, id :func:`shared.command_ids.unlink_notice`
    of the link undone): the booth was unlinked from their Telegram, and to scan the QR code again if it
    was them. A session nobody was linked to sends nothing.

    Raises:
        NotFound: no such session.
        Conflict: ``photo_sent`` when the session already has a job.
    """
    async with ctx.db.transaction() as repos:
        session = await repos.sessions.get(session_id, for_update=True)
        if session is None:
            raise NotFound(f"session {session_id} does not exist")
        if not session.telegram_linked:
            return session
        if await repos.jobs.for_session(session_id):
            raise Conflict(
                "photo_sent", "A photo was already sent for this guest; the link cannot be undone."
            )
        unlinked = await repos.sessions.unbind_telegram(session_id, token=new_token())
        notice = None
        if session.tg_chat_id is not None:
            notice = command_ids.unlink_notice(session_id, session.bound_at or session.created_at)
            bound = command_ids.bound_us(session.bound_at or session.created_at)
            await tell_guest(
                repos,
                notice,
                session.tg_chat_id,
                "unlinked",
                session.language,
                event=await repos.events.get(session.event_id),
                subject=UnlinkNotice(id=session_id, bound_us=bound),
            )
    assert unlinked is not None  # the row is locked
    log.info("GUEST_UNLINKED", session_id=str(session_id), told=notice is not None)
    if notice is not None:
        await dispatch_commands(ctx.db, ctx.publisher, [notice])
    return unlinked


@dataclass(frozen=True)
class Delivered:
    """The newest delivered job of a session, the positions of its stored stickers and its download
    page's URL (``None`` without ``PUBLIC_BASE_URL``, :mod:`shared.downloads`)."""

    session: KioskSession
    job: Job
    positions: list[int]
    download_url: str | None = None


async def _session_for_kiosk(repos: Repositories, session_id: UUID, token: str | None) -> KioskSession:
    """The session, when ``token`` is its current deep-link token (compared in constant time).

    Raises:
        NotFound: no such session, or the token is missing or another session's (the same answer, so a
            caller cannot tell a session that exists from one that does not).
    """
    session = await repos.sessions.get(session_id)
    if session is None or token is None or not hmac.compare_digest(session.token, token):
        raise NotFound(f"session {session_id} does not exist")
    return session


async def delivered_stickers(ctx: IngestContext, session_id: UUID, token: str | None) -> Delivered | None:
    """The session's newest ``delivered`` job and its sticker positions, for the kiosk's done screen.

    Authorised by the session id together with its deep-link ``token``: the id appears in logs and
    the admin API, the token only in the QR code the kiosk showed (and it changes on unlink).

    Returns ``None`` when no job of the session is delivered with stickers stored (none yet, or erased
    by retention or ``/delete``).

    Raises:
        NotFound: as :func:`_session_for_kiosk`.
    """
    async with ctx.db.transaction() as repos:
        session = await _session_for_kiosk(repos, session_id, token)
        delivered = [j for j in await repos.jobs.for_session(session_id) if j.status == JobStatus.DELIVERED]
        for job in reversed(delivered):
            positions = [p for p, _emoji in await repos.blobs.positions_for_job(job.id, "sticker")]
            if positions:
                url = await download_url(repos, ctx.settings.public_base_url, job.id)
                return Delivered(session, job, positions, url)
    return None


async def sticker(ctx: IngestContext, session_id: UUID, token: str | None, position: int) -> Blob | None:
    """One stored sticker (PNG) of the session's newest delivered job; ``None`` when there is none at
    ``position`` (or no delivered stickers at all).

    Raises:
        NotFound: as :func:`_session_for_kiosk`.
    """
    found = await delivered_stickers(ctx, session_id, token)
    if found is None:
        return None
    async with ctx.db.transaction() as repos:
        return await repos.blobs.at_position(found.job.id, "sticker", position)


@dataclass(frozen=True)
class PhotoAccepted:
    job: Job
    created: bool


async def check_accepts_photo(ctx: IngestContext, session_id: UUID, capture_id: str | None) -> Job | None:
    """Before an upload's photo is read: the job already made for ``capture_id`` (a retry), or None when
    the session takes a new photo.

    ``capture_id`` None (not known yet) checks only that the session exists and is ready; the capture
    limit is then left to :func:`accept_photo`, since a retry of a capture already made must still answer
    with its job. Sessions never expire (DESIGN.md §4 has no session lifetime), but a guest can be erased
    at any time (``/delete``, an admin erasure): then NotFound.

    Raises:
        NotFound: no such session.
        Conflict: ``telegram_not_linked``, ``outfit_not_chosen``, ``capture_limit`` (only with a
            ``capture_id`` that has no job yet).
        ConsentRequired: 403 ``consent_required``, no "Agree" on the session (:mod:`ingest.consent`).
        DatabaseUnavailable: Postgres is down.
    """
    session, jobs = await get_session(ctx, session_id)
    existing = next((j for j in jobs if capture_id is not None and j.capture_id == capture_id), None)
    if existing is not None:
        return existing
    max_captures = ctx.settings.max_captures_per_session
    _require_ready(session, max_captures if capture_id is not None else None)
    return None


async def accept_photo(
    ctx: IngestContext,
    session_id: UUID,
    capture_id: str,
    data: bytes | None,
    *,
    gone: asyncio.Event | None = None,
) -> PhotoAccepted:
    """Turn an uploaded photo into a ``queued`` job, idempotently per ``capture_id``: a retry of a capture
    whose check is running joins it, one whose check ended gets its outcome (:mod:`ingest.captures`).
    ``data`` may be None only to join a running check; ``gone`` is set when the client disconnects.

    Raises:
        NotFound: no such session, also when it was erased (``/delete``, an admin erasure) during the
            photo check.
        Conflict: ``telegram_not_linked``, ``outfit_not_chosen``, ``capture_limit`` (at most
            ``MAX_CAPTURES_PER_SESSION`` captures, DESIGN.md §4).
        ConsentRequired: 403 ``consent_required``, no "Agree" on the session (:mod:`ingest.consent`).
        UploadRejected: the image is unusable (codes in :func:`ingest.photo.normalize_photo`) or ``no_face``.
        ApiError: 503 ``busy``: the photo check would answer too late (:mod:`ingest.captures`).
        PhotoCheckUnavailable: the photo-check process died meanwhile (HTTP 503, :mod:`ingest.photo_pool`);
            nothing was stored, the same upload may be sent again.
        ClientDisconnect: ``gone`` was set before the photo was checked.
        DatabaseUnavailable: Postgres is down (HTTP 503); nothing was stored.
    """
    settings = ctx.settings
    session, jobs = await get_session(ctx, session_id)
    existing = next((j for j in jobs if j.capture_id == capture_id), None)
    if existing is not None:
        return PhotoAccepted(existing, created=False)
    _require_ready(session, settings.max_captures_per_session)
    checked = await ctx.captures.check(session_id, capture_id, data, gone=gone)
    async with ctx.db.transaction() as repos:
        session_now = await repos.sessions.get(session_id, for_update=True)
        if session_now is None:
            raise NotFound(f"session {session_id} was erased while its photo was checked")
        existing = await repos.jobs.for_capture(session_id, capture_id)
        if existing is not None:
            return PhotoAccepted(existing, created=False)
        _require_ready(session_now, settings.max_captures_per_session)
        assert session_now.outfit_id is not None
        job = await repos.jobs.insert_queued(
            session_id=session_id, capture_id=capture_id, outfit_id=session_now.outfit_id
        )
        # The face found by the check, stored with the photo: the worker uses it and never detects on the
        # selfie again (issue 20); None records that ingest looked and found none (REQUIRE_FACE=false).
        face = checked.face.to_meta() if checked.face is not None else None
        await repos.blobs.put(
            kind="selfie", data=checked.jpeg, content_type="image/jpeg", job_id=job.id, meta={"face": face}
        )
        await repos.sessions.count_capture(session_id)
        command_id: str | None = None
        if session_now.tg_chat_id is not None:  # a guest without Telegram watches the kiosk instead
            command_id = command_ids.generating_notice(job.id)
            generating = JobStep(id=job.id, step="generating")
            await tell_guest(
                repos,
                command_id,
                session_now.tg_chat_id,
                "generating",
                session_now.language,
                event=await repos.events.get(session_now.event_id),
                subject=generating,
            )
    ctx.captures.forget(session_id, capture_id)  # the job row answers its retries now
    log.info("JOB_QUEUED", job_id=str(job.id), session_id=str(session_id), outfit=job.outfit_id)
    if await ctx.publisher.try_publish(streams.JOBS, JobQueued(job_id=job.id)):
        async with ctx.db.transaction() as repos:
            await repos.jobs.mark_dispatched([job.id], JobStatus.QUEUED)
    await dispatch_commands(ctx.db, ctx.publisher, [command_id] if command_id else [])
    return PhotoAccepted(job, created=True)


async def record_refusal(ctx: IngestContext, session_id: UUID, code: str) -> None:
    """Count a photo upload of session ``session_id`` that was refused with ``code`` (one of
    :data:`shared.metrics.PHOTO_REFUSAL_CODES`): ``stk_photo_refusals_total{code}`` and a
    ``photo_refusals`` row (session, station, code, time; never the photo), which the admin overview
    reads. Never raises for Postgres being down: the refusal is answered all the same (logged
    ``PHOTO_REFUSAL_NOT_RECORDED``; the counter still moves)."""
    metrics.PHOTO_REFUSALS.labels(code=code).inc()
    try:
        async with ctx.db.transaction() as repos:
            await repos.refusals.record(session_id, code)
    except DatabaseUnavailable:
        log.warning("PHOTO_REFUSAL_NOT_RECORDED", session_id=str(session_id), code=code)
        return
    log.info("PHOTO_REFUSED", session_id=str(session_id), code=code)


def _require_ready(session: KioskSession, max_captures: int | None) -> None:
    if not session.telegram_linked and not session.downloads_only:
        raise Conflict("telegram_not_linked", "Scan the QR code and press Start in Telegram first.")
    if session.outfit_id is None:
        raise Conflict("outfit_not_chosen", "Choose an outfit first.")
    if not session.consented:
        raise ConsentRequired()
    if max_captures is not None and session.captures >= max_captures:
        raise Conflict("capture_limit", f"At most {max_captures} photos per session.")
