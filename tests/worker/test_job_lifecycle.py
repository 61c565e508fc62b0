"""A job's life in the worker on real Postgres/Redis: render, retry with a durable delay, permanent
failure, crash recovery, pauses, shutdown requeue. The renderer is injected (the real one is tested in
tests/worker/imaging and end to end)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import maintenance, streams
from shared.db.tables import jobs
from shared.domain import Blob, Job
from shared.errors import NoFaceError
from shared.messages import JobRendered, decode
from shared.outfits import Outfit, load_catalog
from shared.repositories import Database
from shared.streams import Publisher
from tests.outbox_helpers import stored_texts
from worker.generation import Generator
from worker.imaging.finish import Sticker
from worker.outcomes import recover_crashed, requeue_on_shutdown
from worker.render import Pack
from worker.settings import WorkerSettings
from worker.sweeper import resume_expired_pause, sweep_once

pytestmark = pytest.mark.integration


def settings(database_url: str, redis_url: str, **env: Any) -> WorkerSettings:
    return WorkerSettings(DATABASE_URL=database_url, REDIS_URL=redis_url, RETRY_DELAY_SEC=10, **env)  # type: ignore[call-arg]


async def fake_pack(_job: Job, _selfie: Blob, _outfit: Outfit) -> Pack:
    return Pack(
        stickers=[Sticker(png=b"png%d" % i, emoji="🙂", width=512, height=512) for i in range(12)], timings={}
    )


def failing(exc: Exception) -> Any:
    async def render(_job: Job, _selfie: Blob, _outfit: Outfit) -> Pack:
        raise exc

    return render


async def queued_job(db: Database) -> Job:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="tok")
        await repos.sessions.bind_telegram("tok", user_id=3, chat_id=3, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
    return job


def generator(
    db: Database, redis: aioredis.Redis, cfg: WorkerSettings, render: Any, owner: str = "w1"
) -> Generator:
    return Generator(
        db=db, publisher=Publisher(redis), settings=cfg, catalog=load_catalog(), render=render, owner=owner
    )


async def job_now(db: Database, job: Job) -> Job:
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current


async def test_a_rendered_job_stores_twelve_stickers_and_hands_off_to_delivery(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    await generator(db, redis, settings(database_url, redis_url), fake_pack).process(job.id)
    assert (await job_now(db, job)).status == "rendered"
    async with db.transaction() as repos:
        assert len(await repos.blobs.ids_for_job(job.id, "sticker")) == 12
    hints = [decode(f) for _id, f in await redis.xrange(streams.DELIVERY)]
    assert hints == [JobRendered(job_id=job.id)]


async def test_a_charged_failure_requeues_with_a_durable_delay_then_fails_at_max_attempts(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    gen = generator(
        db, redis, settings(database_url, redis_url), failing(RuntimeError("model returned junk"))
    )
    await gen.process(job.id)
    after_first = await job_now(db, job)
    assert (after_first.status, after_first.attempts) == ("queued", 1)
    assert after_first.not_before is not None and after_first.not_before > datetime.now(UTC) + timedelta(
        seconds=5
    )
    await gen.process(job.id)  # not due yet: nothing happens
    assert (await job_now(db, job)).attempts == 1
    async with db.transaction() as repos:
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(not_before=sa.func.now()))
    await gen.process(job.id)
    final = await job_now(db, job)
    assert (final.status, final.error_class) == ("failed", "internal")
    texts = await stored_texts(db, "send_message")
    assert len(texts) == 1 and texts[0].startswith("Something went wrong")
    alerts = await stored_texts(db, "send_admin_message")
    assert len(alerts) == 1 and alerts[0].startswith(f"Job {job.id} FAILED")


async def test_no_face_fails_at_once_and_tells_the_guest(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    await generator(db, redis, settings(database_url, redis_url), failing(NoFaceError("no face"))).process(
        job.id
    )
    final = await job_now(db, job)
    assert (final.status, final.attempts, final.error_class) == ("failed", 0, "permanent")
    texts = await stored_texts(db, "send_message")
    assert texts == ["We couldn't find a face in your photo. Please take another selfie at the booth."]


async def test_a_paused_worker_claims_nothing_and_an_expired_auto_pause_ends_by_itself(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    async with db.transaction() as repos:
        await maintenance.start_pause(
            repos, source="auto", reason="outage", resume_at=datetime.now(UTC) + timedelta(hours=1)
        )
    cfg = settings(database_url, redis_url)
    await generator(db, redis, cfg, fake_pack).process(job.id)
    assert (await job_now(db, job)).status == "queued"
    assert not await resume_expired_pause(db, Publisher(redis))
    async with db.transaction() as repos:  # the outage backoff has passed
        stored = await repos.settings.get(maintenance.KEY)
        stored["resume_at"] = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
        await repos.settings.put(maintenance.KEY, stored)
    await redis.delete(streams.JOBS)
    assert await resume_expired_pause(db, Publisher(redis))
    assert await redis.xlen(streams.JOBS) == 1  # the queued job was announced again
    await generator(db, redis, cfg, fake_pack).process(job.id)
    assert (await job_now(db, job)).status == "rendered"


async def test_env_maintenance_also_stops_claims(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    await generator(db, redis, settings(database_url, redis_url, MAINTENANCE_MODE=True), fake_pack).process(
        job.id
    )
    assert (await job_now(db, job)).status == "queued"


async def test_a_job_whose_owner_died_is_requeued_with_an_attempt_consumed_then_failed(
    db: Database, redis: aioredis.Redis
) -> None:
    job = await queued_job(db)
    for expected_status in ("queued", "failed"):  # MAX_ATTEMPTS = 2: the second crash reaches the cap
        async with db.transaction() as repos:
            await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(not_before=None))
            assert await repos.jobs.claim(job.id, owner="dead-worker")
            await repos.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job.id)
                .values(heartbeat_at=sa.func.now() - timedelta(minutes=5))
            )
        assert await recover_crashed(db, Publisher(redis), heartbeat_timeout_s=30, max_attempts=2) == 1
        current = await job_now(db, job)
        assert (current.status, current.error_class) == (expected_status, "crashed")
    assert (await job_now(db, job)).attempts == 1  # the failing crash does not count past the cap


async def test_a_live_job_is_not_taken_for_crashed(db: Database, redis: aioredis.Redis) -> None:
    job = await queued_job(db)
    async with db.transaction() as repos:
        await repos.jobs.claim(job.id, owner="alive")
    assert await recover_crashed(db, Publisher(redis), heartbeat_timeout_s=30, max_attempts=2) == 0
    assert (await job_now(db, job)).status == "processing"


async def test_shutdown_requeues_are_free_twice_then_cost_an_attempt(db: Database) -> None:
    job = await queued_job(db)
    for expected_attempts in (0, 0, 1):
        async with db.transaction() as repos:
            claimed = await repos.jobs.claim(job.id, owner="w")
        assert claimed is not None
        await requeue_on_shutdown(db, claimed, owner="w", free_requeues=2)
        assert (await job_now(db, job)).attempts == expected_attempts


async def test_cancelling_a_running_job_requeues_it(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    started = asyncio.Event()

    async def slow(_job: Job, _selfie: Blob, _outfit: Outfit) -> Pack:
        started.set()
        await asyncio.sleep(1.0)
        return await fake_pack(_job, _selfie, _outfit)

    task = asyncio.create_task(generator(db, redis, settings(database_url, redis_url), slow).process(job.id))
    async with asyncio.timeout(30):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    current = await job_now(db, job)
    assert (current.status, current.free_requeues, current.attempts) == ("queued", 1, 0)


async def test_the_sweeper_republishes_a_queued_job_whose_hint_was_lost(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db)
    async with db.transaction() as repos:
        await repos.conn.execute(sa.update(jobs).values(updated_at=sa.func.now() - timedelta(minutes=1)))
    await sweep_once(db, Publisher(redis), settings(database_url, redis_url))
    assert await redis.xlen(streams.JOBS) == 1
    await sweep_once(db, Publisher(redis), settings(database_url, redis_url))
    assert await redis.xlen(streams.JOBS) == 1  # dispatched: not again until the republish window
    assert (await job_now(db, job)).status == "queued"


async def test_no_provider_with_credit_pauses_the_queue_and_refunds_the_job(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    from shared.errors import ErrorClass, ProviderUnavailable

    notified: list[str] = []

    async def notify(message: str) -> None:
        notified.append(message)

    job = await queued_job(db)
    gen = generator(
        db,
        redis,
        settings(database_url, redis_url),
        failing(ProviderUnavailable("402", error_class=ErrorClass.CREDIT)),
    )
    gen.notify = notify
    await gen.process(job.id)
    refunded = await job_now(db, job)
    assert (refunded.status, refunded.attempts) == ("queued", 0)
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
        texts = (await repos.conn.execute(sa.text("SELECT method, params->>'text' FROM tg_commands"))).all()
    assert pause is not None and (pause.source, pause.reason, pause.resume_at) == ("auto", "credit", None)
    guest = [t for method, t in texts if method == "send_message"]
    assert len(guest) == 1 and guest[0].startswith("Generation is temporarily unavailable.")
    assert sum(method == "send_admin_message" for method, _ in texts) == 1
    assert notified == ["AI provider credit is exhausted; the queue is paused until /resume."]
    assert "key" not in notified[0].lower()  # fixed text, nothing secret


def test_outage_pauses_back_off_and_budget_pauses_end_at_midnight() -> None:
    from shared.errors import ErrorClass
    from worker.outcomes import pause_until

    now = datetime(2026, 11, 30, 21, 0, tzinfo=UTC)
    waits = [
        pause_until(ErrorClass.OUTAGE, now=now, outage_streak=n, retry_after_s=None) for n in (1, 2, 3, 7, 12)
    ]
    assert [(w - now).total_seconds() / 60 for w in waits if w] == [1, 2, 4, 60, 60]
    assert pause_until(ErrorClass.OUTAGE, now=now, outage_streak=1, retry_after_s=30) == now + timedelta(
        seconds=30
    )
    assert pause_until(ErrorClass.BUDGET, now=now, outage_streak=0, retry_after_s=None) == datetime(
        2026, 12, 1, tzinfo=UTC
    )
    assert pause_until(ErrorClass.AUTH, now=now, outage_streak=0, retry_after_s=None) is None


async def test_a_cost_limited_job_fails_without_retry(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    from shared.errors import JobCostExceeded

    job = await queued_job(db)
    await generator(
        db, redis, settings(database_url, redis_url), failing(JobCostExceeded("spent 1.52 USD"))
    ).process(job.id)
    final = await job_now(db, job)
    assert (final.status, final.error_class, final.attempts) == ("failed", "job_cost", 0)
