"""The ops HTTP endpoint of the non-HTTP services: ``/healthz``, ``/readyz``, ``/metrics`` on ``OPS_PORT``.

``/healthz`` answers while the process's loops run (liveness); ``/readyz`` also checks Postgres and Redis
(readiness). Port 0 disables the server (tests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from shared.metrics import exposition

ReadyCheck = Callable[[], Awaitable[None]]


async def start_ops_server(
    port: int, *, ready: ReadyCheck, alive: Callable[[], bool]
) -> web.AppRunner | None:
    """Serve the ops endpoints on ``0.0.0.0:port``; returns the runner to clean up, or ``None`` for port 0.

    Args:
        ready: awaited by ``/readyz``; raising means "not ready" (503).
        alive: ``/healthz`` answers 503 when it returns False (a loop died).
    """
    if not port:
        return None

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"ok": alive()}, status=200 if alive() else 503)

    async def readyz(_request: web.Request) -> web.Response:
        try:
            await ready()
        except Exception as exc:
            return web.json_response({"ok": False, "error": type(exc).__name__}, status=503)
        return web.json_response({"ok": True})

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    return runner
