"""The gateway's command executor with the real python-telegram-bot against the Telegram simulator."""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from PIL import Image
from telegram.ext import ExtBot

from shared import streams
from shared.alerts import queue_alert
from shared.commands import SendMessage
from shared.db.tables import tg_commands
from shared.messages import TelegramResult, decode
from shared.outbox import add_command
from shared.repositories import Database
from shared.streams import Publisher
from shared.subjects import JobStep
from telegram_gateway.executor import CommandExecutor, TelegramUnreachable
from telegram_gateway.flood import FloodLimiter
from tests.simulators.tgsim_helpers import TOKEN, serving, sim_config

pytestmark = pytest.mark.integration
GUEST = 4242


@pytest.fixture
async def sim_url() -> AsyncIterator[str]:
    async with serving(sim_config()) as running:
        yield running.url


async def started_bot(sim_url: str, **options: Any) -> ExtBot[None]:
    """An initialized ``ExtBot`` on the simulator (``options``: its ``rate_limiter`` or ``request``), after
    the guest has sent ``/start`` so the private chat exists."""
    bot: ExtBot[None] = ExtBot(
        TOKEN, base_url=f"{sim_url}/bot", base_file_url=f"{sim_url}/file/bot", **options
    )
    await bot.initialize()
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        (
            await sim.post(f"/sim/users/{GUEST}/messages", json={"text": "/start", "first_name": "Ann"})
        ).raise_for_status()
    return bot


@pytest.fixture
async def executor(sim_url: str, db: Database, redis: aioredis.Redis) -> AsyncIterator[CommandExecutor]:
    bot = await started_bot(sim_url, rate_limiter=FloodLimiter(max_retries=0))
    yield CommandExecutor(bot=bot, db=db, publisher=Publisher(redis))
    await bot.shutdown()


async def add(
    db: Database, command_id: str, method: str, params: dict[str, Any], reply_to: str | None = "tests"
) -> None:
    async with db.transaction() as repos:
        await repos.tg_commands.add(command_id, method=method, params=params, reply_to=reply_to)


async def results(redis: aioredis.Redis) -> list[TelegramResult]:
    return [decode(fields) for _id, fields in await redis.xrange(streams.results_stream("tests"))]  # type: ignore[misc]


async def bot_messages(sim_url: str, chat_id: int) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        body = (await sim.get(f"/sim/chats/{chat_id}/messages")).json()
    messages = body["messages"] if isinstance(body, dict) else body
    return [m for m in messages if (m.get("from") or {}).get("is_bot")]


async def test_a_redelivered_command_sends_one_message_and_repeats_the_stored_result(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, sim_url: str
) -> None:
    await add(db, "cmd:hello", "send_message", {"chat_id": GUEST, "text": "hello"})
    await executor.execute("cmd:hello")
    await executor.execute("cmd:hello")
    assert [m["text"] for m in await bot_messages(sim_url, GUEST)] == ["hello"]
    first, second = await results(redis)
    assert first.ok and second == first
    assert set(first.result) == {"message_id"}  # the sent Message reduced: no chat, sender or text


def sticker_png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGBA", (512, 512), (*color, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


async def test_an_occupied_set_name_reads_back_the_existing_set(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis
) -> None:
    async with db.transaction() as repos:
        blob_ids = [
            str(
                await repos.blobs.put(
                    kind="sticker", data=sticker_png((i * 20, 0, 0)), content_type="image/png"
                )
            )
            for i in range(12)
        ]
    params = {
        "user_id": GUEST,
        "name": "sbtest_by_stickerbooth_bot",
        "title": "Test pack",
        "stickers": [{"blob_id": b, "emoji": "😀"} for b in blob_ids],
    }
    await add(db, "set:1", "create_sticker_set", params)
    await add(db, "set:2", "create_sticker_set", params)
    await executor.execute("set:1")
    await executor.execute("set:2")
    created, again = await results(redis)
    assert created.ok and created.result == {"created": True, "sticker_count": 12}
    assert again.ok and again.result == {"created": False, "sticker_count": 12}


async def test_a_permanent_telegram_error_is_stored_and_answered(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis
) -> None:
    await add(db, "cmd:stranger", "send_message", {"chat_id": 999_999, "text": "hi"})
    await executor.execute("cmd:stranger")
    (result,) = await results(redis)
    assert not result.ok and result.error is not None and result.error.error_code in (400, 403)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("cmd:stranger")
    assert record is not None and record.status == "failed"


@pytest.mark.parametrize(
    ("method", "params", "reason"),
    [
        ("send_sticker", {"chat_id": GUEST}, "invalid gateway command 'send_sticker'"),
        ("send_message", {"chat_id": GUEST}, "send_message.text: Field required"),
        ("send_message", {"v": 2, "chat_id": GUEST, "text": "hi"}, "send_message.v"),
    ],
)
async def test_a_row_that_is_not_a_valid_command_fails_with_the_reason_and_is_never_sent(
    executor: CommandExecutor,
    db: Database,
    redis: aioredis.Redis,
    sim_url: str,
    method: str,
    params: dict[str, Any],
    reason: str,
) -> None:
    await add(db, "cmd:bad", method, params)
    await executor.execute("cmd:bad")
    await executor.execute("cmd:bad")  # a redelivery repeats the stored failure, it does not loop
    first, second = await results(redis)
    assert not first.ok and first.error is not None and first.error.error_code == 400
    assert reason in first.error.description and second == first
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("cmd:bad")
    assert record is not None and record.status == "failed" and record.tries == 1
    assert await bot_messages(sim_url, GUEST) == []


async def test_flood_control_not_waited_out_defers_the_same_row_and_publishes_nothing(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, sim_url: str
) -> None:
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        fault = {"method": "sendMessage", "error_code": 429, "retry_after": 7}
        (await sim.post("/sim/faults", json=fault)).raise_for_status()
    subject = JobStep(id=uuid.uuid4(), step="link", n=1)
    async with db.transaction() as repos:
        await add_command(
            repos, "cmd:busy", SendMessage(chat_id=GUEST, text="later"), subject=subject, reply_to="tests"
        )
    await executor.execute("cmd:busy")
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("cmd:busy")
        now = (await repos.conn.execute(sa.select(sa.func.now()))).scalar_one()
    assert record is not None and record.status == "pending" and record.attempt == 2
    assert record.not_before is not None and 0 < (record.not_before - now).total_seconds() <= 7
    assert await results(redis) == []  # the producer never sees the 429
    await executor.execute("cmd:busy")  # a redelivered hint before not_before sends nothing
    assert await bot_messages(sim_url, GUEST) == []
    async with db.transaction() as repos:  # the wait is over
        await repos.conn.execute(sa.update(tg_commands).values(not_before=sa.func.now()))
    await executor.execute("cmd:busy")
    (result,) = await results(redis)
    assert result.ok and result.subject == subject and result.attempt == 2  # echoed for the consumer
    assert len(await bot_messages(sim_url, GUEST)) == 1


async def test_an_expired_admin_alert_is_cancelled_never_sent(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, sim_url: str
) -> None:
    executor.admin_chat_id = GUEST
    async with db.transaction() as repos:
        command_id = await queue_alert(repos, key="expiry-test", text="Job X FAILED")
        assert command_id is not None
        stored = await repos.tg_commands.get(command_id)
        assert stored is not None and stored.expires_at is not None  # alerts carry their expiry
        await repos.conn.execute(  # held a day by a flood wait, as it were
            sa.update(tg_commands)
            .where(tg_commands.c.command_id == command_id)
            .values(expires_at=sa.func.now() - timedelta(seconds=1))
        )
    await executor.execute(command_id)
    async with db.transaction() as repos:
        record = await repos.tg_commands.get(command_id)
    assert record is not None and record.status == "cancelled"
    await executor.execute(command_id)  # final: a redelivery neither sends nor announces it
    assert await bot_messages(sim_url, GUEST) == [] and await results(redis) == []


async def _make_stale_sending(db: Database, command_id: str) -> None:
    import sqlalchemy as sa

    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.text(
                "UPDATE tg_commands SET status = 'sending', updated_at = now() - interval '10 minutes' "
                "WHERE command_id = :c"
            ),
            {"c": command_id},
        )


async def test_a_message_whose_sender_died_mid_call_is_not_sent_again(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, sim_url: str
) -> None:
    await add(db, "cmd:maybe-sent", "send_message", {"chat_id": GUEST, "text": "link"})
    await _make_stale_sending(db, "cmd:maybe-sent")
    await executor.execute("cmd:maybe-sent")
    assert await bot_messages(sim_url, GUEST) == []
    (result,) = await results(redis)
    assert not result.ok and result.error is not None and result.error.error_code == 0


async def test_a_read_whose_executor_died_mid_call_is_simply_repeated(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis
) -> None:
    await add(db, "cmd:read", "get_sticker_set", {"name": "nothing_by_stickerbooth_bot"})
    await _make_stale_sending(db, "cmd:read")
    await executor.execute("cmd:read")
    (result,) = await results(redis)
    assert result.error is not None and result.error.error_code == 400  # really asked Telegram again


async def test_a_send_that_timed_out_after_telegram_applied_it_is_not_repeated(
    sim_url: str, db: Database, redis: aioredis.Redis
) -> None:
    from telegram.request import HTTPXRequest

    bot = await started_bot(sim_url, request=HTTPXRequest(read_timeout=1.0))  # its getMe must beat it too
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        fault = {"method": "sendMessage", "kind": "delay_after_apply", "seconds": 2}
        (await sim.post("/sim/faults", json=fault)).raise_for_status()
    executor = CommandExecutor(bot=bot, db=db, publisher=Publisher(redis))
    await add(db, "cmd:slow", "send_message", {"chat_id": GUEST, "text": "once"})
    await executor.execute("cmd:slow")
    await executor.execute("cmd:slow")  # a redelivery finds the stored outcome
    await bot.shutdown()
    assert [m["text"] for m in await bot_messages(sim_url, GUEST)] == ["once"]
    first, second = await results(redis)
    assert first == second and first.error is not None and first.error.error_code == 0


async def test_a_set_sticker_is_sent_by_the_file_id_read_from_the_set_and_a_missing_one_fails(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis, sim_url: str
) -> None:
    async with db.transaction() as repos:
        blob_ids = [
            str(
                await repos.blobs.put(
                    kind="sticker", data=sticker_png((0, i * 40, 0)), content_type="image/png"
                )
            )
            for i in range(2)
        ]
    name = "sbpreview_by_stickerbooth_bot"
    stickers = [{"blob_id": b, "emoji": "😀"} for b in blob_ids]
    await add(
        db,
        "set:p",
        "create_sticker_set",
        {"user_id": GUEST, "name": name, "title": "P", "stickers": stickers},
    )
    await executor.execute("set:p")
    await add(db, "preview:1", "send_set_sticker", {"chat_id": GUEST, "name": name, "index": 1})
    await add(db, "preview:9", "send_set_sticker", {"chat_id": GUEST, "name": name, "index": 9})
    await add(
        db, "preview:gone", "send_set_sticker", {"chat_id": GUEST, "name": "nosuch_by_stickerbooth_bot"}
    )
    for command_id in ("preview:1", "preview:9", "preview:gone"):
        await executor.execute(command_id)
    _created, sent, missing, gone = await results(redis)
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        second = (await sim.get(f"/sim/sticker-sets/{name}")).json()["stickers"][1]
    (message,) = await bot_messages(sim_url, GUEST)
    assert message["sticker"]["file_id"] == second["file_id"]
    assert sent.ok and set(sent.result) == {"message_id"}  # no file id in the stored result
    assert not missing.ok and missing.error is not None and missing.error.error_code == 400
    assert not gone.ok and gone.error is not None and "stickerset_invalid" in gone.error.description.lower()


async def test_a_set_sticker_whose_set_read_fails_is_tried_again_not_given_up(
    executor: CommandExecutor, db: Database, sim_url: str
) -> None:
    async with httpx.AsyncClient(base_url=sim_url) as sim:
        (await sim.post("/sim/faults", json={"method": "getStickerSet", "kind": "drop"})).raise_for_status()
    await add(db, "preview:drop", "send_set_sticker", {"chat_id": GUEST, "name": "x_by_stickerbooth_bot"})
    with pytest.raises(TelegramUnreachable):
        await executor.execute("preview:drop")
    async with db.transaction() as repos:
        record = await repos.tg_commands.get("preview:drop")
    assert record is not None and record.status == "pending"  # nothing was sent: it may run again


async def test_a_row_a_pre_0010_pod_wrote_without_subject_gets_it_and_its_result_carries_it(
    executor: CommandExecutor, db: Database, redis: aioredis.Redis
) -> None:
    job_id = uuid.uuid4()
    command_id = f"job:{job_id}:link:2"  # an old delivery pod's second link attempt: no subject
    await add(db, command_id, "send_message", {"chat_id": GUEST, "text": "your link"})
    await executor.execute(command_id)
    async with db.transaction() as repos:
        stored = await repos.tg_commands.get(command_id)
    assert stored is not None and stored.subject == {"kind": "job", "id": str(job_id), "step": "link", "n": 2}
    (result,) = await results(redis)
    assert result.ok and result.subject == JobStep(id=job_id, step="link", n=2)


async def test_the_reconciler_fills_the_subjects_old_pods_left_null(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, sim_url: str
) -> None:
    from telegram_gateway.main import reconcile_outbox
    from tests.telegram_gateway.gateway_helpers import gateway_settings

    job_id = uuid.uuid4()
    await add(db, f"job:{job_id}:link", "send_message", {"chat_id": GUEST, "text": "x"})
    await add(db, "cmd:unknown-shape", "send_message", {"chat_id": GUEST, "text": "y"})
    await reconcile_outbox(db, Publisher(redis), gateway_settings(database_url, redis_url, sim_url))
    async with db.transaction() as repos:
        link = await repos.tg_commands.for_subject("job", job_id, step="link")
        unknown = await repos.tg_commands.get("cmd:unknown-shape")
    assert [r.command_id for r in link] == [f"job:{job_id}:link"]
    assert unknown is not None and unknown.subject is None
