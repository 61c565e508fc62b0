"""One event's report (issue 23, the venue's day): per local day of the event and in total, its sessions,
photos, packs delivered, failures by error class, provider cost (USD) and leads. Only that event's guests
count: ``sessions.event_id`` (and the jobs of those sessions), ``api_usage.event_id``, ``leads.event_id``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import api_usage, jobs, leads, sessions
from shared.domain import JobStatus
from shared.events import Event

__all__ = ["EventReportRow", "event_report"]


@dataclass(slots=True)
class EventReportRow:
    """One row of the report: a local day of the event (``day``) or the total (``day`` ``None``).

    Attributes:
        sessions: kiosk sessions started.
        photos: photos taken (jobs).
        packs_delivered: jobs ``delivered``.
        failures: error class (``None``: unclassified) → jobs ``failed`` with it.
        cost_usd: what the event's provider calls cost (USD).
        leads: landing leads that named the event.
    """

    day: date | None
    sessions: int = 0
    photos: int = 0
    packs_delivered: int = 0
    failures: dict[str | None, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    leads: int = 0


async def event_report(
    conn: AsyncConnection, event: Event, *, start: datetime | None = None, end: datetime | None = None
) -> list[EventReportRow]:
    """The report of ``event``: one row per local day (in ``event.time_zone``) that had anything, oldest
    first, then the total row (``day`` ``None``), always present. ``start``, ``end`` (aware; ``None``: open):
    only what was created in ``[start, end)`` counts (the digest's one local day)."""
    days: dict[date, EventReportRow] = {}

    def local_day(column: sa.ColumnElement[object]) -> sa.ColumnElement[date]:
        return sa.cast(sa.func.timezone(event.time_zone, column), sa.Date)

    def within(column: sa.ColumnElement[datetime]) -> sa.ColumnElement[bool]:
        return sa.and_(
            sa.true() if start is None else column >= start, sa.true() if end is None else column < end
        )

    def row(day: date) -> EventReportRow:
        return days.setdefault(day, EventReportRow(day))

    async def created_per_day(table: sa.Table) -> list[tuple[date, int]]:
        """``(local day, count)`` of the event's rows of ``table`` (by its ``event_id``) created in
        ``[start, end)``."""
        table_days = local_day(table.c.created_at).label("day")
        rows = await conn.execute(
            sa.select(table_days, sa.func.count())
            .where(table.c.event_id == event.id, within(table.c.created_at))
            .group_by(table_days)
        )
        return [(day, int(count)) for day, count in rows]

    for day, count in await created_per_day(sessions):
        row(day).sessions = count
    job_days = local_day(jobs.c.created_at).label("day")
    for day, status, error_class, count in await conn.execute(
        sa.select(job_days, jobs.c.status, jobs.c.error_class, sa.func.count())
        .select_from(jobs.join(sessions, sessions.c.id == jobs.c.session_id))
        .where(sessions.c.event_id == event.id, within(jobs.c.created_at))
        .group_by(job_days, jobs.c.status, jobs.c.error_class)
    ):
        r = row(day)
        r.photos += int(count)
        if status == JobStatus.DELIVERED:
            r.packs_delivered += int(count)
        elif status == JobStatus.FAILED:
            r.failures[error_class] = r.failures.get(error_class, 0) + int(count)
    usage_days = local_day(api_usage.c.created_at).label("day")
    for day, cost in await conn.execute(
        sa.select(usage_days, sa.func.sum(api_usage.c.cost_usd))
        .where(api_usage.c.event_id == event.id, within(api_usage.c.created_at))
        .group_by(usage_days)
    ):
        row(day).cost_usd = round(float(cost or 0), 6)
    for day, count in await created_per_day(leads):
        row(day).leads = count

    ordered = [days[d] for d in sorted(days)]
    total = EventReportRow(None)
    for r in ordered:
        total.sessions += r.sessions
        total.photos += r.photos
        total.packs_delivered += r.packs_delivered
        total.cost_usd = round(total.cost_usd + r.cost_usd, 6)
        total.leads += r.leads
        for cls, n in r.failures.items():
            total.failures[cls] = total.failures.get(cls, 0) + n
    return [*ordered, total]
