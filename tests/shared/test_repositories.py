"""Repositories on real Postgres with the real migrations: conditional transitions and idempotent inserts."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
import sqlalchemy as sa

from shared.db.tables import jobs
from shared.domain import Job, JobStatus
from shared.repositories import Database

pytestmark = pytest.mark.integration


async def new_job(db: Database, capture: str = "c1") -> tuple[str, Job]:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s1", token=f"tok-{capture}")
        await repos.sessions.bind_telegram(session.token, user_id=5, chat_id=5, name="Ann", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id=capture, outfit_id="astronaut")
    return session.token, job


async def test_two_workers_claiming_one_job_produce_one_winner(db: Database) -> None:
    _token, job = await new_job(db)

    async def claim(owner: str) -> Job | None:
        async with db.transaction() as repos:
            return await repos.jobs.claim(job.id, owner=owner)

    results = await asyncio.gather(*(claim(f"w{i}") for i in range(8)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    async with db.transaction() as repos:
        events = await repos.jobs.events(job.id)
    assert [(e[0], e[1]) for e in events] == [(None, "queued"), ("queued", "processing")]


async def test_a_transition_from_the_wrong_state_changes_nothing(db: Database) -> None:
    _token, job = await new_job(db)
    async with db.transaction() as repos:
        assert await repos.jobs.mark_rendered(job.id, owner="w", stickers=12) is None
        current = await repos.jobs.get(job.id)
        events = await repos.jobs.events(job.id)
    assert current is not None and current.status is JobStatus.QUEUED
    assert len(events) == 1


async def test_a_job_that_is_not_due_yet_cannot_be_claimed(db: Database) -> None:
    from datetime import UTC, datetime

    _token, job = await new_job(db)
    async with db.transaction() as repos:
        later = datetime.now(UTC) + timedelta(minutes=1)
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(not_before=later))
        assert await repos.jobs.claim(job.id, owner="w") is None


async def test_binding_a_token_twice_by_the_same_user_works_but_another_user_is_refused(db: Database) -> None:
    token, _job = await new_job(db)
    async with db.transaction() as repos:
        again = await repos.sessions.bind_telegram(token, user_id=5, chat_id=5, name="Ann", language="en")
        other = await repos.sessions.bind_telegram(token, user_id=6, chat_id=6, name="Bob", language="en")
        unknown = await repos.sessions.bind_telegram("nope", user_id=6, chat_id=6, name="Bob", language="en")
    assert again is not None and again.tg_user_id == 5
    assert other is None and unknown is None


async def test_a_lead_submitted_twice_at_once_is_stored_once(db: Database) -> None:
    async def submit() -> tuple[int, bool]:
        async with db.transaction() as repos:
            stored = await repos.leads.submit(
                request_id="req-123456",
                name="Ann",
                contact="+1000000",
                contact_kind="phone",
                contact_key="tel:+1000000",
                message="hi",
                source_page=None,
                utm={},
            )
            return stored.lead.id, stored.created

    results = await asyncio.gather(*(submit() for _ in range(5)))
    assert len({lead_id for lead_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_a_command_read_locked_as_sending_cannot_be_released_before_its_claim(db: Database) -> None:
    """The executor reads a row locked and decides from its status whether a ``sending`` row is a dead
    call's: another call's release (``sending → pending``) in between would let it claim a fresh row and
    fail it "outcome unknown" unsent (review of issue 21)."""
    async with db.transaction() as repos:
        await repos.tg_commands.add("cmd-lock", method="send_message", params={"chat_id": 1}, reply_to=None)
        assert await repos.tg_commands.start_sending("cmd-lock", stale_after=timedelta(seconds=60))

    async def release() -> None:
        async with db.transaction() as repos:
            await repos.tg_commands.release("cmd-lock")

    async with db.transaction() as repos:
        record = await repos.tg_commands.get("cmd-lock", lock=True)
        assert record is not None and record.status == "sending"
        releasing = asyncio.create_task(release())
        waiting = sa.text(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        for _ in range(200):  # until the release waits on the row lock (10 s, else it never does)
            # one transaction per look: Postgres keeps a transaction's first view of pg_stat_activity until
            # it ends, so a look taken before the release reached the server would be all it ever saw
            async with db.transaction() as probe:
                if (await probe.conn.execute(waiting)).scalar_one():
                    break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the release was not held back by the row lock")
        assert not releasing.done()
        assert await repos.tg_commands.start_sending("cmd-lock", stale_after=timedelta(seconds=60)) is None
    await releasing
    async with db.transaction() as repos:
        after = await repos.tg_commands.get("cmd-lock")
    assert after is not None and after.status == "pending"  # released for a later run, never failed unsent


async def test_a_telegram_command_is_recorded_once_and_sent_at_most_once(db: Database) -> None:
    async with db.transaction() as repos:
        assert await repos.tg_commands.add(
            "cmd-1", method="send_message", params={"chat_id": 1}, reply_to=None
        )
        assert not await repos.tg_commands.add(
            "cmd-1", method="send_message", params={"chat_id": 2}, reply_to=None
        )
    stale = timedelta(seconds=60)
    async with db.transaction() as repos:
        first = await repos.tg_commands.start_sending("cmd-1", stale_after=stale)
        second = await repos.tg_commands.start_sending("cmd-1", stale_after=stale)
    assert first is not None and first.params == {"chat_id": 1}
    assert second is None
    async with db.transaction() as repos:
        await repos.tg_commands.finish("cmd-1", ok=True, result={"message_id": 9})
        assert await repos.tg_commands.start_sending("cmd-1", stale_after=timedelta(0)) is None
        record = await repos.tg_commands.get("cmd-1")
    assert record is not None and record.status == "sent" and record.result == {"message_id": 9}


async def test_unreachable_postgres_raises_database_unavailable() -> None:
    from shared.db import create_engine
    from shared.errors import DatabaseUnavailable

    dead = Database(create_engine("postgresql://postgres@127.0.0.1:1/nothing", connect_timeout_s=1))
    with pytest.raises(DatabaseUnavailable):
        await dead.ping()
    await dead.dispose()
