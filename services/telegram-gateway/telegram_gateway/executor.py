"""Executes ``tg:outbox`` commands at most once each (DESIGN.md §7).

For a command id the gateway takes the ``tg_commands`` row ``pending → sending``, calls Telegram, stores the
outcome (``sent`` with the result, ``failed`` with Telegram's error) and publishes it to
``tg:results:<reply_to>``. The result stored and published is :func:`shared.commands.minimal_result` of
Telegram's answer: the ids and counts the producers read, never a chat, user, name, username or text
(issue 11: stream entries outlive a guest's erasure until they are trimmed). A redelivered command whose
row is final gets the stored result again, never a second call. Transient failures (network errors before
the request left) put the row back to ``pending`` and raise, so the stream delivers the command again
later.

Flood control, "later" (issue 21): a 429 that the rate limiter (:mod:`telegram_gateway.flood`) did not
wait out (longer than ``TELEGRAM_FLOOD_WAIT_MAX_SEC``, beyond a handler's :func:`~telegram_gateway.flood.
flood_wait_bound`, or still 429 after ``RATE_LIMIT_MAX_RETRIES`` waits) puts the same row back to
``pending`` with ``not_before`` = now + ``retry_after`` and ``attempt + 1``
(:meth:`~shared.repositories.tg_commands.TelegramCommandRepository.defer`), and publishes nothing
(``stk_telegram_deferred_total{method}``, log ``TELEGRAM_COMMAND_DEFERRED``). Telegram applied nothing,
so sending the same row later keeps it at most once; a hint redelivered before ``not_before`` takes
nothing, and the outbox reconciler (:func:`telegram_gateway.main.reconcile_outbox`) publishes the row once
it is due. This is the one place that knows a 429 means "later": producers never see one. The sticker
calls a 429 may follow after they applied (:data:`~telegram_gateway.flood.NOT_REPEATED_AFTER_429`) are
only ever made inside ``create_sticker_set``, which reconciles against ``getStickerSet`` before it adds
anything (:mod:`telegram_gateway.sticker_sets`), so its deferred row resumes the set without a second copy.

A pending row whose ``expires_at`` has passed is finished ``cancelled`` without any call; a ``cancelled``
row (cancelled by its producer, or expired) is never announced: nobody waits for its outcome.

Only the replica that leads (issue 22, :mod:`telegram_gateway.lease`) executes: while ``held`` is cleared a
command is refused with :class:`NotLeading` (its stream entry stays pending for the leader; the outbox
reconciler hints its row again), and the row is claimed ``pending → sending`` only while this replica's
lease is current, in the claim's own statement, so a replica whose lease lapsed claims nothing.

While a call runs, its ``sending`` row is heart-beaten every ``sending_stale_s / 3`` seconds and the
command id is held in this process, so a call that waits in the limiter longer than ``SENDING_STALE_SEC``
is never taken for a dead gateway's call (marked "outcome unknown") and then sent anyway.

What the gateway accepts is :mod:`shared.commands`: each row is validated into its model before the call
and dispatched on the model's class. A row that does not validate (an unknown method, a newer version, a
missing or malformed field) is finished ``failed`` with ``error_code`` 400 and the validation errors as
its description: it is never called, and never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, assert_never

import httpx
import structlog
from pydantic import ValidationError
from telegram import Bot, InlineKeyboardMarkup, ReplyParameters
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from shared import metrics, streams
from shared.alerts import send_alert
from shared.commands import (
    AnswerCallbackQuery,
    Command,
    CreateStickerSet,
    DeleteStickerSet,
    EditMessageReplyMarkup,
    EditMessageText,
    FindBotMessage,
    GetStickerSet,
    InlineKeyboard,
    SendAdminMessage,
    SendMessage,
    SendSetSticker,
    load,
    minimal_result,
)
from shared.domain import FINAL_COMMAND_STATUSES, CommandStatus, TelegramCommandRecord
from shared.errors import UnavailableError
from shared.messages import TelegramCommand, TelegramErrorInfo, TelegramResult
from shared.outbox import stored_result
from shared.repositories import Database
from shared.repositories.gateway_lease import LeaseClaim
from shared.repositories.legacy_subjects import fill_subject
from shared.streams import Publisher
from shared.subjects import load_subject
from telegram_gateway.flood import retry_after_seconds
from telegram_gateway.message_probe import find_bot_message
from telegram_gateway.sticker_sets import MEDIA_TIMEOUT_S, create_sticker_set, media_timeouts

log = structlog.get_logger(__name__)

NOT_MODIFIED = "message is not modified"
STICKERSET_INVALID = "STICKERSET_INVALID"
#: Commands whose repetition changes nothing (reads, idempotent edits, a set name that reads back as ours).
#: Everything else (sending a message) is at most once: when the outcome of a call is unknown (the
#: gateway died mid-call, the request timed out, a 5xx) it is recorded as failed with ``error_code`` 0
#: instead of being sent a second time; the producer resolves it (delivery looks for the guest's link in
#: the chat with ``find_bot_message`` before sending it again, issue 19; leads likewise for its cards).
REPEATABLE = frozenset(
    {
        "get_sticker_set",
        "create_sticker_set",
        "delete_sticker_set",
        "answer_callback_query",
        "edit_message_text",
        "edit_message_reply_markup",
        "find_bot_message",
    }
)
#: httpx failures proving that a request never left this process: nothing can have been delivered.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
UNKNOWN_OUTCOME = 0
INVALID = 400


class TelegramUnreachable(UnavailableError):
    """Telegram could not be reached; the command will be tried again."""


class NotLeading(UnavailableError):
    """This replica does not hold the gateway lease (a standby, or fenced): the leader executes it."""


class NothingSent(NetworkError, UnavailableError):
    """A read before a send failed (the send was never made): safe to run the command again."""


class CommandExecutor:
    """Runs gateway commands with a python-telegram-bot ``Bot`` (whose rate limiter paces every call).

    ``held``: set while this replica leads (:class:`telegram_gateway.lease.GatewayLease`); while it is
    cleared no command is started (:class:`NotLeading`). ``lease``: returns the replica's current
    lease claim (``None`` when it does not lead), required by the ``pending → sending`` claim; without
    it (tests, tools) claims are not fenced. ``media_timeout_s``: ``TELEGRAM_MEDIA_TIMEOUT_SEC``, the
    read and write timeout of the sticker calls (:func:`telegram_gateway.sticker_sets.media_timeouts`).
    """

    def __init__(
        self,
        *,
        bot: Bot,
        db: Database,
        publisher: Publisher,
        sending_stale_s: float = 60.0,
        admin_chat_id: int | None = None,
        held: asyncio.Event | None = None,
        lease: Callable[[], LeaseClaim | None] | None = None,
        media_timeout_s: float = MEDIA_TIMEOUT_S,
    ) -> None:
        self.bot = bot
        self.lease = lease
        self.media_timeouts = media_timeouts(media_timeout_s)
        self.held = held
        self.admin_chat_id = admin_chat_id
        self.db = db
        self.publisher = publisher
        self.sending_stale_s = sending_stale_s
        self._in_flight: set[str] = set()
        #: Groups Telegram said were upgraded to a supergroup: old chat id → new (:meth:`_call`).
        self.migrated: dict[int, int] = {}

    async def handle(self, message: TelegramCommand) -> None:
        """Stream handler for ``tg:outbox``."""
        await self.execute(message.command_id)

    async def execute(self, command_id: str) -> None:
        """Execute the command once, or re-announce its stored outcome.

        Raises:
            TelegramUnreachable: try again later (the row is ``pending`` again).
            DatabaseUnavailable: Postgres is down; nothing was sent.
            NotLeading: this replica does not lead (``held`` cleared, or its lease lapsed before the
                claim); nothing was claimed or sent.
        """
        if self.held is not None and not self.held.is_set():
            raise NotLeading("this gateway replica does not hold the lease")
        lease = None
        if self.lease is not None and (lease := self.lease()) is None:
            raise NotLeading("this gateway replica's lease has lapsed")
        if command_id in self._in_flight:
            return  # this process is running it right now (a redelivery or the reconciler's hint)
        async with self.db.transaction() as repos:
            # Locked: a ``sending`` read here stays ``sending`` until the claim below, so another call's
            # release (``sending → pending``) in between cannot make this one take a fresh row for a dead
            # call's and fail it "outcome unknown" unsent.
            record = await repos.tg_commands.get(command_id, lock=True)
            if record is None:
                log.warning("OUTBOX_UNKNOWN_COMMAND", command_id=command_id)
                return
            if record.subject is None:  # a pre-0010 pod's row (rolling deploy): its result needs one
                record = replace(record, subject=await fill_subject(repos.conn, command_id))
            claimed = None
            if record.status == CommandStatus.PENDING and await repos.tg_commands.cancel_expired(command_id):
                log.info("TELEGRAM_COMMAND_EXPIRED", command_id=command_id, method=record.method)
                return
            if record.status not in FINAL_COMMAND_STATUSES:
                claimed = await repos.tg_commands.start_sending(
                    command_id, stale_after=timedelta(seconds=self.sending_stale_s), lease=lease
                )
        if claimed is None:
            lapsed = self.lease is not None and lease is not None and self.lease() is None
            if lapsed and record.status not in FINAL_COMMAND_STATUSES:
                raise NotLeading("the lease lapsed before the claim")  # the entry stays for the leader
            if record.status in FINAL_COMMAND_STATUSES and record.status != CommandStatus.CANCELLED:
                await self._publish(record.reply_to, stored_result(record))
            return  # running elsewhere, or deferred (not_before ahead): the reconciler hints it when due
        if record.status == CommandStatus.SENDING and claimed.method not in REPEATABLE:
            await self._finish(claimed, ok=False, error=_unknown("the gateway stopped during the call"))
            return
        async with self._running(claimed.command_id):
            await self._run(claimed)

    @contextlib.asynccontextmanager
    async def _running(self, command_id: str) -> AsyncIterator[None]:
        """Hold ``command_id`` in this process and heart-beat its ``sending`` row until the call is over."""
        self._in_flight.add(command_id)
        beat = asyncio.create_task(self._heartbeat(command_id), name=f"heartbeat:{command_id}")
        try:
            yield
        finally:
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            self._in_flight.discard(command_id)

    async def _heartbeat(self, command_id: str) -> None:
        while True:
            await asyncio.sleep(self.sending_stale_s / 3)
            try:
                async with self.db.transaction() as repos:
                    await repos.tg_commands.touch_sending(command_id)
            except Exception as exc:  # Postgres away: the in-process guard above still holds
                log.warning("OUTBOX_HEARTBEAT_FAILED", command_id=command_id, error=type(exc).__name__)

    async def _run(self, record: TelegramCommandRecord) -> None:
        try:
            command = load(record.method, record.params)
        except ValidationError as exc:
            metrics.TELEGRAM_CALLS.labels(method=record.method, outcome="error").inc()
            await self._finish(record, ok=False, error=_invalid(record.method, exc))
            return
        ok, result, error = False, None, None
        try:
            result = await self._call(command)
            ok = True
        except RetryAfter as exc:
            metrics.TELEGRAM_CALLS.labels(method=record.method, outcome="retry_after").inc()
            await self._defer(record, math.ceil(retry_after_seconds(exc)))
            return
        except BadRequest as exc:
            if NOT_MODIFIED in exc.message.lower():
                ok, result = True, True  # an edit repeated after an unknown outcome: already applied
            else:
                error = TelegramErrorInfo(error_code=_error_code(exc), description=exc.message)
        except (Forbidden, InvalidToken) as exc:
            error = TelegramErrorInfo(error_code=_error_code(exc), description=exc.message)
        except TimedOut as exc:
            metrics.TELEGRAM_CALLS.labels(method=record.method, outcome="timed_out").inc()
            if record.method in REPEATABLE or not _may_have_arrived(exc):
                await self._release(record.command_id)
                raise TelegramUnreachable("timed out") from exc
            error = _unknown("the request timed out after it was sent")
        except NetworkError as exc:
            metrics.TELEGRAM_CALLS.labels(method=record.method, outcome="network_error").inc()
            if record.method in REPEATABLE or not _may_have_arrived(exc):
                await self._release(record.command_id)
                raise TelegramUnreachable(f"network: {type(exc).__name__}") from exc
            error = _unknown("the connection broke after the request was sent")
        except TelegramError as exc:
            error = TelegramErrorInfo(error_code=_error_code(exc), description=exc.message)
        metrics.TELEGRAM_CALLS.labels(method=record.method, outcome="ok" if ok else "error").inc()
        await self._finish(record, ok=ok, result=result, error=error)

    async def _finish(
        self,
        record: TelegramCommandRecord,
        *,
        ok: bool,
        result: Any = None,
        error: TelegramErrorInfo | None = None,
    ) -> None:
        error_body = error.model_dump() if error else None
        result = minimal_result(record.method, result)
        async with self.db.transaction() as repos:
            await repos.tg_commands.finish(record.command_id, ok=ok, result=result, error=error_body)
        if not ok:
            log.warning(
                "TELEGRAM_COMMAND_FAILED",
                command_id=record.command_id,
                method=record.method,
                error=error_body,
            )
        outcome = TelegramResult(
            command_id=record.command_id,
            ok=ok,
            result=result,
            error=error,
            subject=load_subject(record.subject),
            attempt=record.attempt,
        )
        await self._publish(record.reply_to, outcome)

    async def _defer(self, record: TelegramCommandRecord, seconds: int) -> None:
        """Flood control beyond the limiter's wait: the row goes back to ``pending``, not before
        ``seconds`` from now, as its next attempt (see the module docstring); nothing is published."""
        async with self.db.transaction() as repos:
            deferred = await repos.tg_commands.defer(record.command_id, seconds=seconds)
        metrics.TELEGRAM_DEFERRED.labels(method=record.method).inc()
        log.warning(
            "TELEGRAM_COMMAND_DEFERRED",
            command_id=record.command_id,
            method=record.method,
            retry_after_s=seconds,
            attempt=deferred.attempt if deferred else None,
        )

    async def _publish(self, reply_to: str | None, result: TelegramResult) -> None:
        if reply_to:
            await self.publisher.try_publish(streams.results_stream(reply_to), result)

    async def _release(self, command_id: str) -> None:
        async with self.db.transaction() as repos:
            await repos.tg_commands.release(command_id)

    # --- the commands -------------------------------------------------------------------------------

    async def _call(self, command: Command) -> Any:
        """:meth:`_call_in_chat`, following a group's upgrade to a supergroup.

        Telegram refuses every call to a group that was upgraded with 400 "group chat was upgraded to a
        supergroup chat" and ``parameters.migrate_to_chat_id`` (core.telegram.org/bots/api#responseparameters;
        Client.cpp ``check_chat_access``, before anything is done); python-telegram-bot raises it as
        ``ChatMigrated`` (``request/_baserequest.py``). The call is made again in the new chat, once, and
        later commands for the old chat go straight to the new one (:attr:`migrated`, for this process);
        admins are alerted once with the setting to change (the staff group ``LEADS_CHAT_ID``, or
        ``ADMIN_CHAT_ID``). Before, each such command failed (a 500 to its producer) for ever.
        """
        chat_id = getattr(command, "chat_id", None)
        if chat_id in self.migrated:
            command = command.model_copy(update={"chat_id": self.migrated[chat_id]})
        try:
            return await self._call_in_chat(command)
        except ChatMigrated as exc:
            if chat_id is None or exc.new_chat_id == chat_id:
                raise
            self.migrated[chat_id] = int(exc.new_chat_id)
            await self._alert_migration(chat_id, int(exc.new_chat_id))
            return await self._call_in_chat(command.model_copy(update={"chat_id": int(exc.new_chat_id)}))

    async def _alert_migration(self, old: int, new: int) -> None:
        """Log and alert the admins (once per chat within the alert cooldown) that chat ``old`` is ``new``."""
        log.error("TELEGRAM_CHAT_MIGRATED", old_chat_id=old, new_chat_id=new)
        try:
            await send_alert(
                self.db,
                self.publisher,
                key=f"chat_migrated:{old}",
                text=(
                    f"The Telegram group {old} was upgraded to a supergroup; its new id is {new}. "
                    "The gateway sends there until it restarts: set LEADS_CHAT_ID (or ADMIN_CHAT_ID) "
                    f"from {old} to {new} and restart."
                ),
            )
        except Exception as exc:  # the call goes on; the log above names the change
            log.warning("CHAT_MIGRATED_ALERT_FAILED", error=type(exc).__name__)

    async def _call_in_chat(self, command: Command) -> Any:
        """Make the Bot API call(s) for ``command``; returns the JSON-safe answer, whose
        :func:`~shared.commands.minimal_result` is stored with the row.

        ``create_sticker_set`` has the fallback for a set too big for one request and resumes a set an
        earlier run started (:mod:`telegram_gateway.sticker_sets`); ``find_bot_message`` searches the
        chat (:mod:`telegram_gateway.message_probe`).
        """
        match command:
            case SendMessage():
                return await self._send_message(command)
            case SendAdminMessage():
                return await self._send_admin_message(command)
            case EditMessageText():
                result = await self.bot.edit_message_text(
                    chat_id=command.chat_id,
                    message_id=command.message_id,
                    text=command.text,
                    reply_markup=_markup(command.reply_markup),
                    parse_mode=command.parse_mode,
                )
                return result if isinstance(result, bool) else result.to_dict()
            case EditMessageReplyMarkup():
                result = await self.bot.edit_message_reply_markup(
                    chat_id=command.chat_id,
                    message_id=command.message_id,
                    reply_markup=_markup(command.reply_markup),
                )
                return result if isinstance(result, bool) else result.to_dict()
            case AnswerCallbackQuery():
                return await self.bot.answer_callback_query(
                    command.callback_query_id, text=command.text, show_alert=command.show_alert
                )
            case SendSetSticker():
                return await self._send_set_sticker(command)
            case CreateStickerSet():
                return await create_sticker_set(self.bot, self.db, command, timeouts=self.media_timeouts)
            case GetStickerSet():
                sticker_set = await self.bot.get_sticker_set(command.name)
                return {"sticker_count": len(sticker_set.stickers)}
            case DeleteStickerSet():
                return await self._delete_sticker_set(command)
            case FindBotMessage():
                return await find_bot_message(self.bot, command)
            case _:
                assert_never(command)

    async def _send_message(self, command: SendMessage) -> Any:
        """``sendMessage``; a reply (``reply_to_message_id``) is sent with ``reply_parameters`` whose
        ``allow_sending_without_reply`` is true: "Pass True if the message should be sent even if the
        specified message to be replied to is not found" (core.telegram.org/bots/api#replyparameters;
        PTB 22 ``telegram.ReplyParameters``). Without it a repeat notice under a lead card staff deleted
        fails with 400 "message to be replied not found" on every attempt (issue 18)."""
        reply = (
            ReplyParameters(command.reply_to_message_id, allow_sending_without_reply=True)
            if command.reply_to_message_id is not None
            else None
        )
        message = await self.bot.send_message(
            chat_id=command.chat_id,
            text=command.text,
            reply_markup=_markup(command.reply_markup),
            reply_parameters=reply,
            parse_mode=command.parse_mode,
            disable_web_page_preview=command.disable_web_page_preview,
        )
        return message.to_dict()

    async def _send_set_sticker(self, command: SendSetSticker) -> Any:
        """``getStickerSet`` for the ``file_id`` of sticker ``index``, then ``sendSticker`` with it.

        A failed read sends nothing, so it is :class:`NothingSent` (a network failure: tried again) or the
        ``BadRequest`` itself (no such set, or no sticker ``index``: permanent)."""
        try:
            sticker_set = await self.bot.get_sticker_set(command.name)
        except BadRequest:  # PTB's BadRequest is a NetworkError, but Telegram answered: permanent
            raise
        except NetworkError as exc:  # TimedOut included; a RetryAfter is no NetworkError and propagates
            raise NothingSent(f"getStickerSet before sendSticker: {exc.message}") from exc
        if command.index >= len(sticker_set.stickers):
            raise BadRequest(
                f"sticker set has {len(sticker_set.stickers)} stickers, no sticker {command.index}"
            )
        sticker = sticker_set.stickers[command.index]
        message = await self.bot.send_sticker(
            chat_id=command.chat_id, sticker=sticker.file_id, **self.media_timeouts
        )
        return message.to_dict()

    async def _delete_sticker_set(self, command: DeleteStickerSet) -> Any:
        """``deleteStickerSet``; a set that is already gone (400 ``STICKERSET_INVALID``: deleted by an
        earlier attempt whose answer was lost, or never created) counts as deleted (issue 11)."""
        try:
            return await self.bot.delete_sticker_set(command.name)
        except BadRequest as exc:
            if STICKERSET_INVALID not in exc.message.upper():
                raise
            log.info("STICKER_SET_ALREADY_GONE")
            return True

    async def _send_admin_message(self, command: SendAdminMessage) -> Any:
        """An admin alert (:mod:`shared.alerts`) to ``ADMIN_CHAT_ID``; without one it is only logged."""
        if self.admin_chat_id is None:
            log.warning("ADMIN_ALERT_NOT_SENT", reason="ADMIN_CHAT_ID is not set", text=command.text)
            return {"sent": False}
        return await self._call(SendMessage(chat_id=self.admin_chat_id, text=command.text))


def _unknown(why: str) -> TelegramErrorInfo:
    return TelegramErrorInfo(error_code=UNKNOWN_OUTCOME, description=f"outcome unknown ({why}); not repeated")


def _invalid(method: str, exc: ValidationError) -> TelegramErrorInfo:
    """The failed result of a row that is not a valid command: which fields are wrong and why."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'command'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False)
    )
    description = f"invalid gateway command {method!r}: {problems}"
    return TelegramErrorInfo(error_code=INVALID, description=description)


def _may_have_arrived(exc: NetworkError) -> bool:
    """``False`` only when the request provably never left (connect failure, no free pooled connection):
    a read timeout or a connection dropped after sending may follow a delivered message."""
    if isinstance(exc, NothingSent):
        return False
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        if isinstance(cause, _NOT_SENT):
            return False
        cause = cause.__cause__
    return True


def _markup(data: InlineKeyboard | None) -> InlineKeyboardMarkup | None:
    return InlineKeyboardMarkup.de_json(data, None) if data else None


def _error_code(exc: TelegramError) -> int:
    if isinstance(exc, Forbidden | InvalidToken):
        return 403 if isinstance(exc, Forbidden) else 401
    if isinstance(exc, BadRequest | ChatMigrated):  # a ChatMigrated is Telegram's 400 (Client.cpp)
        return 400
    return 500
