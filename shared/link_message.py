"""The link message: what a guest receives when their sticker set is complete (DESIGN.md §6), and the one
sticker of the set sent after it as a preview (issue 13 item 2).

The message is the ``pack_ready`` text (:mod:`shared.texts`, in the guest's language) with the set's
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

from collections.abc import Mapping
from uuid import UUID

from shared.commands import SendMessage, SendSetSticker
from shared.outbox import add_command
from shared.repositories import Repositories
from shared.subjects import JobStep
from shared.texts import language_of, text

__all__ = [
    "event_text",
    "link_message",
    "pack_link",
    "preview_sticker",
    "queue_link_message",
    "queue_preview",
]

#: An event's own guest texts: language → bot text key → text (:attr:`shared.events.Event.texts`).
EventTexts = Mapping[str, Mapping[str, str]]


def event_text(texts: EventTexts | None, key: str, language: str | None, **values: str) -> str:
    """The bot's text ``key`` for a guest speaking ``language`` (a Telegram ``language_code``): the
    event's own text for that catalogue language where it sets one, else the catalogue's
    (:func:`shared.texts.text`). An own text whose placeholders do not fit (the admin checks them when it
    is saved) is not sent: the catalogue's is.

    Raises:
        KeyError: ``key`` is not a catalogue text.
    """
    own = (texts or {}).get(language_of(language), {}).get(key)
    if own:
        try:
            return own.format(**values)
        except (KeyError, IndexError, ValueError):
            pass
    return text(key, language, **values)


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
    texts: EventTexts | None = None,
) -> SendMessage:
    """The link message to private chat ``chat_id`` for sticker set ``set_name``, in the guest's
    ``language`` (a Telegram ``language_code``; :func:`shared.texts.language_of`): the ``pack_ready``
    text with the link, and one "Add stickers" URL button. The words fit the wait (issue 19):
    ``pack_ready_late`` ("sorry for the wait") when ``late`` (past the 15-minute deadline),
    ``pack_ready_after_failure`` (says that the earlier "something went wrong" was wrong) when the
    guest was sent the failure text before. ``download_url``: the pack's download page
    (:func:`shared.downloads.download_url`), a second URL button "Download the files" under the first.
    ``texts``: the guest's event's own texts, which replace the catalogue's where set (:func:`event_text`)."""
    link = pack_link(set_name)
    buttons = [[{"text": event_text(texts, "add_stickers", language), "url": link}]]
    if download_url:
        buttons.append([{"text": event_text(texts, "download_files", language), "url": download_url}])
    key = "pack_ready_after_failure" if after_failure else "pack_ready_late" if late else "pack_ready"
    return SendMessage(
        chat_id=chat_id,
        text=event_text(texts, key, language, link=link),
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
    texts: EventTexts | None = None,
) -> bool:
    """Record :func:`link_message` under ``command_id`` about ``subject`` (delivery's ``link`` attempt or an
    admin's ``resend_link`` press) in the open transaction (dispatch after the commit,
    :func:`shared.outbox.dispatch_commands`); ``False`` if that id was recorded before.

    ``reply_to``: the service whose ``tg:results:<service>`` gets the outcome (delivery: ``delivery``);
    ``late``, ``after_failure``: the words that fit the wait; ``download_url``: the download page's button
    (:func:`link_message`); ``texts``: the guest's event's own texts (:func:`event_text`).
    """
    message = link_message(
        chat_id,
        set_name,
        language,
        late=late,
        after_failure=after_failure,
        download_url=download_url,
        texts=texts,
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
