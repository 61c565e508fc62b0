"""``GET /admin/events/{id}/report`` (JSON) and ``GET /admin/events/{id}/report.csv`` (a spreadsheet
file): one event's report per local day of the event and in total (issue 23, the venue's day;
:func:`shared.repositories.event_report.event_report`). Behind the admin token, as every ``/admin`` route
(:func:`ingest.api.admin_leads.admin_required`): 403 ``admin_disabled``, 401 ``unauthorized``; an unknown
event is 404 ``unknown_event``."""

from __future__ import annotations

import csv
import io
from typing import Any

from fastapi import APIRouter, Depends, Response

from ingest.api.admin_leads import admin_required
from ingest.api.errors import ApiError
from ingest.context import Ctx
from shared.events import Event
from shared.repositories.event_report import EventReportRow, event_report

router = APIRouter(dependencies=[Depends(admin_required)])

#: The CSV's columns before the failure columns (``failures_<error class>``, one per class seen).
CSV_COLUMNS = ("day", "sessions", "photos", "packs_delivered", "failures", "cost_usd", "leads")


async def _report(ctx: Ctx, event_id: str) -> tuple[Event, list[EventReportRow]]:
    async with ctx.db.transaction() as repos:
        event = await repos.events.get(event_id)
        if event is None:
            raise ApiError(404, "unknown_event", f"There is no event {event_id!r}.")
        return event, await event_report(repos.conn, event)


def _class(name: str | None) -> str:
    return name or "unclassified"


def _json_row(row: EventReportRow) -> dict[str, Any]:
    return {
        "day": row.day.isoformat() if row.day else "total",
        "sessions": row.sessions,
        "photos": row.photos,
        "packs_delivered": row.packs_delivered,
        "failures": sum(row.failures.values()),
        "failures_by_class": {
            _class(k): v for k, v in sorted(row.failures.items(), key=lambda kv: _class(kv[0]))
        },
        "cost_usd": round(row.cost_usd, 4),
        "leads": row.leads,
    }


@router.get("/admin/events/{event_id}/report")
async def event_report_json(ctx: Ctx, event_id: str) -> dict[str, Any]:
    """``{"event": {"id", "name", "time_zone", "daily_budget_usd", "total_budget_usd"}, "days": [row...],
    "total": row}``; a row: ``day`` (local ISO date, or ``total``), ``sessions``, ``photos``,
    ``packs_delivered``, ``failures``, ``failures_by_class`` (error class → count), ``cost_usd`` (USD),
    ``leads``. Errors: 404 ``unknown_event``."""
    event, rows = await _report(ctx, event_id)
    return {
        "event": {
            "id": event.id,
            "name": event.name,
            "time_zone": event.time_zone,
            "daily_budget_usd": event.daily_budget_usd,
            "total_budget_usd": event.total_budget_usd,
        },
        "days": [_json_row(r) for r in rows[:-1]],
        "total": _json_row(rows[-1]),
    }


@router.get("/admin/events/{event_id}/report.csv")
async def event_report_csv(ctx: Ctx, event_id: str) -> Response:
    """The report as CSV (UTF-8): a header, one line per local day, then the ``total`` line; the columns
    of :data:`CSV_COLUMNS` and a ``failures_<error class>`` column per class that occurred. Errors: 404
    ``unknown_event``."""
    event, rows = await _report(ctx, event_id)
    classes = sorted({_class(k) for r in rows for k in r.failures})
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*CSV_COLUMNS, *(f"failures_{c}" for c in classes)])
    for r in rows:
        j = _json_row(r)
        by_class = j["failures_by_class"]
        writer.writerow([*(j[c] for c in CSV_COLUMNS), *(by_class.get(c, 0) for c in classes)])
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{event.id}-report.csv"'},
    )
