"""One size limit for every request body but the streamed uploads: ``MAX_JSON_BODY_BYTES``.

FastAPI reads a JSON body whole (``Request.body()``) before it validates it, so without a limit a 400 MB
body sent to ``PUT /sessions/{id}/consent`` was held in memory before its 422, and one request could take
ingest past its memory limit. This pure ASGI middleware bounds what any route can read:

- a ``Content-Length`` over the limit is answered at once, before the route runs or a byte is read (nor
  an ``Expect: 100-continue`` answered);
- a body without one (chunked) is counted as the app receives it; the chunk that passes the limit makes
  ``receive`` raise :class:`ingest.api.errors.RequestTooLarge`, so the app never holds more than the
  limit (plus the one chunk the server handed over) and the rest is not read.

Both answer 413 ``request_too_large`` with the error body (:mod:`ingest.api.errors`); a body within the
limit goes through untouched. A route whose endpoint is in ``larger`` has its own limit instead (the
outfit upload, whose base64 thumbnail may be 512 KB of PNG: :mod:`ingest.api.admin_events`). Routes whose
endpoint is in ``streamed`` (the photo upload, which reads
its multipart body in chunks with its own ``MAX_UPLOAD_BYTES`` and 413 ``file_too_large``:
:mod:`ingest.multipart`) are passed through as they are.

It sits inside :class:`ingest.api.request_metrics.RequestMetricsMiddleware`, so a refusal is counted as
``status="413"`` under its route template like any answer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ingest.api.errors import RequestTooLarge, request_too_large_response

__all__ = ["BodyLimitMiddleware"]


def _declared_length(scope: Scope) -> int | None:
    """The ``Content-Length`` header as a number (bytes), or None when absent or not a number (the
    server refuses those itself; the body is then counted as it comes)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            declared = value.strip()
            return int(declared) if declared.isdigit() else None
    return None


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_body_bytes`` with 413 ``request_too_large`` (module docstring).

    Args:
        app: the ASGI app.
        max_body_bytes: the most body bytes a route may receive (bytes, > 0).
        routes: the routes to find a request's route in, first match wins: the routers' own routes
            (FastAPI's ``app.routes`` holds included routers, which do not say which route matched).
        streamed: endpoints that bound their own body (the photo upload); their requests are not limited.
        larger: endpoint → its own limit (bytes), for a route whose valid body is larger than
            ``max_body_bytes``.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        routes: Sequence[BaseRoute],
        streamed: Collection[Callable[..., Any]],
        larger: Mapping[Callable[..., Any], int] | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.routes = routes
        self.streamed = streamed
        self.larger = dict(larger or {})

    def _route_of(self, scope: Scope) -> BaseRoute | None:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = self._route_of(scope)
        endpoint = getattr(route, "endpoint", None)
        if endpoint in self.streamed:
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(endpoint, self.max_body_bytes) if endpoint else self.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            if route is not None:
                scope["route"] = route  # the metrics label, as the router would have set it
            await request_too_large_response(limit)(scope, receive, send)
            return
        received = 0

        async def receive_counted() -> Message:
            nonlocal received
            if received > limit:  # the app asks again after the refusal
                raise RequestTooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise RequestTooLarge(limit)
            return message

        await self.app(scope, receive_counted, send)
