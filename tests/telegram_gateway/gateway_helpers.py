"""Shared helpers for the gateway tests that run python-telegram-bot against the Telegram simulator: the
gateway's settings pointed at a simulator, polling around a block, and the whole gateway as ``main``
wires it (``build_application`` + ``register_handlers``), started and polling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from telegram.ext import Application

from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.main import build_application, register_handlers
from telegram_gateway.polling import poll_updates
from telegram_gateway.settings import GatewaySettings
from tests.simulators.tgsim_helpers import BOT_USERNAME, TOKEN


def gateway_settings(database_url: str, redis_url: str, sim_url: str, **fields: Any) -> GatewaySettings:
    """The gateway's settings for a test: the test's Postgres and Redis, the simulator's bot token, bot
    username and base URL (``http://host:port``, no trailing slash), a 1 s long poll; ``fields`` add to or
    override these by their environment names (``ADMIN_USER_IDS=…``)."""
    values: dict[str, Any] = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "BOT_USERNAME": BOT_USERNAME,
        "TELEGRAM_API_BASE_URL": sim_url,
        "POLL_TIMEOUT_SEC": 1,
    }
    values.update(fields)
    return GatewaySettings(**values)


@asynccontextmanager
async def polling(application: Application) -> AsyncIterator[None]:  # type: ignore[type-arg]
    """``poll_updates`` (1 s long poll) running on ``application`` for the block and cancelled at its end,
    as when the gateway process is killed: a batch still being handled is not confirmed."""
    poller = asyncio.create_task(poll_updates(application, asyncio.Event(), timeout_s=1))
    try:
        yield
    finally:
        poller.cancel()
        await asyncio.gather(poller, return_exceptions=True)


@dataclass
class RunningGateway:
    """A started, polling gateway and the executor its handlers answer through."""

    application: Application  # type: ignore[type-arg]
    executor: CommandExecutor


@asynccontextmanager
async def running_gateway(
    settings: GatewaySettings, *, db: Database, publisher: Publisher
) -> AsyncIterator[RunningGateway]:
    """The gateway's conversation as ``main`` wires it (``register_handlers`` with an executor on the
    application's bot, as ``register_handlers`` makes one), started and polling for the block; polling
    cancelled, the application stopped and shut down at its end."""
    application = build_application(settings)
    executor = CommandExecutor(
        bot=application.bot, db=db, publisher=publisher, sending_stale_s=settings.sending_stale_sec
    )
    register_handlers(application, db=db, publisher=publisher, settings=settings, executor=executor)
    await application.initialize()
    await application.start()
    try:
        async with polling(application):
            yield RunningGateway(application, executor)
    finally:
        await application.stop()
        await application.shutdown()
