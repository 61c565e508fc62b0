"""Delivery under Telegram's flood control (issue 8, issue 21): a long ``retry_after`` is the outbox's
business: the gateway defers the same row and sends it when the wait is over, so the set is created once,
a flood wait is never one of the link's attempts, and a job that fails cancels its pending "still working"
notice while its failure text still arrives after the wait."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.deadlines import enforce_deadlines
from shared import command_ids
from shared.db.tables import jobs, tg_commands
from shared.domain import Job, TelegramCommandRecord
from shared.joblife import failure_command_id, retry_failed_job
from shared.messages import TelegramResult
from shared.repositories import Database
from shared.streams import Publisher
from shared.subjects import JobStep
from tests.delivery.delivery_helpers import Rig, current, gateway_rig
from tests.simulators.tgsim_helpers import png

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST = 5001


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AsyncIterator[Rig]:
    async with gateway_rig(db, redis, database_url, redis_url, guest=GUEST, first_name="Ann") as rig:
        yield rig


async def job_in(db: Database, status: str, *, stickers: int = 12, created_ago_s: float = 60) -> Job:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=f"t-{status}")
        await repos.sessions.bind_telegram(
            session.token, user_id=GUEST, chat_id=GUEST, name="A", language="en"
        )
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(stickers):
            await repos.blobs.put(
                kind="sticker",
                data=png(seed=i),
                content_type="image/png",
                job_id=job.id,
                position=i,
                meta={"emoji": "😀"},
            )
        values: dict[str, Any] = {
            "status": status,
            "created_at": sa.func.now() - timedelta(seconds=created_ago_s),
        }
        if status == "delivering":
            values["sticker_set_name"] = "sbx_by_stickerbooth_bot"
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(**values))
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current


async def let_time_pass(db: Database, seconds: float) -> None:
    """Move the rows' clocks back by ``seconds`` (as if that much time had passed)."""
    async with db.transaction() as repos:
        shift = timedelta(seconds=seconds)
        await repos.conn.execute(sa.update(tg_commands).values(updated_at=tg_commands.c.updated_at - shift))
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.next_poll_at.is_not(None))
            .values(next_poll_at=jobs.c.next_poll_at - shift)
        )


async def rows(db: Database, job: Job, step: str) -> list[TelegramCommandRecord]:
    """The job's commands of ``step``, found by subject, oldest first."""
    async with db.transaction() as repos:
        return await repos.tg_commands.for_subject("job", job.id, step=step)


async def deferred(db: Database, job: Job, step: str, *, attempt: int) -> TelegramCommandRecord:
    """The job's one command of ``step``, pending again as attempt ``attempt`` with a ``not_before``."""
    (record,) = await rows(db, job, step)
    assert record.status == "pending" and record.attempt == attempt and record.not_before is not None
    return record


async def test_a_429_on_creating_the_set_defers_the_same_command_and_one_set_is_made(rig: Rig) -> None:
    job = await job_in(rig.db, "rendered")
    await rig.sim.post(
        "/sim/faults", {"method": "createNewStickerSet", "error_code": 429, "retry_after": 120}
    )
    await rig.delivery.request_set(job.id)
    await rig.step()
    assert (await current(rig.db, job)).status == "rendered"  # not failed: waiting in the outbox
    await deferred(rig.db, job, "create_set", attempt=2)
    await rig.delivery.republish_rendered()  # delivery's reconciler hints it again: nothing goes early
    await rig.step()
    assert [c["ok"] for c in await rig.calls("createNewStickerSet")] == [False]

    assert await rig.wait_passes(121) == [command_ids.create_set(job.id)]
    (created,) = await rows(rig.db, job, "create_set")
    assert created.command_id == command_ids.create_set(job.id) and created.status == "sent"
    assert (await current(rig.db, job)).status == "delivering"
    assert [c["ok"] for c in await rig.calls("createNewStickerSet")] == [False, True]
    assert len(await rig.sim.get("/sim/sticker-sets")) == 1


async def test_429s_on_the_link_are_not_link_attempts_and_the_link_is_sent_once(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    ready = TelegramResult(
        command_id=f"job:{job.id}:poll:1",
        ok=True,
        result={"sticker_count": 12},
        subject=JobStep(id=job.id, step="poll", n=1),
    )
    fault = {"method": "sendMessage", "error_code": 429, "retry_after": 60, "count": 4}
    await rig.sim.post("/sim/faults", fault)  # more 429s than LINK_ATTEMPTS (3)
    await rig.delivery.handle_result(ready)
    await rig.step()
    for attempt in range(2, 6):
        await deferred(rig.db, job, "link", attempt=attempt)
        assert (await current(rig.db, job)).status == "delivering"
        await rig.wait_passes(61)
    assert (await current(rig.db, job)).status == "delivered"
    (link,) = await rows(rig.db, job, "link")  # one link command, never a second attempt
    assert link.command_id == f"job:{job.id}:link" and link.status == "sent" and link.attempt == 5
    messages = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    (text,) = [m["text"] for m in messages if m["from_bot"]]  # sent once, after four 429s
    assert "https://t.me/addstickers/sbx_by_stickerbooth_bot" in text


async def test_a_job_that_fails_cancels_its_pending_notice_and_its_failure_text_comes_after_the_wait(
    rig: Rig,
) -> None:
    job = await job_in(rig.db, "processing", stickers=0, created_ago_s=400)
    publisher = Publisher(rig.redis)
    fault = {"method": "sendMessage", "chat_id": GUEST, "error_code": 429, "retry_after": 120, "count": 1}
    await rig.sim.post("/sim/faults", fault)
    assert await enforce_deadlines(rig.db, publisher, notice_after_s=300, deadline_s=900) == (0, 1)
    await rig.step()
    notice = await deferred(rig.db, job, "still_working", attempt=2)
    assert notice.expires_at == job.created_at + timedelta(seconds=900)  # no use after the deadline

    assert await enforce_deadlines(rig.db, publisher, notice_after_s=300, deadline_s=350) == (1, 0)
    (cancelled,) = await rows(rig.db, job, "still_working")  # in the transaction that failed the job
    assert cancelled.status == "cancelled"
    await rig.step()  # the failure text meets the chat's pause: deferred too, not dropped
    await deferred(rig.db, job, "failure_text", attempt=2)

    await rig.wait_passes(121)
    (failure,) = await rows(rig.db, job, "failure_text")
    assert failure.command_id == failure_command_id(job) and failure.status == "sent"
    messages = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    (text,) = [m["text"] for m in messages if m["from_bot"]]  # the failure text only, never the notice
    assert "still working" not in text.lower()


async def test_a_delivered_job_cancels_its_pending_generating_text_but_a_sent_one_stays(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    async with rig.db.transaction() as repos:
        for command_id, step in (
            (f"job:{job.id}:generating", "generating"),
            ("sent-notice", "still_working"),
        ):
            n = None if step == "generating" else 1
            subject = JobStep(id=job.id, step=step, n=n)  # type: ignore[arg-type]
            await repos.tg_commands.add(
                command_id,
                method="send_message",
                params={"chat_id": GUEST, "text": "…"},
                reply_to=None,
                subject=subject,
            )
        await repos.tg_commands.start_sending("sent-notice", stale_after=timedelta(0))
        await repos.tg_commands.finish("sent-notice", ok=True, result={"message_id": 3})
        await repos.jobs.mark_delivered(job.id, link_sent_at=job.created_at)
    assert [r.status for r in await rows(rig.db, job, "generating")] == ["cancelled"]
    assert [r.status for r in await rows(rig.db, job, "still_working")] == ["sent"]


async def test_an_admin_retry_cancels_the_failed_runs_pending_failure_text(rig: Rig) -> None:
    job = await job_in(rig.db, "processing", stickers=0, created_ago_s=400)
    fault = {"method": "sendMessage", "chat_id": GUEST, "error_code": 429, "retry_after": 120, "count": 1}
    await rig.sim.post("/sim/faults", fault)
    assert await enforce_deadlines(rig.db, Publisher(rig.redis), notice_after_s=900, deadline_s=350) == (1, 0)
    await rig.step()
    await deferred(rig.db, job, "failure_text", attempt=2)  # held by the chat's 120 s pause
    async with rig.db.transaction() as repos:
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        assert await retry_failed_job(repos, job.id, note="admin retry") is not None
    (cancelled,) = await rows(rig.db, job, "failure_text")  # in the retry's own transaction
    assert cancelled.status == "cancelled"
    await rig.wait_passes(121)
    messages = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    assert [m["text"] for m in messages if m["from_bot"]] == []  # never "something went wrong"


async def old_gateway_flooded(db: Database, command_id: str, *, backfilled: bool = False) -> None:
    """As the pre-0010 gateway left a 429: ``failed``, the error stored, no subject unless
    ``backfilled``."""
    error = {"error_code": 429, "description": "Too Many Requests: retry after 30", "retry_after": 30}
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.update(tg_commands)
            .where(tg_commands.c.command_id == command_id)
            .values(status="failed", error=error, **({} if backfilled else {"subject": sa.null()}))
        )


async def test_a_set_creation_an_old_gateway_failed_with_a_429_is_sent_after_the_upgrade(rig: Rig) -> None:
    import importlib

    migration = importlib.import_module("shared.migrations.versions.0010_command_subjects")
    job = await job_in(rig.db, "rendered")
    await rig.delivery.request_set(job.id)
    await old_gateway_flooded(rig.db, command_ids.create_set(job.id))
    async with rig.db.transaction() as repos:  # the upgrade: backfill, then the orphans pended again
        for statement in migration.backfill_statements():
            await repos.conn.execute(statement)
        await repos.conn.execute(migration.REPEND)
    await rig.delivery.request_set(job.id)  # the new delivery's reconciler: hints the pended row
    await rig.wait_passes(31)
    assert (await current(rig.db, job)).status in ("delivering", "delivered")
    assert len(await rig.calls("createNewStickerSet")) == 1


async def test_link_sends_an_old_gateway_failed_with_a_429_are_not_link_attempts(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    for n in (1, 2, 3):  # the old code asked the next attempt after each 429
        command_id = command_ids.link(job.id, n)
        async with rig.db.transaction() as repos:
            await repos.tg_commands.add(
                command_id,
                method="send_message",
                params={"chat_id": GUEST, "text": "link"},
                reply_to="delivery",
                subject=JobStep(id=job.id, step="link", n=n),
            )
        await old_gateway_flooded(rig.db, command_id, backfilled=True)
    await rig.delivery.advance_link(job.id)
    assert command_ids.link(job.id, 4) in await rig.step()
    assert (await current(rig.db, job)).status == "delivered"
