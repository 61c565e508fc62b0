"""``/healthz`` (process alive), ``/readyz`` (Postgres reachable), ``/metrics`` (Prometheus).

With ``OPS_PORT`` set, ``/metrics`` is served on that port only (:func:`shared.ops.start_ops_server`,
with ``/healthz`` and ``/readyz``) and answers 404 here: this port is the one the venue's ingress
publishes, and the job, lead and spend counters are nobody's business outside the cluster. Without it
(``make up``, Compose) ``/metrics`` is here, as Prometheus there expects."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

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
