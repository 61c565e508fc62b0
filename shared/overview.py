"""The evening at a venue in one set of figures (issue 13 items 2 and 3): what the admin page's overview
row (``GET /admin/overview``) and the bot's ``/status`` show, gathered once here so both agree.

- guests served, time to link p50/p95: the links sent in the last hour (``jobs.link_sent_at``), timed from
  the guest's accepted upload (the job's first event; an admin retry or a requeue does not restart it,
  :func:`shared.repositories.jobs.accepted_at_sql`), as delivery's ``photo_to_link`` histogram;
- failures by class: today (UTC), failed jobs by ``error_class`` (``no_face`` apart);
- refused at the booth: the last hour, the kiosk's refused photo uploads by code (``photo_refusals``);
- spend against ``DAILY_BUDGET_USD``: today (UTC, the budget's day), ``api_usage.cost_usd``;
- image requests against ``IMAGE_RPD_LIMIT``: today in Pacific time (the quota's day), image calls;
- provider health: the last :data:`PROVIDER_WINDOW` (15 min), ``api_usage.outcome`` per provider;
- jobs by status (queue depth = ``queued``, running = ``processing``): now, ``jobs.status``;
- stream lag, pending, oldest pending, dead letters: now, Redis ``XINFO GROUPS``, ``XPENDING``,
  ``XLEN <stream>:dead`` (:func:`shared.streams.stream_health`);
- the pause and its source: now, :func:`shared.maintenance.current_pause`.
- the events of today (issue 23, the venue's day): each event whose local day met its run so far (running,
  or ended earlier that local day; the default event always), with its sessions, packs delivered,
  failures, cost and leads since its local midnight against its budgets (``events``).

Redis down is a figure too (``streams_error``), never an error: the rest comes from Postgres.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis

from shared import maintenance
from shared.days import pacific_day_start, utc_day_start
from shared.domain import JobStatus
from shared.errors import RedisUnavailable
from shared.events import Event
from shared.maintenance import Pause
from shared.repositories import Database
from shared.repositories.overview import EventDay, LinkTimes, ProviderHealth
from shared.settings import BudgetSettings
from shared.streams import StreamHealth, consumed_streams, stream_health

__all__ = ["PROVIDER_WINDOW", "Overview", "gather_overview"]

#: How far back provider health looks: long enough to hold a few jobs' calls at a quiet moment (a job
#: makes 5–20 calls), short enough that a provider that recovered looks healthy again within minutes.
PROVIDER_WINDOW = timedelta(minutes=15)
SERVED_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Overview:
    """The figures at ``at`` (UTC); see the module's table for each one's window and source."""

    at: datetime
    guests_last_hour: int
    link_times: LinkTimes
    failures_today: dict[str, int]
    refused_last_hour: dict[str, int]
    spend_today_usd: float
    daily_budget_usd: float | None
    image_requests_today: dict[str, int]
    image_rpd_limit: int
    providers: list[ProviderHealth]
    jobs: dict[str, int]
    streams: list[StreamHealth] | None
    streams_error: str | None
    pause: Pause | None
    #: the events of "today": each whose local day holding ``at`` met its run (running at ``at``, or ended
    #: earlier that local day: :meth:`shared.events.Event.ran_today`; the default event always), each
    #: with its figures since its local midnight: (event, its day's start in UTC, :class:`EventDay`, its
    #: daily budget in USD or ``None``)
    events: list[tuple[Event, datetime, EventDay, float | None]] = field(default_factory=list)

    @property
    def queued(self) -> int:
        return self.jobs.get(JobStatus.QUEUED.value, 0)

    @property
    def running(self) -> int:
        return self.jobs.get(JobStatus.PROCESSING.value, 0)

    @property
    def failed_today(self) -> int:
        return sum(self.failures_today.values())

    def to_json(self) -> dict[str, Any]:
        """The JSON of ``GET /admin/overview`` (durations in s, money in USD, times ISO 8601 UTC)."""
        return {
            "at": self.at.isoformat(),
            "guests_last_hour": self.guests_last_hour,
            "time_to_link": {
                "count": self.link_times.count,
                "p50_s": self.link_times.p50_s,
                "p95_s": self.link_times.p95_s,
            },
            "failures_today": dict(sorted(self.failures_today.items(), key=lambda kv: (-kv[1], kv[0]))),
            "refused_last_hour": {
                "by_code": self.refused_last_hour,
                "total": sum(self.refused_last_hour.values()),
            },
            "spend_today": {"usd": round(self.spend_today_usd, 4), "budget_usd": self.daily_budget_usd},
            "image_requests_today": {"by_provider": self.image_requests_today, "limit": self.image_rpd_limit},
            "providers": {
                "window_min": int(PROVIDER_WINDOW.total_seconds() // 60),
                "by_provider": [
                    {
                        "provider": p.provider,
                        "calls": p.calls,
                        "ok": p.ok,
                        "error_share": round(p.error_share, 4),
                        "errors": p.errors,
                        "last_error": p.last_error,
                    }
                    for p in self.providers
                ],
            },
            "jobs": {"by_status": self.jobs, "queued": self.queued, "running": self.running},
            "streams": None
            if self.streams is None
            else [
                {
                    "stream": s.stream,
                    "length": s.length,
                    "dead_letters": s.dead_letters,
                    "groups": [
                        {
                            "group": g.group,
                            "lag": g.lag,
                            "pending": g.pending,
                            "oldest_pending_s": None
                            if g.oldest_pending_s is None
                            else round(g.oldest_pending_s, 1),
                        }
                        for g in s.groups
                    ],
                }
                for s in self.streams
            ],
            "streams_error": self.streams_error,
            "pause": self.pause.to_json() if self.pause else None,
            "events": [
                {
                    "id": event.id,
                    "name": event.name,
                    "time_zone": event.time_zone,
                    "day_start": day_start.isoformat(),
                    "running": event.runs_at(self.at),
                    "starts_at": event.starts_at.isoformat() if event.starts_at else None,
                    "ends_at": event.ends_at.isoformat() if event.ends_at else None,
                    "today": {
                        "sessions": today.sessions,
                        "packs_delivered": today.packs_delivered,
                        "failures": sum(today.failures.values()),
                        "failures_by_class": dict(sorted(today.failures.items())),
                        "cost_usd": round(today.cost_usd, 4),
                        "leads": today.leads,
                    },
                    "budget": {"daily_usd": daily, "total_usd": event.total_budget_usd},
                }
                for event, day_start, today, daily in self.events
            ],
        }


async def gather_overview(
    db: Database,
    redis: aioredis.Redis | None,
    *,
    budget: BudgetSettings,
    env_maintenance: bool,
    now: datetime | None = None,
) -> Overview:
    """Read every figure at ``now`` (default: the clock) in one Postgres transaction, then Redis.

    Args:
        redis: the client for stream health; ``None`` leaves the streams out (``streams_error`` says so).
        budget: ``DAILY_BUDGET_USD`` and ``IMAGE_RPD_LIMIT`` (the worker's limits).
        env_maintenance: ``MAINTENANCE_MODE`` of the calling service (the ``env`` pause source).

    Raises:
        DatabaseUnavailable: Postgres could not be reached.
    """
    at = now or datetime.now(UTC)
    day = utc_day_start(at)
    async with db.transaction() as repos:
        guests = await repos.overview.guests_served_since(at - SERVED_WINDOW)
        link_times = await repos.overview.link_times_since(at - SERVED_WINDOW)
        failures = await repos.overview.failures_since(day)
        refused = await repos.refusals.by_code_since(at - SERVED_WINDOW)
        spend = await repos.usage.spend_since(day)
        images = await repos.overview.image_requests_since(pacific_day_start(at))
        providers = await repos.overview.provider_health_since(at - PROVIDER_WINDOW)
        counts = await repos.jobs.count_by_status()
        pause = await maintenance.current_pause(repos, env_on=env_maintenance)
        events = []
        for event in await repos.events.all():
            if not (event.is_default or event.ran_today(at)):
                continue
            start = event.day_start(at)
            today = await repos.overview.event_day_since(event.id, start)
            events.append((event, start, today, event.daily_budget(budget.daily_budget_usd)))
    streams: list[StreamHealth] | None = None
    streams_error = "not checked" if redis is None else None
    if redis is not None:
        try:
            streams = await stream_health(redis, consumed_streams(), now_ms=int(at.timestamp() * 1000))
        except RedisUnavailable as exc:
            streams_error = str(exc)[:200]
    return Overview(
        at=at,
        guests_last_hour=guests,
        link_times=link_times,
        failures_today=failures,
        refused_last_hour=refused,
        spend_today_usd=spend,
        daily_budget_usd=budget.daily_budget_usd,
        image_requests_today=images,
        image_rpd_limit=budget.image_rpd_limit,
        providers=providers,
        jobs={JobStatus(k).value: v for k, v in counts.items()},
        streams=streams,
        streams_error=streams_error,
        pause=pause,
        events=events,
    )
