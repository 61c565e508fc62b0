"""Error bodies: ``{"error": {"code": "...", "message": "..."}}`` with a machine-readable ``code``.

Every known failure maps to a 4xx (or 503 when Postgres is down); nothing we raise on purpose becomes a 500.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from shared.errors import Conflict, DatabaseUnavailable, NotFound, UploadRejected


class ApiError(Exception):
    """An HTTP error with a code, raised by route handlers."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    """Map our exception tree and request validation errors to error bodies."""

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(UploadRejected)
    async def _upload(_request: Request, exc: UploadRejected) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail)

    @app.exception_handler(NotFound)
    async def _not_found(_request: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, "not_found", str(exc))

    @app.exception_handler(Conflict)
    async def _conflict(_request: Request, exc: Conflict) -> JSONResponse:
        return error_response(409, exc.code, exc.detail)

    @app.exception_handler(DatabaseUnavailable)
    async def _db_down(_request: Request, _exc: DatabaseUnavailable) -> JSONResponse:
        return error_response(503, "database_unavailable", "The database is unavailable, try again shortly.")

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {"field": ".".join(str(p) for p in err.get("loc", ())[1:]), "message": err.get("msg", "")}
            for err in exc.errors()
        ]
        return error_response(422, "invalid_request", "The request is malformed.", fields=fields)
