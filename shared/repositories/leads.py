"""Leads from the landing page: idempotent intake by the visitor's ``requestId``, repeats by contact, the
status the card's buttons set, and the admin listing. Publication state lives in :mod:`.lead_posts`.

The lead status machine (``leads.cards`` "Lead status"): Take ``new → taken``; Done ``taken → done`` (an
admin also ``new → done``); Spam ``new|taken → spam``; Reopen ``done|spam → taken`` (back to the holder) or
``→ new`` (nobody holds it). :data:`ALLOWED` declares these edges once; :meth:`LeadRepository.set_status`
refuses an undeclared one before any SQL runs (:class:`shared.errors.UndeclaredTransition`), as the job's
transitions do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import lead_repeats, leads
from shared.domain import Lead, LeadRepeat, LeadStatus, LeadSubmission
from shared.errors import UndeclaredTransition
from shared.repositories._rows import from_row

_NEW, _TAKEN, _DONE, _SPAM = LeadStatus.NEW, LeadStatus.TAKEN, LeadStatus.DONE, LeadStatus.SPAM

#: The lead status machine's edges, ``from → {to, …}`` (module docstring): the only place they are declared.
ALLOWED: dict[LeadStatus, frozenset[LeadStatus]] = {
    _NEW: frozenset({_TAKEN, _DONE, _SPAM}),  # Take; Done (an admin); Spam
    _TAKEN: frozenset({_DONE, _SPAM}),
    _DONE: frozenset({_NEW, _TAKEN}),  # Reopen: to the holder, or new when nobody holds it
    _SPAM: frozenset({_NEW, _TAKEN}),
}


def _lead(row: Any) -> Lead:
    return from_row(Lead, row)


def _repeat(row: Any) -> LeadRepeat:
    return from_row(LeadRepeat, row)


class LeadRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def submit(
        self,
        *,
        request_id: str,
        name: str,
        contact: str,
        contact_kind: str,
        contact_key: str,
        message: str,
        source_page: str | None,
        utm: dict[str, str],
        consented_at: datetime | None = None,
        event_id: str | None = None,
    ) -> LeadSubmission:
        """Store one landing submission; safe to call twice, or at the same moment, with one ``request_id``.

        A known ``request_id`` returns what it stored before (``created=False``). A new request from a
        ``contact_key`` that already has a lead becomes a :class:`LeadRepeat` of that lead. Concurrent
        submits resolve through the unique indexes (``request_id`` on both tables, ``contact_key`` on
        leads) with ``ON CONFLICT DO NOTHING`` followed by a read of the winner, never an error.
        ``consented_at``: when the visitor consented to the use of their contact data (the landing form's
        consent line), stored on the lead or the repeat. ``event_id``: the event whose landing page sent it
        (a known event id, or ``None``), stored on a new lead (``leads.event_id``).
        """
        fields = {
            "name": name,
            "contact": contact,
            "message": message,
            "source_page": source_page,
            "utm": utm,
            "consented_at": consented_at,
        }
        for _ in range(3):
            known = await self.find_request(request_id)
            if known is not None:
                return known
            first = (
                await self.conn.execute(sa.select(leads).where(leads.c.contact_key == contact_key))
            ).one_or_none()
            if first is None:
                row = (
                    await self.conn.execute(
                        insert(leads)
                        .values(
                            request_id=request_id,
                            contact_kind=contact_kind,
                            contact_key=contact_key,
                            event_id=event_id,
                            **fields,
                        )
                        .on_conflict_do_nothing()
                        .returning(leads)
                    )
                ).one_or_none()
                if row is not None:
                    return LeadSubmission(lead=_lead(row), created=True)
                continue  # a concurrent submit took this request id or this contact: look again
            if first.request_id == request_id:  # committed by a concurrent submit of this very request
                return LeadSubmission(lead=_lead(first), created=False)
            repeat = (
                await self.conn.execute(
                    insert(lead_repeats)
                    .values(lead_id=first.id, request_id=request_id, **fields)
                    .on_conflict_do_nothing(index_elements=[lead_repeats.c.request_id])
                    .returning(lead_repeats)
                )
            ).one_or_none()
            if repeat is not None:
                return LeadSubmission(lead=_lead(first), created=True, repeat=_repeat(repeat))
        known = await self.find_request(request_id)
        if known is None:  # only if rows vanish between statements (a concurrent delete)
            raise RuntimeError(f"lead request {request_id!r} could not be stored or read back")
        return known

    async def find_request(self, request_id: str) -> LeadSubmission | None:
        """What an earlier submit with ``request_id`` stored (``created=False``), or ``None``."""
        row = (
            await self.conn.execute(sa.select(leads).where(leads.c.request_id == request_id))
        ).one_or_none()
        if row is not None:
            return LeadSubmission(lead=_lead(row), created=False)
        repeat = (
            await self.conn.execute(sa.select(lead_repeats).where(lead_repeats.c.request_id == request_id))
        ).one_or_none()
        if repeat is None:
            return None
        first = (await self.conn.execute(sa.select(leads).where(leads.c.id == repeat.lead_id))).one()
        return LeadSubmission(lead=_lead(first), created=False, repeat=_repeat(repeat))

    async def count_created_between(self, start: datetime, end: datetime) -> int:
        """How many leads arrived in ``[start, end)`` (repeats not counted; the daily digest)."""
        query = sa.select(sa.func.count()).where(leads.c.created_at >= start, leads.c.created_at < end)
        return int((await self.conn.execute(query)).scalar_one())

    async def get(self, lead_id: int) -> Lead | None:
        row = (await self.conn.execute(sa.select(leads).where(leads.c.id == lead_id))).one_or_none()
        return _lead(row) if row else None

    async def get_repeat(self, repeat_id: int) -> LeadRepeat | None:
        row = (
            await self.conn.execute(sa.select(lead_repeats).where(lead_repeats.c.id == repeat_id))
        ).one_or_none()
        return _repeat(row) if row else None

    async def set_status(
        self,
        lead_id: int,
        *,
        status: LeadStatus | None,
        allowed_from: Sequence[LeadStatus],
        by_id: int,
        by_name: str,
        now: datetime,
        holder: int | None = None,
        take: bool = False,
    ) -> Lead | None:
        """Move the lead to ``status`` when it is in one of ``allowed_from`` and, with ``holder``, nobody
        or ``holder`` holds it (``taken_by_id``); ``None`` when not (another press won, someone else holds
        it, or the lead is gone). One conditional update, so two presses never both win.

        ``status=None`` is a Reopen: ``taken`` when the lead has a holder, else ``new``. ``take`` makes
        the presser the holder. Bumps ``status_version``, which names the card edit of this change.

        Raises:
            UndeclaredTransition: an edge from ``allowed_from`` to ``status`` (to ``new`` or ``taken`` for a
                Reopen) is not in :data:`ALLOWED`, or ``allowed_from`` is empty (a bug; before any SQL).
        """
        targets = (status,) if status is not None else (_NEW, _TAKEN)
        undeclared = [
            f"{source} → {target}"
            for source in allowed_from
            for target in targets
            if LeadStatus(target) not in ALLOWED[LeadStatus(source)]
        ]
        if undeclared or not allowed_from:
            raise UndeclaredTransition(f"lead status {undeclared or 'from nothing'} is not in ALLOWED")
        conditions = [leads.c.id == lead_id, leads.c.status.in_(list(allowed_from))]
        if holder is not None:
            conditions.append(sa.or_(leads.c.taken_by_id.is_(None), leads.c.taken_by_id == holder))
        values: dict[str, Any] = {
            "status": status
            if status is not None
            else sa.case((leads.c.taken_by_id.is_(None), _NEW.value), else_=_TAKEN.value),
            "status_by_id": by_id,
            "status_by_name": by_name,
            "status_at": now,
            "status_version": leads.c.status_version + 1,
        }
        if take:
            values.update(taken_by_id=by_id, taken_by_name=by_name)
        row = (
            await self.conn.execute(sa.update(leads).where(*conditions).values(**values).returning(leads))
        ).one_or_none()
        return _lead(row) if row else None

    async def list_recent(self, limit: int = 100, *, status: str | None = None) -> list[tuple[Lead, int]]:
        """The newest leads (optionally of one ``status``) with how many repeats each has."""
        repeats = (
            sa.select(sa.func.count())
            .where(lead_repeats.c.lead_id == leads.c.id)
            .correlate(leads)
            .scalar_subquery()
        )
        query = sa.select(leads, repeats.label("repeat_count")).order_by(leads.c.id.desc()).limit(limit)
        if status is not None:
            query = query.where(leads.c.status == status)
        return [(_lead(r), int(r.repeat_count)) for r in await self.conn.execute(query)]
