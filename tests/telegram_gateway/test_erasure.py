"""Erasure on request (issue 11 item 3) through python-telegram-bot polling the Telegram simulator: a guest
with a delivered pack sends ``/delete`` and confirms, and nothing stored names them any more and their set
is gone in Telegram; cancel keeps everything; Telegram failing on ``deleteStickerSet`` leaves the local data
deleted and the set deletion retried through the outbox until done."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image
from telegram import CallbackQuery, Chat, Message, Update, User
from telegram.ext import Application

from shared import command_ids, maintenance
from shared.commands import CreateStickerSet, SendAdminMessage, StickerRef
from shared.db.tables import api_usage, blobs, job_events, jobs, sessions, tg_commands
from shared.domain import CommandStatus
from shared.erasure import set_deletion_duty
from shared.outbox import add_command, tell_guest
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.streams import Publisher
from shared.subjects import AdminText, JobStep
from shared.texts import text
from telegram_gateway.erasure import ErasureHandlers
from telegram_gateway.executor import CommandExecutor, TelegramUnreachable
from tests.simulators.tgsim_helpers import TOKEN, serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
BOT = "stickerbooth_bot"
GUEST, OTHER = 2000, 3000


@dataclass
class Gateway:
    sim: httpx.AsyncClient
    app: Application  # type: ignore[type-arg]
    executor: CommandExecutor

    async def say(self, user_id: int, text: str) -> None:
        body = {"text": text, "first_name": "Ann", "language_code": "en"}
        (await self.sim.post(f"/sim/users/{user_id}/messages", json=body)).raise_for_status()

    async def bot_messages(self, chat_id: int, count: int) -> list[dict[str, Any]]:
        """Wait until the bot has sent ``count`` messages in the chat; returns them (as they are now)."""
        async with asyncio.timeout(15):
            while True:
                body: Any = (await self.sim.get(f"/sim/chats/{chat_id}/messages")).json()
                messages = body["messages"] if isinstance(body, dict) else body
                mine = [m for m in messages if (m.get("from") or {}).get("is_bot")]
                if len(mine) >= count:
                    return mine
                await asyncio.sleep(0.1)

    async def press(self, user_id: int, message_id: int, data: str) -> None:
        body = {"user_id": user_id, "message_id": message_id, "data": data}
        (await self.sim.post("/sim/callbacks", json=body)).raise_for_status()

    async def text_becomes(self, chat_id: int, message_id: int, prefix: str) -> None:
        async with asyncio.timeout(15):
            while True:
                messages = await self.bot_messages(chat_id, 1)
                if any(m["message_id"] == message_id and m["text"].startswith(prefix) for m in messages):
                    return
                await asyncio.sleep(0.1)

    async def set_exists(self, name: str) -> bool:
        return (await self.sim.get(f"/sim/sticker-sets/{name}")).status_code == 200

    async def fault(self, **spec: Any) -> None:
        (await self.sim.post("/sim/faults", json=spec)).raise_for_status()


@pytest.fixture
async def gateway(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[Gateway]:
    async with serving(sim_config(bot_username=BOT)) as running:
        # a 1 s flood wait goes back to the producer
        settings = gateway_settings(database_url, redis_url, running.url, TELEGRAM_FLOOD_WAIT_MAX_SEC=0.5)
        async with (
            running_gateway(settings, db=db, publisher=Publisher(redis)) as started,
            httpx.AsyncClient(base_url=running.url) as sim,
        ):
            yield Gateway(sim, started.application, started.executor)


def png(seed: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGBA", (512, 512), (seed * 20, 0, 0, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


async def delivered_guest(gw: Gateway, db: Database, user_id: int, token: str) -> tuple[UUID, str]:
    """A guest bound with ``/start <token>`` whose pack was delivered: a set in the simulator, the link
    message sent, a cost row, an admin alert naming the job. Returns the job id and set name."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=token)
    await gw.say(user_id, f"/start {token}")
    before = len(await gw.bot_messages(user_id, 1))
    name = f"sb{{}}_by_{BOT}"
    async with db.transaction() as repos:
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c1", outfit_id="chef")
        await repos.jobs.claim(job.id, owner="w")
        await repos.jobs.mark_rendered(job.id, owner="w", stickers=3)
        stickers = [
            StickerRef(
                blob_id=await repos.blobs.put(
                    kind="sticker", data=png(i), content_type="image/png", job_id=job.id, position=i
                ),
                emoji="🙂",
            )
            for i in range(3)
        ]
        name = name.format(job.id.hex)
        create = CreateStickerSet(user_id=user_id, name=name, title="Mine", stickers=tuple(stickers))
        await add_command(
            repos, command_ids.create_set(job.id), create, subject=JobStep(id=job.id, step="create_set")
        )
        await repos.usage.record(ApiCall("local", "m", "sheet", "image", "ok", 0.04, 1.0, job_id=job.id))
        alert = AdminText(id=command_ids.name_hash("job_failed"), what="alert")
        failed = SendAdminMessage(text=f"Job {job.id} x")
        await add_command(repos, command_ids.alert("job_failed", 1), failed, subject=alert)
    await gw.executor.execute(command_ids.create_set(job.id))
    assert await gw.set_exists(name)
    async with db.transaction() as repos:
        await repos.jobs.start_delivery(job.id, sticker_set_name=name, at=_now(), first_poll_at=_now())
        link = f"https://t.me/addstickers/{name}"
        subject = JobStep(id=job.id, step="link", n=1)
        await tell_guest(
            repos,
            command_ids.link(job.id),
            user_id,
            "pack_ready",
            "en",
            link=link,
            event=None,
            subject=subject,
        )
    await gw.executor.execute(command_ids.link(job.id))
    await gw.bot_messages(user_id, before + 1)
    async with db.transaction() as repos:
        await repos.jobs.mark_delivered(job.id, link_sent_at=_now())
    return job.id, name


def _now() -> datetime:
    return datetime.now(UTC)


async def ask_to_delete(gw: Gateway, user_id: int) -> int:
    """``/delete``; returns the prompt's message id (it carries the two buttons)."""
    before = len(await gw.bot_messages(user_id, 0))
    await gw.say(user_id, "/delete")
    prompt = (await gw.bot_messages(user_id, before + 1))[-1]
    buttons = [b["callback_data"] for b in prompt["reply_markup"]["inline_keyboard"][0]]
    assert prompt["text"].startswith("Delete everything we keep about you?")
    assert buttons == ["erase:yes", "erase:no"]
    return int(prompt["message_id"])


async def rows_naming(db: Database, *needles: str) -> dict[str, int]:
    """Rows of the guest tables, and ``tg_commands`` rows whose id, params or result hold any needle."""
    async with db.transaction() as repos:
        conn = repos.conn
        found = {}
        for table in (sessions, jobs, job_events, blobs):
            found[table.name] = int(await conn.scalar(sa.select(sa.func.count()).select_from(table)) or 0)
        params, result = sa.cast(tg_commands.c.params, sa.Text), sa.cast(tg_commands.c.result, sa.Text)
        text = sa.func.concat(tg_commands.c.command_id, params, result)
        naming = sa.select(sa.func.count()).where(sa.or_(*(text.contains(n) for n in needles)))
        found["tg_commands"] = int(await conn.scalar(naming) or 0)
        linked = sa.select(sa.func.count()).where(api_usage.c.job_id.isnot(None))
        found["api_usage_linked"] = int(await conn.scalar(linked) or 0)
    return found


NOTHING = {"sessions": 0, "jobs": 0, "job_events": 0, "blobs": 0, "tg_commands": 0, "api_usage_linked": 0}


async def test_a_guest_who_confirms_delete_leaves_no_trace_and_their_set_is_deleted(
    gateway: Gateway, db: Database
) -> None:
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-1")
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:yes")
    await gateway.text_becomes(GUEST, prompt, "Deleted.")
    assert not await gateway.set_exists(name)
    await set_deletion_duty(db)  # purge the finished deletion
    assert await rows_naming(db, str(GUEST), str(job_id), job_id.hex, name) == NOTHING
    async with db.transaction() as repos:
        cost = await repos.conn.scalar(sa.select(sa.func.sum(api_usage.c.cost_usd)))
    assert float(cost or 0) == pytest.approx(0.04)  # the cost stays, unlinked


async def test_delete_works_while_the_booth_is_paused_and_other_guest_updates_still_get_the_break_text(
    gateway: Gateway, db: Database
) -> None:
    """An ``auto`` pause (a 402) can last the evening; erasure needs no AI provider, so it is not held."""
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-7")
    async with db.transaction() as repos:
        assert await maintenance.start_pause(repos, source="auto", reason="credit")
    before = len(await gateway.bot_messages(GUEST, 0))
    await gateway.say(GUEST, "hello")
    paused = (await gateway.bot_messages(GUEST, before + 1))[-1]
    assert paused["text"] == text("maintenance", "en")  # the gate is on for everything else
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:yes")
    await gateway.text_becomes(GUEST, prompt, "Deleted.")
    assert not await gateway.set_exists(name)
    await set_deletion_duty(db)
    assert await rows_naming(db, str(GUEST), str(job_id), job_id.hex, name) == NOTHING


async def test_cancel_keeps_everything(gateway: Gateway, db: Database) -> None:
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-2")
    before = await rows_naming(db, str(GUEST), str(job_id))
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:no")
    await gateway.text_becomes(GUEST, prompt, "Cancelled")
    assert await gateway.set_exists(name)
    after = await rows_naming(db, str(GUEST), str(job_id))
    assert after["tg_commands"] == before["tg_commands"] + 1  # the prompt
    assert {k: v for k, v in after.items() if k != "tg_commands"} == {
        k: v for k, v in before.items() if k != "tg_commands"
    }
    assert before["jobs"] == 1 and before["blobs"] == 3


async def test_delete_with_nothing_stored_says_so(gateway: Gateway, db: Database) -> None:
    await gateway.say(OTHER, "/delete")
    messages = await gateway.bot_messages(OTHER, 1)
    assert messages[0]["text"] == "We don't have anything stored about you."
    assert not messages[0].get("reply_markup")


async def test_another_guest_keeps_their_data(gateway: Gateway, db: Database) -> None:
    await delivered_guest(gateway, db, GUEST, "kiosk-3")
    other_job, other_set = await delivered_guest(gateway, db, OTHER, "kiosk-4")
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:yes")
    await gateway.text_becomes(GUEST, prompt, "Deleted.")
    assert await gateway.set_exists(other_set)
    async with db.transaction() as repos:
        assert await repos.jobs.get(other_job) is not None
        assert len(await repos.blobs.ids_for_job(other_job, "sticker")) == 3
        assert await repos.tg_commands.get(command_ids.link(other_job)) is not None


async def test_a_press_on_someone_elses_prompt_erases_nobody(gateway: Gateway, db: Database) -> None:
    """Telegram shows the buttons only in the guest's own chat (the simulator refuses a press from another
    user with 404); should an update ever carry another user's press on the guest's prompt, the handler
    erases nobody: neither the guest nor the one who pressed."""
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-8")
    other_job, _ = await delivered_guest(gateway, db, OTHER, "kiosk-9")
    prompt = await ask_to_delete(gateway, GUEST)
    forged = await gateway.sim.post(
        "/sim/callbacks", json={"user_id": OTHER, "message_id": prompt, "data": "erase:yes"}
    )
    assert forged.status_code == 404
    presser = User(id=OTHER, first_name="Eve", is_bot=False, language_code="en")
    message = Message(message_id=prompt, date=datetime.now(UTC), chat=Chat(id=GUEST, type="private"))
    query = CallbackQuery(
        id="forged-1", from_user=presser, chat_instance="x", message=message, data="erase:yes"
    )
    query.set_bot(gateway.app.bot)
    handlers = ErasureHandlers(db=db, publisher=gateway.executor.publisher, executor=gateway.executor)
    await handlers.answer(Update(update_id=999_001, callback_query=query), None)  # type: ignore[arg-type]
    assert await gateway.set_exists(name)
    async with db.transaction() as repos:
        assert await repos.jobs.get(job_id) is not None and await repos.jobs.get(other_job) is not None


async def test_telegram_failing_on_delete_keeps_the_data_deleted_and_retries_until_done(
    gateway: Gateway, db: Database
) -> None:
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-5")
    await gateway.fault(
        method="deleteStickerSet", error_code=500, description="Internal Server Error", count=2
    )
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:yes")
    await gateway.text_becomes(GUEST, prompt, "Deleted.")
    found = await rows_naming(db, str(GUEST), str(job_id))
    assert found == NOTHING  # the local data went at once
    assert await gateway.set_exists(name)
    command_id = command_ids.erase_set(name)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None and record.status == CommandStatus.PENDING  # left for the reconciler
    with pytest.raises(TelegramUnreachable):  # the second 500: still pending
        await gateway.executor.execute(command_id)
    await gateway.executor.execute(command_id)  # Telegram is back
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None and record.status == CommandStatus.SENT
    assert not await gateway.set_exists(name)
    await set_deletion_duty(db)
    assert await rows_naming(db, name, job_id.hex) == NOTHING


async def test_a_flood_limited_delete_is_deferred_and_a_set_already_gone_counts_as_deleted(
    gateway: Gateway, db: Database
) -> None:
    job_id, name = await delivered_guest(gateway, db, GUEST, "kiosk-6")
    await gateway.fault(method="deleteStickerSet", error_code=429, retry_after=1, count=3)
    prompt = await ask_to_delete(gateway, GUEST)
    await gateway.press(GUEST, prompt, "erase:yes")
    await gateway.text_becomes(GUEST, prompt, "Deleted.")
    command_id = command_ids.erase_set(name)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None and record.status == CommandStatus.PENDING and record.attempt == 2
    assert record.subject == {"kind": "erase_set", "id": command_ids.name_hash(name), "n": 1}
    # meanwhile the set went another way: the deferred deletion finds it gone and is done all the same
    await gateway.sim.delete("/sim/faults")
    (await gateway.sim.post(f"/bot{TOKEN}/deleteStickerSet", json={"name": name})).raise_for_status()
    async with asyncio.timeout(10):
        while True:  # the 1 s wait passes; the same row is executed again (a hint, as the reconciler's)
            await gateway.executor.execute(command_id)
            async with db.transaction() as repos:
                done = await repos.tg_commands.get(command_id)
            if done is not None and done.status != CommandStatus.PENDING:
                break
            await asyncio.sleep(0.2)
    assert done.status == CommandStatus.SENT
    await set_deletion_duty(db)
    assert await rows_naming(db, name, job_id.hex) == NOTHING
