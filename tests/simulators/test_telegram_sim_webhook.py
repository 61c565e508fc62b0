"""The simulator delivers updates to a registered webhook as Telegram does (core.telegram.org/bots/api
#setwebhook, tdlib/telegram-bot-api WebhookActor.cpp): POSTed with the secret header, repeated after a
non-2xx answer with ``getWebhookInfo`` showing the last error, a chat's updates in order, and
``getUpdates`` refused with 409 while the webhook is set. The receiving end is a real aiohttp server
whose answers each test scripts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from telegram.error import BadRequest, Conflict

from tests.simulators.tgsim_helpers import GUEST_ID, RunningSim, serving, sim_config

SECRET = "s3cret_-token"
URL = "https://bot.example/telegram/hook"


@dataclass
class Receiver:
    """A webhook endpoint: records each POST and answers with the next scripted status (then 200)."""

    statuses: list[int] = field(default_factory=list)
    posts: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.posts.append((dict(request.headers), json.loads(await request.read())))
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text="{}")

    def update_ids(self) -> list[int]:
        return [body["update_id"] for _headers, body in self.posts]


@asynccontextmanager
async def receiver() -> AsyncIterator[Receiver]:
    made = Receiver()
    app = web.Application()
    app.router.add_post("/telegram/hook", made.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    made.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield made
    finally:
        await runner.cleanup()


@asynccontextmanager
async def sim_and_receiver() -> AsyncIterator[tuple[RunningSim, Receiver]]:
    async with (
        receiver() as made,
        serving(sim_config(webhook_target=made.url, webhook_max_retry_s=0.2)) as sim,
    ):
        yield sim, made


async def _until(predicate: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_updates_are_posted_with_the_secret_and_get_updates_is_refused() -> None:
    async with sim_and_receiver() as (sim, made), sim.bot() as bot:
        assert await bot.set_webhook(URL, secret_token=SECRET, max_connections=5)
        await sim.say(GUEST_ID, "/start abc", first_name="Ann")
        await _until(lambda: len(made.posts) == 1)
        headers, body = made.posts[0]
        assert headers["X-Telegram-Bot-Api-Secret-Token"] == SECRET
        assert headers["Content-Type"] == "application/json"
        assert body["message"]["text"] == "/start abc"
        with pytest.raises(Conflict, match="can't use getUpdates method while webhook is active"):
            await bot.get_updates(timeout=0)
        info = await bot.get_webhook_info()
        assert (info.url, info.max_connections, info.last_error_date) == (URL, 5, None)
        await _until(lambda: sim_pending(sim) == 0)


def sim_pending(sim: RunningSim) -> int:
    """Updates the simulated Telegram still holds (not yet answered 2xx)."""
    return len(sim.sim.state.updates)


async def test_a_non_2xx_answer_is_repeated_and_shown_as_the_last_error() -> None:
    async with sim_and_receiver() as (sim, made), sim.bot() as bot:
        made.statuses = [500, 503, 503]
        await bot.set_webhook(URL, secret_token=SECRET)
        await sim.say(GUEST_ID, "hello", first_name="Ann")
        await _until(lambda: len(made.posts) == 2)
        info = await bot.get_webhook_info()
        assert info.pending_update_count == 1  # not answered 2xx yet: kept
        assert info.last_error_message is not None and info.last_error_message.startswith(
            "Wrong response from the webhook: 50"
        )
        assert info.last_error_date is not None
        await _until(lambda: len(made.posts) == 4)  # 500, 503, 503, then 200
        await _until(lambda: sim_pending(sim) == 0)
        assert set(made.update_ids()) == {made.update_ids()[0]}  # the same update each time
        await asyncio.sleep(0.5)
        assert len(made.posts) == 4  # answered 200: never sent again


async def test_a_chats_next_update_waits_for_the_one_before() -> None:
    async with sim_and_receiver() as (sim, made), sim.bot() as bot:
        made.statuses = [500]
        await bot.set_webhook(URL, secret_token=SECRET)
        await sim.say(GUEST_ID, "one", first_name="Ann")
        await sim.say(GUEST_ID, "two", first_name="Ann")
        await _until(lambda: sim_pending(sim) == 0)
        texts = [body["message"]["text"] for _h, body in made.posts]
        assert texts == ["one", "one", "two"]


async def test_set_webhook_refuses_what_telegram_refuses() -> None:
    async with serving(sim_config()) as sim, sim.bot() as bot:
        with pytest.raises(BadRequest, match=r"(?i)https url must be provided"):
            await bot.set_webhook("http://bot.example/hook")
        with pytest.raises(BadRequest, match=r"(?i)only on ports 80, 88, 443 or 8443"):
            await bot.set_webhook("https://bot.example:8080/hook")
        with pytest.raises(BadRequest, match=r"(?i)secret token contains unallowed characters"):
            await bot.set_webhook(URL, secret_token="not allowed!")
        assert (await bot.get_webhook_info()).url == ""


async def test_delete_webhook_brings_get_updates_back_with_the_undelivered_updates() -> None:
    async with sim_and_receiver() as (sim, made), sim.bot() as bot:
        made.statuses = [500] * 1000
        await bot.set_webhook(URL, secret_token=SECRET)
        await sim.say(GUEST_ID, "kept", first_name="Ann")
        await _until(lambda: len(made.posts) >= 1)
        assert await bot.delete_webhook()
        updates = await bot.get_updates(timeout=0)
        assert [u.message.text for u in updates if u.message] == ["kept"]
        info = await bot.get_webhook_info()
        assert (info.url, info.last_error_date) == ("", None)
