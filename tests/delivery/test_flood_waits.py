"""Delivery honours Telegram's ``retry_after``: a 429 result reschedules the step durably in Postgres
(``jobs.next_poll_at``, the next attempt's command) instead of failing the job or looping (issue 8)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.deadlines import resend_flooded_texts
from shared.commands import SendMessage, load
from shared.db.tables import jobs, tg_commands
from shared.domain import Job
from shared.joblife import failure_command_id
from shared.messages import TelegramErrorInfo, TelegramResult
from shared.repositories import Database
from shared.streams import Publisher
from tests.delivery.delivery_helpers import Rig, current, gateway_rig
from tests.simulators.tgsim_helpers import png

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST = 5001


def flood(seconds: int) -> TelegramErrorInfo:
    return TelegramErrorInfo(
        error_code=429, description=f"Too Many Requests: retry after {seconds}", retry_after=seconds
    )


async def flooded(
    db: Database, command_id: str, method: str, params: dict[str, Any], *, retry_after: int
) -> None:
    """A command the gateway sent and Telegram answered with 429 ``retry_after`` seconds (no reply stream)."""
    async with db.transaction() as repos:
        await repos.tg_commands.add(command_id, method=method, params=params, reply_to=None)
        await repos.tg_commands.start_sending(command_id, stale_after=timedelta(0))
        await repos.tg_commands.finish(command_id, ok=False, error=flood(retry_after).model_dump())


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


async def commands(db: Database, prefix: str) -> list[str]:
    async with db.transaction() as repos:
        return [r.command_id for r in await repos.tg_commands.with_prefix(prefix)]


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


def about(moment: datetime | None, seconds_from_now: float) -> bool:
    expected = datetime.now(UTC) + timedelta(seconds=seconds_from_now)
    return moment is not None and abs((moment - expected).total_seconds()) < 10


async def test_a_429_on_creating_the_set_is_tried_again_after_retry_after_and_one_set_is_made(
    rig: Rig,
) -> None:
    job = await job_in(rig.db, "rendered")
    await rig.sim.post(
        "/sim/faults", {"method": "createNewStickerSet", "error_code": 429, "retry_after": 120}
    )
    await rig.delivery.request_set(job.id)
    await rig.step()
    flooded = await current(rig.db, job)
    assert flooded.status == "rendered" and about(flooded.next_poll_at, 120)  # not failed: rescheduled
    await rig.delivery.retry_flooded_sets()  # not yet due
    await rig.delivery.republish_rendered()  # nor through the reconciler
    assert await commands(rig.db, f"job:{job.id}:create_set") == [f"job:{job.id}:create_set"]

    await let_time_pass(rig.db, 121)
    rig.clock.offset += 121
    assert await rig.delivery.retry_flooded_sets() == 1
    await rig.step()
    assert await commands(rig.db, f"job:{job.id}:create_set") == [
        f"job:{job.id}:create_set",
        f"job:{job.id}:create_set:2",
    ]
    assert (await current(rig.db, job)).status == "delivering"
    assert [c["ok"] for c in await rig.calls("createNewStickerSet")] == [False, True]
    assert len(await rig.sim.get("/sim/sticker-sets")) == 1


async def test_a_429_on_the_link_waits_retry_after_and_is_not_counted_as_a_failed_send(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    ready = TelegramResult(command_id=f"job:{job.id}:poll:1", ok=True, result={"sticker_count": 12})
    for _ in range(4):  # more 429s than LINK_ATTEMPTS (3): none of them is a failed send
        await rig.sim.post("/sim/faults", {"method": "sendMessage", "error_code": 429, "retry_after": 60})
        await rig.delivery.on_poll(job.id, ready)
        await rig.step()
        flooded = await current(rig.db, job)
        assert flooded.status == "delivering" and about(flooded.next_poll_at, 60)
        await let_time_pass(rig.db, 61)
        rig.clock.offset += 61
    await rig.delivery.on_poll(job.id, ready)
    await rig.step()
    assert (await current(rig.db, job)).status == "delivered"
    links = await commands(rig.db, f"job:{job.id}:link")
    assert links == [f"job:{job.id}:link"] + [f"job:{job.id}:link:{n}" for n in range(2, 6)]
    messages = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    (link,) = [m["text"] for m in messages if m["from_bot"]]  # sent once, after four 429s
    assert "https://t.me/addstickers/sbx_by_stickerbooth_bot" in link


async def test_a_429_on_a_readiness_poll_moves_the_next_poll_to_the_retry_time(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    await rig.delivery.handle_result(
        TelegramResult(command_id=f"job:{job.id}:poll:1", ok=False, error=flood(300))
    )
    assert about((await current(rig.db, job)).next_poll_at, 300)


async def test_a_flood_controlled_failure_text_is_sent_again_after_retry_after_once(
    db: Database, redis: aioredis.Redis
) -> None:
    job = await job_in(db, "failed", stickers=0)
    failure = failure_command_id(job)
    params = {"chat_id": GUEST, "text": "Something went wrong"}
    await flooded(db, failure, "send_message", params, retry_after=30)
    publisher = Publisher(redis)
    assert await resend_flooded_texts(db, publisher, deadline_s=900) == 0  # the wait is not over
    await let_time_pass(db, 31)
    assert await resend_flooded_texts(db, publisher, deadline_s=900) == 1
    assert await resend_flooded_texts(db, publisher, deadline_s=900) == 0  # queued once
    async with db.transaction() as repos:
        again = await repos.tg_commands.get(f"{failure}:again")
    assert again is not None and again.status == "pending"
    assert load(again.method, again.params) == SendMessage(chat_id=GUEST, text="Something went wrong")


async def test_a_flood_controlled_still_working_notice_of_a_failed_job_is_dropped(
    db: Database, redis: aioredis.Redis
) -> None:
    job = await job_in(db, "failed", stickers=0)
    notice = f"job:{job.id}:still_working:{int(job.created_at.timestamp())}"
    await flooded(db, notice, "send_message", {"chat_id": GUEST, "text": "…"}, retry_after=5)
    await let_time_pass(db, 6)
    assert await resend_flooded_texts(db, Publisher(redis), deadline_s=900) == 0


@pytest.mark.parametrize(("status", "resent"), [("processing", 1), ("delivered", 0)])
async def test_a_flood_controlled_generating_text_is_resent_only_while_the_job_is_still_in_the_works(
    db: Database, redis: aioredis.Redis, status: str, resent: int
) -> None:
    job = await job_in(db, status, stickers=0)
    generating = f"job:{job.id}:generating"
    await flooded(db, generating, "send_message", {"chat_id": GUEST, "text": "…"}, retry_after=5)
    await let_time_pass(db, 6)
    assert await resend_flooded_texts(db, Publisher(redis), deadline_s=900) == resent


async def test_a_flood_controlled_admin_alert_is_sent_again_after_retry_after(
    db: Database, redis: aioredis.Redis
) -> None:
    alert = "alert:0123456789abcdef:1"
    await flooded(db, alert, "send_admin_message", {"text": "Job X FAILED"}, retry_after=5)
    await let_time_pass(db, 6)
    assert await resend_flooded_texts(db, Publisher(redis), deadline_s=900) == 1
    async with db.transaction() as repos:
        again = await repos.tg_commands.get(f"{alert}:again")
    assert again is not None and again.method == "send_admin_message"
