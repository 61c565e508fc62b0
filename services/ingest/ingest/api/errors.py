"""Error bodies: ``{"error": {"code": "...", "message": "..."}}`` with a machine-readable ``code``.

Every error answer has this body: the ones we raise on purpose (4xx, 503 when Postgres is down), the
framework's own (unknown route, wrong method, request validation) and an unexpected exception (500
``internal_error``, logged as ``UNHANDLED_EXCEPTION`` with its traceback and counted in
``stk_http_requests_total{status="500"}``). The shapes are in the OpenAPI document (:data:`ERROR_RESPONSES`
on every router, plus the codes of each route).

Codes the framework and the request checks give, whatever the route:

===========================  ======  ===============================================================
code                         status  when
===========================  ======  ===============================================================
``invalid_request``          422     a field is missing, has the wrong type or breaks a limit (``fields``
                                     names each one); also a body that is not JSON where JSON is expected
``invalid_characters``       422     a text field holds NUL, another control character, a lone
                                     surrogate or a noncharacter (:mod:`ingest.api.text`); ``fields`` as
                                     above
``malformed_multipart``      400     an upload that is not valid ``multipart/form-data``
``file_too_large``           413     an upload over ``MAX_UPLOAD_BYTES``
``request_too_large``        413     any other request body over ``MAX_JSON_BODY_BYTES``
                                     (:mod:`ingest.api.body_limit`; nothing of it is stored)
``unauthorized``             401     an admin route without a valid ``Authorization: Bearer`` header
``not_found``                404     no such route (or row)
``method_not_allowed``       405     the route exists but not with this method (``Allow`` lists them)
``database_unavailable``     503     Postgres cannot be reached
``rate_limited``             429     too many new sessions or leads from one client in a window
                                     (:mod:`ingest.ratelimit`); ``Retry-After`` says when (s)
``photo_check_unavailable``  503     the photo-check process died during the upload
                                     (:mod:`ingest.photo_pool`); ``Retry-After: 1``, send it again
``busy``                     503     the photo check would answer a new upload later than
                                     ``PHOTO_CHECK_MAX_WAIT_SEC`` (:mod:`ingest.captures`);
                                     ``Retry-After`` says when to send the same capture again (s)
``internal_error``           500     a bug; nothing else is said to the client
===========================  ======  ===============================================================
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from ingest.api.text import INVALID_CHARACTERS
from ingest.photo_pool import PhotoCheckUnavailable
from shared.errors import Conflict, DatabaseUnavailable, NotFound, StickerBoothError, UploadRejected

log = structlog.get_logger(__name__)


class ApiError(StickerBoothError):
    """An HTTP error with a code, raised by route handlers; ``retry_after_s`` (s), when given, is sent as
    ``Retry-After``."""

    def __init__(self, status: int, code: str, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


class RateLimited(ApiError):
    """429 ``rate_limited``: ``retry_after_s`` seconds until the client's window ends
    (:class:`ingest.ratelimit.RateLimiter`); answered with ``Retry-After``."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(
            429,
            "rate_limited",
            f"Too many requests from here. Try again in {retry_after_s} s.",
            retry_after_s=retry_after_s,
        )


class KioskKeyRequired(ApiError):
    """401 ``kiosk_key_required``: ``KIOSK_KEY`` is set and ``POST /sessions`` came without it (only the
    venue's kiosks open sessions; :func:`ingest.api.limits.kiosk_key_given`)."""

    def __init__(self) -> None:
        super().__init__(401, "kiosk_key_required", "Only the booth's kiosks can open a session.")


class RequestTooLarge(StarletteHTTPException, StickerBoothError):
    """413 ``request_too_large``: a request body over ``MAX_JSON_BODY_BYTES`` (:mod:`ingest.api.body_limit`).

    An :class:`starlette.exceptions.HTTPException` because FastAPI's body parsing passes those on as they
    are (any other exception raised while it reads the body becomes a 400).

    Args:
        limit: the limit that was passed (bytes).
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than {limit} bytes.")


def request_too_large_response(limit: int) -> JSONResponse:
    """The 413 ``request_too_large`` answer for a body over ``limit`` bytes."""
    return error_response(413, "request_too_large", RequestTooLarge(limit).detail)


class FieldProblem(BaseModel):
    """One rejected field: its dotted location (``utm.utm_source``) and why."""

    field: str
    message: str


class ErrorDetail(BaseModel):
    """``code``: machine-readable (tables in this module and the route docs); ``message``: for people."""

    code: str
    message: str
    fields: list[FieldProblem] | None = None


class ErrorBody(BaseModel):
    """The body of every error answer."""

    error: ErrorDetail


def _described(text: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": text}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: _described("`not_found`: no such route or row"),
    405: _described("`method_not_allowed`"),
    413: _described("`request_too_large`: the body is over `MAX_JSON_BODY_BYTES`"),
    422: _described("`invalid_request` or `invalid_characters`, with `fields`"),
    500: _described("`internal_error`"),
    503: _described(
        "`database_unavailable` (or `maintenance` on kiosk routes, `photo_check_unavailable` on the upload)"
    ),
}
"""The error answers any route can give, for ``include_router(..., responses=ERROR_RESPONSES)``."""

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "file_too_large",
    415: "unsupported_media_type",
}


def error_response(status: int, code: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def validation_response(errors: list[Any]) -> JSONResponse:
    """422 for pydantic errors: ``invalid_characters`` when any field has a refused code point, else
    ``invalid_request``; ``fields`` lists every error with its location (without ``body``/``query``…)."""
    fields = [
        {"field": ".".join(str(p) for p in err.get("loc", ())[1:]), "message": err.get("msg", "")}
        for err in errors
    ]
    if any(err.get("type") == INVALID_CHARACTERS for err in errors):
        return error_response(
            422, INVALID_CHARACTERS, "A text field contains characters that are not allowed.", fields=fields
        )
    return error_response(422, "invalid_request", "The request is malformed.", fields=fields)


def install_error_handlers(app: FastAPI) -> None:
    """Map our exception tree, the framework's errors and unexpected exceptions to error bodies."""

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        response = error_response(exc.status, exc.code, exc.message)
        if exc.retry_after_s is not None:
            response.headers["Retry-After"] = str(exc.retry_after_s)
        return response

    @app.exception_handler(UploadRejected)
    async def _upload(_request: Request, exc: UploadRejected) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail)

    @app.exception_handler(RequestTooLarge)
    async def _too_large(_request: Request, exc: RequestTooLarge) -> JSONResponse:
        return error_response(413, "request_too_large", exc.detail)

    @app.exception_handler(NotFound)
    async def _not_found(_request: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, "not_found", str(exc))

    @app.exception_handler(Conflict)
    async def _conflict(_request: Request, exc: Conflict) -> JSONResponse:
        return error_response(409, exc.code, exc.detail, **exc.extra)

    @app.exception_handler(DatabaseUnavailable)
    async def _db_down(_request: Request, _exc: DatabaseUnavailable) -> JSONResponse:
        return error_response(503, "database_unavailable", "The database is unavailable, try again shortly.")

    @app.exception_handler(PhotoCheckUnavailable)
    async def _photo_check_down(_request: Request, _exc: PhotoCheckUnavailable) -> JSONResponse:
        response = error_response(
            503, "photo_check_unavailable", "The photo could not be checked just now; send it again."
        )
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_response(list(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _framework(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(
            exc.status_code, "internal_error" if exc.status_code >= 500 else "bad_request"
        )
        response = error_response(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette's ServerErrorMiddleware calls this, then re-raises exc for the server's own log.
        log.error("UNHANDLED_EXCEPTION", method=request.method, path=request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "Something went wrong on our side.")
