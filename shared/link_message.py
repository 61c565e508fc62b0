"""The link message: what a guest receives when their sticker set is complete (DESIGN.md §6), and the one
sticker of the set sent after it as a preview (issue 13 item 2).

The message is the ``pack_ready`` text (:mod:`shared.texts`; in the guest's language at their event and in
the event's own words where it has them, :meth:`shared.events.Event.text`) with the set's
``t.me/addstickers/<name>`` link in it, and an inline "Add stickers" URL button under it
(core.telegram.org/bots/api#inlinekeyboardbutton: a ``url`` button opens the link, which Telegram's
clients show as the set with its "Add stickers" action). The link stays in the text, so a client that
hides the keyboard still has it. :func:`link_message` is the only builder: delivery sends it, and an
admin "Resend link" builds the same message with it.

The preview is a :class:`shared.commands.SendSetSticker` of the set's first sticker, queued once per job
(``job:<id>:preview``, :mod:`shared.command_ids`) when the link has gone out; it asks for no result, so a
failed preview is only logged by the gateway and never holds up, repeats or fails the link.
"""

from __future__ import annotations

from uuid import UUID

from shared.commands import SendMessage, SendSetSticker
from shared.events import Event, guest_text
from shared.outbox import add_command
from shared.repositories import Repositories
from shared.subjects import JobStep

__all__ = [
    "link_message",
    "pack_link",
    "preview_sticker",
    "queue_link_message",
    "queue_preview",
]


def pack_link(set_name: str) -> str:
    """The set's share link, ``https://t.me/addstickers/<set_name>`` (opens the set in Telegram)."""
    return f"https://t.me/addstickers/{set_name}"


def link_message(
    chat_id: int,
    set_name: str,
    language: str | None,
    *,
    late: bool = False,
    after_failure: bool = False,
    download_url: str | None = None,
    event: Event | None = None,
) -> SendMessage:
    """The link message to private chat ``chat_id`` for sticker set ``set_name``, for a guest with Telegram
    ``language`` (a ``language_code``) at ``event`` (their session's; :func:`shared.events.guest_text`:
    the event's language rule and own texts; ``None``: the catalogue's in the nearest language): the
    ``pack_ready`` text with the link, and one "Add stickers" URL button. The words fit the wait (issue 19):
    ``pack_ready_late`` ("sorry for the wait") when ``late`` (past the 15-minute deadline),
    ``pack_ready_after_failure`` (says that the earlier "something went wrong" was wrong) when the
    guest was sent the failure text before. ``download_url``: the pack's download page
    (:func:`shared.downloads.download_url`), a second URL button "Download the files" under the first."""
    link = pack_link(set_name)
    buttons = [[{"text": guest_text(event, "add_stickers", language), "url": link}]]
    if download_url:
        buttons.append([{"text": guest_text(event, "download_files", language), "url": download_url}])
    key = "pack_ready_after_failure" if after_failure else "pack_ready_late" if late else "pack_ready"
    return SendMessage(
        chat_id=chat_id,
        text=guest_text(event, key, language, link=link),
        reply_markup={"inline_keyboard": buttons},
    )


def preview_sticker(chat_id: int, set_name: str) -> SendSetSticker:
    """The set's first sticker sent to ``chat_id`` (the gateway looks up its ``file_id``)."""
    return SendSetSticker(chat_id=chat_id, name=set_name, index=0)


async def queue_link_message(
    repos: Repositories,
    command_id: str,
    *,
    chat_id: int,
    set_name: str,
    language: str | None,
    subject: JobStep,
    reply_to: str | None = None,
    late: bool = False,
    after_failure: bool = False,
    download_url: str | None = None,
    event: Event | None,
) -> bool:
    """Record :func:`link_message` under ``command_id`` about ``subject`` (delivery's ``link`` attempt or an
    admin's ``resend_link`` press) in the open transaction (dispatch after the commit,
    :func:`shared.outbox.dispatch_commands`); ``False`` if that id was recorded before.

    ``reply_to``: the service whose ``tg:results:<service>`` gets the outcome (delivery: ``delivery``);
    ``late``, ``after_failure``: the words that fit the wait; ``download_url``: the download page's button
    (:func:`link_message`); ``event``: the guest's session's event (:func:`link_message`).
    """
    message = link_message(
        chat_id,
        set_name,
        language,
        late=late,
        after_failure=after_failure,
        download_url=download_url,
        event=event,
    )
    return await add_command(repos, command_id, message, subject=subject, reply_to=reply_to)


async def queue_preview(
    repos: Repositories,
    command_id: str,
    *,
    job_id: UUID,
    chat_id: int,
    set_name: str,
    reply_to: str | None = None,
) -> bool:
    """Record :func:`preview_sticker` under ``command_id``; ``False`` if that id was recorded before, so a
    redelivered "link sent" never queues a second preview. No result is asked for, except by delivery
    when it sends the preview first, as the upper bound of the search for a link message whose outcome
    was unknown (``reply_to``; :mod:`delivery.packs`)."""
    subject = JobStep(id=job_id, step="preview")
    sticker = preview_sticker(chat_id, set_name)
    return await add_command(repos, command_id, sticker, subject=subject, reply_to=reply_to)
