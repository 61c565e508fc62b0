"""``POST /admin/erasures``: an operator erases a guest by Telegram user id or by job id, behind the token;
rows and blobs go at once, the sticker set's deletion is queued for the gateway."""

from __future__ import annotations

from uuid import UUID, uuid4

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import command_ids, streams
from shared.db.tables import blobs, jobs, sessions
from shared.repositories import Database
from tests.ingest.conftest import ADMIN_AUTH

pytestmark = pytest.mark.integration
AUTH = ADMIN_AUTH


async def guest_job(db: Database, user_id: int | None, token: str, *, with_set: bool = True) -> UUID:
    """A session (bound to ``user_id`` when given) with one delivering job, a selfie-free sticker blob."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=token)
        if user_id is not None:
            await repos.sessions.bind_telegram(
                token, user_id=user_id, chat_id=user_id, name="A", language="en"
            )
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(
            kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=0
        )
        if with_set:
            await repos.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job.id)
                .values(status="delivered", sticker_set_name=f"sb{job.id.hex}_by_stickerbooth_bot")
            )
    return job.id


async def counts(db: Database) -> tuple[int, int, int]:
    async with db.transaction() as repos:
        found = [
            int(await repos.conn.scalar(sa.select(sa.func.count()).select_from(t)) or 0)
            for t in (sessions, jobs, blobs)
        ]
    return found[0], found[1], found[2]


async def test_erasure_needs_the_token_and_exactly_one_guest(admin_client: httpx.AsyncClient) -> None:
    assert (await admin_client.post("/admin/erasures", json={"tg_user_id": 5})).status_code == 401
    assert (await admin_client.post("/admin/erasures", json={}, headers=AUTH)).status_code == 422
    both = {"tg_user_id": 5, "job_id": str(uuid4())}
    assert (await admin_client.post("/admin/erasures", json=both, headers=AUTH)).status_code == 422


@pytest.mark.parametrize("user_id", [2**63, 10**30, True, "42", 0, -1])
async def test_a_user_id_telegram_cannot_have_is_a_422_not_a_500(
    admin_client: httpx.AsyncClient, user_id: object
) -> None:
    """Beyond Postgres' bigint (2**63 was a 500 and a dropped connection), a bool, a string, not positive."""
    response = await admin_client.post("/admin/erasures", json={"tg_user_id": user_id}, headers=AUTH)
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request", (
        response.text
    )


async def test_an_admin_erases_a_guest_by_telegram_user(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    first = await guest_job(db, 77, "t1")
    second = await guest_job(db, 77, "t2")  # the same guest at the booth twice
    await guest_job(db, 88, "t3")  # someone else
    response = await admin_client.post("/admin/erasures", json={"tg_user_id": 77}, headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["found"] is True and body["sticker_sets_queued"] == 2
    assert body["deleted"]["sessions"] == 2 and body["deleted"]["jobs"] == 2 and body["deleted"]["blobs"] == 2
    assert await counts(db) == (1, 1, 1)
    async with db.transaction() as repos:
        for job_id in (first, second):
            name = f"sb{job_id.hex}_by_stickerbooth_bot"
            command = await repos.tg_commands.get(command_ids.erase_set(name))
            assert command is not None and command.method == "delete_sticker_set"
            assert command.params["name"] == name
    assert await redis.xlen(streams.TG_OUTBOX) == 2
    again = await admin_client.post("/admin/erasures", json={"tg_user_id": 77}, headers=AUTH)
    assert again.json()["found"] is False and again.json()["sticker_sets_queued"] == 0


async def test_an_admin_erases_the_guest_of_a_job(admin_client: httpx.AsyncClient, db: Database) -> None:
    job_id = await guest_job(db, 77, "t1")
    await guest_job(db, 77, "t2")
    unbound = await guest_job(db, None, "t3", with_set=False)
    await guest_job(db, 88, "t4")
    response = await admin_client.post("/admin/erasures", json={"job_id": str(job_id)}, headers=AUTH)
    assert response.status_code == 200 and response.json()["deleted"]["sessions"] == 2
    assert await counts(db) == (2, 2, 2)
    response = await admin_client.post("/admin/erasures", json={"job_id": str(unbound)}, headers=AUTH)
    body = response.json()
    assert body["deleted"]["sessions"] == 1 and body["sticker_sets_queued"] == 0
    assert await counts(db) == (1, 1, 1)
    unknown = await admin_client.post("/admin/erasures", json={"job_id": str(uuid4())}, headers=AUTH)
    assert unknown.status_code == 200 and unknown.json()["found"] is False
