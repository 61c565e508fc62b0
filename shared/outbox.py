"""Asking for Telegram work: the producer half of the ``tg_commands`` outbox (DESIGN.md §3, §7).

Write the command inside the caller's transaction with :func:`add_command`; after the commit, call
:func:`dispatch_commands` to ``XADD`` the hints to ``tg:outbox``. When Redis is down the rows stay
undispatched and the gateway's reconciler publishes them later, so nothing is lost between commit and XADD.
"""

from __future__ import annotations

from typing import Any

from shared import streams
from shared.messages import TelegramCommand
from shared.repositories import Database, Repositories
from shared.streams import Publisher


async def add_command(
    repos: Repositories, command_id: str, *, method: str, params: dict[str, Any], reply_to: str | None = None
) -> bool:
    """Record a Telegram command in the open transaction; ``False`` if ``command_id`` was recorded before.

    Args:
        command_id: idempotency key, deterministic for the intent (e.g. ``job:<id>:link``).
        method: a gateway command (``send_message``, ``create_sticker_set``, ``get_sticker_set``, ...).
        params: JSON-safe parameters (ids, never image bytes).
        reply_to: service whose ``tg:results:<service>`` stream receives the outcome; ``None``: no answer.
    """
    return await repos.tg_commands.add(command_id, method=method, params=params, reply_to=reply_to)


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
