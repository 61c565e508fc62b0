"""Erasure of a guest's data: every row and blob about some sessions or jobs, in the caller's transaction.

Issue 11 (erasure on request; later reused by retention). What "about a job" means here:

* ``jobs`` rows, their ``job_events`` and ``blobs`` (selfie, artefacts, stickers);
* ``tg_commands`` rows about the job (subject :class:`shared.subjects.JobStep`) and every other row
  whose ``params`` mention the job's id (an admin alert "Job <id> FAILED", a sticker-set name
  ``sb<id hex>_by_…``);
* ``api_usage`` rows are kept (cost accounting, spec/002 "Cost ceiling") with ``job_id`` set to ``NULL``.

"About a session" is that for each of its jobs, plus the ``sessions`` row, its ``photo_refusals`` (the
kiosk's refused uploads: code, station, time; migration 0008), plus the ``tg_commands`` rows whose
``params`` name its Telegram chat (``chat_id``) or user (``user_id``) once no remaining session has that
chat or user (the guest's "You're linked!", the /delete prompt), and the handled ``tg_updates`` rows
(webhook mode, migration 0011) sent by that user or in that chat (an update still being handled, e.g. the
``/delete`` itself, is left: its handler marks it, and it goes a day later with every handled one).

Concurrency (DESIGN.md §3, every state change is a conditional ``UPDATE``): the jobs are locked
(``FOR UPDATE``) first, so a worker's or delivery's transaction on one of them finishes before and any
later one finds no row: its transition returns ``None`` and it stops; a blob or usage row it inserts
afterwards cannot reference the deleted job (blobs: foreign-key error; usage: unlinked, see
:meth:`shared.repositories.usage.UsageRepository.record`). ``blobs``/``job_events`` also cascade on the
``jobs`` delete, which catches a row committed between this transaction's reads.

Leads are a separate flow, not linked to Telegram guests: :meth:`ErasureRepository.erase_leads` erases a
landing visitor by the normalised contact the lead form collected (``leads.contact_key``): their lead
(locked first), its repeat notices, and the ``tg_commands`` rows of its card and notices
(subject :class:`shared.subjects.PostStep`, which hold the name and contact), returning the staff-group
messages (card, notices) that show them, for :mod:`shared.erasure` to blank through the outbox (issue 19).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import (
    api_usage,
    blobs,
    job_events,
    jobs,
    lead_repeats,
    leads,
    photo_refusals,
    sessions,
    tg_commands,
    tg_updates,
)
from shared.domain import CommandStatus
from shared.repositories.tg_commands import about

__all__ = ["ErasedLeads", "ErasedRows", "ErasureRepository"]


@dataclass(frozen=True, slots=True)
class ErasedLeads:
    """What erasing a visitor's leads removed: rows per table, and the staff-group messages
    (``(chat_id, message_id)``, card and repeat notices) that still show their name and contact."""

    leads: int = 0
    lead_repeats: int = 0
    tg_commands: int = 0
    posts: tuple[tuple[int, int], ...] = field(default=())

    def counts(self) -> dict[str, int]:
        """The counts per table (no contacts, no ids: safe to log)."""
        return {"leads": self.leads, "lead_repeats": self.lead_repeats, "tg_commands": self.tg_commands}


@dataclass(frozen=True, slots=True)
class ErasedRows:
    """What one erasure removed: rows deleted per table, ``api_usage`` rows unlinked from their job, and
    the names of the Telegram sticker sets the erased jobs may have (to delete in Telegram; may not
    exist there)."""

    sessions: int = 0
    jobs: int = 0
    job_events: int = 0
    blobs: int = 0
    tg_commands: int = 0
    photo_refusals: int = 0
    api_usage_unlinked: int = 0
    sticker_sets: tuple[str, ...] = field(default=())
    tg_updates: int = 0

    def counts(self) -> dict[str, int]:
        """The counts per table (no names, no ids: safe to log)."""
        return {
            "sessions": self.sessions,
            "jobs": self.jobs,
            "job_events": self.job_events,
            "blobs": self.blobs,
            "tg_commands": self.tg_commands,
            "photo_refusals": self.photo_refusals,
            "api_usage_unlinked": self.api_usage_unlinked,
            "sticker_sets": len(self.sticker_sets),
            "tg_updates": self.tg_updates,
        }

    @property
    def empty(self) -> bool:
        return not any(self.counts().values())


class ErasureRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    # --- whose data -------------------------------------------------------------------------------

    async def sessions_of_user(self, tg_user_id: int) -> list[UUID]:
        """Ids of the sessions bound to Telegram user ``tg_user_id``, oldest first."""
        rows = await self.conn.execute(
            sa.select(sessions.c.id)
            .where(sessions.c.tg_user_id == tg_user_id)
            .order_by(sessions.c.created_at)
        )
        return [r[0] for r in rows]

    async def sessions_of_guest_of_job(self, job_id: UUID) -> list[UUID]:
        """The guest of job ``job_id``: every session of its session's Telegram user, or only its session
        when that is not bound to Telegram; ``[]`` for an unknown job."""
        row = (
            await self.conn.execute(
                sa.select(sessions.c.id, sessions.c.tg_user_id)
                .join(jobs, jobs.c.session_id == sessions.c.id)
                .where(jobs.c.id == job_id)
            )
        ).one_or_none()
        if row is None:
            return []
        if row.tg_user_id is None:
            return [row.id]
        return await self.sessions_of_user(row.tg_user_id)

    # --- the primitives ---------------------------------------------------------------------------

    async def erase_sessions(self, session_ids: Collection[UUID]) -> ErasedRows:
        """Delete sessions ``session_ids`` with all their jobs (see the module docstring for what goes).

        Unknown ids are skipped; an empty collection erases nothing. Returns the counts and set names.
        """
        ids = list(session_ids)
        if not ids:
            return ErasedRows()
        people = (
            await self.conn.execute(
                sa.select(sessions.c.tg_user_id, sessions.c.tg_chat_id)
                .where(sessions.c.id.in_(ids))
                .with_for_update()
            )
        ).all()
        job_ids = [
            r[0]
            for r in await self.conn.execute(
                sa.select(jobs.c.id).where(jobs.c.session_id.in_(ids)).with_for_update()
            )
        ]
        erased = await self.erase_jobs(job_ids)
        refusals = await self.conn.execute(
            sa.delete(photo_refusals).where(photo_refusals.c.session_id.in_(ids))
        )
        deleted = await self.conn.execute(sa.delete(sessions).where(sessions.c.id.in_(ids)))
        users = {str(r.tg_user_id) for r in people if r.tg_user_id is not None}
        chats = {str(r.tg_chat_id) for r in people if r.tg_chat_id is not None}
        commands = await self._delete_commands_naming(users=users, chats=chats)
        updates = await self._delete_updates_from(users=users, chats=chats)
        return ErasedRows(
            sessions=_count(deleted),
            jobs=erased.jobs,
            job_events=erased.job_events,
            blobs=erased.blobs,
            tg_commands=erased.tg_commands + commands,
            photo_refusals=_count(refusals),
            api_usage_unlinked=erased.api_usage_unlinked,
            sticker_sets=erased.sticker_sets,
            tg_updates=updates,
        )

    async def _delete_updates_from(self, *, users: set[str], chats: set[str]) -> int:
        """Delete the handled ``tg_updates`` whose object (``message``, ``callback_query`` …: the one field
        besides ``update_id``) is from one of ``users`` or in one of ``chats`` (its ``chat`` or its
        ``message.chat``); returns how many."""
        if not users and not chats:
            return 0
        part = (
            sa.func.jsonb_each(tg_updates.c.body)
            .table_valued(sa.column("key", sa.Text), sa.column("value", JSONB))
            .alias("part")
        )
        value = part.c.value
        names = sa.or_(
            value["from"]["id"].astext.in_(sorted(users)),
            value["chat"]["id"].astext.in_(sorted(chats)),
            value["message"]["chat"]["id"].astext.in_(sorted(chats)),
        )
        mine = sa.exists(sa.select(1).select_from(part).where(sa.func.jsonb_typeof(value) == "object", names))
        result = await self.conn.execute(
            sa.delete(tg_updates).where(tg_updates.c.handled_at.is_not(None), mine)
        )
        return _count(result)

    async def erase_leads(self, contact_key: str) -> ErasedLeads:
        """Delete the lead of ``contact_key`` (:func:`ingest.contact.parse_contact`'s key, e.g.
        ``email:ann@example.com``; one lead per key, its later submissions are its repeats) with its
        repeats and the ``tg_commands`` of its card and notices. Returns the counts and the posted
        messages that show them. Nothing found: all zero."""
        lead = (
            await self.conn.execute(
                sa.select(leads.c.id, leads.c.card_chat_id, leads.c.card_message_id)
                .where(leads.c.contact_key == contact_key)
                .with_for_update()
            )
        ).first()
        if lead is None:
            return ErasedLeads()
        repeats = (
            await self.conn.execute(
                sa.select(lead_repeats.c.id, lead_repeats.c.message_id)
                .where(lead_repeats.c.lead_id == lead.id)
                .with_for_update()
            )
        ).all()
        posts = []
        if lead.card_chat_id is not None and lead.card_message_id is not None:
            posts.append((int(lead.card_chat_id), int(lead.card_message_id)))
            posts += [(int(lead.card_chat_id), int(r.message_id)) for r in repeats if r.message_id]
        own = about("lead_post", lead.id, post="card")
        if repeats:
            own = sa.or_(own, about("lead_post", [r.id for r in repeats], post="notice"))
        commands = await self.conn.execute(sa.delete(tg_commands).where(own))
        repeat_rows = await self.conn.execute(
            sa.delete(lead_repeats).where(lead_repeats.c.lead_id == lead.id)
        )
        lead_rows = await self.conn.execute(sa.delete(leads).where(leads.c.id == lead.id))
        return ErasedLeads(
            leads=_count(lead_rows),
            lead_repeats=_count(repeat_rows),
            tg_commands=_count(commands),
            posts=tuple(posts),
        )

    async def erase_jobs(self, job_ids: Collection[UUID]) -> ErasedRows:
        """Delete jobs ``job_ids`` (their sessions stay), with their events, blobs and the ``tg_commands``
        about them; unlink their ``api_usage`` rows. The jobs are locked first (``FOR UPDATE``).

        Returns the counts and the sticker-set names of the jobs (``jobs.sticker_set_name``, or the name a
        ``create_set`` command asked for: it may have been created while the job was still ``rendered``).
        """
        ids = list(job_ids)
        if not ids:
            return ErasedRows()
        locked = [
            r[0]
            for r in await self.conn.execute(sa.select(jobs.c.id).where(jobs.c.id.in_(ids)).with_for_update())
        ]
        if not locked:
            return ErasedRows()
        names = {
            r[0]
            for r in await self.conn.execute(
                sa.select(jobs.c.sticker_set_name).where(
                    jobs.c.id.in_(locked), jobs.c.sticker_set_name.isnot(None)
                )
            )
        }
        of_jobs = self._commands_of_jobs(locked)
        requested = await self.conn.execute(
            sa.select(tg_commands.c.params["name"].astext).where(
                of_jobs, tg_commands.c.method == "create_sticker_set"
            )
        )
        names.update(r[0] for r in requested if r[0])
        commands = await self.conn.execute(sa.delete(tg_commands).where(of_jobs))
        usage = await self.conn.execute(
            sa.update(api_usage).where(api_usage.c.job_id.in_(locked)).values(job_id=None)
        )
        blob_rows = await self.conn.execute(sa.delete(blobs).where(blobs.c.job_id.in_(locked)))
        events = await self.conn.execute(sa.delete(job_events).where(job_events.c.job_id.in_(locked)))
        job_rows = await self.conn.execute(sa.delete(jobs).where(jobs.c.id.in_(locked)))
        return ErasedRows(
            jobs=_count(job_rows),
            job_events=_count(events),
            blobs=_count(blob_rows),
            tg_commands=_count(commands),
            api_usage_unlinked=_count(usage),
            sticker_sets=tuple(sorted(names)),
        )

    async def purge_settled_set_deletions(self, *, limit: int = 500) -> int:
        """Delete the set-deletion commands (subject :class:`shared.subjects.SetDeletion`) of every set
        whose deletion has succeeded (a ``sent`` row about the same set): they name a set that no longer
        exists. Returns how many rows went."""
        done = tg_commands.alias("done")
        kind = tg_commands.c.subject["kind"].astext
        settled = (
            sa.select(tg_commands.c.command_id)
            .where(
                kind == "erase_set",
                sa.exists().where(
                    done.c.subject["kind"].astext == "erase_set",
                    done.c.subject["id"].astext == tg_commands.c.subject["id"].astext,
                    done.c.status == CommandStatus.SENT,
                ),
            )
            .limit(limit)
        )
        result = await self.conn.execute(sa.delete(tg_commands).where(tg_commands.c.command_id.in_(settled)))
        return _count(result)

    # --- helpers ----------------------------------------------------------------------------------

    def _commands_of_jobs(self, job_ids: list[UUID]) -> sa.ColumnElement[bool]:
        """``tg_commands`` rows about these jobs: their subject is the job, or their ``params`` name the id
        (an alert's text) or its hex (a sticker-set name)."""
        params = sa.cast(tg_commands.c.params, sa.Text)
        mentions: list[sa.ColumnElement[bool]] = []
        for job_id in job_ids:
            mentions += [params.contains(str(job_id)), params.contains(job_id.hex)]
        return sa.or_(about("job", job_ids), *mentions)

    async def _delete_commands_naming(self, *, users: set[str], chats: set[str]) -> int:
        """Delete ``tg_commands`` whose ``params`` name one of ``chats`` (``chat_id``) or ``users``
        (``user_id``) that no session has any more; returns how many rows went.

        ``params`` hold the command models' fields (:mod:`shared.commands`), named as the Bot API names
        them: ``chat_id`` of sendMessage, sendSticker, editMessageText; ``user_id`` of createNewStickerSet
        (core.telegram.org/bots/api#sendmessage, #createnewstickerset; PTB 22.8 ``Bot.send_message``,
        ``Bot.create_new_sticker_set``)."""
        conditions: list[sa.ColumnElement[bool]] = []
        if chats:
            conditions.append(_names_gone("chat_id", sessions.c.tg_chat_id, chats))
        if users:
            conditions.append(_names_gone("user_id", sessions.c.tg_user_id, users))
        if not conditions:
            return 0
        result = await self.conn.execute(sa.delete(tg_commands).where(sa.or_(*conditions)))
        return _count(result)


def _names_gone(param: str, column: sa.Column[Any], values: set[str]) -> sa.ColumnElement[bool]:
    """SQL: the ``tg_commands`` rows whose ``params[param]`` is one of ``values`` that no session's
    ``column`` holds any more."""
    named = tg_commands.c.params[param].astext
    return sa.and_(named.in_(sorted(values)), ~sa.exists().where(sa.cast(column, sa.Text) == named))


def _count(result: Any) -> int:
    return int(result.rowcount or 0)
