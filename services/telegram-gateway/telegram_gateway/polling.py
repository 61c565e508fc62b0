"""Long polling that confirms an update only after it was handled (at least once).

python-telegram-bot's ``Updater`` confirms a batch (the next ``getUpdates`` offset) as soon as it has queued
it, so a gateway killed before its handlers ran loses those updates: a guest's ``/start`` would never bind
(found by the chaos suite). Here the offset passes an update only once it was handled, so a crash means
the updates being handled are delivered again; every handler is idempotent (binding the same guest twice
is harmless, lead button presses are conditional updates).

Telegram keeps unconfirmed updates for 24 h and allows one ``getUpdates`` consumer per token (REFERENCE.md).
While a webhook is set, every ``getUpdates`` answers 409 "Conflict: can't use getUpdates method while
webhook is active; use deleteWebhook to delete the webhook first" (core.telegram.org/bots/api#getupdates:
"This method will not work if an outgoing webhook is set up"): the gateway deletes the webhook
(``drop_pending_updates=False``, so nothing waiting is lost) and polls; it also deletes it once whenever it
starts polling (a gateway switched back from ``TELEGRAM_UPDATES=webhook``), as python-telegram-bot's own
polling does ("we want to make sure that no webhook is configured in case of polling, so we just always call
delete_webhook", telegram/ext/_updater.py ``_bootstrap``). Before, the gateway backed off for ever and no
guest's ``/start`` ever arrived.
"""

from __future__ import annotations

import asyncio
import functools
from asyncio import FIRST_COMPLETED
from collections.abc import Coroutine, Sequence
from typing import Any

import structlog
from telegram import Update
from telegram.error import Conflict, NetworkError, RetryAfter, TelegramError
from telegram.ext import Application

from shared.streams import Backoff, sleep_or_stop
from telegram_gateway.flood import flood_wait_bound

log = structlog.get_logger(__name__)
#: The 409 of ``getUpdates`` while a webhook is set (tdlib/telegram-bot-api Client.cpp), lower case.
WEBHOOK_ACTIVE = "webhook is active"
#: Seconds between two ``getUpdates`` while updates are being handled and no new one came.
RECHECK_S = 0.25


async def poll_updates(
    application: Application,
    stop: asyncio.Event,
    *,
    timeout_s: int,
    held: asyncio.Event | None = None,
    handler_flood_wait_s: float = 2.0,
    recheck_s: float = RECHECK_S,
) -> None:
    """Fetch updates with ``getUpdates`` (long polling, ``timeout_s`` seconds) and hand each to the
    application's handlers: each chat's updates in order, different chats at the same time
    (:class:`ChatLanes`); until ``stop`` is set. While ``held`` (this replica leads: it holds the gateway
    lease, :mod:`telegram_gateway.lease`) is cleared, nothing is fetched, and a long poll in flight when
    it is cleared is cancelled (its updates unconfirmed, for the new leader).

    An update is confirmed (the ``offset`` passes it) only once it and every earlier one were handled.
    While some are still being handled, the next ``getUpdates`` asks from the oldest of them: Telegram
    answers at once with the unconfirmed ones again ("An update is considered confirmed as soon as
    getUpdates is called with an offset higher than its update_id", core.telegram.org/bots/api#getupdates)
    and any new ones; those already being handled are skipped, the new ones start at once. When nothing
    new came, the loop waits up to ``recheck_s`` (or until a handler finishes) before asking again. So a
    guest writing 25 messages in a burst (each reply paced 1 s by their chat's bucket) no longer holds up
    another guest's ``/start`` for 25 s (issue 19): before, updates were handled one at a time.

    Network errors, flood control and a 409 Conflict (another poller) back off and retry; handler errors
    go to the application's error handler and never stop polling. A handler's Bot API call sleeps at most
    ``handler_flood_wait_s`` of its chat's flood pause (:func:`telegram_gateway.flood.flood_wait_bound`):
    a reply held longer fails instead (logged by the error handler; the handler's database work is done).
    On ``stop`` the updates being handled are finished (the runtime bounds the wait) and confirmed with
    the next start's first ``getUpdates``.
    """
    lanes = ChatLanes(application, handler_flood_wait_s)
    backoff = Backoff(base_s=1.0, cap_s=30.0)
    webhook_deleted = False  # once per leadership: the leader polls, so no webhook may stay set
    try:
        while not stop.is_set():
            if held is not None and not held.is_set():
                webhook_deleted = False
                await _wait_for(held, stop)
                continue
            if not webhook_deleted:
                webhook_deleted = await _delete_webhook(application, reason="polling starts")
            busy = lanes.busy
            try:
                fetched = await _while_held(
                    application.bot.get_updates(
                        offset=lanes.offset,
                        timeout=0 if busy else timeout_s,
                        allowed_updates=Update.ALL_TYPES,
                    ),
                    held,
                )
            except Conflict as exc:
                if WEBHOOK_ACTIVE in exc.message.lower():
                    # another deployment with this token set one: ours polls, so it goes
                    log.error("WEBHOOK_ACTIVE_WHILE_POLLING", action="deleteWebhook")
                    await _delete_webhook(application, reason="a webhook was set while polling")
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
            if fetched is None:
                continue  # fenced mid-call: nothing fetched is confirmed, so the new leader gets it all
            updates = fetched
            backoff.reset()
            started = lanes.start(updates)
            if not started and lanes.busy:
                await lanes.wait_any(recheck_s)
    except asyncio.CancelledError:
        lanes.cancel()  # killed: what was being handled is not confirmed, and comes again
        raise
    await lanes.drain()


class ChatLanes:
    """Updates being handled: one chain of tasks per chat (``effective_chat``, else ``effective_user``;
    an update with neither runs on its own), so a chat's updates run in the order Telegram sent them and
    chats run side by side. This is python-telegram-bot's ``concurrent_updates`` with per-chat order:
    PTB 22.8's own ``SimpleUpdateProcessor`` only bounds how many updates run at once, in no order
    (telegram/ext/_baseupdateprocessor.py), and runs under its ``Updater``, which confirms updates before
    they are handled; a ``BaseUpdateProcessor`` subclass with per-chat locks would still need this loop
    to confirm after handling."""

    def __init__(self, application: Application, flood_wait_s: float) -> None:
        self.application = application
        self.flood_wait_s = flood_wait_s
        self._running: dict[int, asyncio.Task[None]] = {}  # update_id → its task
        self._last: dict[int, asyncio.Task[None]] = {}  # chat → the task of its latest update
        self._next = 0  # one above the highest update_id handled or being handled

    @property
    def busy(self) -> bool:
        return bool(self._running)

    @property
    def offset(self) -> int | None:
        """The ``getUpdates`` offset: the oldest update still being handled, else one past the last."""
        if self._running:
            return min(self._running)
        return self._next or None

    def start(self, updates: Sequence[Update]) -> int:
        """Start the updates not seen before; returns how many."""
        started = 0
        for update in updates:
            if update.update_id < self._next:
                continue  # being handled (or handled: confirmed with the next offset)
            self._next = update.update_id + 1
            self._launch(update)
            started += 1
        return started

    @property
    def running_ids(self) -> frozenset[int]:
        """The ids of the updates being handled now."""
        return frozenset(self._running)

    def _launch(self, update: Update) -> None:
        """Start handling ``update`` after its chat's latest update (webhook.py starts stored ones so)."""
        chat = update.effective_chat or update.effective_user
        key = chat.id if chat is not None else None
        before = self._last.get(key) if key is not None else None
        task = asyncio.create_task(self._handle(update, before), name=f"update:{update.update_id}")
        self._running[update.update_id] = task
        if key is not None:
            self._last[key] = task
        task.add_done_callback(functools.partial(self._done, update.update_id, key))

    async def _handle(self, update: Update, before: asyncio.Task[None] | None) -> None:
        if before is not None:
            await asyncio.wait([before])  # the chat's previous update first; its failure is its own
        with flood_wait_bound(self.flood_wait_s):
            await self.application.process_update(update)

    def _done(self, update_id: int, key: int | None, task: asyncio.Task[None]) -> None:
        self._running.pop(update_id, None)
        if key is not None and self._last.get(key) is task:
            del self._last[key]

    async def wait_any(self, timeout_s: float) -> None:
        """Until one update's handling ends, or ``timeout_s``."""
        await asyncio.wait(list(self._running.values()), timeout=timeout_s, return_when=FIRST_COMPLETED)

    async def drain(self) -> None:
        """Finish the updates being handled."""
        try:
            await asyncio.gather(*self._running.values(), return_exceptions=True)
        except asyncio.CancelledError:
            self.cancel()
            raise

    def cancel(self) -> None:
        """Stop handling: every update being handled is cancelled (and not confirmed)."""
        for task in self._running.values():
            task.cancel()


async def _delete_webhook(application: Application, *, reason: str) -> bool:
    """Remove the webhook that makes every ``getUpdates`` a 409, keeping the pending updates
    (``drop_pending_updates=False``); ``False`` when Telegram could not be asked (the next 409 asks again).
    Called when polling starts (a gateway switched back from ``TELEGRAM_UPDATES=webhook``) and on a 409."""
    try:
        await application.bot.delete_webhook(drop_pending_updates=False)
    except TelegramError as exc:
        log.warning("WEBHOOK_NOT_DELETED", error=type(exc).__name__, reason=reason)
        return False
    log.info("WEBHOOK_DELETED", reason=reason, mode="polling")
    return True


async def _while_held(
    call: Coroutine[Any, Any, tuple[Update, ...]], held: asyncio.Event | None, check_s: float = 0.25
) -> tuple[Update, ...] | None:
    """The answer of the ``getUpdates`` ``call``, or ``None`` when ``held`` was cleared first (this replica
    fenced itself: :mod:`telegram_gateway.lease`); the call is then cancelled, so a replica that lost the
    lease stops its long poll at once instead of fetching (and handling) updates for up to
    ``POLL_TIMEOUT_SEC`` more while the new leader polls."""
    if held is None:
        return await call
    task = asyncio.ensure_future(call)
    try:
        while not task.done():
            if not held.is_set():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return None
            await asyncio.wait([task], timeout=check_s)
    except asyncio.CancelledError:
        task.cancel()
        raise
    return task.result()


async def _wait_for(event: asyncio.Event, stop: asyncio.Event) -> None:
    """Until ``event`` or ``stop`` is set."""
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
