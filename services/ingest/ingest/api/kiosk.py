"""Kiosk API: outfits, sessions, outfit choice, consent, photo upload, status poll (DESIGN.md §4, issue 11
"Consent on the kiosk"); unlink ("not you?"), the delivered stickers and the page's branding (issue 13)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal
from uuid import UUID

import segno
from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from starlette.requests import ClientDisconnect

from ingest import kiosk
from ingest.api.errors import ApiError, ErrorBody
from ingest.api.limits import KIOSK_KEY_HEADER, kiosk_key_given, refuse_if_over, session_counter
from ingest.api.text import SingleLine
from ingest.branding import ink_on, normalize_hex
from ingest.captures import RepeatedRefusal
from ingest.consent import KIOSK_LANGUAGES, KioskLanguage, consent_text
from ingest.context import Ctx, get_context
from ingest.multipart import MultipartReader
from shared.domain import Job, JobStatus, KioskSession
from shared.errors import UploadRejected
from shared.events import guest_text
from shared.joblife import RETAKE_TEXTS, guest_failure_text, is_last_capture
from shared.maintenance import current_pause
from shared.metrics import PHOTO_REFUSAL_CODES
from shared.outfits import thumbnail_png
from shared.texts import TEXTS

router = APIRouter()


class SessionCreate(BaseModel):
    station: SingleLine = Field("kiosk", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class OutfitChoice(BaseModel):
    outfit_id: SingleLine = Field(min_length=1, max_length=64)


class DeliveryChoice(BaseModel):
    """How the guest's pack reaches them; only ``download`` can be chosen (linking Telegram chooses it)."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["download"]


class ConsentGiven(BaseModel):
    """The guest pressed "Agree" on the consent screen: the ``version`` of ``GET /consent`` they were
    shown, in kiosk ``language`` (one of :data:`ingest.consent.KIOSK_LANGUAGES`; another is a 422)."""

    version: SingleLine = Field(min_length=1, max_length=64)
    language: KioskLanguage = "en"

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if value not in KIOSK_LANGUAGES:
            raise ValueError(f"not a kiosk language; known: {', '.join(KIOSK_LANGUAGES)}")
        return value


async def _maintenance_guard(ctx: Ctx) -> None:
    """503 ``maintenance`` while any pause source is on (:mod:`shared.maintenance`)."""
    async with ctx.db.transaction() as repos:
        pause = await current_pause(repos, env_on=ctx.settings.maintenance_mode)
    if pause is not None:
        raise ApiError(503, "maintenance", "The booth is paused for maintenance.")


#: What the kiosk shows for a job's status (the kiosk API's ``status`` values, DESIGN.md §4).
_KIOSK_STATUS: dict[JobStatus, str] = {
    JobStatus.QUEUED: "generating",
    JobStatus.PROCESSING: "generating",
    JobStatus.RENDERED: "generating",
    JobStatus.DELIVERING: "delivering",
    JobStatus.DELIVERED: "delivered",
    JobStatus.FAILED: "failed",
}


def _first_name(name: str | None) -> str | None:
    """The guest's Telegram first name as the kiosk greets them: its first word, at most 32 characters."""
    words = (name or "").split()
    return words[0][:32] if words else None


def _job_body(job: Job, *, last_capture: bool) -> dict[str, Any]:
    """One job for the kiosk; ``last_capture``: its session has taken all its photos
    (:func:`shared.joblife.is_last_capture`), which picks the failure text the worker sent."""
    failure = None
    if job.status == JobStatus.FAILED:
        text_key = guest_failure_text(job.error_class, job.error, last_capture=last_capture)
        failure = {"class": job.error_class, "text": text_key, "retake": text_key in RETAKE_TEXTS}
    return {"id": str(job.id), "status": job.status, "capture_id": job.capture_id, "failure": failure}


def _session_body(
    ctx: Ctx, session: KioskSession, jobs: list[Job], *, paused: bool = False
) -> dict[str, Any]:
    """The kiosk's view of a session. ``deep_link``, ``qr_svg`` and ``token`` are there only while no
    guest is linked: the token then authorises ``GET /sessions/{id}/stickers`` together with the id, so
    a reader of a linked session's status (anyone who has its id) does not learn it."""
    linked = session.telegram_linked
    last_capture = is_last_capture(session, ctx.settings.max_captures_per_session)
    link = None if linked else kiosk.deep_link(ctx.settings.bot_username, session.token)
    if not linked and not session.downloads_only:
        status = "waiting_for_telegram"
    elif session.outfit_id is None:
        status = "choose_outfit"
    elif not jobs and not session.consented:
        status = "consent_required"
    elif not jobs:
        status = "ready_for_photo"
    else:
        status = _KIOSK_STATUS[jobs[-1].status]
    return {
        "id": str(session.id),
        "station": session.station,
        "status": status,
        "paused": paused,
        "deep_link": link,
        "token": None if linked else session.token,
        "qr_svg": segno.make(link, error="m").svg_data_uri(scale=6, border=2) if link else None,
        "telegram_linked": linked,
        # "download": the guest chose "no Telegram", the pack comes as the download page's QR code
        "delivery": "download" if session.downloads_only else "telegram",
        "guest_first_name": _first_name(session.guest_name) if linked else None,
        "outfit_id": session.outfit_id,
        "consent": (
            {
                "version": session.consent_version,
                "language": session.consent_language,
                "at": session.consented_at.isoformat(),
            }
            if session.consented_at is not None
            else None
        ),
        "captures": session.captures,
        "captures_left": max(0, ctx.settings.max_captures_per_session - session.captures),
        "jobs": [_job_body(j, last_capture=last_capture) for j in jobs],
    }


#: ``?station=`` of ``/outfits`` and ``/kiosk/config``: the kiosk station the page serves (as in
#: ``POST /sessions``).
StationQuery = Annotated[SingleLine | None, Query(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


@router.get("/outfits")
async def list_outfits(ctx: Ctx, station: StationQuery = None) -> list[dict[str, Any]]:
    """The outfit catalog (id, title, thumbnail URL, prompt, body template); with ``?station=``, the
    outfits of the event the station serves now, in its order, its uploaded ones included (when it lists
    none: the whole catalog, then its uploads; a closed station: the catalog)."""
    chosen = await kiosk.station_outfits(ctx, station)
    return [
        {
            "id": o.id,
            "title": o.title,
            "thumbnail_url": f"/outfits/{o.id}/thumbnail.png",
            "prompt": o.prompt,
            "body_template": o.body_template,
        }
        for o in chosen
    ]


@router.get("/outfits/{outfit_id}/thumbnail.png")
async def outfit_thumbnail(ctx: Ctx, outfit_id: Annotated[SingleLine, Path(max_length=64)]) -> Response:
    """The outfit's kiosk thumbnail (PNG): a catalogue outfit's, or an uploaded outfit's from the
    database (its ``based_on`` outfit's when none was uploaded). 404 ``unknown_outfit``, ``no_thumbnail``."""
    # an uploaded outfit's picture may be replaced during the event: kept a minute, not an hour
    max_age = 3600
    if outfit_id in ctx.catalog:
        png = thumbnail_png(outfit_id)
    else:
        known, png = await kiosk.uploaded_thumbnail(ctx, outfit_id)
        if not known:
            raise ApiError(404, "unknown_outfit", f"outfit {outfit_id!r} is not in the catalog")
        max_age = 60
    if png is None:
        raise ApiError(404, "no_thumbnail", "This outfit has no thumbnail.")
    return Response(png, media_type="image/png", headers={"Cache-Control": f"public, max-age={max_age}"})


class _KioskKeyFirst(APIRoute):
    """``POST /sessions``'s route: FastAPI reads and parses a JSON body before it runs any dependency, so
    the kiosk key is checked here, on the headers, before that (a stranger's malformed body is a 401 too);
    the handler reads the outcome from ``request.state.kiosk_keyed``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def key_first(request: Request) -> Response:
            key = request.headers.get(KIOSK_KEY_HEADER)
            request.state.kiosk_keyed = kiosk_key_given(get_context(request).settings.kiosk_key, key)
            return await handler(request)

        return key_first


async def create_session(ctx: Ctx, request: Request, body: SessionCreate | None = None) -> dict[str, Any]:
    """Open a kiosk session; the answer carries the deep link and its QR code (SVG data URI). 401
    ``kiosk_key_required`` when ``KIOSK_KEY`` is set and not sent; 429 ``rate_limited`` past
    ``SESSIONS_RATE_LIMIT`` per client, or per station with the key (:mod:`ingest.api.limits`)."""
    station = (body or SessionCreate()).station
    counted = session_counter(request.state.kiosk_keyed, request, station)
    await _maintenance_guard(ctx)  # then: a paused booth or a Postgres outage counts no session
    await refuse_if_over(ctx.session_limiter, counted)
    session = await kiosk.open_session(ctx, station)
    return _session_body(ctx, session, [])


router.add_api_route(
    "/sessions",
    create_session,
    methods=["POST"],
    status_code=201,
    responses={
        401: {"model": ErrorBody, "description": "`kiosk_key_required` (only with `KIOSK_KEY` set)"},
        429: {"model": ErrorBody, "description": "`rate_limited`, with `Retry-After`"},
    },
    route_class_override=_KioskKeyFirst,
)


@router.get("/sessions/{session_id}")
async def session_status(ctx: Ctx, session_id: UUID) -> dict[str, Any]:
    """Status for the kiosk's 1 s poll; ``paused`` says a pause is on (the kiosk shows its break screen
    and carries on by itself when it is false again), ``jobs[].failure`` what a failed job means to the
    guest (``text``: the key of the bot's message in :mod:`shared.texts`, ``no_face_last`` or
    ``content_refused_last`` once the session has taken its last photo; ``retake``: a new photo can
    help, a retry of this one cannot)."""
    session, jobs, paused = await kiosk.session_view(ctx, session_id)
    return _session_body(ctx, session, jobs, paused=paused)


@router.put(
    "/sessions/{session_id}/delivery",
    responses={
        404: {"model": ErrorBody, "description": "`not_found`: no such session"},
        409: {
            "model": ErrorBody,
            "description": "`download_unavailable` (no `PUBLIC_BASE_URL`), `telegram_linked`, `photo_sent`",
        },
    },
)
async def choose_delivery(ctx: Ctx, session_id: UUID, body: DeliveryChoice) -> dict[str, Any]:
    """ "No Telegram? Get them here": the guest's pack comes as a download page (``{"mode": "download"}``)
    instead of a sticker set; before any photo and while no Telegram user is linked
    (:func:`ingest.kiosk.choose_download`). The guest then chooses an outfit and agrees as any other."""
    await _maintenance_guard(ctx)
    await kiosk.choose_download(ctx, session_id)
    session, jobs = await kiosk.get_session(ctx, session_id)
    return _session_body(ctx, session, jobs)


@router.put("/sessions/{session_id}/outfit")
async def choose_outfit(ctx: Ctx, session_id: UUID, body: OutfitChoice) -> dict[str, Any]:
    await _maintenance_guard(ctx)
    await kiosk.choose_outfit(ctx, session_id, body.outfit_id)
    session, jobs = await kiosk.get_session(ctx, session_id)
    return _session_body(ctx, session, jobs)


@router.get("/consent")
async def consent_screen(ctx: Ctx) -> dict[str, Any]:
    """The consent screen the kiosk shows before the camera opens (:mod:`ingest.consent`): its
    ``version`` (send it back with ``PUT /sessions/{id}/consent``), its ``points`` per kiosk language,
    and the facts in them: the provider chain (``providers``) and the retention numbers."""
    text = consent_text(ctx.settings)
    return {
        "version": text.version,
        "points": {language: list(points) for language, points in text.points.items()},
        "providers": list(text.providers),
        "selfie_retention_hours": text.selfie_retention_hours,
        "sticker_retention_days": text.sticker_retention_days,
    }


@router.put(
    "/sessions/{session_id}/consent",
    responses={
        404: {"model": ErrorBody, "description": "`not_found`: no such session"},
        409: {"model": ErrorBody, "description": "`consent_outdated`: `version` is not the current text's"},
    },
)
async def give_consent(ctx: Ctx, session_id: UUID, body: ConsentGiven) -> dict[str, Any]:
    """Record "Agree" on the session (version, language, time); agreeing again changes nothing.
    Answers the session, whose ``consent`` then holds the record."""
    await _maintenance_guard(ctx)
    await kiosk.give_consent(ctx, session_id, body.version, body.language)
    session, jobs = await kiosk.get_session(ctx, session_id)
    return _session_body(ctx, session, jobs)


CAPTURE_ID_PATTERN = r"^[A-Za-z0-9_.:-]+$"
CaptureId = Annotated[SingleLine, Field(min_length=1, max_length=64, pattern=CAPTURE_ID_PATTERN)]
_CAPTURE_ID = TypeAdapter(CaptureId)
# Room for the multipart framing and the capture_id part around the photo (bytes); a real form adds
# ~300 bytes.
MULTIPART_OVERHEAD_BYTES = 16 * 1024
_FIELD_LIMIT_BYTES = 1024  # any part but the photo
_PHOTO_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["photo"],
                    "properties": {
                        "capture_id": {
                            "type": "string",
                            "maxLength": 64,
                            "pattern": CAPTURE_ID_PATTERN,
                            "description": "The kiosk's id of this capture; a retry sends the same one. "
                            "Send it before `photo`: a retry is then answered without reading the photo.",
                        },
                        "photo": {
                            "type": "string",
                            "format": "binary",
                            "description": "JPEG, PNG, WebP or HEIC/HEIF, at most MAX_UPLOAD_BYTES",
                        },
                    },
                }
            }
        },
    }
}
_UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "`malformed_multipart`"},
    403: {
        "model": ErrorBody,
        "description": "`consent_required`: the guest has not agreed to the consent screen "
        "(`PUT /sessions/{id}/consent`); nothing is read or stored",
    },
    404: {
        "model": ErrorBody,
        "description": "`not_found`: no such session, also one erased while its photo was checked",
    },
    409: {
        "model": ErrorBody,
        "description": "`telegram_not_linked`, `outfit_not_chosen`, `capture_limit`",
    },
    413: {"model": ErrorBody, "description": "`file_too_large`, `too_many_pixels`"},
    415: {"model": ErrorBody, "description": "`unsupported_format`"},
    429: {
        "model": ErrorBody,
        "description": "`rate_limited`, with `Retry-After`: more than `PHOTO_RATE_LIMIT` photos checked for "
        "this session in `PHOTO_RATE_WINDOW_SEC`",
    },
    422: {
        "model": ErrorBody,
        "description": "`capture_id_required`, `empty_file`, `corrupt_image`, `no_face`, "
        "`invalid_request`, `invalid_characters`",
    },
    503: {
        "model": ErrorBody,
        "description": "`maintenance`, `database_unavailable`; `photo_check_unavailable` (with "
        "`Retry-After`): the photo check stopped, send the same capture again; `busy` (with `Retry-After`): "
        "the photo check would answer later than `PHOTO_CHECK_MAX_WAIT_SEC`, send the same capture again "
        "then",
    },
}


def _missing(field: str, message: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": "missing"}])


def _capture_id(raw: bytes) -> str:
    """The ``capture_id`` part as text. Raises RequestValidationError (422) when it breaks its type."""
    try:
        return _CAPTURE_ID.validate_python(raw.decode("utf-8", "surrogateescape"))
    except ValidationError as exc:
        raise RequestValidationError(
            [{**err, "loc": ("body", "capture_id", *err["loc"])} for err in exc.errors()]
        ) from exc


def _refuse_declared_size(content_length: str | None, limit: int) -> None:
    """413 at once when ``Content-Length`` already says the body is over the limit (nothing read)."""
    declared = content_length.strip() if content_length is not None else ""
    if declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD_BYTES:
        raise UploadRejected(
            "file_too_large",
            f"The photo is larger than {limit} bytes ({content_length} sent).",
            status=413,
        )


def _accepted(response: Response, job: Job, key: str, *, created: bool) -> dict[str, Any]:
    if not created:
        response.status_code = 200
    return {"job_id": str(job.id), "status": job.status, "capture_id": key}


@router.post(
    "/sessions/{session_id}/photo", status_code=202, openapi_extra=_PHOTO_BODY, responses=_UPLOAD_ERRORS
)
async def upload_photo(
    ctx: Ctx,
    request: Request,
    response: Response,
    session_id: UUID,
    idempotency_key: Annotated[SingleLine | None, Header(max_length=64)] = None,
) -> dict[str, Any]:
    """Upload a selfie (multipart: ``capture_id``, then ``photo``); creates the job ``queued``.
    Idempotent per ``capture_id`` (or ``Idempotency-Key``).

    Answers 202 for a new job, 200 with the same job for a repeated capture id. The body is read only
    after the session is known to take a photo (maintenance, session, Telegram link, outfit, consent; with the
    capture id first, also the retry and the capture limit), and only up to ``MAX_UPLOAD_BYTES`` plus
    16 KiB of multipart framing: a larger ``Content-Length`` is refused before reading, a streamed body
    is cut at the limit (413 ``file_too_large``). Nothing is spooled to disk.

    A refused photo (the codes of :data:`shared.metrics.PHOTO_REFUSAL_CODES`: ``no_face``,
    ``corrupt_image``, ``file_too_large`` ...) is counted for the operators
    (:func:`ingest.kiosk.record_refusal`) before the refusal is answered, once per capture.

    Retries of one capture (:mod:`ingest.captures`): one whose check is running joins it (without reading
    its photo when ``capture_id`` comes first), one whose check ended gets its job or its refusal again;
    each capture counts once against ``PHOTO_RATE_LIMIT``. A new check that would answer later than
    ``PHOTO_CHECK_MAX_WAIT_SEC`` is refused at once: 503 ``busy`` with ``Retry-After``.
    """
    await _maintenance_guard(ctx)
    await kiosk.check_accepts_photo(ctx, session_id, None)
    try:
        return await _receive_photo(ctx, request, response, session_id, idempotency_key)
    except UploadRejected as exc:
        if exc.code in PHOTO_REFUSAL_CODES and not isinstance(exc, RepeatedRefusal):
            await kiosk.record_refusal(ctx, session_id, exc.code)
        raise


async def _receive_photo(
    ctx: Ctx, request: Request, response: Response, session_id: UUID, idempotency_key: str | None
) -> dict[str, Any]:
    """The upload's body, read and turned into a job (see :func:`upload_photo`)."""
    limit = ctx.settings.max_upload_bytes
    _refuse_declared_size(request.headers.get("content-length"), limit)
    reader = MultipartReader(
        request.stream(), request.headers.get("content-type"), max_body_bytes=limit + MULTIPART_OVERHEAD_BYTES
    )
    capture_id: str | None = None
    data: bytes | None = None
    try:
        while (part := await reader.next_part()) is not None:
            if part.name == "capture_id":
                raw = await reader.read_part(_FIELD_LIMIT_BYTES)
                if raw is None:
                    raise RequestValidationError(
                        [{"loc": ("body", "capture_id"), "msg": "too long", "type": "string_too_long"}]
                    )
                capture_id = _capture_id(raw)
            elif part.name == "photo" and data is None:
                if capture_id is not None:
                    existing = await kiosk.check_accepts_photo(ctx, session_id, capture_id)
                    if existing is not None:
                        return _accepted(response, existing, capture_id, created=False)
                    await ctx.captures.refuse_if_refused(session_id, capture_id)
                    if ctx.captures.running(session_id, capture_id):  # a retry: join, read nothing
                        accepted = await kiosk.accept_photo(ctx, session_id, capture_id, None)
                        return _accepted(response, accepted.job, capture_id, created=accepted.created)
                data = await reader.read_part(limit)
                if data is None:
                    raise UploadRejected(
                        "file_too_large", f"The photo is larger than {limit} bytes.", status=413
                    )
    except ClientDisconnect as exc:
        raise UploadRejected("malformed_multipart", "The upload was interrupted.", status=400) from exc
    key = capture_id or idempotency_key
    if not key:
        raise ApiError(
            422, "capture_id_required", "Send a capture_id form field or an Idempotency-Key header."
        )
    if data is None:
        raise _missing("photo", "Field required")
    await ctx.captures.refuse_if_refused(session_id, key)
    # the photo check: CPU every kiosk shares; each capture counted once, whatever its retries
    await refuse_if_over(ctx.photo_limiter, str(session_id), item=key)
    gone = asyncio.Event()
    watcher = asyncio.create_task(_until_disconnected(request, gone))
    try:
        accepted = await kiosk.accept_photo(ctx, session_id, key, data, gone=gone)
    except ClientDisconnect as exc:
        raise ApiError(400, "client_gone", "The client went away before its photo was checked.") from exc
    finally:
        watcher.cancel()
    return _accepted(response, accepted.job, key, created=accepted.created)


async def _until_disconnected(request: Request, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client disconnects (the body has been read: the server's next message is
    the disconnect, or nothing until the answer is sent)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    gone.set()


@router.post(
    "/sessions/{session_id}/unlink",
    responses={
        404: {"model": ErrorBody, "description": "`not_found`: no such session"},
        409: {"model": ErrorBody, "description": "`photo_sent`: the session already has a job"},
    },
)
async def unlink_guest(ctx: Ctx, session_id: UUID) -> dict[str, Any]:
    """ "Not you?": unbind the Telegram user from the session before any photo (:func:`ingest.kiosk.unlink`)
    and answer the session with its new deep link and QR code. Works during a pause too."""
    session = await kiosk.unlink(ctx, session_id)
    _, jobs, paused = await kiosk.session_view(ctx, session_id)
    return _session_body(ctx, session, jobs, paused=paused)


SessionToken = Annotated[str | None, Header(alias="X-Session-Token", max_length=64)]
_STICKER_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {
        "model": ErrorBody,
        "description": "`not_found`: no such session, or `X-Session-Token` is missing or not its token; "
        "`no_stickers`: no delivered stickers (yet, or any more)",
    },
}


@router.get("/sessions/{session_id}/stickers", responses=_STICKER_ERRORS)
async def delivered_stickers(
    ctx: Ctx,
    session_id: UUID,
    token: SessionToken = None,
    limit: Annotated[int, Query(ge=1, le=12)] = 4,
) -> dict[str, Any]:
    """The done screen: the first ``limit`` (1–12, default 4) stored stickers of the session's newest
    delivered job as URLs (fetch each with the same header), its set link
    ``https://t.me/addstickers/<name>`` and that link's QR code (SVG data URI), and the pack's download
    page ``download_url`` with its QR code (both ``None`` without ``PUBLIC_BASE_URL``,
    :mod:`shared.downloads`). Authorised by the header ``X-Session-Token``: the session's deep-link token,
    which the kiosk got with the session."""
    found = await kiosk.delivered_stickers(ctx, session_id, token)
    if found is None:
        raise ApiError(404, "no_stickers", "This session has no delivered stickers.")
    set_url = f"https://t.me/addstickers/{found.job.sticker_set_name}" if found.job.sticker_set_name else None
    return {
        "job_id": str(found.job.id),
        "set_name": found.job.sticker_set_name,
        "set_url": set_url,
        "set_qr_svg": _qr(set_url),
        "download_url": found.download_url,
        "download_qr_svg": _qr(found.download_url),
        "stickers": [
            {"position": p, "url": f"/sessions/{session_id}/stickers/{p}"} for p in found.positions[:limit]
        ],
    }


def _qr(url: str | None) -> str | None:
    """``url``'s QR code as an SVG data URI (error correction M, 6 px modules), or ``None``."""
    return segno.make(url, error="m").svg_data_uri(scale=6, border=2) if url else None


@router.get(
    "/sessions/{session_id}/stickers/{position}",
    responses={**_STICKER_ERRORS, 200: {"content": {"image/png": {}}, "description": "the sticker PNG"}},
)
async def delivered_sticker(
    ctx: Ctx, session_id: UUID, position: Annotated[int, Path(ge=0, le=11)], token: SessionToken = None
) -> Response:
    """One stored sticker (512 px PNG) of the session's newest delivered job; same header as the list.
    Never cached by anything between the server and the kiosk."""
    blob = await kiosk.sticker(ctx, session_id, token, position)
    if blob is None:
        raise ApiError(404, "no_stickers", f"No delivered sticker at position {position}.")
    return Response(
        blob.data,
        media_type=blob.content_type,
        headers={"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/kiosk/config")
async def kiosk_config(ctx: Ctx, station: StationQuery = None) -> dict[str, Any]:
    """What the kiosk page needs besides the outfits and the consent text: the venue's branding
    (``KIOSK_EVENT_TITLE``, ``KIOSK_LOGO_URL``, ``KIOSK_ACCENT_COLOR`` with the text colour on it,
    :mod:`ingest.branding`), the photo limit, and the bot's texts for the failures the kiosk shows
    too (``guest_texts[key][language]``, every catalogue language of :mod:`shared.texts`; with
    ``?station=``, the failure texts in the event's own words where it sets them, as the bot sends them,
    :meth:`shared.events.Event.text`), so booth and bot say the same thing;
    ``photo_max_side_px``: the longest side the pipeline uses of a photo (:data:`PHOTO_MAX_SIDE_PX`).
    ``download_offered``: whether the kiosk offers "no Telegram? get them here" (``PUBLIC_BASE_URL`` set).

    With ``?station=``: the branding of the event the station serves now (``title``, ``accent_color``,
    ``logo_url``; each key the event does not set is the ``KIOSK_*`` setting), ``event_id``,
    ``languages`` (the event's, empty: every kiosk language), ``closed`` (an event lists the station
    and none runs now: the kiosk shows its closed screen) and ``next`` (the next event's ``name``,
    ``starts_at`` ISO 8601 UTC and ``time_zone``, or ``null``)."""
    settings = ctx.settings
    served = await kiosk.station_now(ctx, station) if station else None
    event = served.event if served else None
    branding = dict(event.branding) if event else {}
    accent = normalize_hex(branding.get("accent_color") or settings.kiosk_accent_color)
    return {
        "event_title": branding.get("title") or settings.kiosk_event_title or None,
        "logo_url": branding.get("logo_url") or settings.kiosk_logo_url or None,
        "accent_color": accent,
        "accent_ink": ink_on(accent),
        "event_id": event.id if event else None,
        "languages": list(event.languages) if event else [],
        "closed": served is not None and event is None,
        "next": kiosk.next_event_body(served.next) if served and event is None else None,
        "max_captures_per_session": settings.max_captures_per_session,
        "photo_max_side_px": PHOTO_MAX_SIDE_PX,
        # "No Telegram? Get them here" is offered only where phones can open the download page
        "download_offered": bool(settings.public_base_url),
        "guest_texts": {
            key: {lang: guest_text(None if key == "maintenance" else event, key, lang) for lang in TEXTS[key]}
            for key in _KIOSK_GUEST_TEXTS
        },
    }


#: The longest side (px) of the selfie the worker sends a provider (``worker/providers/images.py``
#: ``PHOTO_MAX_SIDE_PX``): the kiosk makes a photo no larger before it leaves the tablet (``kiosk.js``).
PHOTO_MAX_SIDE_PX = 1536

#: The bot's texts the kiosk shows for the same case (:func:`shared.joblife.guest_failure_text`).
_KIOSK_GUEST_TEXTS = (
    "no_face",
    "content_refused",
    "no_face_last",
    "content_refused_last",
    "failed",
    "maintenance",
)
