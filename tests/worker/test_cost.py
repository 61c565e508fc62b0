"""Cost accounting on real Postgres: ``api_usage`` rows as calls happen, the job's spend since
``created_at`` (an admin retry starts a fresh ceiling), the UTC day's spend, and the image-requests-per-day
warning, once per Pacific-time day (spec/002 "Cost ceiling")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared.alerts import send_alert
from shared.db.tables import api_usage
from shared.errors import ErrorClass, JobCostExceeded, ProviderUnavailable
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.streams import Publisher
from tests.outbox_helpers import stored_texts
from worker.cost import CostLedger, DbUsageStore, pacific_day_start, warn_image_rpd

pytestmark = pytest.mark.integration


async def a_job(db: Database) -> tuple[UUID, datetime]:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="tok")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
    return job.id, job.created_at


def call(
    cost: float, *, job_id: UUID | None = None, provider: str = "gemini", call_type: str = "image"
) -> ApiCall:
    return ApiCall(
        provider,
        "gemini-3.1-flash-image",
        "sheet",
        call_type,
        "ok",
        cost_usd=cost,
        latency_s=0.5,
        job_id=job_id,
    )


async def test_the_ceiling_counts_earlier_attempts_since_created_at_only(db: Database) -> None:
    job_id, created_at = await a_job(db)
    store = DbUsageStore(db)
    await store.record(call(0.9, job_id=job_id))
    async with db.transaction() as repos:  # a call from before an admin retry reset created_at
        await repos.conn.execute(
            sa.insert(api_usage).values(
                job_id=job_id,
                provider="gemini",
                model="m",
                kind="sheet",
                call_type="image",
                outcome="ok",
                cost_usd=5.0,
                created_at=created_at - timedelta(hours=1),
            )
        )
    ledger = CostLedger(store, job_id=job_id, created_at=created_at, max_cost_usd=1.5)
    assert await ledger.spent() == pytest.approx(0.9)
    await ledger.record(call(0.5))
    async with db.transaction() as repos:
        rows = await repos.usage.for_job(job_id)
    assert [r.cost_usd for r in rows] == [0.9, 5.0, 0.5]  # written as it happened, bound to the job
    await ledger.check_before_call("gemini")  # 1.4 < 1.5
    await ledger.record(call(0.1))
    with pytest.raises(JobCostExceeded, match=r"spent 1\.50 USD"):
        await ledger.check_before_call("gemini")


async def test_the_daily_budget_sums_the_utc_day_of_every_job(db: Database) -> None:
    store = DbUsageStore(db)
    await store.record(call(2.0))
    ledger = CostLedger(
        store, job_id=None, created_at=datetime.now(UTC), max_cost_usd=1.5, daily_budget_usd=2.0
    )
    with pytest.raises(ProviderUnavailable, match="daily budget") as raised:
        await ledger.check_before_call("gemini")
    assert raised.value.error_class is ErrorClass.BUDGET
    await ledger.check_before_call("local")  # the offline renderer costs nothing


@pytest.mark.parametrize(
    ("now", "start"),
    [
        (datetime(2026, 1, 15, 7, 59, tzinfo=UTC), datetime(2026, 1, 14, 8, 0, tzinfo=UTC)),  # PST
        (datetime(2026, 1, 15, 8, 0, tzinfo=UTC), datetime(2026, 1, 15, 8, 0, tzinfo=UTC)),
        (datetime(2026, 7, 1, 6, 30, tzinfo=UTC), datetime(2026, 6, 30, 7, 0, tzinfo=UTC)),  # PDT
        (datetime(2026, 7, 1, 7, 0, tzinfo=UTC), datetime(2026, 7, 1, 7, 0, tzinfo=UTC)),
    ],
)
def test_the_pacific_day_starts_at_local_midnight(now: datetime, start: datetime) -> None:
    assert pacific_day_start(now) == start


async def test_the_image_rpd_warning_is_sent_once_per_pacific_day(
    db: Database, redis: aioredis.Redis
) -> None:
    store = DbUsageStore(db)
    for _ in range(7):
        await store.record(call(0.0))
    await store.record(call(0.0, call_type="vision"))  # vision calls do not count toward images per day
    publisher = Publisher(redis)

    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return await send_alert(db, publisher, key=key, text=text, cooldown=cooldown)

    now = datetime.now(UTC)
    kwargs = {"providers": ["gemini", "openai", "local"], "limit": 10, "warn_frac": 0.7, "now": now}
    assert await warn_image_rpd(store, alert, **kwargs) == ["gemini"]  # type: ignore[arg-type]
    assert await warn_image_rpd(store, alert, **kwargs) == []  # type: ignore[arg-type]
    texts = await stored_texts(db, "send_admin_message")
    assert len(texts) == 1 and "7 image requests today" in texts[0]
    await store.record(call(0.0))
    kwargs["warn_frac"] = 0.9
    assert await warn_image_rpd(store, alert, **kwargs) == []  # type: ignore[arg-type]
