"""Retention housekeeping (issue 11 item 2) on real Postgres and Redis, the clock advanced by passing
``now``, never by sleeping; and two arq schedulers on one Redis running each cron job once."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from arq.connections import ArqRedis
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from shared import housekeeping, streams
from shared.db.tables import api_usage, jobs, lead_repeats, leads, tg_commands
from shared.domain import JobStatus
from shared.housekeeping import RetentionPolicy
from shared.joblife import retry_failed_job
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.settings import RetentionSettings
from shared.subjects import JobStep
from tests.shared.lead_helpers import lead

pytestmark = pytest.mark.integration

POLICY = RetentionPolicy.from_settings(RetentionSettings())


def later(**delta: float) -> datetime:
    return datetime.now(UTC) + timedelta(**delta)


async def a_job(
    db: Database, *, status: str, token: str = "t", stickers: int = 0, personal: bool = True, **values: object
) -> UUID:
    """A session and a job in ``status`` with a selfie, anchor and passport (``personal``) and
    ``stickers`` sticker blobs; ``values`` set on the job row."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=token)
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        if personal:
            for kind in ("selfie", "anchor", "passport"):
                await repos.blobs.put(kind=kind, data=b"face", content_type="image/jpeg", job_id=job.id)
        for i in range(stickers):
            await repos.blobs.put(
                kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=i
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(status=status, **values))
    return job.id


async def kinds_of(db: Database, job_id: UUID) -> set[str]:
    async with db.transaction() as repos:
        return {
            kind
            for kind in ("selfie", "anchor", "passport", "sticker")
            if await repos.blobs.ids_for_job(job_id, kind)
        }


async def test_a_failed_jobs_selfie_stays_for_the_retry_window_then_goes(db: Database) -> None:
    job_id = await a_job(db, status=JobStatus.FAILED, stickers=2)
    inside = await housekeeping.purge_selfies(db, POLICY, now=later(hours=23))
    assert inside.deleted == {} and await kinds_of(db, job_id) == {"selfie", "anchor", "passport", "sticker"}

    after = later(hours=24, minutes=1)
    purged = await housekeeping.purge_selfies(db, POLICY, now=after)
    assert purged.deleted == {"selfie": 1, "anchor": 1, "passport": 1} and purged.done
    await housekeeping.purge_stickers(db, POLICY, now=after)
    assert await kinds_of(db, job_id) == set()
    async with db.transaction() as repos:
        job = await repos.jobs.get(job_id)
        assert job is not None and job.selfie_deleted_at == after
        assert await retry_failed_job(repos, job_id, note="admin retry") is None  # refused, job unchanged
        assert (await repos.jobs.get(job_id)).status == JobStatus.FAILED  # type: ignore[union-attr]


async def test_inside_the_window_the_retry_is_still_possible(db: Database) -> None:
    job_id = await a_job(db, status=JobStatus.FAILED)
    await housekeeping.purge_selfies(db, POLICY, now=later(hours=23, minutes=59))
    async with db.transaction() as repos:
        retried = await retry_failed_job(repos, job_id, note="admin retry")
    assert retried is not None and retried.status == JobStatus.QUEUED


async def test_the_selfie_goes_whatever_the_jobs_state(db: Database) -> None:
    ids = [await a_job(db, status=s, token=s) for s in ("queued", "processing", "rendered", "delivering")]
    purged = await housekeeping.purge_selfies(db, POLICY, now=later(hours=25))
    assert purged.deleted["selfie"] == 4
    for job_id in ids:
        assert await kinds_of(db, job_id) == set()


async def test_an_artefact_stored_after_the_selfie_was_erased_goes_at_the_next_run(db: Database) -> None:
    job_id = await a_job(db, status=JobStatus.DELIVERING, personal=False, selfie_deleted_at=datetime.now(UTC))
    async with db.transaction() as repos:
        await repos.blobs.put(kind="anchor", data=b"late", content_type="image/png", job_id=job_id)
    assert (await housekeeping.purge_selfies(db, POLICY, now=later(minutes=15))).deleted == {"anchor": 1}


async def test_sticker_files_go_their_window_after_delivery(db: Database) -> None:
    job_id = await a_job(
        db, status=JobStatus.DELIVERED, stickers=12, personal=False, link_sent_at=datetime.now(UTC)
    )
    assert (await housekeeping.purge_stickers(db, POLICY, now=later(days=29))).deleted == {}
    assert (await housekeeping.purge_stickers(db, POLICY, now=later(days=30, minutes=1))).deleted == {
        "sticker": 12
    }
    async with db.transaction() as repos:
        assert await repos.jobs.get(job_id) is not None  # the job stays until its session goes


async def test_old_sessions_go_with_jobs_events_blobs_and_commands_usage_is_kept_unlinked(
    db: Database,
) -> None:
    job_id = await a_job(db, status=JobStatus.DELIVERED, stickers=3, personal=False)
    busy = await a_job(db, status=JobStatus.PROCESSING, token="busy")
    async with db.transaction() as repos:
        link = JobStep(id=job_id, step="link", n=1)  # found by its subject, not its id
        await repos.tg_commands.add(
            f"job:{job_id}:link", method="send_message", params={}, reply_to=None, subject=link
        )
        job = await repos.jobs.get(job_id)
        busy_job = await repos.jobs.get(busy)
        assert job is not None and busy_job is not None
        # the kiosk refused a photo of each session before it took one
        assert await repos.refusals.record(job.session_id, "no_face")
        assert await repos.refusals.record(busy_job.session_id, "corrupt_image")
        await repos.usage.record(
            ApiCall(
                provider="gemini",
                model="m",
                kind="sheet",
                call_type="image",
                outcome="ok",
                cost_usd=0.134,
                latency_s=1.0,
                job_id=job_id,
            )
        )
    assert (await housekeeping.purge_sessions(db, POLICY, now=later(days=29))).deleted.get("session", 0) == 0
    purged = await housekeeping.purge_sessions(db, POLICY, now=later(days=30, minutes=1))
    assert purged.deleted["session"] == 1 and purged.deleted["job"] == 1 and purged.deleted["blob"] == 3
    assert purged.deleted["tg_command"] == 1 and purged.api_usage_unlinked == 1
    assert purged.deleted["photo_refusal"] == 1
    async with db.transaction() as repos:
        assert await repos.jobs.get(job_id) is None
        assert await repos.jobs.get(busy) is not None  # a job still under way keeps its session
        # the busy session's refusal stays with it
        assert await repos.refusals.by_code_since(datetime(2000, 1, 1, tzinfo=UTC)) == {"corrupt_image": 1}
        usage = (await repos.conn.execute(sa.select(api_usage.c.job_id, api_usage.c.cost_usd))).all()
    assert [(u.job_id, float(u.cost_usd)) for u in usage] == [(None, 0.134)]


async def test_settled_commands_go_after_their_window_never_pending_or_sending(db: Database) -> None:
    async with db.transaction() as repos:
        for status in ("pending", "sending", "sent", "failed"):
            await repos.tg_commands.add(f"c:{status}", method="send_message", params={}, reply_to=None)
            await repos.conn.execute(
                sa.update(tg_commands)
                .where(tg_commands.c.command_id == f"c:{status}")
                .values(status=status, result={"message_id": 1} if status == "sent" else None)
            )
    assert (await housekeeping.purge_tg_commands(db, POLICY, now=later(days=6))).deleted == {}
    purged = await housekeeping.purge_tg_commands(db, POLICY, now=later(days=7, minutes=1))
    assert purged.deleted == {"tg_command": 2}
    async with db.transaction() as repos:
        left = (await repos.conn.execute(sa.select(tg_commands.c.command_id))).scalars().all()
    assert sorted(left) == ["c:pending", "c:sending"]


async def test_leads_go_with_their_repeats_after_their_window(db: Database) -> None:
    old = await lead(db, "r1", "a@example.com")
    await lead(db, "r2", "a@example.com")  # a repeat of the same contact
    back = await lead(db, "r3", "b@example.com")
    async with db.transaction() as repos:  # b came back 10 days after its first visit
        await repos.leads.submit(
            request_id="r4",
            name="Bo",
            contact="b@example.com",
            contact_kind="email",
            contact_key="b@example.com",
            message="",
            source_page=None,
            utm={},
        )
        await repos.conn.execute(
            sa.update(lead_repeats)
            .where(lead_repeats.c.request_id == "r4")
            .values(created_at=sa.func.now() + timedelta(days=10))
        )
    assert (await housekeeping.purge_leads(db, POLICY, now=later(days=179))).deleted == {}
    purged = await housekeeping.purge_leads(db, POLICY, now=later(days=181))
    assert purged.deleted == {"lead": 1, "lead_repeat": 1}
    async with db.transaction() as repos:
        assert await repos.leads.get(old) is None and await repos.leads.get(back) is not None
        assert (await repos.conn.execute(sa.select(sa.func.count()).select_from(leads))).scalar() == 1


async def test_a_run_stopped_mid_way_resumes_where_it_stopped(db: Database) -> None:
    ids = [await a_job(db, status=JobStatus.FAILED, token=f"t{i}") for i in range(5)]
    small = RetentionPolicy.from_settings(RetentionSettings(RETENTION_BATCH_SIZE=2))  # type: ignore[call-arg]
    now = later(hours=25)
    first = await housekeeping.purge_selfies(db, small, now=now, max_batches=1)  # "crashes" after a batch
    assert first.deleted["selfie"] == 2 and not first.done
    rest = await housekeeping.purge_selfies(db, small, now=now)
    assert rest.deleted["selfie"] == 3 and rest.done and rest.batches == 2
    again = await housekeeping.purge_selfies(db, small, now=now)  # idempotent: nothing left
    assert again.deleted == {} and again.done
    for job_id in ids:
        assert await kinds_of(db, job_id) == set()


async def test_a_row_locked_by_the_guest_flow_is_skipped_not_waited_for(db: Database) -> None:
    locked = await a_job(db, status=JobStatus.FAILED, token="locked")
    free = await a_job(db, status=JobStatus.FAILED, token="free")
    async with db.transaction() as repos:  # e.g. a worker's transition on this job right now
        await repos.conn.execute(sa.select(jobs.c.id).where(jobs.c.id == locked).with_for_update())
        purged = await asyncio.wait_for(housekeeping.purge_selfies(db, POLICY, now=later(hours=25)), 10)
    assert purged.deleted["selfie"] == 1
    assert await kinds_of(db, free) == set() and await kinds_of(db, locked) == {
        "selfie",
        "anchor",
        "passport",
    }


def stream_id(moment: datetime, seq: int = 0) -> str:
    """The stream entry id ``XADD`` would give at ``moment`` (its unix time in ms)."""
    return f"{int(moment.timestamp() * 1000)}-{seq}"


async def test_stream_entries_go_their_window_after_they_were_added_dead_letters_too(
    redis: aioredis.Redis,
) -> None:
    now = datetime.now(UTC)
    old, recent = now - timedelta(hours=25), now - timedelta(hours=23)
    ours = (streams.JOBS, streams.results_stream("delivery"), streams.dead_letter_stream(streams.DELIVERY))
    for key in (*ours, "other:stream"):
        await redis.xadd(key, {"data": "old"}, id=stream_id(old))
        await redis.xadd(key, {"data": "old"}, id=stream_id(old, 1))
        await redis.xadd(key, {"data": "recent"}, id=stream_id(recent))
        await redis.xadd(key, {"data": "new"})  # now, by Redis's clock
    await redis.xgroup_create(streams.JOBS, "worker", id="0")
    await redis.set("stk:ratelimit:leads:x", "1")  # under the prefix, but no stream
    before = REGISTRY.get_sample_value("stk_retention_deleted_total", {"kind": "stream_entries"}) or 0.0

    with capture_logs() as logs:
        purged = await housekeeping.trim_streams(redis, POLICY, now=now)

    assert purged.deleted == {"stream_entries": 6} and purged.done
    for key in ours:
        assert [fields["data"] for _id, fields in await redis.xrange(key)] == ["recent", "new"], key
    assert await redis.xlen("other:stream") == 4  # not a stream of ours
    assert [g["name"] for g in await redis.xinfo_groups(streams.JOBS)] == ["worker"]  # groups stay
    assert await redis.get("stk:ratelimit:leads:x") == "1"
    after = REGISTRY.get_sample_value("stk_retention_deleted_total", {"kind": "stream_entries"})
    assert after == before + 6
    (logged,) = [e for e in logs if e["event"] == "RETENTION_PURGED"]
    assert logged["job"] == "trim_streams" and logged["deleted"] == {"stream_entries": 6}  # counts only
    assert (await housekeeping.trim_streams(redis, POLICY, now=now)).deleted == {"stream_entries": 0}


async def test_gone_consumers_are_removed_never_a_live_one_or_one_holding_unclaimed_entries(
    redis: aioredis.Redis,
) -> None:
    """Issue 19: every replica start adds a consumer (``<service>-<host>-<pid>``) that Redis keeps for
    ever; those gone (idle, nothing pending, or what they held claimed by another) are deleted."""
    stream, group = streams.JOBS, "worker"
    await redis.xgroup_create(stream, group, id="0", mkstream=True)
    for n in range(4):
        await redis.xadd(stream, {"n": str(n)})

    async def read_one(consumer: str) -> str:
        [[_stream, [(entry_id, _fields)]]] = await redis.xreadgroup(group, consumer, {stream: ">"}, count=1)
        return str(entry_id)

    await redis.xack(stream, group, await read_one("worker-old-1"))  # stopped after acking
    left = await read_one("worker-old-2")  # killed holding an entry ...
    await redis.xclaim(stream, group, "worker-new-9", min_idle_time=0, message_ids=[left])  # ... taken over
    await read_one("worker-old-3")  # killed holding an entry nobody took over yet
    policy = dataclasses.replace(POLICY, consumer_idle=timedelta(seconds=0.5))
    await asyncio.sleep(0.6)  # Redis measures idleness by its own clock
    await read_one("worker-live-7")  # reads now

    with capture_logs() as logs:
        purged = await housekeeping.remove_gone_consumers(redis, policy, now=datetime.now(UTC))

    names = {c["name"] for c in await redis.xinfo_consumers(stream, group)}
    assert names == {"worker-old-3", "worker-new-9", "worker-live-7"}
    assert purged.deleted == {"stream_consumers": 2}
    (removed,) = [e for e in logs if e["event"] == "STREAM_CONSUMERS_REMOVED"]
    assert sorted(removed["consumers"]) == [
        f"{stream}/{group}/worker-old-1",
        f"{stream}/{group}/worker-old-2",
    ]
    pending = await redis.xpending(stream, group)
    assert pending["pending"] == 3  # nothing held was dropped
    assert housekeeping.remove_gone_consumers in housekeeping.JOBS  # scheduled with the others


async def test_two_schedulers_on_one_redis_run_each_cron_job_once(
    db: Database, redis: aioredis.Redis, redis_url: str
) -> None:
    """Two replicas of the scheduler, started together, arq's real workers on a cron of every second."""
    await a_job(db, status=JobStatus.FAILED)
    jobs_ = housekeeping.cron_jobs(second=set(range(60)))  # every second, every minute
    pools = [ArqRedis.from_url(redis_url), ArqRedis.from_url(redis_url)]
    workers = [housekeeping.scheduler(db, pool, POLICY, jobs_) for pool in pools]
    names = {j.__name__ for j in housekeeping.JOBS}

    def runs_of(logs: Sequence[Mapping[str, Any]]) -> Counter[tuple[str, str]]:
        return Counter((e["job"], e["run"]) for e in logs if e["event"] == "HOUSEKEEPING_RUN")

    with capture_logs() as logs:
        mains = [asyncio.ensure_future(w.async_run()) for w in workers]
        # Two workers of one job at a time each take one job per 0.5 s poll, so six jobs a second
        # fall behind on a busy machine: wait for two periods of every job, not for a fixed time.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while loop.time() < deadline:
            per_job_so_far = Counter(job for job, _run in runs_of(logs))
            if set(per_job_so_far) == names and min(per_job_so_far.values()) >= 2:
                break
            await asyncio.sleep(0.2)
        running = [*mains, *(t for w in workers for t in w.tasks.values())]
        for task in running:
            task.cancel()
        # a cancelled arq job finishes its bookkeeping on the pool (shielded): wait for it before the
        # pools close, or it opens a connection nobody closes (a ResourceWarning in a later test)
        await asyncio.gather(*running, return_exceptions=True)
    for pool in pools:
        await pool.aclose()
    runs = runs_of(logs)
    assert runs and set(runs.values()) == {1}, runs  # no run id executed twice
    per_job = Counter(job for job, _run in runs)
    assert set(per_job) == names
    assert min(per_job.values()) >= 2, per_job  # several periods passed, each run once
    for job, run in runs:
        assert run.startswith(f"{job}:")  # arq's unique cron id: <name>:<run time in ms>
    purged = [e for e in logs if e["event"] == "RETENTION_PURGED" and e["job"] == "purge_selfies"]
    assert len(purged) == per_job["purge_selfies"]


async def test_the_scheduler_task_runs_until_stopped_and_stops_cleanly(
    db: Database, redis: aioredis.Redis, redis_url: str
) -> None:
    stop = asyncio.Event()
    jobs_ = housekeeping.cron_jobs(second=set(range(60)), jobs=[housekeeping.purge_selfies])
    with capture_logs() as logs:
        task = asyncio.ensure_future(housekeeping.run_scheduler(stop, db, redis_url, POLICY, jobs_))
        async with asyncio.timeout(20):  # a run every second; a busy machine may take a few
            while not any(e["event"] == "HOUSEKEEPING_RUN" for e in logs):
                await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(task, 30)
    assert any(e["event"] == "HOUSEKEEPING_RUN" for e in logs)
    assert not any(e["event"] == "HOUSEKEEPING_SCHEDULER_FAILED" for e in logs)
