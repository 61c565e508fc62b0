"""``/healthz`` (process alive), ``/readyz`` (Postgres reachable), ``/metrics`` (Prometheus), and the API's
OpenAPI document for admins only (``GET /admin/openapi.json`` with the admin token): ``/docs``,
``/redoc`` and ``/openapi.json`` are off, as this port is the one the kiosks and the venue network reach.

With ``OPS_PORT`` set, ``/metrics`` is served on that port only (:func:`shared.ops.start_ops_server`,
with ``/healthz`` and ``/readyz``) and answers 404 here: this port is the one the venue's ingress
publishes, and the job, lead and spend counters are nobody's business outside the cluster. Without it
(``make up``, Compose) ``/metrics`` is here, as Prometheus there expects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ingest.api.admin_leads import admin_required
from ingest.api.errors import ApiError
from ingest.context import Ctx
from shared.metrics import exposition

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, bool]:
    return {"ok": True}


@router.get("/readyz")
async def readyz(ctx: Ctx) -> dict[str, bool]:
    try:
        await ctx.db.ping()
    except Exception as exc:
        raise ApiError(503, "database_unavailable", type(exc).__name__) from exc
    return {"ok": True}


@router.get("/metrics")
async def metrics(ctx: Ctx) -> Response:
    if ctx.settings.metrics_port:
        raise ApiError(404, "not_found", "Not Found")
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)


@router.get("/admin/openapi.json", dependencies=[Depends(admin_required)], include_in_schema=False)
async def openapi_document(request: Request) -> dict[str, Any]:
    """The OpenAPI document of every route, behind the admin token."""
    document: dict[str, Any] = request.app.openapi()
    return document
