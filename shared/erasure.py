"""Erasure on request (issue 11 item 3): a guest's sessions, jobs, events, blobs and Telegram commands go in
one transaction, and their sticker sets are deleted in Telegram through the outbox.

The SQL is :class:`shared.repositories.erasure.ErasureRepository`; this module adds the Telegram half.
Each set to delete becomes a :class:`shared.commands.DeleteStickerSet` command
(:func:`shared.command_ids.erase_set`) written in the same transaction as the deletion, so the local data
is gone whatever Telegram answers: the gateway executes the command when Telegram is reachable (a network
error or a 5xx puts it back to ``pending`` and the outbox reconciler publishes it again, a 429 longer
than the rate limiter waits defers it to the end of the wait: issue 21), and a set already gone
(400 ``STICKERSET_INVALID``) counts as deleted (the gateway's executor). Once a deletion has succeeded its
command rows, which name the set, are removed by :func:`purge_set_deletions`. Each command's subject is a
:class:`~shared.subjects.SetDeletion` (the set named by a hash) or a :class:`~shared.subjects.PostBlanking`.

A landing visitor is erased by their contact (:func:`erase_lead_contact`, issue 19): their lead, its repeat
notices and the commands that carried them go in one transaction, and the card and notices already posted
in the staff group are edited through the outbox to :data:`ERASED_POST_TEXT` (no name, no contact, no
buttons): the gateway can only edit a bot message, and an edit is repeatable, so a lost answer costs
nothing. A card still being sent when the lead is erased is not covered (its row is gone when the answer
comes back).

Callers: the gateway's ``/delete`` conversation (:mod:`telegram_gateway.erasure`), the admin API
(``POST /admin/erasures``), and delivery, for a set whose creation finished after its job was erased.
The result is logged by :func:`log_erasure` with counts only: no names, no Telegram ids, no job ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import structlog

from shared import command_ids
from shared.commands import DeleteStickerSet, EditMessageText
from shared.domain import FINAL_COMMAND_STATUSES
from shared.outbox import add_command
from shared.repositories import Database, Repositories
from shared.repositories.erasure import ErasedLeads, ErasedRows
from shared.subjects import PostBlanking, SetDeletion

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Erasure:
    """One erasure: what was deleted, and the set-deletion commands to dispatch after the commit."""

    rows: ErasedRows
    commands: list[str]

    @property
    def found(self) -> bool:
        """Whether anything was stored about the guest."""
        return not self.rows.empty


async def erase_user(repos: Repositories, tg_user_id: int) -> Erasure:
    """Erase every session of Telegram user ``tg_user_id`` (and all below them) and queue the deletion of
    their sticker sets, in the open transaction; dispatch :attr:`Erasure.commands` after the commit."""
    return await _erase(repos, await repos.erasure.sessions_of_user(tg_user_id))


async def erase_guest_of_job(repos: Repositories, job_id: UUID) -> Erasure:
    """Erase the guest of job ``job_id``: every session of its Telegram user, or only its session when that
    was never bound (:meth:`~shared.repositories.erasure.ErasureRepository.sessions_of_guest_of_job`)."""
    return await _erase(repos, await repos.erasure.sessions_of_guest_of_job(job_id))


async def _erase(repos: Repositories, session_ids: list[UUID]) -> Erasure:
    rows = await repos.erasure.erase_sessions(session_ids)
    commands = [await queue_set_deletion(repos, name) for name in rows.sticker_sets]
    return Erasure(rows=rows, commands=commands)


async def queue_set_deletion(repos: Repositories, set_name: str) -> str:
    """Record a :class:`DeleteStickerSet` for ``set_name`` in the open transaction; returns its command id
    (to dispatch after the commit). A deletion still in flight is reused; after finished ones (e.g. a set
    created again after it was deleted) the next attempt ``erase_set:<hash>:<n>`` is queued."""
    key = command_ids.name_hash(set_name)
    earlier = await repos.tg_commands.for_subject("erase_set", key)
    live = [r for r in earlier if r.status not in FINAL_COMMAND_STATUSES]
    if live:
        return live[-1].command_id
    attempt = len(earlier) + 1
    command_id = command_ids.erase_set(set_name, attempt)
    subject = SetDeletion(id=key, n=attempt)
    await add_command(repos, command_id, DeleteStickerSet(name=set_name), subject=subject)
    return command_id


#: What an erased lead's card and notices say afterwards.
ERASED_POST_TEXT = "Lead erased on the visitor's request."


@dataclass(frozen=True, slots=True)
class LeadErasure:
    """One visitor's leads erased: what was deleted, and the post edits to dispatch after the commit."""

    rows: ErasedLeads
    commands: list[str]

    @property
    def found(self) -> bool:
        return bool(self.rows.leads)


async def erase_lead_contact(repos: Repositories, contact_key: str) -> LeadErasure:
    """Erase the lead of ``contact_key`` (the lead form's contact, normalised) with its repeats, and queue
    the edit of its posted card and notices to :data:`ERASED_POST_TEXT`, in the open transaction;
    dispatch :attr:`LeadErasure.commands` after the commit."""
    rows = await repos.erasure.erase_leads(contact_key)
    commands = []
    for chat_id, message_id in rows.posts:
        command_id = command_ids.erase_post(chat_id, message_id)
        edit = EditMessageText(chat_id=chat_id, message_id=message_id, text=ERASED_POST_TEXT)
        await add_command(repos, command_id, edit, subject=PostBlanking(id=f"{chat_id}:{message_id}"))
        commands.append(command_id)
    log.info("LEAD_ERASED", found=bool(rows.leads), posts=len(commands), **rows.counts())
    return LeadErasure(rows=rows, commands=commands)


def log_erasure(erasure: Erasure, *, source: str) -> None:
    """Log the outcome without personal data: counts per table and who asked (``guest`` or ``admin``)."""
    log.info("GUEST_ERASED", source=source, found=erasure.found, **erasure.rows.counts())


async def purge_set_deletions(db: Database) -> int:
    """Remove the command rows of the set deletions that succeeded (they name a deleted set); returns how
    many went. A periodic duty of the gateway."""
    async with db.transaction() as repos:
        purged = await repos.erasure.purge_settled_set_deletions()
    if purged:
        log.info("SET_DELETIONS_PURGED", count=purged)
    return purged


async def set_deletion_duty(db: Database) -> None:
    """One tick of the erasure follow-up: purge the finished set deletions."""
    await purge_set_deletions(db)
