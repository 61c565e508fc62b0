"""``tg_commands``: the outbox of Telegram work, and the gateway's at-most-once execution record.

A producer inserts the command ``pending`` with its ``subject`` (:mod:`shared.subjects`) in its own
transaction, commits, then ``XADD``s ``tg:outbox``. The gateway moves it ``pending → sending`` before
calling Telegram and ``sending → sent | failed`` after, storing the result, so a redelivered command returns
the stored result instead of a second message. A flood wait longer than the gateway's limiter waits puts it
``sending → pending`` with ``not_before`` and ``attempt + 1`` (:meth:`TelegramCommandRepository.defer`);
the state change that makes a pending command obsolete finishes it ``cancelled``
(:meth:`TelegramCommandRepository.cancel_pending`), and so does the gateway once its ``expires_at`` has
passed. Commands are found by subject (``subject->>'kind'``, ``subject->>'id'``, index
``ix_tg_commands_subject``), never by their id's shape (issue 21).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import tg_commands
from shared.domain import CommandStatus, TelegramCommandRecord
from shared.repositories._rows import from_row
from shared.repositories.gateway_lease import LeaseClaim, lease_is_current
from shared.subjects import Subject

#: A subject field's wanted value: one value, or any of several (``step=("link", "resend_link")``).
FieldValue = str | int | Sequence[str | int]


def about(kind: str, subject_ids: object | Sequence[object], **fields: FieldValue) -> sa.ColumnElement[bool]:
    """SQL: the rows whose subject is ``kind`` with id ``subject_ids`` (one, or a list or tuple of them)
    and these ``fields`` (compared as text; a sequence: any of). Served by ``ix_tg_commands_subject``."""
    subject = tg_commands.c.subject
    ids = subject_ids if isinstance(subject_ids, list | tuple) else [subject_ids]
    conditions = [subject["kind"].astext == kind, subject["id"].astext.in_([str(i) for i in ids])]
    for name, value in fields.items():
        if isinstance(value, str | int):
            conditions.append(subject[name].astext == str(value))
        else:
            conditions.append(subject[name].astext.in_([str(v) for v in value]))
    return sa.and_(*conditions)


def _record(row: Any) -> TelegramCommandRecord:
    m = row._mapping
    return from_row(TelegramCommandRecord, row, params=dict(m["params"]), status=CommandStatus(m["status"]))


class TelegramCommandRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def add(
        self,
        command_id: str,
        *,
        method: str,
        params: dict[str, Any],
        reply_to: str | None,
        subject: Subject | None = None,
        expires_at: datetime | None = None,
    ) -> bool:
        """Insert a ``pending`` command about ``subject``, to be cancelled unsent when still pending at
        ``expires_at``; ``False`` when ``command_id`` exists already (idempotency key)."""
        result = await self.conn.execute(
            insert(tg_commands)
            .values(
                command_id=command_id,
                method=method,
                params=params,
                reply_to=reply_to,
                subject=sa.null() if subject is None else subject.model_dump(mode="json", exclude_none=True),
                expires_at=expires_at,
            )
            .on_conflict_do_nothing(index_elements=[tg_commands.c.command_id])
        )
        return bool(result.rowcount)

    async def for_subject(
        self, kind: str, subject_id: object, **fields: FieldValue
    ) -> list[TelegramCommandRecord]:
        """The commands about ``kind`` ``subject_id`` (:mod:`shared.subjects`) whose subject has these
        ``fields`` (e.g. ``step="link"``), oldest first."""
        rows = await self.conn.execute(
            sa.select(tg_commands)
            .where(about(kind, subject_id, **fields))
            .order_by(tg_commands.c.created_at, tg_commands.c.command_id)
        )
        return [_record(r) for r in rows]

    async def cancel_pending(
        self, kind: str, subject_id: object, *, n_below: int | None = None, **fields: FieldValue
    ) -> list[str]:
        """``pending → cancelled`` for the commands about ``kind`` ``subject_id`` with these ``fields``
        (and, with ``n_below``, a subject ``n`` below it): the state change that made them obsolete calls
        this in its own transaction. A ``sending`` command is in Telegram's hands and is left alone.
        Returns the cancelled command ids."""
        where = [tg_commands.c.status == CommandStatus.PENDING, about(kind, subject_id, **fields)]
        if n_below is not None:
            where.append(sa.cast(tg_commands.c.subject["n"].astext, sa.Integer) < n_below)
        rows = await self.conn.execute(
            sa.update(tg_commands)
            .where(*where)
            .values(status=CommandStatus.CANCELLED, updated_at=sa.func.now())
            .returning(tg_commands.c.command_id)
        )
        return [r[0] for r in rows]

    async def get(self, command_id: str, *, lock: bool = False) -> TelegramCommandRecord | None:
        """The command, or ``None``. ``lock``: ``SELECT … FOR UPDATE``, so its status cannot change until
        the transaction ends (the executor decides from it whether a ``sending`` row is a dead call's)."""
        query = sa.select(tg_commands).where(tg_commands.c.command_id == command_id)
        row = (await self.conn.execute(query.with_for_update() if lock else query)).one_or_none()
        return _record(row) if row else None

    async def start_sending(
        self, command_id: str, *, stale_after: timedelta, lease: LeaseClaim | None = None
    ) -> TelegramCommandRecord | None:
        """``pending → sending`` (or take over a ``sending`` row older than ``stale_after``). A pending row
        whose ``not_before`` is still ahead is not taken (a redelivered hint must not send early), nor one
        whose ``expires_at`` has passed (:meth:`cancel_expired`). With ``lease`` (the gateway's
        leadership, issue 22), only while that ``(holder, epoch)`` still holds the gateway lease, checked
        in this same statement (:func:`shared.repositories.gateway_lease.lease_is_current`): a replica
        whose lease lapsed (a partition, a pause) or was taken over claims nothing.

        Returns the record when this caller may execute it, ``None`` otherwise.
        """
        now = sa.func.now()
        due = sa.and_(
            tg_commands.c.status == CommandStatus.PENDING,
            sa.or_(tg_commands.c.not_before.is_(None), tg_commands.c.not_before <= now),
            sa.or_(tg_commands.c.expires_at.is_(None), tg_commands.c.expires_at > now),
        )
        row = (
            await self.conn.execute(
                sa.update(tg_commands)
                .where(
                    tg_commands.c.command_id == command_id,
                    sa.or_(
                        due,
                        sa.and_(
                            tg_commands.c.status == CommandStatus.SENDING,
                            tg_commands.c.updated_at <= sa.func.now() - stale_after,
                        ),
                    ),
                    lease_is_current(lease.holder, lease.epoch) if lease is not None else sa.true(),
                )
                .values(status=CommandStatus.SENDING, tries=tg_commands.c.tries + 1, updated_at=sa.func.now())
                .returning(tg_commands)
            )
        ).one_or_none()
        return _record(row) if row else None

    async def finish(
        self, command_id: str, *, ok: bool, result: Any = None, error: dict[str, Any] | None = None
    ) -> None:
        """``sending → sent`` (``ok``) or ``sending → failed``, storing Telegram's result or error."""
        await self.conn.execute(
            sa.update(tg_commands)
            .where(tg_commands.c.command_id == command_id, tg_commands.c.status == CommandStatus.SENDING)
            .values(
                status=CommandStatus.SENT if ok else CommandStatus.FAILED,
                result=result,
                error=error,
                updated_at=sa.func.now(),
            )
        )

    async def touch_sending(self, command_id: str) -> bool:
        """Heartbeat of a call in progress: refresh ``updated_at`` of a ``sending`` row, so neither the
        reconciler nor :meth:`start_sending` takes it for a dead gateway's call. ``False`` when the row is
        no longer ``sending``."""
        result = await self.conn.execute(
            sa.update(tg_commands)
            .where(tg_commands.c.command_id == command_id, tg_commands.c.status == CommandStatus.SENDING)
            .values(updated_at=sa.func.now())
        )
        return bool(result.rowcount)

    async def cancel_expired(self, command_id: str) -> bool:
        """``pending → cancelled`` when the command's ``expires_at`` has passed; ``True`` if it did."""
        result = await self.conn.execute(
            sa.update(tg_commands)
            .where(
                tg_commands.c.command_id == command_id,
                tg_commands.c.status == CommandStatus.PENDING,
                tg_commands.c.expires_at <= sa.func.now(),
            )
            .values(status=CommandStatus.CANCELLED, updated_at=sa.func.now())
        )
        return bool(result.rowcount)

    async def defer(self, command_id: str, *, seconds: float) -> TelegramCommandRecord | None:
        """``sending → pending`` not before now + ``seconds``, ``attempt + 1``: Telegram answered a flood
        wait and applied nothing (issue 21). The hint is cleared (``dispatched_at``), so the reconciler
        publishes the row once it is due (:meth:`due_for_dispatch`). Returns the row, ``None`` when it was
        not ``sending``."""
        row = (
            await self.conn.execute(
                sa.update(tg_commands)
                .where(tg_commands.c.command_id == command_id, tg_commands.c.status == CommandStatus.SENDING)
                .values(
                    status=CommandStatus.PENDING,
                    not_before=sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, seconds),
                    attempt=tg_commands.c.attempt + 1,
                    dispatched_at=None,
                    updated_at=sa.func.now(),
                )
                .returning(tg_commands)
            )
        ).one_or_none()
        return _record(row) if row else None

    async def release(self, command_id: str) -> None:
        """``sending → pending`` after a transient failure, so the command can be tried again."""
        await self.conn.execute(
            sa.update(tg_commands)
            .where(tg_commands.c.command_id == command_id, tg_commands.c.status == CommandStatus.SENDING)
            .values(status=CommandStatus.PENDING, updated_at=sa.func.now())
        )

    async def due_for_dispatch(
        self,
        *,
        grace: timedelta,
        republish_after: timedelta,
        limit: int,
        sending_stale: timedelta | None = None,
    ) -> list[TelegramCommandRecord]:
        """Reconciler query: ``pending`` commands not dispatched after ``grace`` or whose hint is lost, and
        (with ``sending_stale``) ``sending`` commands whose executor died mid-call. A deferred command
        (``not_before``) is due once ``not_before`` has come, not before and without ``grace``: its hint was
        cleared when it was deferred, and a hint given while it waited took nothing, so it goes on the
        first tick after (the gateway ticks every
        ``RECONCILE_INTERVAL_SEC``, 2 s)."""
        now = sa.func.now()
        pending = sa.and_(
            tg_commands.c.status == CommandStatus.PENDING,
            sa.or_(tg_commands.c.not_before.is_(None), tg_commands.c.not_before <= now),
            sa.or_(
                sa.and_(
                    tg_commands.c.dispatched_at.is_(None),
                    sa.or_(tg_commands.c.not_before.is_not(None), tg_commands.c.created_at <= now - grace),
                ),
                tg_commands.c.dispatched_at < tg_commands.c.not_before,  # hinted while waiting: took nothing
                tg_commands.c.dispatched_at <= now - republish_after,
            ),
        )
        stuck: sa.ColumnElement[bool] = sa.false()
        if sending_stale is not None:
            stuck = sa.and_(
                tg_commands.c.status == CommandStatus.SENDING, tg_commands.c.updated_at <= now - sending_stale
            )
        rows = await self.conn.execute(
            sa.select(tg_commands)
            .where(sa.or_(pending, stuck))
            .order_by(tg_commands.c.created_at)
            .limit(limit)
        )
        return [_record(r) for r in rows]

    async def mark_dispatched(self, command_ids: list[str]) -> None:
        if command_ids:
            await self.conn.execute(
                sa.update(tg_commands)
                .where(tg_commands.c.command_id.in_(command_ids))
                .values(dispatched_at=sa.func.now())
            )
