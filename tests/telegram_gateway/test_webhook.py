"""Webhook mode (issue 22): the gateway as ``main`` wires it with ``TELEGRAM_UPDATES=webhook``
(:func:`telegram_gateway.main.update_tasks`) behind the Telegram simulator, which POSTs updates to it
as Telegram does (``TGSIM_WEBHOOK_TARGET`` playing the TLS ingress). A forged POST is refused and changes
nothing; oversized, non-JSON and non-Update bodies are refused with their codes; a repeated update is
handled once; a 503 while Postgres is cut off is repeated by Telegram and answered once."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from telegram.ext import Application

from shared.db import create_engine
from shared.db.tables import tg_commands, tg_updates
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway import preflight
from telegram_gateway.main import build_application, register_handlers, update_tasks
from telegram_gateway.settings import GatewaySettings
from telegram_gateway.webhook import SECRET_HEADER
from tests.simulators.tgsim_helpers import RunningSim, serving, sim_config
from tests.tcp_proxy import TcpProxy
from tests.telegram_gateway.gateway_helpers import gateway_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

GUEST = 5001
SECRET = "booth-webhook_secret-42"
PUBLIC_URL = "https://bot.example/telegram/webhook"
MAX_BODY = 4096


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class WebhookGateway:
    sim: RunningSim
    application: Application  # type: ignore[type-arg]
    settings: GatewaySettings
    held: asyncio.Event
    route_url: str

    async def post(
        self, body: bytes, *, secret: str | None = SECRET, chunked: bool = False
    ) -> tuple[int, Any]:
        """POST ``body`` to the gateway's route as a client would; the status and JSON answer."""
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers[SECRET_HEADER] = secret
        data: Any = body
        if chunked:

            async def chunks() -> AsyncIterator[bytes]:
                for start in range(0, len(body), 1024):
                    yield body[start : start + 1024]

            data = chunks()
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.route_url, data=data, headers=headers) as response,
        ):
            return response.status, await response.json()

    async def bot_texts(self, chat_id: int) -> list[str]:
        messages = await self.sim.get(f"/sim/chats/{chat_id}/messages")
        return [m["text"] for m in messages if m["from_bot"]]


@asynccontextmanager
async def webhook_gateway(
    database_url: str, redis: aioredis.Redis, redis_url: str, *, db: Database
) -> AsyncIterator[WebhookGateway]:
    """The simulator and a gateway in webhook mode leading (``held`` set) until the block ends."""
    port = _free_port()
    config = sim_config(webhook_target=f"http://127.0.0.1:{port}", webhook_max_retry_s=0.2)
    async with serving(config) as sim:
        settings = gateway_settings(
            database_url,
            redis_url,
            sim.url,
            TELEGRAM_UPDATES="webhook",
            TELEGRAM_WEBHOOK_URL=PUBLIC_URL,
            TELEGRAM_WEBHOOK_SECRET=SECRET,
            WEBHOOK_HOST="127.0.0.1",
            WEBHOOK_PORT=port,
            WEBHOOK_MAX_BODY_BYTES=MAX_BODY,
        )
        application = build_application(settings)
        register_handlers(application, db=db, publisher=Publisher(redis), settings=settings)
        await application.initialize()
        await application.start()
        held, stop = asyncio.Event(), asyncio.Event()
        held.set()
        tasks = [asyncio.create_task(t.run(stop)) for t in update_tasks(application, db, settings, held=held)]
        try:
            made = WebhookGateway(
                sim, application, settings, held, f"http://127.0.0.1:{port}/telegram/webhook"
            )
            async with sim.bot() as bot:
                async with asyncio.timeout(10):
                    while (await bot.get_webhook_info()).url != PUBLIC_URL:
                        await asyncio.sleep(0.05)
            yield made
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            await application.stop()
            await application.shutdown()


async def _until(check: Callable[[], Any], timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not await check():
            await asyncio.sleep(0.05)


async def _stored(db: Database) -> list[tuple[int, bool]]:
    async with db.transaction() as repos:
        rows = await repos.conn.execute(
            sa.select(tg_updates.c.update_id, tg_updates.c.handled_at.is_not(None)).order_by(
                tg_updates.c.update_id
            )
        )
    return [(int(u), bool(h)) for u, h in rows]


async def _replies(db: Database) -> int:
    async with db.transaction() as repos:
        return int(await repos.conn.scalar(sa.select(sa.func.count()).select_from(tg_commands)) or 0)


def _update(update_id: int, text: str = "hello") -> dict[str, Any]:
    user = {"id": GUEST, "is_bot": False, "first_name": "Ann", "language_code": "en"}
    return {
        "update_id": update_id,
        "message": {
            "message_id": 1,
            "date": 1_800_000_000,
            "chat": {"id": GUEST, "type": "private", "first_name": "Ann"},
            "from": user,
            "text": text,
        },
    }


async def test_the_leader_registers_the_webhook_and_a_guest_is_answered(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with webhook_gateway(database_url, redis, redis_url, db=db) as gw:
        async with gw.sim.bot() as bot:
            info = await bot.get_webhook_info()
        assert info.max_connections == gw.settings.webhook_max_connections
        assert preflight.webhook_check(info, PUBLIC_URL).status == "ok"
        await gw.sim.say(GUEST, "hello", first_name="Ann", language_code="en")
        await _until(lambda: _has_text(gw, "Hi!"))
        await _until(lambda: _all_handled(db))
        assert gw.sim.sim.state.updates == []  # answered 200: Telegram forgets it


async def _greeted(gw: WebhookGateway, db: Database) -> list[tuple[int, bool]]:
    """The guest writes to the bot through the simulator (so Telegram knows the chat the replies to
    hand-made POSTs go to) and is answered; the stored updates then."""
    await gw.sim.say(GUEST, "hi", first_name="Ann", language_code="en")
    await _until(lambda: _has_text(gw, "Hi!"))
    await _until(lambda: _all_handled(db))
    assert await _replies(db) == 1
    return await _stored(db)


async def _replies_are(db: Database, count: int) -> bool:
    return await _replies(db) == count


async def _has_text(gw: WebhookGateway, start: str) -> bool:
    return any(text.startswith(start) for text in await gw.bot_texts(GUEST))


async def _all_handled(db: Database) -> bool:
    stored = await _stored(db)
    return bool(stored) and all(handled for _id, handled in stored)


async def test_a_forged_update_is_refused_and_changes_nothing(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with webhook_gateway(database_url, redis, redis_url, db=db) as gw:
        before = await _greeted(gw, db)
        body = json.dumps(_update(900_001, "/help")).encode()
        for secret in (None, "", "wrong", SECRET[:-1], SECRET + "x"):
            status, answer = await gw.post(body, secret=secret)
            assert (status, answer["error"]["code"]) == (401, "bad_secret")
        await asyncio.sleep(1.0)  # a leader would have handled a stored update by now (every 0.5 s)
        assert await _stored(db) == before
        assert await _replies(db) == 1
        assert len(await gw.bot_texts(GUEST)) == 1
        status, _ = await gw.post(body)  # the check can pass: the same body with the secret is taken
        assert status == 200
        await _until(lambda: _all_handled(db))
        assert await _stored(db) == [*before, (900_001, True)]


async def test_bodies_that_are_too_large_not_json_or_no_update_are_refused(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with webhook_gateway(database_url, redis, redis_url, db=db) as gw:
        large = json.dumps(_update(900_002, "x" * MAX_BODY)).encode()
        assert (await gw.post(large))[0] == 413
        status, answer = await gw.post(large, chunked=True)  # no Content-Length: counted while read
        assert (status, answer["error"]["code"]) == (413, "body_too_large")
        status, answer = await gw.post(b"update_id=1")
        assert (status, answer["error"]["code"]) == (400, "not_json")
        for bad in (
            [],
            {"message": {}},
            {"update_id": "7"},
            {"update_id": -1},
            {"update_id": 7, "message": 5},
        ):
            status, answer = await gw.post(json.dumps(bad).encode())
            assert (status, answer["error"]["code"]) == (400, "invalid_update"), bad
        assert await _stored(db) == []
        # just under the limit, in 1 KiB chunks: read to its end, not cut at the first chunk
        fits = json.dumps(_update(900_005, "y" * (MAX_BODY - 400))).encode()
        assert len(fits) <= MAX_BODY
        assert (await gw.post(fits, chunked=True))[0] == 200
        assert [update_id for update_id, _ in await _stored(db)] == [900_005]


async def test_a_repeated_update_is_stored_and_answered_once(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with webhook_gateway(database_url, redis, redis_url, db=db) as gw:
        before = await _greeted(gw, db)
        body = json.dumps(_update(900_003, "hello")).encode()
        answers = await asyncio.gather(*(gw.post(body) for _ in range(5)))
        assert {status for status, _ in answers} == {200}
        await _until(lambda: _all_handled(db))
        await asyncio.sleep(1.0)
        assert await _stored(db) == [*before, (900_003, True)]
        assert await _replies(db) == 2
        assert len(await gw.bot_texts(GUEST)) == 2


async def test_a_503_while_postgres_is_cut_off_is_repeated_by_telegram_and_answered_once(
    redis: aioredis.Redis, database_url: str, redis_url: str, db: Database
) -> None:
    proxy, proxied_url = await TcpProxy.to_url(database_url)
    cut_db = Database(create_engine(proxied_url, pool_size=2, connect_timeout_s=1.0))
    try:
        async with webhook_gateway(database_url, redis, redis_url, db=cut_db) as gw:
            proxy.cut()
            await gw.sim.say(GUEST, "hello", first_name="Ann", language_code="en")
            async with gw.sim.bot() as bot:
                async with asyncio.timeout(20):
                    while not ((await bot.get_webhook_info()).last_error_message or "").startswith(
                        "Wrong response from the webhook: 503"
                    ):
                        await asyncio.sleep(0.05)
                assert (await bot.get_webhook_info()).pending_update_count == 1
            proxy.restore()
            await _until(lambda: _has_text(gw, "Hi!"), timeout_s=30)
            await _until(lambda: _all_handled(db))
            await asyncio.sleep(1.0)
            assert len(await _stored(db)) == 1
            assert await _replies(db) == 1
            assert len(await gw.bot_texts(GUEST)) == 1
    finally:
        await cut_db.dispose()
        await proxy.close()


async def test_a_follower_stores_updates_but_neither_handles_them_nor_sets_the_webhook(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with webhook_gateway(database_url, redis, redis_url, db=db) as gw:
        before = await _greeted(gw, db)
        gw.held.clear()  # leadership lost
        await asyncio.sleep(1.0)  # the handler loop has seen it
        status, _ = await gw.post(json.dumps(_update(900_004, "hello")).encode())
        assert status == 200  # every replica accepts the POST
        await asyncio.sleep(1.0)
        assert await _stored(db) == [*before, (900_004, False)]
        assert await _replies(db) == 1
        gw.held.set()  # leading again: the stored update is handled
        await _until(lambda: _all_handled(db))
        await _until(lambda: _replies_are(db, 2))
