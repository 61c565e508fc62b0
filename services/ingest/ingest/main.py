"""Composition root of the ingest service: ``python -m ingest``.

The only place clients are built; :func:`create_app` takes them as arguments so tests pass their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
import uvicorn
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from ingest.api import (
    admin_erasure,
    admin_event_report,
    admin_events,
    admin_jobs,
    admin_leads,
    admin_preflight,
    downloads,
    errors,
    kiosk,
    landing,
    leads,
    ops,
    pages,
)
from ingest.api.body_limit import BodyLimitMiddleware
from ingest.api.request_metrics import RequestMetricsMiddleware, count_500s_from_zero
from ingest.captures import CaptureChecks
from ingest.context import IngestContext
from ingest.malloc import fix_mmap_threshold
from ingest.photo_pool import PhotoChecker, container_cpus
from ingest.ratelimit import RateLimiter
from ingest.server import ConnectionGuard, guarded_protocol, quiet_accept_errors
from ingest.settings import IngestSettings
from shared.db import create_engine
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.outfits import load_catalog
from shared.repositories import Database
from shared.settings import settings_or_exit
from shared.streams import Publisher, create_redis

log = structlog.get_logger(__name__)


def create_app(
    settings: IngestSettings,
    *,
    db: Database | None = None,
    publisher: Publisher | None = None,
) -> FastAPI:
    """Build the FastAPI app. Clients not given are built from ``settings`` and closed on shutdown; the
    photo-check pool (:mod:`ingest.photo_pool`) is started with the app and closed on its shutdown (an app
    driven without its lifespan, as in tests, starts it on the first upload; close it with
    ``app.state.ctx.photos.close()``)."""
    own_db = db is None
    own_redis = publisher is None
    database = db or Database(create_engine(settings.database_url))
    pub = publisher or Publisher(create_redis(settings.redis_url), maxlen=settings.stream_maxlen)
    photos = PhotoChecker(
        workers=settings.photo_check_workers or container_cpus(),
        max_bytes=settings.max_upload_bytes,
        max_pixels=settings.max_upload_pixels,
        require_face=settings.require_face,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        log.info(
            "STARTUP",
            service="ingest",
            leads_enabled=settings.leads_enabled,
            maintenance_env=settings.maintenance_mode,
            photo_check_workers=photos.workers,
        )
        await photos.start()
        ops = await start_ops_server(settings.metrics_port, ready=database.ping, alive=lambda: True)
        try:
            yield
        finally:
            if ops is not None:
                await ops.cleanup()
            await photos.close()
            if own_redis:
                await pub.redis.aclose()
            if own_db:
                await database.dispose()

    # No /docs, /redoc, /openapi.json on the kiosks' port: the document is GET /admin/openapi.json
    # (ingest.api.ops), behind the admin token.
    app = FastAPI(
        title="Sticker Booth ingest", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.ctx = IngestContext(
        settings=settings,
        db=database,
        publisher=pub,
        catalog=load_catalog(),
        photos=photos,
        captures=CaptureChecks(photos, pub.redis, max_wait_s=settings.photo_check_max_wait_sec),
        lead_limiter=RateLimiter(
            pub.redis, limit=settings.leads_rate_limit, window_s=settings.leads_rate_window_sec
        ),
        session_limiter=RateLimiter(
            pub.redis,
            limit=settings.sessions_rate_limit,
            window_s=settings.sessions_rate_window_sec,
            prefix="stk:ratelimit:sessions:",
        ),
        photo_limiter=RateLimiter(
            pub.redis,
            limit=settings.photo_rate_limit,
            window_s=settings.photo_rate_window_sec,
            prefix="stk:ratelimit:photos:",
        ),
    )
    errors.install_error_handlers(app)
    routers = [
        ops.router,
        kiosk.router,
        admin_leads.router,
        admin_events.router,
        admin_jobs.router,
        admin_erasure.router,
        admin_preflight.router,
        admin_event_report.router,
        pages.router,
        downloads.router,
    ]
    if settings.leads_enabled:
        routers += [leads.router, landing.router]
    for router in routers:  # no prefixes: each route's path is its template in stk_http_requests_total
        app.include_router(router, responses=errors.ERROR_RESPONSES)
    routes = [*(route for router in routers for route in router.routes), *app.routes]
    count_500s_from_zero(routes)
    # Middleware added first sits innermost: CORS headers go on the body limit's 413 too.
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=settings.max_json_body_bytes,
        routes=routes,
        streamed={kiosk.upload_photo},
        larger={admin_events.put_outfit: admin_events.OUTFIT_BODY_MAX_BYTES},
    )
    if settings.leads_enabled and settings.leads_cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.leads_cors_origins),
            allow_methods=["POST"],
            allow_headers=["Content-Type"],
            max_age=600,
        )

    app.add_middleware(RequestMetricsMiddleware)  # outermost: counts the body limit's 413s too

    return app


def server_config(settings: IngestSettings, app: FastAPI) -> uvicorn.Config:
    """uvicorn's configuration: the guarded protocol (:mod:`ingest.server`: header, body and idle
    time-outs, a cap per client) and the proxies whose ``X-Forwarded-For`` is believed
    (``FORWARDED_ALLOW_IPS``; none by default)."""
    guard = ConnectionGuard(
        header_timeout_s=settings.http_header_timeout_sec,
        body_timeout_s=settings.http_body_timeout_sec,
        max_per_client=settings.http_max_connections_per_client,
        trusted=settings.forwarded_allow_ips,
    )
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(guard),
        timeout_keep_alive=settings.http_idle_timeout_sec,
        proxy_headers=bool(settings.forwarded_allow_ips.strip()),
        forwarded_allow_ips=settings.forwarded_allow_ips or "",
        log_config=None,
        access_log=False,
    )


def main() -> None:
    settings = settings_or_exit(IngestSettings, "ingest")
    configure_logging(service="ingest", level=settings.log_level, fmt=settings.log_format)
    fix_mmap_threshold()  # upload bodies go back to the OS after a burst (ingest.malloc)
    quiet_accept_errors()
    uvicorn.Server(server_config(settings, create_app(settings))).run()
