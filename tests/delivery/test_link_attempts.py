"""The link message: three sends, two seconds apart, then the job fails (spec/000 delivery table)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from delivery.packs import PackDelivery
from shared.db.tables import job_events, jobs
from shared.domain import Job
from shared.messages import TelegramErrorInfo, TelegramResult
from shared.outbox import stored_result
from shared.repositories import Database
from shared.subjects import JobStep
from tests.delivery.delivery_helpers import job_with_stickers

pytestmark = pytest.mark.integration
BLOCKED = TelegramErrorInfo(error_code=403, description="Forbidden: bot was blocked by the user")


async def delivering_job(db: Database) -> Job:
    return await job_with_stickers(db, status="delivering", sticker_set_name="sbx_by_stickerbooth_bot")


def ready(job: Job) -> TelegramResult:
    return TelegramResult(
        command_id=f"job:{job.id}:poll:1",
        ok=True,
        result={"sticker_count": 12},
        subject=JobStep(id=job.id, step="poll", n=1),
    )


async def fail_last_link(db: Database, delivery: PackDelivery, job: Job) -> str:
    async with db.transaction() as repos:
        latest = (await repos.tg_commands.for_subject("job", job.id, step="link"))[-1]
        await repos.tg_commands.start_sending(latest.command_id, stale_after=timedelta(0))
        await repos.tg_commands.finish(latest.command_id, ok=False, error=BLOCKED.model_dump())
        failed = await repos.tg_commands.get(latest.command_id)
    assert failed is not None
    await delivery.handle_result(stored_result(failed))
    return latest.command_id


async def status(db: Database, job: Job) -> Job:
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current


async def test_a_failed_link_is_sent_again_and_the_job_fails_after_three(
    db: Database, delivery: PackDelivery
) -> None:
    job = await delivering_job(db)
    sent = []
    for _ in range(3):
        await delivery.on_poll(job.id, ready(job))
        sent.append(await fail_last_link(db, delivery, job))
        if len(sent) < 3:
            current = await status(db, job)
            assert current.status == "delivering"
            assert current.next_poll_at is not None and current.next_poll_at > datetime.now(UTC)
    assert sent == [f"job:{job.id}:link", f"job:{job.id}:link:2", f"job:{job.id}:link:3"]
    assert (await status(db, job)).status == "failed"
    await delivery.on_poll(job.id, ready(job))  # nothing more is sent
    async with db.transaction() as repos:
        assert len(await repos.tg_commands.for_subject("job", job.id, step="link")) == 3


async def test_a_second_attempt_that_succeeds_delivers(db: Database, delivery: PackDelivery) -> None:
    job = await delivering_job(db)
    await delivery.on_poll(job.id, ready(job))
    await fail_last_link(db, delivery, job)
    await delivery.on_poll(job.id, ready(job))
    await delivery.on_poll(job.id, ready(job))  # a repeated poll does not queue a third send
    async with db.transaction() as repos:
        links = await repos.tg_commands.for_subject("job", job.id, step="link")
    assert [r.command_id for r in links] == [f"job:{job.id}:link", f"job:{job.id}:link:2"]
    await delivery.handle_result(
        TelegramResult(
            command_id=links[-1].command_id,
            ok=True,
            result={"message_id": 5},
            subject=JobStep(id=job.id, step="link", n=len(links)),
        )
    )
    assert (await status(db, job)).status == "delivered"


async def test_creating_the_set_erases_the_selfie_and_its_derived_artefacts(
    db: Database, delivery: PackDelivery
) -> None:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t2")
        await repos.sessions.bind_telegram("t2", user_id=9, chat_id=9, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for kind in ("selfie", "anchor", "passport"):
            await repos.blobs.put(
                kind=kind, data=b"x", content_type="application/octet-stream", job_id=job.id
            )
        await repos.blobs.put(
            kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=0
        )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(status="rendered"))
    await delivery.handle_result(
        TelegramResult(
            command_id=f"job:{job.id}:create_set",
            ok=True,
            result={"created": True, "sticker_count": 1},
            subject=JobStep(id=job.id, step="create_set"),
        )
    )
    async with db.transaction() as repos:
        left = await repos.conn.execute(sa.text("SELECT kind FROM blobs WHERE job_id = :j"), {"j": job.id})
        current = await repos.jobs.get(job.id)
    assert [r[0] for r in left] == ["sticker"]
    assert current is not None and current.status == "delivering" and current.selfie_deleted_at is not None


def photo_to_link_sum() -> float:
    """The running sum (s) of delivery's ``stk_stage_seconds{stage="photo_to_link"}`` histogram."""
    value = REGISTRY.get_sample_value("stk_stage_seconds_sum", {"stage": "photo_to_link"})
    return float(value or 0.0)


async def test_a_retried_jobs_photo_to_link_runs_from_the_accepted_photo_not_the_retry(
    db: Database, delivery: PackDelivery
) -> None:
    job = await delivering_job(db)
    now = datetime.now(UTC)
    async with db.transaction() as repos:
        # the photo accepted 20 min ago; an admin Retry started this run (created_at) 2 min ago
        await repos.conn.execute(
            sa.update(job_events).where(job_events.c.job_id == job.id).values(at=now - timedelta(minutes=20))
        )
        await repos.conn.execute(
            sa.update(jobs).where(jobs.c.id == job.id).values(created_at=now - timedelta(minutes=2))
        )
    await delivery.on_poll(job.id, ready(job))
    before = photo_to_link_sum()
    await delivery.handle_result(
        TelegramResult(
            command_id=f"job:{job.id}:link",
            ok=True,
            result={"message_id": 7},
            subject=JobStep(id=job.id, step="link", n=1),
        )
    )
    assert (await status(db, job)).status == "delivered"
    assert photo_to_link_sum() - before == pytest.approx(20 * 60, abs=30)
