"""Asking for Telegram work: the producer half of the ``tg_commands`` outbox (DESIGN.md §3, §7).

Write the command (a model of :mod:`shared.commands`) with its subject (:mod:`shared.subjects`: what it
is about) inside the caller's transaction with :func:`add_command`, or a text for a guest with
:func:`tell_guest`; after the commit, call :func:`dispatch_commands` to ``XADD`` the hints to
``tg:outbox``. When Redis is down the rows stay undispatched and the gateway's reconciler publishes them
later, so nothing is lost between commit and XADD. Command ids come from :mod:`shared.command_ids`.

"Later" belongs to the outbox (issue 21): a command Telegram flood-limits is deferred by the gateway and
sent when the wait is over, under the same id; a producer never asks again. What it owns instead is
obsolescence: the state change that makes a queued command pointless cancels it in the same transaction
(``repos.tg_commands.cancel_pending``), and a text worth sending only for a while carries ``expires_at``.
"""

from __future__ import annotations

from datetime import datetime

from shared import streams
from shared.commands import Command, SendMessage, minimal_result, stored
from shared.domain import CommandStatus, TelegramCommandRecord
from shared.events import Event, guest_text
from shared.messages import TelegramCommand, TelegramErrorInfo, TelegramResult
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.subjects import Subject, load_subject


async def add_command(
    repos: Repositories,
    command_id: str,
    command: Command,
    *,
    subject: Subject,
    reply_to: str | None = None,
    expires_at: datetime | None = None,
) -> bool:
    """Record a Telegram command in the open transaction; ``False`` if ``command_id`` was recorded before.

    Args:
        command_id: idempotency key, deterministic for the intent (:mod:`shared.command_ids`).
        command: what the gateway should do (:mod:`shared.commands`).
        subject: what it is about (:mod:`shared.subjects`), echoed in its result.
        reply_to: service whose ``tg:results:<service>`` stream receives the outcome; ``None``: no answer.
        expires_at: still pending then (e.g. held by a flood wait), it is cancelled unsent.
    """
    method, params = stored(command)
    return await repos.tg_commands.add(
        command_id, method=method, params=params, reply_to=reply_to, subject=subject, expires_at=expires_at
    )


async def tell_guest(
    repos: Repositories,
    command_id: str,
    chat_id: int,
    text_key: str,
    language: str | None,
    *,
    event: Event | None,
    subject: Subject,
    reply_to: str | None = None,
    expires_at: datetime | None = None,
    **fmt: str,
) -> bool:
    """Queue the guest text ``text_key`` (:mod:`shared.texts`) for a guest with Telegram ``language`` (a
    ``language_code``) to private chat ``chat_id``, formatted with ``fmt``, about ``subject`` (and
    ``expires_at``, as :func:`add_command`).

    ``event``: the event of the session the text is about (a job's "Generating…", "still working",
    failure, link; the linked and unlinked answers): the text is in the guest's language at that event
    and in its own words where it has them (:meth:`shared.events.Event.text`). ``None`` for a text about
    no session (hello, help, ``unknown_token``, the ``erase_*`` answers, busy, maintenance): the
    catalogue's text in the nearest catalogue of ``language`` (:func:`shared.texts.language_of`).

    Returns ``False`` when ``command_id`` was recorded before (the guest is told once per id).

    Raises:
        KeyError: ``text_key`` or one of its placeholders is unknown.
    """
    message = SendMessage(chat_id=chat_id, text=guest_text(event, text_key, language, **fmt))
    return await add_command(
        repos, command_id, message, subject=subject, reply_to=reply_to, expires_at=expires_at
    )


async def dispatch_commands(db: Database, publisher: Publisher, command_ids: list[str]) -> None:
    """Publish the hints for committed commands and mark them dispatched; Redis errors are deferred."""
    published = [
        cid
        for cid in command_ids
        if await publisher.try_publish(streams.TG_OUTBOX, TelegramCommand(command_id=cid))
    ]
    if published:
        async with db.transaction() as repos:
            await repos.tg_commands.mark_dispatched(published)


def stored_result(record: TelegramCommandRecord) -> TelegramResult:
    """The :class:`TelegramResult` of a finished command row (``sent`` or ``failed``), as the gateway
    publishes it: its :func:`~shared.commands.minimal_result` (a row stored before that rule, too), its
    subject and attempt."""
    return TelegramResult(
        command_id=record.command_id,
        ok=record.status == CommandStatus.SENT,
        result=minimal_result(record.method, record.result),
        error=TelegramErrorInfo(**record.error) if record.error else None,
        subject=load_subject(record.subject),
        attempt=record.attempt,
    )
