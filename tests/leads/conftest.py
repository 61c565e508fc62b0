"""A rig for the leads service: real Postgres and Redis, the Telegram simulator, the gateway's real command
executor with python-telegram-bot, and a fake clock. Nothing runs in the background: a test steps the
publisher, the gateway and the result stream by hand, so timing is exact and no test sleeps for backoff.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
from telegram.ext import ExtBot
from telegram.request import HTTPXRequest

from leads.backoff import Backoff
from leads.main import LeadsService, build_service
from leads.outcomes import PublishPolicy
from shared import streams
from shared.domain import LeadPost, LeadSubmission
from shared.messages import LeadButtonPressed, TelegramResult, decode
from shared.repositories import Database
from shared.repositories.lead_posts import CARD
from shared.streams import Publisher
from telegram_gateway.executor import CommandExecutor, TelegramUnreachable
from telegram_gateway.flood import FloodLimiter
from tests.simulators.tgsim_helpers import TOKEN, RunningSim, serve, sim_config

LEADS_CHAT = -1001234567890
ADMIN = 1000


class FakeClock:
    """``now()`` for the leads service: starts at the real time, moves only when told."""

    def __init__(self) -> None:
        self.t = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


@dataclass
class Rig:
    """The leads service and the gateway, stepped by hand (see the module docstring)."""

    db: Database
    redis: aioredis.Redis
    sim: RunningSim
    executor: CommandExecutor
    service: LeadsService
    clock: FakeClock
    outbox_cursor: str = "0-0"
    results_cursor: str = "0-0"
    handed_back: list[str] = field(default_factory=list)
    requests: int = 0

    async def submit(
        self, name: str = "Maria", contact: str = "+7 999 000-00-00", **extra: Any
    ) -> LeadSubmission:
        """Store a landing submission as ``POST /leads`` does (the contact is used as its own key)."""
        self.requests += 1
        async with self.db.transaction() as repos:
            return await repos.leads.submit(
                request_id=extra.pop("request_id", f"request-{self.requests:04d}"),
                name=name,
                contact=contact,
                contact_kind="phone",
                contact_key=f"key:{contact}",
                message=extra.pop("message", "A booth for 300 guests"),
                source_page=extra.pop("source_page", "https://example.com/landing"),
                utm=extra.pop("utm", {}),
            )

    async def tick(self) -> bool:
        return await self.service.publisher.tick()

    async def gateway(self) -> list[str]:
        """Execute every command hinted on ``tg:outbox`` since the last call (and those handed back)."""
        entries = await self.redis.xrange(streams.TG_OUTBOX, min=f"({self.outbox_cursor}")
        ids = list(self.handed_back)
        self.handed_back.clear()
        for entry_id, fields in entries:
            self.outbox_cursor = entry_id
            ids.append(decode(fields).command_id)  # type: ignore[union-attr]
        for command_id in ids:
            try:
                await self.executor.execute(command_id)
            except TelegramUnreachable:
                self.handed_back.append(command_id)
        return ids

    async def results(self) -> list[TelegramResult]:
        """Apply every ``tg:results:leads`` entry since the last call."""
        entries = await self.redis.xrange(streams.results_stream("leads"), min=f"({self.results_cursor}")
        applied = []
        for entry_id, fields in entries:
            self.results_cursor = entry_id
            result = decode(fields)
            assert isinstance(result, TelegramResult)
            await self.service.outcomes.apply(result)
            applied.append(result)
        return applied

    async def step(self) -> list[str]:
        """One publisher tick, then the gateway runs what it asked for, then the outcomes come back."""
        await self.tick()
        executed = await self.gateway()
        await self.results()
        return executed

    async def settle(self, rounds: int = 30) -> None:
        """Step until nothing more happens at the current (fake) time."""
        for _ in range(rounds):
            if not await self.step():
                return
        raise AssertionError("the leads rig did not settle")

    async def press(self, user_id: int, message_id: int, data: str, **who: Any) -> str:
        """A staff member presses a button in the simulator; the press reaches the leads service as the
        gateway would route it. Returns the callback query id."""
        pressed = await self.sim.post(
            "/sim/callbacks",
            {"user_id": user_id, "chat_id": LEADS_CHAT, "message_id": message_id, "data": data},
        )
        await self.service.buttons.press(
            LeadButtonPressed(
                callback_query_id=pressed["id"],
                data=data,
                user_id=user_id,
                user_name=who.get("name", f"Staff {user_id}"),
                username=who.get("username"),
                chat_id=LEADS_CHAT,
                message_id=message_id,
            )
        )
        return str(pressed["id"])

    async def chat(self) -> list[dict[str, Any]]:
        """The bot's messages in the leads chat, oldest first."""
        messages = await self.sim.get(f"/sim/chats/{LEADS_CHAT}/messages")
        return [m for m in messages if m["from_bot"]]

    async def post(self, lead_id: int) -> LeadPost:
        async with self.db.transaction() as repos:
            post = await repos.lead_posts.get(CARD, lead_id)
        assert post is not None
        return post

    async def fault(self, **spec: Any) -> None:
        await self.sim.post("/sim/faults", spec)

    async def sends(self) -> list[dict[str, Any]]:
        """``sendMessage`` calls the simulator received (including refused ones)."""
        calls: list[dict[str, Any]] = await self.sim.get("/sim/calls?method=sendMessage")
        return calls


async def make_rig(
    db: Database,
    redis: aioredis.Redis,
    *,
    read_timeout: float = 5.0,
    max_retries: int = 0,
    fake_limiter_clock: bool = False,
    **sim: Any,
) -> tuple[Rig, ExtBot[None], Any]:
    """The rig; ``fake_limiter_clock`` runs the gateway's flood pauses on the rig's fake clock too (only for
    tests that never let the limiter sleep: a pause it waits out would never end)."""
    runner, running = await serve(sim_config(**sim))
    await running.say(ADMIN, "Lead cards go here", chat_id=LEADS_CHAT, chat_title="Leads")
    clock = FakeClock()
    limiter_clock = (lambda: clock.t.timestamp()) if fake_limiter_clock else time.monotonic
    bot: ExtBot[None] = ExtBot(
        TOKEN,
        base_url=f"{running.url}/bot",
        base_file_url=f"{running.url}/file/bot",
        rate_limiter=FloodLimiter(max_retries=max_retries, clock=limiter_clock),
        request=HTTPXRequest(read_timeout=read_timeout),
    )
    await bot.initialize()
    publisher = Publisher(redis)
    policy = PublishPolicy(chat_id=LEADS_CHAT, backoff=Backoff())
    rig = Rig(
        db=db,
        redis=redis,
        sim=running,
        executor=CommandExecutor(bot=bot, db=db, publisher=publisher),
        service=build_service(policy, db=db, publisher=publisher, now=clock, admin_ids=frozenset({ADMIN})),
        clock=clock,
    )
    return rig, bot, runner


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis) -> AsyncIterator[Rig]:
    made, bot, runner = await make_rig(db, redis)
    yield made
    await bot.shutdown()
    await made.sim.http.close()
    await runner.cleanup()
