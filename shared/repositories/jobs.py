"""Jobs and their transition log (``job_events``).

Every transition goes through :meth:`JobRepository.transition`: one conditional ``UPDATE`` whose ``WHERE``
names the allowed source states (and, for a worker, its ownership), plus a ``job_events`` row in the same
transaction. A transition that finds the job elsewhere returns ``None`` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import job_events, jobs, sessions
from shared.domain import Job, JobContext

FINAL_STATUSES = ("delivered", "failed")
ACTIVE_STATUSES = ("queued", "processing", "rendered", "delivering")


def _job(row: Any) -> Job:
    m = row._mapping
    return Job(**{name: m[name] for name in Job.__slots__})


def _job_columns() -> list[sa.Column[Any]]:
    return [jobs.c[name] for name in Job.__slots__]


class JobRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def get(self, job_id: UUID) -> Job | None:
        row = (await self.conn.execute(sa.select(*_job_columns()).where(jobs.c.id == job_id))).one_or_none()
        return _job(row) if row else None

    async def get_context(self, job_id: UUID) -> JobContext | None:
        """The job with its session's Telegram chat and language."""
        row = (
            await self.conn.execute(
                sa.select(*_job_columns(), sessions.c.tg_user_id, sessions.c.tg_chat_id, sessions.c.language)
                .join(sessions, sessions.c.id == jobs.c.session_id)
                .where(jobs.c.id == job_id)
            )
        ).one_or_none()
        if row is None:
            return None
        m = row._mapping
        return JobContext(
            job=_job(row), tg_user_id=m["tg_user_id"], tg_chat_id=m["tg_chat_id"], language=m["language"]
        )

    async def for_session(self, session_id: UUID) -> list[Job]:
        rows = await self.conn.execute(
            sa.select(*_job_columns()).where(jobs.c.session_id == session_id).order_by(jobs.c.created_at)
        )
        return [_job(r) for r in rows]

    async def for_capture(self, session_id: UUID, capture_id: str) -> Job | None:
        row = (
            await self.conn.execute(
                sa.select(*_job_columns()).where(
                    jobs.c.session_id == session_id, jobs.c.capture_id == capture_id
                )
            )
        ).one_or_none()
        return _job(row) if row else None

    async def insert_queued(self, *, session_id: UUID, capture_id: str, outfit_id: str) -> Job:
        """Insert a new ``queued`` job (and its first event)."""
        job_id = uuid4()
        row = (
            await self.conn.execute(
                sa.insert(jobs)
                .values(
                    id=job_id,
                    session_id=session_id,
                    capture_id=capture_id,
                    outfit_id=outfit_id,
                    status="queued",
                )
                .returning(*_job_columns())
            )
        ).one()
        await self._event(job_id, None, "queued", "photo accepted")
        return _job(row)

    async def transition(
        self,
        job_id: UUID,
        *,
        from_statuses: Iterable[str],
        to_status: str,
        note: str | None = None,
        owner: str | None = None,
        values: dict[str, Any] | None = None,
        where: Sequence[sa.ColumnElement[bool]] = (),
    ) -> Job | None:
        """Move ``job_id`` from one of ``from_statuses`` to ``to_status`` if nothing else moved it first.

        Args:
            owner: when given, the job must be owned by this worker (``jobs.owner``).
            values: further columns to set in the same ``UPDATE``.
            where: further conditions.

        Returns:
            The updated job, or ``None`` when the job is not in an allowed state (the race was lost).
        """
        conditions = [jobs.c.id == job_id, jobs.c.status.in_(tuple(from_statuses)), *where]
        if owner is not None:
            conditions.append(jobs.c.owner == owner)
        old_status = sa.select(jobs.c.status).where(jobs.c.id == job_id).scalar_subquery()
        row = (
            await self.conn.execute(
                sa.update(jobs)
                .where(*conditions)
                .values(status=to_status, updated_at=sa.func.now(), **(values or {}))
                .returning(*_job_columns(), old_status.label("old_status"))
            )
        ).one_or_none()
        if row is None:
            return None
        await self._event(job_id, row._mapping["old_status"], to_status, note)
        return _job(row)

    async def update_fields(
        self, job_id: UUID, values: dict[str, Any], *, where: Sequence[sa.ColumnElement[bool]] = ()
    ) -> bool:
        """Set columns without a state change; ``False`` when the conditions did not hold."""
        result = await self.conn.execute(
            sa.update(jobs).where(jobs.c.id == job_id, *where).values(updated_at=sa.func.now(), **values)
        )
        return bool(result.rowcount)

    async def claim(self, job_id: UUID, *, owner: str) -> Job | None:
        """``queued → processing`` for ``owner`` when the job is due (``not_before`` passed)."""
        return await self.transition(
            job_id,
            from_statuses=("queued",),
            to_status="processing",
            note=f"claimed by {owner}",
            values={"owner": owner, "heartbeat_at": sa.func.now()},
            where=(sa.or_(jobs.c.not_before.is_(None), jobs.c.not_before <= sa.func.now()),),
        )

    async def heartbeat(self, job_id: UUID, *, owner: str) -> bool:
        """Refresh ownership of a running job; ``False`` when it is no longer ours."""
        result = await self.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job_id, jobs.c.status == "processing", jobs.c.owner == owner)
            .values(heartbeat_at=sa.func.now())
        )
        return bool(result.rowcount)

    async def due_for_dispatch(
        self, status: str, *, grace: timedelta, republish_after: timedelta, limit: int
    ) -> list[Job]:
        """Outbox reconciler query: jobs in ``status`` whose stream hint was never sent or may be lost.

        A job qualifies when it is due (``not_before`` passed) and either was never dispatched and is older
        than ``grace``, or was dispatched longer than ``republish_after`` ago and still sits in ``status``.
        """
        now = sa.func.now()
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(
                jobs.c.status == status,
                sa.or_(jobs.c.not_before.is_(None), jobs.c.not_before <= now),
                sa.or_(
                    sa.and_(jobs.c.dispatched_at.is_(None), jobs.c.updated_at <= now - grace),
                    jobs.c.dispatched_at <= now - republish_after,
                ),
            )
            .order_by(jobs.c.created_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def mark_dispatched(self, job_ids: Sequence[UUID], status: str) -> None:
        """Record that the stream hint for these jobs (still in ``status``) was published."""
        if job_ids:
            await self.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id.in_(tuple(job_ids)), jobs.c.status == status)
                .values(dispatched_at=sa.func.now())
            )

    async def stale_processing(self, *, heartbeat_before: datetime, limit: int = 100) -> list[Job]:
        """Jobs in ``processing`` whose owner stopped heart-beating before ``heartbeat_before``."""
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(jobs.c.status == "processing", jobs.c.heartbeat_at < heartbeat_before)
            .order_by(jobs.c.heartbeat_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def in_status(self, status: str, *, limit: int = 100) -> list[Job]:
        rows = await self.conn.execute(
            sa.select(*_job_columns()).where(jobs.c.status == status).order_by(jobs.c.created_at).limit(limit)
        )
        return [_job(r) for r in rows]

    async def active_created_before(
        self, before: datetime, *, without_delay_notice: bool = False, limit: int = 200
    ) -> list[Job]:
        """Jobs not yet final that were created before ``before`` (deadline sweeps, DESIGN.md §6).

        ``without_delay_notice``: only those whose "still working" notice was not sent yet.
        """
        conditions = [jobs.c.status.in_(ACTIVE_STATUSES), jobs.c.created_at <= before]
        if without_delay_notice:
            conditions.append(jobs.c.delay_notice_sent_at.is_(None))
        rows = await self.conn.execute(
            sa.select(*_job_columns()).where(*conditions).order_by(jobs.c.created_at).limit(limit)
        )
        return [_job(r) for r in rows]

    async def failed_since(self, since: datetime, *, error_class: str, limit: int = 500) -> list[Job]:
        """Jobs failed with ``error_class`` after ``since`` (e.g. deadline failures during a pause)."""
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(jobs.c.status == "failed", jobs.c.error_class == error_class, jobs.c.updated_at >= since)
            .order_by(jobs.c.updated_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def recent(self, *, limit: int = 100, status: str | None = None) -> list[Job]:
        """The newest jobs first, optionally only those in ``status``."""
        query = sa.select(*_job_columns()).order_by(jobs.c.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(jobs.c.status == status)
        return [_job(r) for r in await self.conn.execute(query)]

    async def count_by_status(self) -> dict[str, int]:
        rows = await self.conn.execute(sa.select(jobs.c.status, sa.func.count()).group_by(jobs.c.status))
        return {r[0]: int(r[1]) for r in rows}

    async def events(self, job_id: UUID) -> list[tuple[str | None, str, str | None, datetime]]:
        """The job's transitions, oldest first: ``(from_status, to_status, note, at)``."""
        rows = await self.conn.execute(
            sa.select(job_events.c.from_status, job_events.c.to_status, job_events.c.note, job_events.c.at)
            .where(job_events.c.job_id == job_id)
            .order_by(job_events.c.id)
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def _event(self, job_id: UUID, from_status: str | None, to_status: str, note: str | None) -> None:
        await self.conn.execute(
            sa.insert(job_events).values(
                job_id=job_id, from_status=from_status, to_status=to_status, note=note
            )
        )
