"""The evening's figures from Postgres for the operators (issue 13 items 2 and 3): the admin page's overview
row and the bot's ``/status`` read them here, so both show the same numbers.

Every method takes its window start (``since``) from the caller (:mod:`shared.overview` picks the last
hour, the UTC day, the Pacific-time day), so the figures are testable at any clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import api_usage, jobs, leads, sessions
from shared.domain import JobStatus
from shared.errors import ErrorClass
from shared.repositories.jobs import accepted_at_sql

__all__ = ["LinkTimes", "OverviewRepository", "ProviderHealth", "failure_label"]

#: ``jobs.error`` of a ``permanent`` failure whose photo had no face (``NoFaceError``, cartoon/sheets.py
#: "no face found in the selfie"): shown as its own class, since it asks the guest for another selfie.
_NO_FACE = "%no face%"


def failure_label(error_class: str | None, error: str | None) -> str:
    """The class an operator sees for a failed job: its ``error_class``, except ``no_face`` for a
    ``permanent`` failure whose photo had no face (the same rule as the SQL of :meth:`failures_since`)."""
    if error_class == ErrorClass.PERMANENT and error and "no face" in error.lower():
        return "no_face"
    return error_class or "unknown"


def _label_sql() -> sa.ColumnElement[str]:
    return sa.case(
        (
            sa.and_(jobs.c.error_class == str(ErrorClass.PERMANENT), jobs.c.error.ilike(_NO_FACE)),
            sa.literal("no_face"),
        ),
        else_=sa.func.coalesce(jobs.c.error_class, "unknown"),
    )


@dataclass(frozen=True, slots=True)
class LinkTimes:
    """Photo-to-link time of the jobs whose link went out in a window (s; ``None`` when there were none):
    ``jobs.link_sent_at`` minus the guest's accepted upload (:func:`shared.repositories.jobs.accepted_at_sql`:
    the job's first event, not ``created_at``, which an admin retry resets), so a retried or requeued
    job counts the guest's whole wait. Delivery's ``stk_stage_seconds{stage="photo_to_link"}`` measures
    the same interval."""

    count: int
    p50_s: float | None
    p95_s: float | None


@dataclass(frozen=True, slots=True)
class ProviderHealth:
    """One provider's calls in a window: ``calls`` in all, ``ok`` of them, and the failed ones by
    outcome (the error class of DESIGN.md §5); ``error_share`` is ``(calls − ok) / calls``."""

    provider: str
    calls: int
    ok: int
    errors: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None

    @property
    def error_share(self) -> float:
        return (self.calls - self.ok) / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class EventDay:
    """One event's figures since a moment (its local midnight): ``sessions`` (kiosk sessions begun),
    ``packs_delivered`` (links sent), ``failures`` (:func:`failure_label` → jobs failed and still failed),
    ``cost_usd`` (USD of the calls counted towards it), ``leads`` (leads that named it)."""

    sessions: int = 0
    packs_delivered: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    leads: int = 0


class OverviewRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def guests_served_since(self, since: datetime) -> int:
        """Guests (distinct Telegram users; a session without one counts once) whose link went out at or
        after ``since``."""
        guest = sa.func.coalesce(sa.cast(sessions.c.tg_user_id, sa.Text), sa.cast(sessions.c.id, sa.Text))
        count = await self.conn.scalar(
            sa.select(sa.func.count(sa.distinct(guest)))
            .select_from(jobs.join(sessions, sessions.c.id == jobs.c.session_id))
            .where(jobs.c.link_sent_at >= since)
        )
        return int(count or 0)

    async def link_times_since(self, since: datetime) -> LinkTimes:
        """p50 and p95 (continuous percentiles, Postgres ``percentile_cont``) of the photo-to-link time of
        the links sent at or after ``since``, from each job's accepted upload (:class:`LinkTimes`)."""
        seconds = sa.func.extract("epoch", jobs.c.link_sent_at - accepted_at_sql())
        row = (
            await self.conn.execute(
                sa.select(
                    sa.func.count(),
                    sa.func.percentile_cont(0.5).within_group(seconds),
                    sa.func.percentile_cont(0.95).within_group(seconds),
                ).where(jobs.c.link_sent_at >= since)
            )
        ).one()
        count, p50, p95 = int(row[0] or 0), row[1], row[2]
        return LinkTimes(count, None if p50 is None else float(p50), None if p95 is None else float(p95))

    async def failures_since(self, since: datetime) -> dict[str, int]:
        """Jobs failed at or after ``since`` and still failed, by :func:`failure_label` (a retried job
        that failed again counts once)."""
        label = _label_sql()
        rows = await self.conn.execute(
            sa.select(label, sa.func.count())
            .where(jobs.c.status == JobStatus.FAILED.value, jobs.c.updated_at >= since)
            .group_by(label)
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def image_requests_since(self, since: datetime) -> dict[str, int]:
        """Image requests per provider since ``since``, whatever their outcome (a requests-per-day quota
        counts them all); the offline ``local`` provider has no quota and is left out."""
        rows = await self.conn.execute(
            sa.select(api_usage.c.provider, sa.func.count())
            .where(
                api_usage.c.call_type == "image",
                api_usage.c.provider != "local",
                api_usage.c.created_at >= since,
            )
            .group_by(api_usage.c.provider)
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def provider_health_since(self, since: datetime) -> list[ProviderHealth]:
        """Every provider called since ``since``: its calls, the ``ok`` ones, the rest by outcome, and the
        newest error text (redacted when it was recorded), by provider name."""
        rows = await self.conn.execute(
            sa.select(api_usage.c.provider, api_usage.c.outcome, sa.func.count())
            .where(api_usage.c.created_at >= since)
            .group_by(api_usage.c.provider, api_usage.c.outcome)
        )
        calls: dict[str, dict[str, int]] = {}
        for provider, outcome, count in rows:
            calls.setdefault(str(provider), {})[str(outcome)] = int(count)
        newest_failure = (
            sa.select(sa.func.max(api_usage.c.id))
            .where(api_usage.c.created_at >= since, api_usage.c.outcome != "ok")
            .group_by(api_usage.c.provider)
        )
        last_errors = await self.conn.execute(
            sa.select(api_usage.c.provider, api_usage.c.error).where(api_usage.c.id.in_(newest_failure))
        )
        last = {str(r[0]): r[1] for r in last_errors}
        return [
            ProviderHealth(
                provider=name,
                calls=sum(outcomes.values()),
                ok=outcomes.get("ok", 0),
                errors={k: v for k, v in sorted(outcomes.items()) if k != "ok"},
                last_error=last.get(name),
            )
            for name, outcomes in sorted(calls.items())
        ]

    async def event_day_since(self, event_id: str, since: datetime) -> EventDay:
        """Event ``event_id``'s figures since ``since`` (:class:`EventDay`): only its guests
        (``sessions.event_id``), its calls (``api_usage.event_id``) and its leads (``leads.event_id``)."""
        begun = await self.conn.scalar(
            sa.select(sa.func.count())
            .select_from(sessions)
            .where(sessions.c.event_id == event_id, sessions.c.created_at >= since)
        )
        of_event = jobs.join(sessions, sessions.c.id == jobs.c.session_id)
        delivered = await self.conn.scalar(
            sa.select(sa.func.count())
            .select_from(of_event)
            .where(sessions.c.event_id == event_id, jobs.c.link_sent_at >= since)
        )
        label = _label_sql()
        failures = await self.conn.execute(
            sa.select(label, sa.func.count())
            .select_from(of_event)
            .where(
                sessions.c.event_id == event_id,
                jobs.c.status == JobStatus.FAILED.value,
                jobs.c.updated_at >= since,
            )
            .group_by(label)
        )
        cost = await self.conn.scalar(
            sa.select(sa.func.coalesce(sa.func.sum(api_usage.c.cost_usd), 0)).where(
                api_usage.c.event_id == event_id, api_usage.c.created_at >= since
            )
        )
        lead_count = await self.conn.scalar(
            sa.select(sa.func.count())
            .select_from(leads)
            .where(leads.c.event_id == event_id, leads.c.created_at >= since)
        )
        return EventDay(
            sessions=int(begun or 0),
            packs_delivered=int(delivered or 0),
            failures={str(r[0]): int(r[1]) for r in failures},
            cost_usd=float(cost or 0),
            leads=int(lead_count or 0),
        )
