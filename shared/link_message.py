"""The guest's link message (the pack is ready, with its ``t.me/addstickers`` link): built here only, so
delivery's first send and the admin page's "Resend link" send the same message (issue 13 item 3)."""

from __future__ import annotations

from shared.outbox import tell_guest
from shared.repositories import Repositories

__all__ = ["pack_link", "queue_link_message"]


def pack_link(name: str) -> str:
    """The link that opens sticker set ``name`` in Telegram (core.telegram.org/bots/api#stickerset)."""
    return f"https://t.me/addstickers/{name}"


async def queue_link_message(
    repos: Repositories,
    command_id: str,
    *,
    chat_id: int,
    language: str | None,
    set_name: str,
    reply_to: str | None = None,
) -> bool:
    """Queue the link message of sticker set ``set_name`` to private chat ``chat_id`` in the guest's
    ``language`` under ``command_id``, inside the caller's transaction; dispatch it after the commit.

    Returns ``False`` when ``command_id`` was recorded before (the message is sent once per id).
    """
    return await tell_guest(
        repos, command_id, chat_id, "pack_ready", language, reply_to=reply_to, link=pack_link(set_name)
    )
