"""``GET /admin/preflight``: the last full preflight report (:mod:`shared.preflight`), for the admin page's
Preflight tile: ``{"report": {"at", "source", "ok", "results": [{"name", "status", "detail", "fix"}]}
| null, "age_s": seconds since it ran | null}``. Behind the admin token like every ``/admin`` route."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ingest.api.admin_leads import admin_required
from ingest.context import Ctx
from shared.preflight.reports import stored_report

router = APIRouter(dependencies=[Depends(admin_required)])


@router.get("/admin/preflight")
async def last_preflight(ctx: Ctx) -> dict[str, Any]:
    """The last stored report and its age, or nulls when no preflight ran against this database yet."""
    report = await stored_report(ctx.db)
    if report is None:
        return {"report": None, "age_s": None}
    return {"report": report.to_json(), "age_s": round(report.age_s(), 1)}
