"""``tg_commands``: the outbox of Telegram work, and the gateway's at-most-once execution record.

A producer inserts the command ``pending`` in its own transaction, commits, then ``XADD``s ``tg:outbox``.
The gateway moves it ``pending → sending`` before calling Telegram and ``sending → sent | failed`` after,
storing the result, so a redelivered command returns the stored result instead of a second message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import tg_commands
from shared.domain import CommandStatus, TelegramCommandRecord


def _record(row: Any) -> TelegramCommandRecord:
    m = row._mapping
    return TelegramCommandRecord(
        command_id=m["command_id"],
        reply_to=m["reply_to"],
        method=m["method"],
        params=dict(m["params"]),
        status=CommandStatus(m["status"]),
        result=m["result"],
        error=m["error"],
        tries=m["tries"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


class TelegramCommandRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def add(
        self, command_id: str, *, method: str, params: dict[str, Any], reply_to: str | None
    ) -> bool:
        """Insert a ``pending`` command; ``False`` when ``command_id`` exists already (idempotency key)."""
        result = await self.conn.execute(
            insert(tg_commands)
            .values(command_id=command_id, method=method, params=params, reply_to=reply_to)
            .on_conflict_do_nothing(index_elements=[tg_commands.c.command_id])
        )
        return bool(result.rowcount)

    async def get(self, command_id: str) -> TelegramCommandRecord | None:
        row = (
            await self.conn.execute(sa.select(tg_commands).where(tg_commands.c.command_id == command_id))
        ).one_or_none()
        return _record(row) if row else None

    async def start_sending(self, command_id: str, *, stale_after: timedelta) -> TelegramCommandRecord | None:
        """``pending → sending`` (or take over a ``sending`` row older than ``stale_after``).

        Returns the record when this caller may execute it, ``None`` otherwise.
        """
        row = (
            await self.conn.execute(
                sa.update(tg_commands)
                .where(
                    tg_commands.c.command_id == command_id,
                    sa.or_(
                        tg_commands.c.status == CommandStatus.PENDING,
                        sa.and_(
                            tg_commands.c.status == CommandStatus.SENDING,
                            tg_commands.c.updated_at <= sa.func.now() - stale_after,
                        ),
                    ),
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
        (with ``sending_stale``) ``sending`` commands whose executor died mid-call."""
        now = sa.func.now()
        pending = sa.and_(
            tg_commands.c.status == CommandStatus.PENDING,
            sa.or_(
                sa.and_(tg_commands.c.dispatched_at.is_(None), tg_commands.c.created_at <= now - grace),
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

    async def flooded_due(
        self, *, patterns: Sequence[str], newer_than: timedelta, limit: int
    ) -> list[TelegramCommandRecord]:
        """Commands that ended ``failed`` with a 429 whose ``retry_after`` (s, counted from the row's
        ``updated_at``) has passed, whose id matches one of the SQL ``LIKE`` ``patterns``, created within
        ``newer_than``, and not yet followed by their resend ``<command_id>:again``; oldest first."""
        again = tg_commands.alias("again")
        retry_after = sa.cast(tg_commands.c.error["retry_after"].astext, sa.Float)
        now = sa.func.now()
        rows = await self.conn.execute(
            sa.select(tg_commands)
            .where(
                tg_commands.c.status == CommandStatus.FAILED,
                tg_commands.c.error["error_code"].astext == "429",
                tg_commands.c.updated_at + sa.func.make_interval(0, 0, 0, 0, 0, 0, retry_after) <= now,
                tg_commands.c.created_at >= now - newer_than,
                sa.or_(*(tg_commands.c.command_id.like(p) for p in patterns)),
                ~sa.exists().where(again.c.command_id == tg_commands.c.command_id + ":again"),
            )
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

    async def with_prefix(self, prefix: str) -> list[TelegramCommandRecord]:
        """Commands whose id starts with ``prefix``, oldest first (e.g. a job's link attempts)."""
        rows = await self.conn.execute(
            sa.select(tg_commands)
            .where(tg_commands.c.command_id.startswith(prefix, autoescape=True))
            .order_by(tg_commands.c.created_at)
        )
        return [_record(r) for r in rows]
