"""Asking for Telegram work: the producer half of the ``tg_commands`` outbox (DESIGN.md §3, §7).

Write the command (a model of :mod:`shared.commands`) inside the caller's transaction with
:func:`add_command`, or a text for a guest with :func:`tell_guest`; after the commit, call
:func:`dispatch_commands` to ``XADD`` the hints to ``tg:outbox``. When Redis is down the rows stay
undispatched and the gateway's reconciler publishes them later, so nothing is lost between commit and XADD.
Command ids come from :mod:`shared.command_ids`.
"""

from __future__ import annotations

from shared import streams
from shared.commands import Command, SendMessage, stored
from shared.messages import TelegramCommand
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.texts import text


async def add_command(
    repos: Repositories, command_id: str, command: Command, *, reply_to: str | None = None
) -> bool:
    """Record a Telegram command in the open transaction; ``False`` if ``command_id`` was recorded before.

    Args:
        command_id: idempotency key, deterministic for the intent (:mod:`shared.command_ids`).
        command: what the gateway should do (:mod:`shared.commands`).
        reply_to: service whose ``tg:results:<service>`` stream receives the outcome; ``None``: no answer.
    """
    method, params = stored(command)
    return await repos.tg_commands.add(command_id, method=method, params=params, reply_to=reply_to)


async def tell_guest(
    repos: Repositories,
    command_id: str,
    chat_id: int,
    text_key: str,
    language: str | None,
    *,
    reply_to: str | None = None,
    **fmt: str,
) -> bool:
    """Queue the guest text ``text_key`` (:mod:`shared.texts`) in the guest's ``language`` (a Telegram
    ``language_code``; unknown ones fall back) to private chat ``chat_id``, formatted with ``fmt``.

    Returns ``False`` when ``command_id`` was recorded before (the guest is told once per id).

    Raises:
        KeyError: ``text_key`` or one of its placeholders is unknown.
    """
    message = SendMessage(chat_id=chat_id, text=text(text_key, language, **fmt))
    return await add_command(repos, command_id, message, reply_to=reply_to)


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
