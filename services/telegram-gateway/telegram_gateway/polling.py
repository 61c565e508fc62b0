"""Long polling that confirms an update only after it was handled (at least once).

python-telegram-bot's ``Updater`` confirms a batch (the next ``getUpdates`` offset) as soon as it has queued
it, so a gateway killed before its handlers ran loses those updates: a guest's ``/start`` would never bind
(found by the chaos suite). Here each batch is handled first and the offset moves after, so a crash means
the batch is delivered again; every handler is idempotent (binding the same guest twice is harmless, lead
button presses are conditional updates).

Telegram keeps unconfirmed updates for 24 h and allows one ``getUpdates`` consumer per token (REFERENCE.md).
While a webhook is set, every ``getUpdates`` answers 409 "Conflict: can't use getUpdates method while
webhook is active; use deleteWebhook to delete the webhook first" (core.telegram.org/bots/api#getupdates:
"This method will not work if an outgoing webhook is set up"): the gateway deletes the webhook
(``drop_pending_updates=False``, so nothing waiting is lost) and polls, as python-telegram-bot's own
polling does ("we want to make sure that no webhook is configured in case of polling, so we just always call
delete_webhook", telegram/ext/_updater.py ``_bootstrap``). Before, the gateway backed off for ever and no
guest's ``/start`` ever arrived.
"""

from __future__ import annotations

import asyncio

import structlog
from telegram import Update
from telegram.error import Conflict, NetworkError, RetryAfter, TelegramError
from telegram.ext import Application

from shared.streams import Backoff, sleep_or_stop
from telegram_gateway.flood import flood_wait_bound

log = structlog.get_logger(__name__)
#: The 409 of ``getUpdates`` while a webhook is set (tdlib/telegram-bot-api Client.cpp), lower case.
WEBHOOK_ACTIVE = "webhook is active"


async def poll_updates(
    application: Application,
    stop: asyncio.Event,
    *,
    timeout_s: int,
    held: asyncio.Event | None = None,
    handler_flood_wait_s: float = 2.0,
) -> None:
    """Fetch updates with ``getUpdates`` (long polling, ``timeout_s`` seconds), hand each to the
    application's handlers in order, then confirm them; until ``stop`` is set. While ``held`` (the
    single-gateway lock, :func:`telegram_gateway.lock.keep_lock`) is cleared, nothing is fetched.

    Network errors, flood control and a 409 Conflict (another poller) back off and retry; handler errors
    go to the application's error handler and never stop polling. A handler's Bot API call sleeps at most
    ``handler_flood_wait_s`` of its chat's flood pause (:func:`telegram_gateway.flood.flood_wait_bound`):
    updates are handled one at a time, so a longer sleep would hold up every other chat's updates; the
    reply fails instead (logged by the error handler; the handler's database work is done).
    """
    offset: int | None = None
    backoff = Backoff(base_s=1.0, cap_s=30.0)
    while not stop.is_set():
        if held is not None and not held.is_set():
            await _wait_for(held, stop)
            continue
        try:
            updates = await application.bot.get_updates(
                offset=offset, timeout=timeout_s, allowed_updates=Update.ALL_TYPES
            )
        except Conflict as exc:
            if WEBHOOK_ACTIVE in exc.message.lower():
                await _delete_webhook(application)
                continue
            delay = backoff.next_delay()
            log.warning("POLL_FAILED", error=type(exc).__name__, retry_in_s=round(delay, 1))
            await sleep_or_stop(stop, delay)
            continue
        except (NetworkError, RetryAfter, TelegramError) as exc:
            delay = backoff.next_delay()
            log.warning("POLL_FAILED", error=type(exc).__name__, retry_in_s=round(delay, 1))
            await sleep_or_stop(stop, delay)
            continue
        backoff.reset()
        for update in updates:
            with flood_wait_bound(handler_flood_wait_s):
                await application.process_update(update)
            offset = update.update_id + 1


async def _delete_webhook(application: Application) -> None:
    """Remove the webhook that makes every ``getUpdates`` a 409, keeping the pending updates."""
    try:
        await application.bot.delete_webhook(drop_pending_updates=False)
    except TelegramError as exc:
        log.warning("WEBHOOK_NOT_DELETED", error=type(exc).__name__)
        return
    log.error("WEBHOOK_DELETED", reason="a webhook was set for this bot; the gateway uses long polling")


async def _wait_for(event: asyncio.Event, stop: asyncio.Event) -> None:
    """Until ``event`` or ``stop`` is set."""
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
