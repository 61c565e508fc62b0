"""``POST /admin/erasures``: an operator erases a guest by Telegram user id or by job id, behind the token;
rows and blobs go at once, the sticker set's deletion is queued for the gateway."""

from __future__ import annotations

from uuid import UUID, uuid4

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import command_ids, streams
from shared.commands import CreateStickerSet, SendMessage
from shared.db.tables import blobs, jobs, lead_repeats, leads, sessions, tg_commands
from shared.outbox import add_command
from shared.repositories import Database
from shared.subjects import JobStep, PostStep, UpdateReply
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


async def test_an_admin_erases_a_landing_visitor_by_contact(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    """Issue 19: a lead can be erased on request, named by the contact as the form collects it (written
    any way the form accepts); its posted card and notice are blanked through the outbox."""
    base = {"name": "Maria", "message": "300 guests", "consent": True}
    for request_id, contact in [("req-a0000001", "+7 999 000-00-00"), ("req-a0000002", "8 (999) 000 00 00")]:
        answer = await admin_client.post("/leads", json={**base, "requestId": request_id, "contact": contact})
        assert answer.status_code == 201, answer.text
    other = {**base, "requestId": "req-b0000001", "contact": "ann@example.com", "name": "Ann"}
    assert (await admin_client.post("/leads", json=other)).status_code == 201
    async with db.transaction() as repos:  # as the leads service leaves them once posted
        [(lead_id,)] = (
            await repos.conn.execute(sa.select(leads.c.id).where(leads.c.contact_key == "tel:+79990000000"))
        ).all()
        await repos.conn.execute(
            sa.update(leads).where(leads.c.id == lead_id).values(card_chat_id=-100, card_message_id=10)
        )
        await repos.conn.execute(
            sa.update(lead_repeats).where(lead_repeats.c.lead_id == lead_id).values(message_id=11)
        )
        [(repeat_id,)] = (await repos.conn.execute(sa.select(lead_repeats.c.id))).all()
        card = SendMessage(chat_id=-100, text="Maria +7 999 000-00-00 300 guests")
        card_sent = PostStep(id=lead_id, post="card", op="send", n=1)
        notice_sent = PostStep(id=repeat_id, post="notice", op="send", n=1)
        await add_command(repos, command_ids.send_post("card", lead_id, 1), card, subject=card_sent)
        await add_command(repos, command_ids.send_post("notice", repeat_id, 1), card, subject=notice_sent)
    await redis.delete(streams.TG_OUTBOX)

    bad = await admin_client.post("/admin/erasures", json={"contact": "not a contact"}, headers=AUTH)
    assert bad.status_code == 422
    both = {"contact": "+79990000000", "tg_user_id": 5}
    assert (await admin_client.post("/admin/erasures", json=both, headers=AUTH)).status_code == 422
    response = await admin_client.post("/admin/erasures", json={"contact": "+79990000000"}, headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "found": True,
        "deleted": {"leads": 1, "lead_repeats": 1, "tg_commands": 2},
        "lead_posts_queued": 2,
    }
    async with db.transaction() as repos:
        kept = (await repos.conn.execute(sa.select(leads.c.contact))).scalars().all()
        assert kept == ["ann@example.com"]
        assert not (await repos.conn.execute(sa.select(lead_repeats.c.id))).all()
        query = sa.select(tg_commands.c.command_id, tg_commands.c.params)
        remaining = (await repos.conn.execute(query)).all()
    edits = {row.command_id: row.params for row in remaining}
    assert set(edits) == {command_ids.erase_post(-100, 10), command_ids.erase_post(-100, 11)}
    assert all("Maria" not in str(p) and "999" not in str(p) for p in edits.values())
    assert {p["message_id"] for p in edits.values()} == {10, 11}
    assert await redis.xlen(streams.TG_OUTBOX) == 2
    again = await admin_client.post("/admin/erasures", json={"contact": "@nobody_here"}, headers=AUTH)
    assert again.json()["found"] is False


async def test_erasing_sessions_deletes_the_commands_naming_a_chat_or_user_that_no_session_has_any_more(
    db: Database,
) -> None:
    """``erase_sessions`` deletes the ``tg_commands`` whose parameters name the erased guest's chat
    (``SendMessage.chat_id``) or user (``CreateStickerSet.user_id``), as the producers store them, once no
    session of theirs is left; another guest's stay. The set's subject is a job that is not erased, so only
    the user id can find it."""
    first = await guest_job(db, 77, "t1", with_set=False)
    await guest_job(db, 77, "t2", with_set=False)
    await guest_job(db, 88, "t3", with_set=False)
    linked = "You're linked!"
    commands = {
        "text-77": (SendMessage(chat_id=77, text=linked), UpdateReply(id=1)),
        "set-77": (
            CreateStickerSet(user_id=77, name="sb_by_stickerbooth_bot", title="Booth", stickers=()),
            JobStep(id=uuid4(), step="create_set"),
        ),
        "text-88": (SendMessage(chat_id=88, text=linked), UpdateReply(id=2)),
    }
    async with db.transaction() as repos:
        for command_id, (command, subject) in commands.items():
            assert await add_command(repos, command_id, command, subject=subject)
        [first_session] = (
            await repos.conn.execute(sa.select(jobs.c.session_id).where(jobs.c.id == first))
        ).scalars()
        all_of_77 = list(
            (await repos.conn.execute(sa.select(sessions.c.id).where(sessions.c.tg_user_id == 77))).scalars()
        )

    async def stored() -> set[str]:
        async with db.transaction() as repos:
            return set((await repos.conn.execute(sa.select(tg_commands.c.command_id))).scalars())

    async with db.transaction() as repos:
        assert (await repos.erasure.erase_sessions([first_session])).tg_commands == 0
    assert await stored() == set(commands)  # guest 77 still has a session: their chat and user stay named

    async with db.transaction() as repos:
        assert (await repos.erasure.erase_sessions(all_of_77)).tg_commands == 2
    assert await stored() == {"text-88"}
