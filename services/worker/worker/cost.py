"""What a job spends: every provider call recorded as it happens, the job's cost ceiling checked before
every call, the optional daily budget, and the image-requests-per-day warning (spec/002 "Cost ceiling";
DESIGN.md §5 ``job_cost`` and ``budget``).

The ceiling adds what earlier attempts of the job spent (``api_usage`` since ``jobs.created_at``: an admin
retry resets it, so a retried job gets a fresh ceiling) to the calls of this attempt. Calls already in
flight are not cancelled, so the real spend can pass the ceiling by the cost of those calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar
from uuid import UUID

import structlog

from shared import metrics
from shared.days import pacific_day_start
from shared.errors import ErrorClass, JobCostExceeded, ProviderUnavailable
from shared.events import DEFAULT_EVENT, Event
from shared.repositories import Database, Repositories
from shared.repositories.usage import ApiCall
from worker.store_outage import DEFAULT_PATIENCE_S, patiently

__all__ = [
    "Alerter",
    "CostLedger",
    "DbUsageStore",
    "MemoryUsageStore",
    "UsageStore",
    "pacific_day_start",
    "warn_image_rpd",
]

log = structlog.get_logger(__name__)
T = TypeVar("T")

#: ``(key, text, cooldown)`` → whether an admin alert was queued (:func:`shared.alerts.send_alert`).
Alerter = Callable[[str, str, timedelta], Awaitable[bool]]


class UsageStore(Protocol):
    """Where provider calls are kept: ``api_usage`` in Postgres, or memory (CLI, tests)."""

    async def record(self, call: ApiCall) -> None:
        """Keep one call."""
        ...

    async def job_spend(self, job_id: UUID, *, since: datetime) -> float:
        """USD of the job's calls since ``since``."""
        ...

    async def spend_since(self, since: datetime) -> float:
        """USD of every call since ``since``."""
        ...

    async def event_spend_since(self, event_id: str, since: datetime | None) -> float:
        """USD of the calls counted towards event ``event_id`` since ``since`` (``None``: ever)."""
        ...

    async def image_requests_since(self, provider: str, since: datetime) -> int:
        """Image requests to ``provider`` since ``since``."""
        ...

    async def content_refusals(self, job_id: UUID) -> set[str]:
        """Providers that refused an image request of the job as ``content``, in any attempt."""
        ...


def _refusers(calls: Sequence[ApiCall]) -> set[str]:
    return {c.provider for c in calls if c.call_type == "image" and c.outcome == str(ErrorClass.CONTENT)}


class DbUsageStore:
    """``api_usage`` through :class:`shared.repositories.usage.UsageRepository`, one transaction per
    call (written as it happens, so a killed attempt's spend still counts). While Postgres is unavailable
    each read and write is tried again for up to ``patience_s`` (``STORE_WAIT_MAX_SEC``): a store outage
    holds the render, it does not fail it (:func:`worker.store_outage.patiently`)."""

    def __init__(self, db: Database, *, patience_s: float = DEFAULT_PATIENCE_S) -> None:
        self._db = db
        self._patience_s = patience_s

    async def _patiently(self, what: str, query: Callable[[Repositories], Awaitable[T]]) -> T:
        async def once() -> T:
            async with self._db.transaction() as repos:
                return await query(repos)

        return await patiently(once, patience_s=self._patience_s, what=what)

    async def record(self, call: ApiCall) -> None:
        await self._patiently("api_usage", lambda repos: repos.usage.record(call))

    async def job_spend(self, job_id: UUID, *, since: datetime) -> float:
        return await self._patiently("api_usage", lambda repos: repos.usage.job_spend(job_id, since=since))

    async def spend_since(self, since: datetime) -> float:
        return await self._patiently("api_usage", lambda repos: repos.usage.spend_since(since))

    async def event_spend_since(self, event_id: str, since: datetime | None) -> float:
        return await self._patiently(
            "api_usage", lambda repos: repos.usage.event_spend_since(event_id, since)
        )

    async def image_requests_since(self, provider: str, since: datetime) -> int:
        return await self._patiently(
            "api_usage", lambda repos: repos.usage.image_requests_since(provider, since)
        )

    async def content_refusals(self, job_id: UUID) -> set[str]:
        calls = await self._patiently("api_usage", lambda repos: repos.usage.for_job(job_id))
        return _refusers(calls)


class MemoryUsageStore:
    """Calls kept in a list, with the time they were recorded (``clock``: UTC now)."""

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.calls: list[tuple[datetime, ApiCall]] = []
        self._clock = clock

    async def record(self, call: ApiCall) -> None:
        self.calls.append((self._clock(), call))

    async def job_spend(self, job_id: UUID, *, since: datetime) -> float:
        return sum(c.cost_usd for at, c in self.calls if c.job_id == job_id and at >= since)

    async def spend_since(self, since: datetime) -> float:
        return sum(c.cost_usd for at, c in self.calls if at >= since)

    async def event_spend_since(self, event_id: str, since: datetime | None) -> float:
        return sum(
            c.cost_usd
            for at, c in self.calls
            if (c.event_id or DEFAULT_EVENT) == event_id and (since is None or at >= since)
        )

    async def image_requests_since(self, provider: str, since: datetime) -> int:
        return sum(
            1 for at, c in self.calls if c.provider == provider and c.call_type == "image" and at >= since
        )

    async def content_refusals(self, job_id: UUID) -> set[str]:
        return _refusers([c for _at, c in self.calls if c.job_id == job_id])


class CostLedger:
    """The spend of one job attempt, bound to its ``api_usage`` rows.

    Args:
        store: where calls are recorded.
        job_id: the job (``None`` outside a job: no ceiling history).
        created_at: the job's ``created_at`` (the ceiling counts from it).
        max_cost_usd: ``JOB_MAX_COST_USD``.
        daily_budget_usd: ``DAILY_BUDGET_USD`` or ``None``: the budget per UTC day of every call when
            ``event`` is ``None``, and the default event's per its local day when it has none of its own.
        event: the job's event (``None``: no event, as before events): its calls are recorded as its, and
            its ``daily_budget_usd`` (since its local midnight) and ``total_budget_usd`` (since its start,
            or ever) are checked before every call.
        clock: UTC now.
    """

    def __init__(
        self,
        store: UsageStore,
        *,
        job_id: UUID | None,
        created_at: datetime,
        max_cost_usd: float,
        daily_budget_usd: float | None = None,
        event: Event | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.event = event
        self.store = store
        self.job_id = job_id
        self.created_at = created_at
        self.max_cost_usd = max_cost_usd
        self.daily_budget_usd = daily_budget_usd
        self.clock = clock
        self.calls: list[ApiCall] = []
        self._earlier: float | None = None
        self._refused: set[str] | None = None
        self.content_trusted: set[str] = set()  # drew an image of the job since a refusal
        self._probes: dict[str, asyncio.Lock] = {}

    @property
    def attempt_spend(self) -> float:
        """USD of this attempt's recorded calls."""
        return sum(call.cost_usd for call in self.calls)

    async def spent(self) -> float:
        """USD the job spent: earlier attempts (read once) plus this attempt's calls."""
        if self._earlier is None:
            self._earlier = (
                await self.store.job_spend(self.job_id, since=self.created_at) if self.job_id else 0.0
            )
        return self._earlier + self.attempt_spend

    async def content_refusals(self) -> set[str]:
        """The providers that refused this job's selfie as content (earlier attempts read once from the
        store); the provider chain adds to the returned set as refusals happen, so every call of the job
        sees them at once."""
        if self._refused is None:
            self._refused = await self.store.content_refusals(self.job_id) if self.job_id else set()
        return self._refused

    def content_probe(self, provider: str) -> asyncio.Lock:
        """The lock that lets one call at a time find out whether ``provider`` accepts the job's selfie
        after another provider refused it (so parallel sheets that were refused send it to the fallback
        once, not once each); free again once it drew an image (``content_trusted``)."""
        return self._probes.setdefault(provider, asyncio.Lock())

    async def check_before_call(self, provider: str, *, estimate_usd: float = 0.0) -> None:
        """Refuse the next call when the job's ceiling or the day's budget is reached.

        ``estimate_usd`` is what the call is expected to cost (:mod:`worker.providers.prices`: the price
        table at the size asked); the ceiling refuses a call that would take the job past it. The daily
        budget is the real spend (``api_usage``) only.

        Raises:
            JobCostExceeded: the job spent ``JOB_MAX_COST_USD`` or more, or the call's estimate would take it
                past that (logged ``JOB_COST_LIMIT``).
            ProviderUnavailable: (``budget``) the day's spend reached the daily budget (the event's local
                day and its ``daily_budget_usd``, the default event's falling back to
                ``DAILY_BUDGET_USD``; with no event, the UTC day of every call), or the event's spend
                since its start reached its ``total_budget_usd``.
        """
        spent = await self.spent()
        if spent >= self.max_cost_usd or spent + estimate_usd > self.max_cost_usd:
            log.error(
                "JOB_COST_LIMIT",
                job_id=str(self.job_id),
                spent_usd=round(spent, 4),
                estimate_usd=round(estimate_usd, 4),
                limit=self.max_cost_usd,
            )
            raise JobCostExceeded(
                f"the job spent {spent:.2f} USD of {self.max_cost_usd:.2f}"
                + (f"; the next call (about {estimate_usd:.3f} USD) would pass it" if estimate_usd else "")
            )
        if provider == "local":
            return  # the offline renderer costs nothing
        if self.event is not None:
            await self._check_event_budgets(self.event)
        elif self.daily_budget_usd is not None:
            now = self.clock()
            day = await self.store.spend_since(datetime.combine(now.date(), datetime.min.time(), UTC))
            self._refuse_if_reached(day, self.daily_budget_usd, "daily budget")

    async def _check_event_budgets(self, event: Event) -> None:
        daily = event.daily_budget(self.daily_budget_usd)
        if daily is not None:
            day = await self.store.event_spend_since(event.id, event.day_start(self.clock()))
            self._refuse_if_reached(day, daily, "daily budget", event.id)
        if event.total_budget_usd is not None:
            total = await self.store.event_spend_since(event.id, event.starts_at)
            self._refuse_if_reached(total, event.total_budget_usd, "event budget", event.id)

    @staticmethod
    def _refuse_if_reached(spent: float, budget: float, what: str, event_id: str | None = None) -> None:
        if spent < budget:
            return
        log.error(
            "DAILY_BUDGET_REACHED" if what == "daily budget" else "EVENT_BUDGET_REACHED",
            spent_usd=round(spent, 4),
            budget=budget,
            event_id=event_id,
        )
        raise ProviderUnavailable(
            f"{what} reached: {spent:.2f} of {budget:.2f} USD" + (f" (event {event_id})" if event_id else ""),
            error_class=ErrorClass.BUDGET,
        )

    async def record(self, call: ApiCall) -> None:
        """Record one finished call (in ``api_usage`` and the metrics) as it happens."""
        call = dataclasses.replace(
            call, job_id=self.job_id, event_id=self.event.id if self.event else call.event_id
        )
        self.calls.append(call)
        await self.store.record(call)
        metrics.PROVIDER_CALLS.labels(provider=call.provider, model=call.model, outcome=call.outcome).inc()
        metrics.PROVIDER_LATENCY.labels(provider=call.provider, model=call.model).observe(call.latency_s)
        if call.cost_usd:
            metrics.PROVIDER_COST.labels(provider=call.provider, model=call.model).inc(call.cost_usd)


async def warn_image_rpd(
    store: UsageStore,
    alert: Alerter | None,
    *,
    providers: Sequence[str],
    limit: int,
    warn_frac: float,
    now: datetime,
) -> list[str]:
    """After a job: warn once per Pacific-time day per provider whose image requests today reached
    ``warn_frac`` of ``limit`` (``IMAGE_RPD_WARN_FRAC`` of ``IMAGE_RPD_LIMIT``). Returns the providers
    warned about now."""
    start = pacific_day_start(now)
    day = (start + timedelta(hours=12)).date().isoformat()
    warned = []
    for provider in providers:
        if provider == "local":
            continue
        count = await store.image_requests_since(provider, start)
        if count < warn_frac * limit:
            continue
        text = f"{provider}: {count} image requests today (Pacific time), {count / limit:.0%} of {limit}"
        log.warning("IMAGE_RPD_WARNING", provider=provider, count=count, limit=limit)
        if alert is not None and await alert(f"image_rpd:{provider}:{day}", text, timedelta(hours=24)):
            warned.append(provider)
    return warned
