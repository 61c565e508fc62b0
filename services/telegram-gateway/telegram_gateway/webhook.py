"""Webhook mode (``TELEGRAM_UPDATES=webhook``, issue 22): Telegram POSTs each update to the gateway, the
gateway stores it in Postgres before answering, and the leading replica handles the stored updates.

Three parts, each a task of the gateway (``main.py``):

- :class:`WebhookRoute` on :func:`serve_webhook` (every replica): checks ``X-Telegram-Bot-Api-Secret-Token``
  against ``TELEGRAM_WEBHOOK_SECRET`` in constant time (:func:`hmac.compare_digest`; 401 ``bad_secret`` and
  nothing stored otherwise), refuses a body over ``WEBHOOK_MAX_BODY_BYTES`` (413 ``body_too_large``), a
  body that is not JSON (400 ``not_json``) or not an Update (400 ``invalid_update``), and answers 200 only
  once the update is in ``tg_updates`` (``INSERT ... ON CONFLICT (update_id) DO NOTHING``: Telegram's
  retries store nothing new). Postgres unreachable: 503 ``db_unavailable``, and Telegram repeats the POST
  ("In case of an unsuccessful request (a request with response HTTP status code different from 2XY), we
  will repeat the request and give up after a reasonable amount of attempts",
  core.telegram.org/bots/api#setwebhook). python-telegram-bot's own webhook server is not used: it sets
  200 and puts the update on an in-memory queue (a crash loses it), compares the secret with ``!=``, needs
  tornado (telegram/ext/_utils/webhookhandler.py, PTB 22.8), and one process owns the queue (PTB issues
  #4452, #5123); its custom-webhook example checks no secret.
- :func:`handle_stored_updates` (the leader only: ``held``): the unhandled rows in ``update_id`` order,
  through the application's handlers with the per-chat ordering of polling (:class:`StoredLanes`, a
  :class:`~telegram_gateway.polling.ChatLanes`); a row is marked handled once its handlers ran, so a
  leader killed meanwhile leaves it for the next one (at least once; the handlers are idempotent).
- :func:`keep_webhook` (the leader only): ``setWebhook`` with the URL, ``secret_token``,
  ``allowed_updates`` and ``max_connections`` once per leadership, never by every replica at start.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from aiohttp import web
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import Application

from shared.errors import DatabaseUnavailable
from shared.repositories import Database
from shared.runtime import wait_any
from shared.streams import Backoff, sleep_or_stop
from telegram_gateway.polling import ChatLanes
from telegram_gateway.settings import GatewaySettings

log = structlog.get_logger(__name__)

#: The header Telegram sends ``secret_token`` in (core.telegram.org/bots/api#setwebhook).
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: Stored updates read at once by the leader.
BATCH = 100
#: Seconds between two reads of ``tg_updates`` when no POST to this replica woke the leader (an update
#: another replica stored is seen within this).
RECHECK_S = 0.5
#: Handled updates are kept this long (Telegram gives up on an undelivered update after 24 h).
KEEP_HANDLED = timedelta(days=1)
#: Seconds between two prunes of handled updates.
PRUNE_EVERY_S = 600.0


def _refuse(status: int, code: str, message: str) -> web.Response:
    """An error body as ingest's: ``{"error": {"code": ..., "message": ...}}``."""
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class WebhookRoute:
    """``POST <path of TELEGRAM_WEBHOOK_URL>``: Telegram's update, stored before the 200.

    Args:
        db: where ``tg_updates`` lives.
        application: its ``bot`` parses the Update (``Update.de_json``) to refuse a malformed one.
        secret: ``TELEGRAM_WEBHOOK_SECRET``, compared with the header in constant time.
        max_body_bytes: the largest body read; a larger one is 413.
        arrived: set after an update is stored (wakes this replica's :func:`handle_stored_updates`).
    """

    def __init__(
        self,
        db: Database,
        application: Application,
        *,
        secret: str,
        max_body_bytes: int,
        arrived: asyncio.Event,
    ) -> None:
        self.db = db
        self.application = application
        self.secret = secret.encode()
        self.max_body_bytes = max_body_bytes
        self.arrived = arrived

    def add_to(self, app: web.Application, path: str) -> None:
        app.router.add_post(path, self.receive)

    async def receive(self, request: web.Request) -> web.Response:
        """Store one update. 200 ``{"ok": true}`` once stored (or stored before); 401 ``bad_secret``,
        413 ``body_too_large``, 400 ``not_json`` / ``invalid_update``, 503 ``db_unavailable``."""
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.secret):
            log.warning("WEBHOOK_FORGED", has_header=SECRET_HEADER in request.headers)
            return _refuse(401, "bad_secret", f"{SECRET_HEADER} is missing or wrong")
        too_large = _refuse(413, "body_too_large", f"the body exceeds {self.max_body_bytes} bytes")
        if request.content_length is not None and request.content_length > self.max_body_bytes:
            return too_large
        body = bytearray()  # read to the end: one read() may return only the first chunk
        async for chunk in request.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > self.max_body_bytes:
                return too_large
        try:
            data = json.loads(body)
        except ValueError:
            return _refuse(400, "not_json", "the body is not JSON")
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if type(update_id) is not int or update_id < 0 or not self._parses(data):
            return _refuse(400, "invalid_update", "the body is not a Telegram Update")
        try:
            async with self.db.transaction() as repos:
                stored = await repos.tg_updates.store(update_id, data)
        except DatabaseUnavailable:
            log.warning("WEBHOOK_DB_UNAVAILABLE", update_id=update_id)
            return _refuse(503, "db_unavailable", "the update could not be stored; repeat it")
        self.arrived.set()
        log.info("WEBHOOK_UPDATE_STORED" if stored else "WEBHOOK_UPDATE_REPEATED", update_id=update_id)
        return web.json_response({"ok": True})

    def _parses(self, data: dict[str, Any]) -> bool:
        """Whether python-telegram-bot reads ``data`` as an Update."""
        try:
            Update.de_json(data, self.application.bot)
        except (TypeError, ValueError, KeyError, AttributeError):
            return False
        return True


async def serve_webhook(route: WebhookRoute, settings: GatewaySettings, stop: asyncio.Event) -> None:
    """Serve ``route`` on ``WEBHOOK_HOST:WEBHOOK_PORT`` at the path of ``TELEGRAM_WEBHOOK_URL`` until
    ``stop``; a POST being stored is finished before the server closes (aiohttp's graceful shutdown)."""
    app = web.Application(client_max_size=route.max_body_bytes)
    route.add_to(app, settings.webhook_path)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        # SO_REUSEPORT: two replicas on one host (the devstack's hot standby) share the port and the
        # kernel spreads the POSTs over them, as an ingress spreads them over pods.
        site = web.TCPSite(runner, settings.webhook_host, settings.webhook_port, reuse_port=True)
        await site.start()
        log.info("WEBHOOK_LISTENING", port=settings.webhook_port, path=settings.webhook_path)
        await stop.wait()
    finally:
        await runner.cleanup()


class StoredLanes(ChatLanes):
    """:class:`~telegram_gateway.polling.ChatLanes` for stored updates: any update not being handled is
    started (webhook POSTs may arrive out of ``update_id`` order), and marked handled in ``tg_updates``
    once its handlers ran."""

    def __init__(self, application: Application, flood_wait_s: float, db: Database) -> None:
        super().__init__(application, flood_wait_s)
        self.db = db

    def start(self, updates: Sequence[Update]) -> int:
        """Start the updates not being handled now; returns how many."""
        running = self.running_ids
        fresh = [update for update in updates if update.update_id not in running]
        for update in fresh:
            self._launch(update)
        return len(fresh)

    async def _handle(self, update: Update, before: asyncio.Task[None] | None) -> None:
        await super()._handle(update, before)
        try:
            async with self.db.transaction() as repos:
                await repos.tg_updates.mark_handled(update.update_id)
        except DatabaseUnavailable:
            log.warning("WEBHOOK_UPDATE_NOT_MARKED", update_id=update.update_id)  # handled again later


async def handle_stored_updates(
    application: Application,
    db: Database,
    stop: asyncio.Event,
    *,
    held: asyncio.Event,
    arrived: asyncio.Event,
    handler_flood_wait_s: float = 2.0,
    recheck_s: float = RECHECK_S,
) -> None:
    """While ``held`` (this replica leads), hand the stored, unhandled updates to the application's
    handlers, oldest first, each chat's in order and chats side by side (as polling does); until ``stop``.

    Reads ``tg_updates`` when ``arrived`` is set (a POST to this replica) or every ``recheck_s`` s; prunes
    the rows handled more than :data:`KEEP_HANDLED` ago every :data:`PRUNE_EVERY_S` s. Postgres unreachable:
    backs off (1 s doubling to 30 s). On ``stop`` the updates being handled are finished; cancelled, they
    stay unhandled and the next leader handles them."""
    lanes = StoredLanes(application, handler_flood_wait_s, db)
    backoff = Backoff(base_s=1.0, cap_s=30.0)
    pruned_at = 0.0
    try:
        while not stop.is_set():
            if not held.is_set():
                await wait_any(held, stop)
                continue
            arrived.clear()
            try:
                async with db.transaction() as repos:
                    bodies = await repos.tg_updates.unhandled(BATCH, skip=lanes.running_ids)
                    if time.monotonic() - pruned_at > PRUNE_EVERY_S:
                        pruned_at = time.monotonic()
                        await repos.tg_updates.prune_handled(datetime.now(UTC) - KEEP_HANDLED)
            except DatabaseUnavailable:
                delay = backoff.next_delay()
                log.warning("WEBHOOK_READ_FAILED", retry_in_s=round(delay, 1))
                await sleep_or_stop(stop, delay)
                continue
            backoff.reset()
            lanes.start([Update.de_json(body, application.bot) for body in bodies])
            await wait_any(arrived, stop, timeout_s=recheck_s)
    except asyncio.CancelledError:
        lanes.cancel()
        raise
    await lanes.drain()


async def keep_webhook(
    application: Application,
    settings: GatewaySettings,
    stop: asyncio.Event,
    *,
    held: asyncio.Event,
) -> None:
    """Register the webhook once each time this replica becomes the leader (``held`` set): ``setWebhook``
    with ``TELEGRAM_WEBHOOK_URL``, the ``secret_token``, every update type (``Update.ALL_TYPES``, as
    polling asks for) and ``max_connections``; pending updates are kept. A refusal or a network error is
    retried with backoff (1 s doubling to 60 s). Followers never call it."""
    assert settings.webhook_secret is not None  # GatewaySettings refuses webhook mode without one
    backoff = Backoff(base_s=1.0, cap_s=60.0)
    while not stop.is_set():
        await wait_any(held, stop)
        if stop.is_set():
            return
        try:
            await application.bot.set_webhook(
                url=settings.webhook_url,
                secret_token=settings.webhook_secret.get_secret_value(),
                allowed_updates=Update.ALL_TYPES,
                max_connections=settings.webhook_max_connections,
                drop_pending_updates=False,
            )
        except TelegramError as exc:
            delay = backoff.next_delay()
            log.warning(
                "WEBHOOK_NOT_SET", error=type(exc).__name__, message=str(exc), retry_in_s=round(delay, 1)
            )
            await sleep_or_stop(stop, delay)
            continue
        backoff.reset()
        log.info("WEBHOOK_SET", url=settings.webhook_url, max_connections=settings.webhook_max_connections)
        while held.is_set() and not stop.is_set():  # until leadership is lost; set again when regained
            await sleep_or_stop(stop, 1.0)
