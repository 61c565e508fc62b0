"""``/healthz`` (process alive), ``/readyz`` (Postgres reachable), ``/metrics`` (Prometheus)."""

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
async def metrics() -> Response:
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)
