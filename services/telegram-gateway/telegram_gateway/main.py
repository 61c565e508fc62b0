"""Composition root of the Telegram gateway: ``python -m telegram_gateway``.

Checks that the token's bot is ``BOT_USERNAME`` (exit 2 naming both if not), then hands the updates'
intake (long polling, or in ``TELEGRAM_UPDATES=webhook`` mode the webhook route and the stored updates'
handler: :func:`update_tasks`), the lease keeper (:mod:`telegram_gateway.lease`), the command menu
(:mod:`telegram_gateway.menu`, set once at start), the ``tg:outbox`` consumer and the outbox reconciler
(:func:`duties`) to :class:`shared.runtime.ServiceRuntime` until SIGTERM/SIGINT. Any number of replicas
run (issue 22): the one holding the gateway lease leads, and polling, the stored updates' handler, the
webhook registration, the consumer, the menu and the duties wait on its ``held`` event; the others are a
hot standby (in webhook mode they still accept and store updates) that takes over within ~7 s when the
leader dies, loses its node or is partitioned from Postgres. Until issue 22 a session-level advisory lock
made a second gateway exit 1.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from datetime import timedelta
from functools import partial
from typing import Unpack

import structlog
from telegram.error import InvalidToken
from telegram.ext import Application, ApplicationBuilder

from shared import streams
from shared.db import create_engine
from shared.erasure import set_deletion_duty
from shared.errors import ConfigError
from shared.logging import configure_logging
from shared.messages import TelegramCommand
from shared.repositories import Database
from shared.repositories.legacy_subjects import fill_missing_subjects
from shared.runtime import Duty, Given, LongTask, ServiceRuntime
from shared.settings import settings_or_exit
from shared.streams import Publisher, route
from telegram_gateway.admin import AdminHandlers
from telegram_gateway.erasure import ErasureHandlers
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.flood import FloodLimiter
from telegram_gateway.handlers import GuestHandlers, log_error
from telegram_gateway.identity import check_bot_identity
from telegram_gateway.leads_updates import LeadsUpdateRouter
from telegram_gateway.lease import GatewayLease
from telegram_gateway.maintenance_gate import MaintenanceGate
from telegram_gateway.menu import CommandMenu
from telegram_gateway.polling import poll_updates
from telegram_gateway.preflight import PreflightCommand
from telegram_gateway.settings import GatewaySettings
from telegram_gateway.webhook import WebhookRoute, handle_stored_updates, keep_webhook, serve_webhook

log = structlog.get_logger(__name__)
SERVICE = "telegram-gateway"
SHUTDOWN_GRACE_SEC = 10.0
#: The exit code of a start refused for its configuration, as :func:`shared.settings.settings_or_exit`.
CONFIG_EXIT = 2


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
    commands (``/preflight``: :mod:`telegram_gateway.preflight`), the guest's ``/delete``
    (:mod:`telegram_gateway.erasure`), guest handlers, and the one
    global error handler. Guest replies are executed by
    ``executor`` (the gateway's own; a new one on ``application.bot`` when ``None``)."""
    if executor is None:
        executor = CommandExecutor(
            bot=application.bot,
            db=db,
            publisher=publisher,
            sending_stale_s=settings.sending_stale_sec,
            media_timeout_s=settings.media_timeout_sec,
        )
    env = settings.maintenance_mode
    MaintenanceGate(db=db, executor=executor, admin_ids=settings.admin_ids, env_maintenance=env).register(
        application
    )
    AdminHandlers(
        db=db, publisher=publisher, admin_ids=settings.admin_ids, env_maintenance=env, budget=settings
    ).register(application)
    PreflightCommand(db=db, settings=settings).register(application)
    ErasureHandlers(db=db, publisher=publisher, executor=executor).register(application)
    GuestHandlers(db, executor, env_maintenance=env, admin_ids=settings.admin_ids).register(application)
    LeadsUpdateRouter(
        publisher=publisher, leads_chat_id=settings.leads_chat_id, enabled=settings.leads_enabled
    ).register(application)
    application.add_error_handler(log_error)


async def reconcile_outbox(
    db: Database, publisher: Publisher, settings: GatewaySettings, *, takeover: bool = False
) -> None:
    """Re-publish ``tg_commands`` rows still ``pending`` after the grace period (DESIGN.md §3), and those
    deferred by a flood wait once their ``not_before`` has come (issue 21). First it gives the rows that
    pre-0010 pods wrote without a subject theirs (:mod:`shared.repositories.legacy_subjects`, a rolling
    deploy's shim). ``takeover``: the first tick of a replica that just took the lease (issue 22) hints
    every due pending row at once, without grace: the hints the old leader had read sit in its consumer's
    pending list until the stream lease (60 s) or the republish delay (120 s) would free them, and an
    extra hint claims nothing twice."""
    grace = 0.0 if takeover else settings.reconcile_grace_sec
    republish_after = 0.0 if takeover else settings.republish_after_sec
    async with db.transaction() as repos:
        await fill_missing_subjects(repos.conn)
        due = await repos.tg_commands.due_for_dispatch(
            grace=timedelta(seconds=grace),
            republish_after=timedelta(seconds=republish_after),
            limit=200,
            sending_stale=timedelta(seconds=settings.sending_stale_sec),
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


def duties(
    db: Database,
    publisher: Publisher,
    settings: GatewaySettings,
    *,
    held: asyncio.Event,
    lease: GatewayLease | None = None,
) -> list[Duty]:
    """The gateway's periodic duties, every ``RECONCILE_INTERVAL_SEC`` (2 s) while this replica leads
    (``held``): the ``tg:outbox`` reconciler (which also sends each command deferred by a flood wait on
    its first tick after ``not_before``, and hints every pending row on the first tick of a new lease
    epoch), and the erasure follow-up (purge the finished set deletions:
    :func:`shared.erasure.set_deletion_duty`)."""
    reconciled_epoch: list[int | None] = [None]

    async def reconcile() -> None:
        epoch = lease.claim.epoch if lease is not None and lease.claim is not None else None
        takeover = epoch is not None and epoch != reconciled_epoch[0]
        await reconcile_outbox(db, publisher, settings, takeover=takeover)
        reconciled_epoch[0] = epoch

    erasures = partial(set_deletion_duty, db)
    interval = settings.reconcile_interval_sec
    return [
        Duty("reconcile", interval, reconcile, failed_event="RECONCILE_FAILED", gate=held),
        Duty("set_deletions", interval, erasures, failed_event="SET_DELETIONS_FAILED", gate=held),
    ]


def update_tasks(
    application: Application,
    db: Database,
    settings: GatewaySettings,
    *,
    held: asyncio.Event,
) -> list[LongTask]:
    """How updates arrive (``TELEGRAM_UPDATES``): ``polling`` (the leader long-polls, deleting any
    webhook first), or ``webhook`` (:mod:`telegram_gateway.webhook`: every replica serves the route and
    stores updates; the leader registers the webhook and handles the stored updates). The intake tasks
    stop first at shutdown: an unconfirmed batch or an unhandled stored update is handled again later."""
    if settings.telegram_updates == "polling":
        polling = partial(poll_updates, application, timeout_s=settings.poll_timeout_sec, held=held)
        return [LongTask("polling", polling, intake=True)]
    assert settings.webhook_secret is not None  # GatewaySettings refuses webhook mode without one
    arrived = asyncio.Event()
    route = WebhookRoute(
        db,
        application,
        secret=settings.webhook_secret.get_secret_value(),
        max_body_bytes=settings.webhook_max_body_bytes,
        arrived=arrived,
    )
    handling = partial(handle_stored_updates, application, db, held=held, arrived=arrived)
    return [
        LongTask("webhook", partial(serve_webhook, route, settings), intake=True),
        LongTask("stored_updates", handling, intake=True),
        LongTask("set_webhook", partial(keep_webhook, application, settings, held=held)),
    ]


async def run(settings: GatewaySettings, **given: Unpack[Given]) -> int:
    """Run the gateway until SIGTERM/SIGINT (or ``stop``), leading or standing by (:mod:`.lease`);
    returns the exit code: 2 (:data:`CONFIG_EXIT`, logged
    ``STARTUP_CANCELLED`` with the cause) when Telegram refuses the token or the token's bot is not
    ``BOT_USERNAME`` (:func:`telegram_gateway.identity.check_bot_identity`); else as
    :meth:`ServiceRuntime.run`."""
    async with ServiceRuntime(SERVICE, settings, **given) as rt:
        application = build_application(settings)
        held = asyncio.Event()  # set while this replica leads
        # its own engine: a renewal never queues behind the gateway's work for a pooled connection
        lease_db = Database(create_engine(settings.database_url, pool_size=1, connect_timeout_s=2.0))
        rt.closing(lease_db.engine.dispose)
        lease = GatewayLease(
            lease_db,
            holder=f"{rt.consumer_name}:{secrets.token_hex(4)}",
            ttl_s=settings.lease_ttl_sec,
            held=held,
        )
        executor = CommandExecutor(
            bot=application.bot,
            db=rt.db,
            publisher=rt.publisher,
            sending_stale_s=settings.sending_stale_sec,
            admin_chat_id=settings.admin_chat_id,
            held=held,
            lease=lambda: lease.current,
            media_timeout_s=settings.media_timeout_sec,
        )
        register_handlers(application, db=rt.db, publisher=rt.publisher, settings=settings, executor=executor)
        menu = CommandMenu(application.bot, sorted(settings.admin_ids))
        menu.register(application)
        try:
            await application.initialize()  # getMe: an unaccepted token raises InvalidToken
            rt.closing(application.shutdown)
            await check_bot_identity(application.bot, settings.bot_username)
        except (InvalidToken, ConfigError) as exc:
            log.error("STARTUP_CANCELLED", reason=str(exc))
            return CONFIG_EXIT
        await application.start()
        rt.closing(application.stop)  # stop, then shutdown, after the drain: finishing commands send
        return await rt.run(
            consumers=[
                # Read only while this replica leads (``gate``). No time limit: a sticker set takes
                # one call per sticker (each bounded by TELEGRAM_MEDIA_TIMEOUT_SEC, pauses by
                # TELEGRAM_FLOOD_WAIT_MAX_SEC), and a send cancelled mid-call could only be
                # failed as unknown on its next run (executor.py); every Bot API call bounds itself.
                rt.consumer(
                    streams.TG_OUTBOX,
                    route(TelegramCommand, executor.handle),
                    slots=settings.outbox_slots,
                    handler_timeout_s=None,
                    gate=held,
                )
            ],
            duties=duties(rt.db, rt.publisher, settings, held=held, lease=lease),
            tasks=[
                # stop taking updates first; an unconfirmed batch is delivered again next start
                *update_tasks(application, rt.db, settings, held=held),
                # lead or stand by: sets ``held`` while the lease is this replica's (.lease)
                LongTask("lease", lease.keep),
                # the command menu, set once at start (retried; a failure is only logged), and
                # for an admin Telegram did not know yet when they first write
                LongTask("menu", partial(menu.keep, held=held)),
            ],
            drain_timeout_s=SHUTDOWN_GRACE_SEC,
            startup={
                "api": settings.telegram_api_base_url,
                "bot": application.bot.username,
                "lease_holder": lease.holder,
            },
        )


def main() -> None:
    # python-telegram-bot 22: opt in to timedelta-valued ``retry_after`` (the next major's behaviour);
    # without it every flood-control answer raises a deprecation warning inside the rate limiter.
    os.environ.setdefault("PTB_TIMEDELTA", "1")
    settings = settings_or_exit(GatewaySettings, SERVICE)
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
