"""``stk_http_requests_total{route, status}``: every HTTP answer counted once, 500s included.

A pure ASGI middleware rather than ``@app.middleware("http")``: that one's ``call_next`` re-raises an
unhandled exception before the count, so 500s never reached the metric and a 5xx alert could not fire.
This one sits inside Starlette's ``ServerErrorMiddleware`` (which turns the exception into the 500 answer),
sees the status the app sent, and counts an exception as ``500`` before passing it on.

Labels: ``route`` is the route template (``/sessions/{session_id}/photo``, never the id) or ``unmatched``;
``status`` is the HTTP status as a string (``"500"``). Alert expressions match them, e.g.
``sum(rate(stk_http_requests_total{status=~"5.."}[5m]))`` (``StickerIngestServerErrors`` in
``monitoring/alerts.yml``); :func:`count_500s_from_zero` creates every route's ``"500"`` series at 0, so
that selector has series before the first failure (``make compose-check`` fails on a rule selector
without series).
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared import metrics

__all__ = ["RequestMetricsMiddleware", "count_500s_from_zero"]


def count_500s_from_zero(routes: list[BaseRoute]) -> None:
    """Create ``stk_http_requests_total{route, status="500"}`` at 0 for every route template in ``routes``
    (idempotent)."""
    for route in routes:
        if isinstance(route, Route):
            metrics.HTTP_REQUESTS.labels(route=route.path, status="500")


class RequestMetricsMiddleware:
    """Count each HTTP request by route template and answered status (module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # until the app starts an answer; an exception before that is a 500

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        except BaseException:
            status = 500
            raise
        finally:
            route = scope.get("route")
            metrics.HTTP_REQUESTS.labels(route=getattr(route, "path", "unmatched"), status=str(status)).inc()
