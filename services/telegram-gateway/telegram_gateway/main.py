"""Composition root of the Telegram gateway: ``python -m telegram_gateway``.

Takes the single-gateway lock (exit 1 if another gateway holds it), then runs python-telegram-bot's
long polling, the ``tg:outbox`` consumer and the outbox reconciler until SIGTERM/SIGINT. A lock lost with
its connection (Postgres restarted) pauses polling and execution until it is taken again
(:func:`telegram_gateway.lock.keep_lock`); exit 1 only if another gateway took it meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

import structlog
from telegram.ext import Application, ApplicationBuilder

from shared import streams
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.lifecycle import consumer_name, drain, run_until_stopped, sleep_or_stop, stop_on_signals
from shared.logging import configure_logging
from shared.messages import TelegramCommand
from shared.ops import start_ops_server
from shared.repositories import Database
from shared.streams import Publisher, build_consumer, create_redis
from telegram_gateway.admin import AdminHandlers
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.flood import FloodLimiter
from telegram_gateway.handlers import GuestHandlers, log_error
from telegram_gateway.leads_updates import LeadsUpdateRouter
from telegram_gateway.lock import GatewayLock, keep_lock
from telegram_gateway.maintenance_gate import MaintenanceGate
from telegram_gateway.polling import poll_updates
from telegram_gateway.settings import GatewaySettings

log = structlog.get_logger(__name__)
SERVICE = "telegram-gateway"


def build_application(settings: GatewaySettings) -> Application:
    """The python-telegram-bot application, rate-limited by :class:`FloodLimiter` (30 messages/s overall,
    1/s per private chat, 20/min per group; a 429 pauses only its chat or method, and is waited out up to
    ``TELEGRAM_FLOOD_WAIT_MAX_SEC``, at most ``RATE_LIMIT_MAX_RETRIES`` times)."""
    base = settings.telegram_api_base_url.rstrip("/")
    return (
        ApplicationBuilder()
        .token(settings.telegram_bot_token.get_secret_value())
        .base_url(f"{base}/bot")
        .base_file_url(f"{base}/file/bot")
        .rate_limiter(
            FloodLimiter(wait_max_s=settings.flood_wait_max_sec, max_retries=settings.rate_limit_max_retries)
        )
        .get_updates_read_timeout(settings.poll_timeout_sec + 10)
        .updater(None)  # polling is ours: updates are confirmed only after handling (polling.py)
        .build()
    )


def register_handlers(
    application: Application,
    *,
    db: Database,
    publisher: Publisher,
    settings: GatewaySettings,
    executor: CommandExecutor | None = None,
) -> None:
    """The conversation, in order: the leads router (group -2), the maintenance gate (group -1), admin
    commands, guest handlers, and the one global error handler. Guest replies are executed by
    ``executor`` (the gateway's own; a new one on ``application.bot`` when ``None``)."""
    if executor is None:
        executor = CommandExecutor(
            bot=application.bot, db=db, publisher=publisher, sending_stale_s=settings.sending_stale_sec
        )
    env = settings.maintenance_mode
    MaintenanceGate(db=db, admin_ids=settings.admin_ids, env_maintenance=env).register(application)
    AdminHandlers(db=db, publisher=publisher, admin_ids=settings.admin_ids, env_maintenance=env).register(
        application
    )
    GuestHandlers(db, executor).register(application)
    LeadsUpdateRouter(
        publisher=publisher, leads_chat_id=settings.leads_chat_id, enabled=settings.leads_enabled
    ).register(application)
    application.add_error_handler(log_error)


async def reconcile_outbox(
    db: Database, publisher: Publisher, settings: GatewaySettings, stop: asyncio.Event
) -> None:
    """Re-publish ``tg_commands`` rows still ``pending`` after the grace period (DESIGN.md §3)."""
    grace = timedelta(seconds=settings.reconcile_grace_sec)
    republish_after = timedelta(seconds=settings.republish_after_sec)
    stale = timedelta(seconds=settings.sending_stale_sec)
    while not stop.is_set():
        try:
            async with db.transaction() as repos:
                due = await repos.tg_commands.due_for_dispatch(
                    grace=grace, republish_after=republish_after, limit=200, sending_stale=stale
                )
            published = [
                r.command_id
                for r in due
                if await publisher.try_publish(streams.TG_OUTBOX, TelegramCommand(command_id=r.command_id))
            ]
            if published:
                log.info("OUTBOX_REPUBLISHED", count=len(published))
                async with db.transaction() as repos:
                    await repos.tg_commands.mark_dispatched(published)
        except Exception as exc:
            log.warning("RECONCILE_FAILED", error=type(exc).__name__)
        await sleep_or_stop(stop, settings.reconcile_interval_sec)


async def run(settings: GatewaySettings) -> int:
    lock = GatewayLock(settings.database_url)
    if not await lock.acquire():
        log.error("STARTUP_CANCELLED", reason="another telegram-gateway holds the lock")
        return 1
    db = Database(create_engine(settings.database_url))
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    publisher = Publisher(redis, maxlen=settings.stream_maxlen)
    application = build_application(settings)
    held = asyncio.Event()
    held.set()
    executor = CommandExecutor(
        bot=application.bot,
        db=db,
        publisher=publisher,
        sending_stale_s=settings.sending_stale_sec,
        admin_chat_id=settings.admin_chat_id,
        held=held,
    )
    register_handlers(application, db=db, publisher=publisher, settings=settings, executor=executor)
    consumer = build_consumer(
        redis,
        settings,
        stream=streams.TG_OUTBOX,
        group=SERVICE,
        consumer=consumer_name(settings.consumer_name, SERVICE),
        handler=executor.handle,
        slots=settings.outbox_slots,
        on_dead=dead_letter_alerter(db, publisher),
    )
    stop = stop_on_signals()

    tasks: list[asyncio.Task[None]] = []
    ops = await start_ops_server(
        settings.ops_port, ready=db.ping, alive=lambda: all(not t.done() for t in tasks)
    )
    await application.initialize()
    await application.start()
    log.info("STARTUP", service=SERVICE, api=settings.telegram_api_base_url, bot=application.bot.username)
    poller = asyncio.create_task(
        poll_updates(application, stop, timeout_s=settings.poll_timeout_sec, held=held), name="polling"
    )
    lock_keeper = asyncio.create_task(keep_lock(lock, held=held, stop=stop), name="lock")
    tasks = [
        poller,
        asyncio.create_task(consumer.run(stop), name="outbox"),
        asyncio.create_task(reconcile_outbox(db, publisher, settings, stop), name="reconcile"),
    ]
    await run_until_stopped(stop, [*tasks, lock_keeper])
    log.info("SHUTDOWN", service=SERVICE)
    poller.cancel()  # stop taking updates first; an unconfirmed batch is delivered again next start
    await asyncio.gather(poller, return_exceptions=True)
    await drain([consumer], timeout_s=10)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await application.stop()
    await application.shutdown()
    if ops is not None:
        await ops.cleanup()
    await redis.aclose()
    await db.dispose()
    code = await lock_keeper
    await lock.release()
    return code


def main() -> None:
    # python-telegram-bot 22: opt in to timedelta-valued ``retry_after`` (the next major's behaviour);
    # without it every flood-control answer raises a deprecation warning inside the rate limiter.
    os.environ.setdefault("PTB_TIMEDELTA", "1")
    settings = GatewaySettings()
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
