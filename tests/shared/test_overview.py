"""The evening's figures (shared.overview) against real Postgres and Redis, with rows that make each one
non-trivial: some inside and some just outside each window, two jobs of one guest, a no-face failure
apart from the other permanent ones, a pending entry and a dead letter."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import maintenance, streams
from shared.days import utc_day_start
from shared.db.tables import api_usage, job_events, jobs, sessions
from shared.domain import JobStatus
from shared.events import Event
from shared.overview import gather_overview
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.settings import BudgetSettings

pytestmark = pytest.mark.integration

#: 20:00 UTC of a fixed day in winter (Pacific time UTC−8: its day began at 08:00 UTC).
NOW = utc_day_start(datetime.fromisoformat("2026-12-01T00:00:00+00:00")) + timedelta(hours=20)
BUDGET = BudgetSettings(DAILY_BUDGET_USD="5", IMAGE_RPD_LIMIT="1000")


async def job(
    db: Database,
    *,
    user: int | None,
    status: JobStatus,
    created: datetime,
    link_after_s: float | None = None,
    error_class: str | None = None,
    error: str | None = None,
) -> UUID:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="hall", token=f"t{created.timestamp()}{user}{status}")
        if user is not None:
            await repos.sessions.bind_telegram(
                session.token, user_id=user, chat_id=user, name="G", language="en"
            )
        row = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        link = created + timedelta(seconds=link_after_s) if link_after_s is not None else None
        updated = link or created + timedelta(seconds=30)
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == row.id)
            .values(
                status=status.value,
                created_at=created,
                updated_at=updated,
                link_sent_at=link,
                error_class=error_class,
                error=error,
            )
        )
        # the photo was accepted at ``created`` (the first event, where time to link starts)
        await repos.conn.execute(
            sa.update(job_events).where(job_events.c.job_id == row.id).values(at=created)
        )
    return row.id


async def call(
    db: Database, *, provider: str, outcome: str, cost: float, at: datetime, kind: str = "image"
) -> None:
    async with db.transaction() as repos:
        await repos.usage.record(
            ApiCall(
                provider=provider,
                model="m",
                kind="sheet",
                call_type=kind,
                outcome=outcome,
                cost_usd=cost,
                latency_s=1.0,
                error=None if outcome == "ok" else f"{outcome} from {provider}",
            )
        )
        newest = sa.select(sa.func.max(api_usage.c.id)).scalar_subquery()
        await repos.conn.execute(sa.update(api_usage).where(api_usage.c.id == newest).values(created_at=at))


async def test_every_figure_counts_its_own_window(db: Database, redis: aioredis.Redis) -> None:
    hour_ago = NOW - timedelta(hours=1)
    # Delivered in the last hour: guest 1 twice (60 s and 300 s), guest 2 once (120 s); guest 3 earlier.
    await job(db, user=1, status=JobStatus.DELIVERED, created=NOW - timedelta(minutes=50), link_after_s=60)
    await job(db, user=1, status=JobStatus.DELIVERED, created=NOW - timedelta(minutes=20), link_after_s=300)
    await job(db, user=2, status=JobStatus.DELIVERED, created=NOW - timedelta(minutes=10), link_after_s=120)
    await job(
        db, user=3, status=JobStatus.DELIVERED, created=hour_ago - timedelta(minutes=30), link_after_s=60
    )
    # Failed today: no face, unknown outfit (both permanent), content, two deadlines; one failed yesterday.
    today = NOW - timedelta(hours=3)
    await job(
        db,
        user=4,
        status=JobStatus.FAILED,
        created=today,
        error_class="permanent",
        error="no face found in the selfie",
    )
    await job(
        db,
        user=5,
        status=JobStatus.FAILED,
        created=today,
        error_class="permanent",
        error="unknown outfit 'x'",
    )
    await job(db, user=6, status=JobStatus.FAILED, created=today, error_class="content", error="refused")
    for user in (7, 8):
        await job(db, user=user, status=JobStatus.FAILED, created=today, error_class="deadline", error="late")
    await job(db, user=9, status=JobStatus.FAILED, created=NOW - timedelta(hours=21), error_class="timeout")
    await job(db, user=None, status=JobStatus.QUEUED, created=NOW - timedelta(minutes=1))
    await job(db, user=10, status=JobStatus.PROCESSING, created=NOW - timedelta(minutes=2))
    # Calls: today (UTC) 0.5 + 0.25 + 0 USD; yesterday 10 USD. Image requests since 08:00 UTC (Pacific
    # day): gemini 3 (one of them a 429), openai 1; gemini at 07:00 UTC is yesterday in Pacific time.
    recent = NOW - timedelta(minutes=5)
    await call(db, provider="gemini", outcome="ok", cost=0.5, at=recent)
    await call(db, provider="gemini", outcome="ok", cost=0.25, at=recent)
    await call(db, provider="gemini", outcome="rate_limit", cost=0.0, at=recent)
    await call(db, provider="openai", outcome="outage", cost=0.0, at=recent)
    await call(db, provider="gemini", outcome="ok", cost=0.0, at=recent, kind="vision")
    await call(db, provider="local", outcome="ok", cost=0.0, at=recent)
    await call(db, provider="gemini", outcome="ok", cost=0.0, at=utc_day_start(NOW) + timedelta(hours=7))
    await call(db, provider="gemini", outcome="ok", cost=10.0, at=NOW - timedelta(hours=25))
    # Streams: three jobs hints, the worker group read two and acked one; one dead letter.
    for n in range(3):
        await redis.xadd(streams.JOBS, {"n": str(n)})
    await redis.xgroup_create(streams.JOBS, "worker", id="0")
    read = await redis.xreadgroup("worker", "w1", {streams.JOBS: ">"}, count=2)
    await redis.xack(streams.JOBS, "worker", read[0][1][0][0])
    await redis.xadd(streams.dead_letter_stream(streams.JOBS), {"reason": "too many deliveries"})
    async with db.transaction() as repos:
        await maintenance.start_pause(repos, source="admin", reason="break")

    view = await gather_overview(db, redis, budget=BUDGET, env_maintenance=False, now=NOW)

    assert view.guests_last_hour == 2
    assert view.link_times.count == 3
    assert view.link_times.p50_s == pytest.approx(120.0)
    assert view.link_times.p95_s == pytest.approx(120 + 0.9 * 180)  # percentile_cont between 120 and 300
    assert view.failures_today == {"no_face": 1, "permanent": 1, "content": 1, "deadline": 2}
    assert view.failed_today == 5
    assert view.spend_today_usd == pytest.approx(0.75)
    assert view.daily_budget_usd == 5.0
    assert view.image_requests_today == {"gemini": 3, "openai": 1}
    assert view.image_rpd_limit == 1000
    health = {p.provider: p for p in view.providers}
    assert (health["gemini"].calls, health["gemini"].ok, health["gemini"].errors) == (4, 3, {"rate_limit": 1})
    assert health["gemini"].error_share == pytest.approx(0.25)
    assert (health["openai"].error_share, health["openai"].last_error) == (1.0, "outage from openai")
    assert (view.queued, view.running) == (1, 1)
    jobs_stream = next(s for s in view.streams or [] if s.stream == streams.JOBS)
    assert (jobs_stream.length, jobs_stream.dead_letters) == (3, 1)
    [group] = jobs_stream.groups
    assert (group.group, group.lag, group.pending) == ("worker", 1, 1)
    assert group.oldest_pending_s is not None
    assert view.pause is not None and (view.pause.source, view.pause.reason) == ("admin", "break")
    body = view.to_json()
    assert body["spend_today"] == {"usd": 0.75, "budget_usd": 5.0}
    assert list(body["failures_today"]) == ["deadline", "content", "no_face", "permanent"]


async def test_a_retried_job_counts_the_guests_whole_wait_from_the_accepted_upload(db: Database) -> None:
    accepted = NOW - timedelta(minutes=30)
    job_id = await job(db, user=21, status=JobStatus.QUEUED, created=accepted)
    async with db.transaction() as repos:
        # processing → queued (a requeue), processing → failed, then the admin's Retry: a fresh run
        assert await repos.jobs.claim(job_id, owner="w1")
        assert await repos.jobs.requeue_after_shutdown(job_id, owner="w1", free=True)
        assert await repos.jobs.claim(job_id, owner="w2")
        await repos.jobs.fail(
            job_id, from_statuses=[JobStatus.PROCESSING], error_class="timeout", error="slow"
        )
        retried = await repos.jobs.retry_failed(job_id, note="admin retry (web)")
        assert retried is not None
        # the Retry 20 minutes after the upload, the link 5 minutes after the Retry
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job_id)
            .values(
                status=JobStatus.DELIVERED.value,
                created_at=accepted + timedelta(minutes=20),
                link_sent_at=accepted + timedelta(minutes=25),
            )
        )
        assert await repos.jobs.accepted_at(job_id) == accepted
    view = await gather_overview(db, None, budget=BUDGET, env_maintenance=False, now=NOW)
    assert view.link_times.count == 1
    assert view.link_times.p50_s == pytest.approx(25 * 60)  # not the 5 minutes since the Retry
    assert view.link_times.p95_s == pytest.approx(25 * 60)


async def test_an_empty_evening_has_no_percentiles_and_redis_down_is_a_figure(db: Database) -> None:
    down = aioredis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        view = await gather_overview(db, down, budget=BudgetSettings(), env_maintenance=True, now=NOW)
    finally:
        await down.aclose()
    assert (view.guests_last_hour, view.link_times.p50_s, view.link_times.p95_s) == (0, None, None)
    assert (view.failures_today, view.spend_today_usd, view.daily_budget_usd) == ({}, 0.0, None)
    assert view.streams is None and view.streams_error
    assert view.pause is not None and view.pause.source == "env"


async def test_the_oldest_pending_entry_is_aged_from_its_id(redis: aioredis.Redis) -> None:
    entry = await redis.xadd(streams.DELIVERY, {"n": "1"})
    await redis.xgroup_create(streams.DELIVERY, "delivery", id="0")
    await redis.xreadgroup("delivery", "d1", {streams.DELIVERY: ">"}, count=1)
    added_ms = int(entry.split("-")[0])
    [health] = await streams.stream_health(redis, (streams.DELIVERY,), now_ms=added_ms + 5000)
    assert health.groups[0].oldest_pending_s == 5.0
    [missing] = await streams.stream_health(redis, (streams.LEADS,))
    assert (missing.length, missing.groups, missing.dead_letters) == (0, [], 0)


async def test_each_running_event_counts_its_today_from_its_own_local_midnight(db: Database) -> None:
    """At 20:00 UTC on 1 December: Los Angeles' day began at 08:00 UTC that day, Tokyo's at 15:00 UTC."""
    la = Event(id="la", name="LA", time_zone="America/Los_Angeles", daily_budget_usd=3.0)
    tokyo = Event(id="tokyo", name="Tokyo", time_zone="Asia/Tokyo", total_budget_usd=50.0)
    ended = Event(id="old", name="Old", ends_at=NOW - timedelta(days=1))
    async with db.transaction() as repos:
        for event in (la, tokyo, ended):
            await repos.events.save(event)
        for event_id, hours_ago, cost in (
            ("la", 11, 1.0),  # 09:00 UTC: LA's today
            ("la", 13, 2.0),  # 07:00 UTC: LA's yesterday
            ("tokyo", 4, 0.5),  # 16:00 UTC: Tokyo's today
            ("tokyo", 6, 4.0),  # 14:00 UTC: Tokyo's yesterday
        ):
            session = await repos.sessions.create(station="s", token=f"t-{event_id}-{hours_ago}")
            await repos.conn.execute(
                sa.update(sessions).where(sessions.c.id == session.id).values(event_id=event_id)
            )
            job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
            await repos.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job.id)
                .values(status="delivered", link_sent_at=NOW - timedelta(hours=hours_ago))
            )
            await repos.conn.execute(
                sa.insert(api_usage).values(
                    event_id=event_id,
                    provider="gemini",
                    model="m",
                    kind="sheet",
                    call_type="image",
                    outcome="ok",
                    cost_usd=cost,
                    created_at=NOW - timedelta(hours=hours_ago),
                )
            )
    view = (await gather_overview(db, None, budget=BUDGET, env_maintenance=False, now=NOW)).to_json()
    by_id = {e["id"]: e for e in view["events"]}
    assert set(by_id) == {"default", "la", "tokyo"}  # an ended event is not in today's overview
    assert by_id["la"]["day_start"] == "2026-12-01T08:00:00+00:00"
    assert by_id["la"]["today"]["packs_delivered"] == 1 and by_id["la"]["today"]["cost_usd"] == 1.0
    assert by_id["la"]["budget"] == {"daily_usd": 3.0, "total_usd": None}
    assert by_id["tokyo"]["day_start"] == "2026-12-01T15:00:00+00:00"
    assert by_id["tokyo"]["today"]["packs_delivered"] == 1 and by_id["tokyo"]["today"]["cost_usd"] == 0.5
    assert by_id["tokyo"]["budget"] == {"daily_usd": None, "total_usd": 50.0}
    assert by_id["default"]["today"]["cost_usd"] == 0.0
    assert by_id["default"]["budget"]["daily_usd"] == 5.0  # DAILY_BUDGET_USD
    assert view["spend_today"]["usd"] == 7.5  # the deployment-wide UTC day (all four calls) is unchanged
