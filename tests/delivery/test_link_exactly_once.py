"""The guest gets the link exactly once, and a set that exists is linked even after the deadline (issue 19).

Delivery and the gateway's real executor on the Telegram simulator, stepped by hand: the answer to the
link's ``sendMessage`` is lost (the connection dropped or a 500) before or after Telegram applied it, and
Telegram is asked (``editMessageReplyMarkup`` probes) whether the link is in the chat before it is sent
again. Before, an unknown outcome counted as delivered: a guest whose link was never applied got only the
preview sticker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.deadlines import enforce_deadlines
from shared.db.tables import job_events, jobs, tg_commands
from shared.domain import Job
from shared.repositories import Database
from shared.streams import Publisher
from shared.subjects import JobStep
from tests.delivery.delivery_helpers import Rig, current, gateway_rig, rendered_job
from tests.delivery.test_flood_waits import GUEST, job_in, let_time_pass

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]
LINK_TEXT = "t.me/addstickers/"
#: The link fault aimed at the link message only (not the other texts to the guest's chat).
LOST = {"method": "sendMessage", "chat_id": GUEST, "text_contains": LINK_TEXT}


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AsyncIterator[Rig]:
    async with gateway_rig(db, redis, database_url, redis_url, guest=GUEST, first_name="Ann") as rig:
        yield rig


async def bot_messages(rig: Rig) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = await rig.sim.get(f"/sim/chats/{GUEST}/messages")
    return [m for m in messages if m["from_bot"]]


async def deliver(rig: Rig, job: Job, *, rounds: int = 20) -> Job:
    """Run the gateway and delivery until the job is final; a round with nothing to do lets the link
    retry delay pass and runs the sweeper's poll."""
    await rig.delivery.request_set(job.id)
    for _ in range(rounds):
        if not await rig.step():
            await let_time_pass(rig.db, 5)
            await rig.delivery.poll_due()
        now = await current(rig.db, job)
        if now.status in ("delivered", "failed"):
            return now
    raise AssertionError(f"job still {now.status}")


def links(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if LINK_TEXT in (m.get("text") or "")]


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "drop_after_apply"},  # the connection closed after Telegram sent it
        {"kind": "error_after_apply", "error_code": 500},  # a 500 although it was sent
    ],
    ids=["dropped-after-apply", "500-after-apply"],
)
async def test_a_link_whose_answer_was_lost_after_it_was_sent_is_found_and_not_sent_again(
    rig: Rig, fault: dict[str, Any]
) -> None:
    await rig.sim.post("/sim/faults", {**LOST, **fault})
    job = await deliver(rig, await rendered_job(rig.db, guest=GUEST))
    assert job.status == "delivered"
    messages = await bot_messages(rig)
    assert len(links(messages)) == 1  # found by the search: never twice
    assert len([m for m in messages if m.get("sticker")]) == 1  # the preview, once
    async with rig.db.transaction() as repos:
        searches = await repos.tg_commands.for_subject("job", job.id, step="find_link")
    assert [s.result["message_id"] for s in searches] == [links(messages)[0]["message_id"]]


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "drop"},  # the connection closed before Telegram applied it
        {"kind": "error", "error_code": 500},  # a 500, nothing sent
        {"kind": "error", "error_code": 502, "description": "Bad Gateway"},
    ],
    ids=["dropped-before", "500", "502"],
)
async def test_a_link_whose_answer_was_lost_before_it_was_sent_is_sent_again_once(
    rig: Rig, fault: dict[str, Any]
) -> None:
    await rig.sim.post("/sim/faults", {**LOST, **fault})
    job = await deliver(rig, await rendered_job(rig.db, guest=GUEST))
    assert job.status == "delivered"
    messages = await bot_messages(rig)
    assert len(links(messages)) == 1  # before: none (the unknown outcome counted as delivered)
    assert len([m for m in messages if m.get("sticker")]) == 1
    assert [c["ok"] for c in await rig.calls("sendMessage")] == [False, True]


async def test_every_link_attempt_lost_after_it_was_sent_still_reaches_the_guest_once(rig: Rig) -> None:
    await rig.sim.post("/sim/faults", {**LOST, "kind": "drop_after_apply", "count": 5})
    job = await deliver(rig, await rendered_job(rig.db, guest=GUEST))
    assert job.status == "delivered"
    assert len(links(await bot_messages(rig))) == 1


# --- past the deadline ------------------------------------------------------------------------------


async def age(db: Database, job: Job, seconds: float) -> None:
    """The job's photo was accepted ``seconds`` ago (its run and its first event)."""
    async with db.transaction() as repos:
        back = timedelta(seconds=seconds)
        await repos.conn.execute(
            sa.update(jobs).where(jobs.c.id == job.id).values(created_at=sa.func.now() - back)
        )
        await repos.conn.execute(
            sa.update(job_events).where(job_events.c.job_id == job.id).values(at=job_events.c.at - back)
        )


async def test_a_link_held_by_a_flood_wait_past_the_deadline_is_sent_late_with_sorry_never_failed(
    rig: Rig,
) -> None:
    job = await rendered_job(rig.db, guest=GUEST)
    await age(rig.db, job, 14 * 60)
    await rig.sim.post("/sim/faults", {**LOST, "error_code": 429, "retry_after": 120})
    await rig.delivery.request_set(job.id)
    for _ in range(3):  # the set is created, found complete, and its link is flood-held
        await rig.step()
    async with rig.db.transaction() as repos:
        (link,) = await repos.tg_commands.for_subject("job", job.id, step="link")
    assert link.status == "pending" and link.attempt == 2  # deferred by the gateway until the wait ends
    assert (await current(rig.db, job)).status == "delivering"
    async with rig.db.transaction() as repos:  # 2 minutes pass: the deadline passes while the link waits
        back = timedelta(minutes=2)
        await repos.conn.execute(sa.update(tg_commands).values(created_at=tg_commands.c.created_at - back))
        await repos.conn.execute(sa.update(jobs).values(created_at=jobs.c.created_at - back))
        await repos.conn.execute(sa.update(job_events).values(at=job_events.c.at - back))
    failed, _ = await enforce_deadlines(rig.db, Publisher(rig.redis), notice_after_s=300, deadline_s=900)
    assert failed == 0 and (await current(rig.db, job)).status == "delivering"  # before: failed
    async with rig.db.transaction() as repos:  # its words said nothing of the wait: queued again, late
        assert [r.status for r in await repos.tg_commands.for_subject("job", job.id, step="link")] == [
            "cancelled"
        ]

    await rig.wait_passes(121)
    await rig.delivery.poll_due()
    for _ in range(3):
        await rig.step()
    assert (await current(rig.db, job)).status == "delivered"
    texts = [m["text"] for m in await bot_messages(rig) if m.get("text")]
    assert len(texts) == 1 and texts[0].startswith("Sorry for the wait")
    assert LINK_TEXT in texts[0]


async def test_a_job_whose_set_is_still_incomplete_at_the_deadline_fails_as_before(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    await age(rig.db, job, 16 * 60)
    failed, _ = await enforce_deadlines(rig.db, Publisher(rig.redis), notice_after_s=300, deadline_s=900)
    assert failed == 1 and (await current(rig.db, job)).status == "failed"


async def test_a_link_after_a_failure_text_says_so_honestly(rig: Rig) -> None:
    job = await job_in(rig.db, "delivering")
    failure = f"job:{job.id}:failure_text:1"
    async with rig.db.transaction() as repos:  # the guest was told "something went wrong" before
        await repos.tg_commands.add(
            failure,
            method="send_message",
            params={"chat_id": GUEST, "text": "x"},
            reply_to=None,
            subject=JobStep(id=job.id, step="failure_text", n=1),
        )
        await repos.tg_commands.start_sending(failure, stale_after=timedelta(0))
        await repos.tg_commands.finish(failure, ok=True, result={"message_id": 1})
    await rig.delivery.advance_link(job.id)
    await rig.step()
    (text,) = [m["text"] for m in await bot_messages(rig) if m.get("text")]
    assert text.startswith("We wrote earlier that something went wrong") and LINK_TEXT in text
