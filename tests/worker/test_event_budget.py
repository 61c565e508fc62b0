"""Budgets per event on real Postgres (issue 23, the venue's day): each event's daily budget resets at
its own local midnight, its total budget counts since its start, one event's spend never counts against
another's, and the default event with no budget of its own keeps ``DAILY_BUDGET_USD`` per UTC day."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import pytest
import sqlalchemy as sa

from shared.db.tables import api_usage, sessions
from shared.errors import ErrorClass, ProviderUnavailable
from shared.events import DEFAULT_EVENT, Event
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from worker.cost import CostLedger, DbUsageStore

pytestmark = pytest.mark.integration

LA = Event(id="la", name="LA party", time_zone="America/Los_Angeles", daily_budget_usd=2.0)
TOKYO = Event(id="tokyo", name="Tokyo fair", time_zone="Asia/Tokyo", daily_budget_usd=3.0)


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


async def a_job_of(db: Database, event_id: str) -> tuple[UUID, datetime]:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station=f"st-{event_id}", token=f"tok-{event_id}")
        await repos.conn.execute(
            sa.update(sessions).where(sessions.c.id == session.id).values(event_id=event_id)
        )
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
    return job.id, job.created_at


def call(cost: float) -> ApiCall:
    return ApiCall("gemini", "gemini-3.1-flash-image", "sheet", "image", "ok", cost_usd=cost, latency_s=0.5)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def spend(db: Database, ledger: CostLedger, cost: float, at: datetime) -> None:
    """Record a call through the ledger, as if it happened at ``at``."""
    await ledger.record(call(cost))
    async with db.transaction() as repos:
        latest = sa.select(sa.func.max(api_usage.c.id)).scalar_subquery()
        await repos.conn.execute(sa.update(api_usage).where(api_usage.c.id == latest).values(created_at=at))


async def allowed(ledger: CostLedger) -> bool:
    try:
        await ledger.check_before_call("gemini")
    except ProviderUnavailable as exc:
        assert exc.error_class is ErrorClass.BUDGET
        return False
    return True


async def test_each_event_budget_resets_at_its_own_local_midnight(db: Database) -> None:
    async with db.transaction() as repos:
        await repos.events.save(LA)
        await repos.events.save(TOKYO)
    store = DbUsageStore(db)
    clock = Clock(utc(10, 8))  # LA: 01:00 on 10 March (PDT); Tokyo: 17:00 on 10 March
    la_job, la_created = await a_job_of(db, "la")
    tokyo_job, tokyo_created = await a_job_of(db, "tokyo")
    la = CostLedger(store, job_id=la_job, created_at=la_created, max_cost_usd=99, event=LA, clock=clock)
    tokyo = CostLedger(
        store, job_id=tokyo_job, created_at=tokyo_created, max_cost_usd=99, event=TOKYO, clock=clock
    )

    await spend(db, la, 2.0, utc(10, 8))
    assert not await allowed(la)
    assert await allowed(tokyo)  # LA's spend is not Tokyo's
    clock.now = utc(10, 10)
    await spend(db, tokyo, 3.0, utc(10, 10))
    assert not await allowed(tokyo)
    assert not await allowed(la)

    clock.now = utc(10, 14, 59)  # a minute before Tokyo's midnight (15:00 UTC)
    assert not await allowed(tokyo)
    clock.now = utc(10, 15)  # Tokyo: 00:00 on 11 March
    assert await allowed(tokyo)
    assert not await allowed(la)  # LA: 08:00 on 10 March, still the same day

    clock.now = utc(11, 6, 59)  # LA: 23:59 on 10 March
    assert not await allowed(la)
    clock.now = utc(11, 7)  # LA: 00:00 on 11 March
    assert await allowed(la)

    async with db.transaction() as repos:
        by_event = dict(
            (
                await repos.conn.execute(
                    sa.select(api_usage.c.event_id, sa.func.sum(api_usage.c.cost_usd)).group_by(
                        api_usage.c.event_id
                    )
                )
            ).all()
        )
    assert {k: float(v) for k, v in by_event.items()} == {"la": 2.0, "tokyo": 3.0}


async def test_a_call_without_an_event_counts_towards_its_jobs_session_event(db: Database) -> None:
    async with db.transaction() as repos:
        await repos.events.save(TOKYO)
    job_id, _ = await a_job_of(db, "tokyo")
    store = DbUsageStore(db)
    await store.record(
        ApiCall("gemini", "m", "sheet", "image", "ok", cost_usd=1.0, latency_s=0, job_id=job_id)
    )
    await store.record(call(0.5))  # outside a job: the default event
    assert await store.event_spend_since("tokyo", None) == 1.0
    assert await store.event_spend_since(DEFAULT_EVENT, None) == 0.5


async def test_the_total_budget_counts_since_the_events_start(db: Database) -> None:
    fair = Event(id="fair", name="Fair", time_zone="Asia/Tokyo", starts_at=utc(9, 0), total_budget_usd=4.0)
    async with db.transaction() as repos:
        await repos.events.save(fair)
    job_id, created = await a_job_of(db, "fair")
    clock = Clock(utc(9, 1))
    ledger = CostLedger(
        DbUsageStore(db), job_id=job_id, created_at=created, max_cost_usd=99, event=fair, clock=clock
    )
    await spend(db, ledger, 1.0, utc(8, 23))  # before the start: not counted
    await spend(db, ledger, 3.0, utc(9, 1))
    assert await allowed(ledger)
    clock.now = utc(12, 0)  # days later: no daily budget, the total still holds
    await spend(db, ledger, 1.0, utc(12, 0))
    with pytest.raises(ProviderUnavailable, match="event budget reached") as raised:
        await ledger.check_before_call("gemini")
    assert raised.value.error_class is ErrorClass.BUDGET
    await ledger.check_before_call("local")  # the offline renderer costs nothing


async def test_the_default_event_keeps_daily_budget_usd_per_utc_day(db: Database) -> None:
    async with db.transaction() as repos:
        default = await repos.events.get(DEFAULT_EVENT)
    assert default is not None and default.daily_budget_usd is None and default.time_zone == "UTC"
    job_id, created = await a_job_of(db, DEFAULT_EVENT)
    clock = Clock(utc(10, 12))
    ledger = CostLedger(
        DbUsageStore(db),
        job_id=job_id,
        created_at=created,
        max_cost_usd=99,
        daily_budget_usd=2.0,
        event=default,
        clock=clock,
    )
    await spend(db, ledger, 2.0, utc(10, 12))
    with pytest.raises(ProviderUnavailable, match="daily budget reached"):
        await ledger.check_before_call("gemini")
    clock.now = utc(10, 23, 59)
    assert not await allowed(ledger)
    clock.now = utc(11, 0)
    assert await allowed(ledger)
    # with no DAILY_BUDGET_USD the default event has no daily budget at all
    unlimited = CostLedger(
        DbUsageStore(db), job_id=job_id, created_at=created, max_cost_usd=99, event=default
    )
    clock.now = utc(10, 12)
    assert await allowed(unlimited)
