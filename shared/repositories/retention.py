"""Retention: one batch of expired rows and blobs deleted, in the caller's transaction (issue 11 item 2).

Each method selects at most ``limit`` rows that are past their window, locks them with
``FOR UPDATE SKIP LOCKED`` (a row a worker, delivery or the gateway holds right now is left for the next
run, so housekeeping never waits on the guest flow) and deletes what hangs off them. It returns a
:class:`PurgedBatch`: how many rows it selected (fewer than ``limit``: nothing more is due) and what it
deleted per kind. The loop, the clock and the windows are :mod:`shared.housekeeping`'s.

Every method is idempotent: a row already deleted is simply not selected again, so a batch that crashed
before its commit is redone by the next run, and a committed one is never redone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import blobs, jobs, lead_repeats, leads, sessions, tg_commands
from shared.domain import ACTIVE_JOB_STATUSES, FINAL_COMMAND_STATUSES, IN_FLIGHT_POST_STATES, JobStatus
from shared.repositories.erasure import ErasureRepository

__all__ = ["PERSONAL_BLOB_KINDS", "PurgedBatch", "RetentionRepository"]

#: Blob kinds that are the guest's face: the selfie and what the worker derived from it (the
#: ``passport`` JSON and the ``anchor`` portrait, :class:`worker.context.DbArtefacts`). The face crop is
#: never stored: the worker cuts it from the selfie in memory for each render.
PERSONAL_BLOB_KINDS: tuple[str, ...] = ("selfie", "anchor", "passport")


@dataclass(frozen=True, slots=True)
class PurgedBatch:
    """One batch: ``selected`` rows were due (and locked); ``deleted`` counts per kind (a blob kind,
    ``session``, ``job``, ``job_event``, ``blob``, ``tg_command``, ``photo_refusal``, ``lead``,
    ``lead_repeat``) and
    ``api_usage_unlinked`` (kept, ``job_id`` cleared). No ids, no names: safe to log."""

    selected: int = 0
    deleted: Mapping[str, int] = field(default_factory=dict)
    api_usage_unlinked: int = 0


class RetentionRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def purge_personal_blobs(
        self, *, uploaded_before: datetime, at: datetime, limit: int
    ) -> PurgedBatch:
        """Delete the selfie, ``anchor`` and ``passport`` blobs of up to ``limit`` jobs whose selfie was
        uploaded before ``uploaded_before`` (any job state), or whose selfie already counts as erased
        (``selfie_deleted_at`` set: an artefact the worker stored after delivery erased the selfie);
        ``jobs.selfie_deleted_at`` becomes ``at`` where it was unset. Afterwards the admin Retry is
        refused (:func:`shared.joblife.retry_failed_job` needs the selfie)."""
        personal = blobs.c.kind.in_(PERSONAL_BLOB_KINDS)
        due = sa.select(blobs.c.job_id).where(
            personal,
            blobs.c.job_id == jobs.c.id,
            sa.or_(blobs.c.created_at < uploaded_before, jobs.c.selfie_deleted_at.isnot(None)),
        )
        ids = await self._lock(jobs, jobs.c.id, sa.exists(due), limit=limit)
        if not ids:
            return PurgedBatch()
        deleted = await self._delete_blobs(sa.and_(blobs.c.job_id.in_(ids), personal))
        await self.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id.in_(ids), jobs.c.selfie_deleted_at.is_(None))
            .values(selfie_deleted_at=at)
        )
        return PurgedBatch(selected=len(ids), deleted=deleted)

    async def purge_stickers(
        self, *, delivered_before: datetime, failed_before: datetime, limit: int
    ) -> PurgedBatch:
        """Delete the ``sticker`` blobs of up to ``limit`` jobs delivered (link sent) before
        ``delivered_before``, or failed (last change) before ``failed_before``: a failed job's stickers
        were never handed over, and once its selfie is gone a Retry could not reuse them anyway."""
        has_stickers = sa.exists().where(blobs.c.job_id == jobs.c.id, blobs.c.kind == "sticker")
        expired = sa.or_(
            sa.and_(jobs.c.status == JobStatus.DELIVERED, jobs.c.link_sent_at < delivered_before),
            sa.and_(jobs.c.status == JobStatus.FAILED, jobs.c.updated_at < failed_before),
        )
        ids = await self._lock(jobs, jobs.c.id, sa.and_(has_stickers, expired), limit=limit)
        if not ids:
            return PurgedBatch()
        deleted = await self._delete_blobs(sa.and_(blobs.c.job_id.in_(ids), blobs.c.kind == "sticker"))
        return PurgedBatch(selected=len(ids), deleted=deleted)

    async def purge_sessions(self, *, created_before: datetime, limit: int) -> PurgedBatch:
        """Erase up to ``limit`` sessions created before ``created_before`` that have no job still under
        way, with everything below them (:meth:`ErasureRepository.erase_sessions`: jobs, events, blobs,
        refused uploads, the Telegram commands about them; ``api_usage`` unlinked). Their sticker sets
        stay in Telegram."""
        active = sa.exists().where(jobs.c.session_id == sessions.c.id, jobs.c.status.in_(ACTIVE_JOB_STATUSES))
        ids = await self._lock(
            sessions, sessions.c.id, sa.and_(sessions.c.created_at < created_before, ~active), limit=limit
        )
        if not ids:
            return PurgedBatch()
        erased = await ErasureRepository(self.conn).erase_sessions(ids)
        return PurgedBatch(
            selected=len(ids),
            deleted={
                "session": erased.sessions,
                "job": erased.jobs,
                "job_event": erased.job_events,
                "blob": erased.blobs,
                "tg_command": erased.tg_commands,
                "photo_refusal": erased.photo_refusals,
            },
            api_usage_unlinked=erased.api_usage_unlinked,
        )

    async def purge_tg_commands(self, *, settled_before: datetime, limit: int) -> PurgedBatch:
        """Delete up to ``limit`` Telegram commands that ended (``sent`` or ``failed``, with their stored
        result or error) before ``settled_before``; a ``pending`` or ``sending`` one is never touched."""
        settled = sa.and_(
            tg_commands.c.status.in_(sorted(FINAL_COMMAND_STATUSES)),
            tg_commands.c.updated_at < settled_before,
        )
        ids = await self._lock(tg_commands, tg_commands.c.command_id, settled, limit=limit)
        if not ids:
            return PurgedBatch()
        result = await self.conn.execute(sa.delete(tg_commands).where(tg_commands.c.command_id.in_(ids)))
        return PurgedBatch(selected=len(ids), deleted={"tg_command": _count(result)})

    async def purge_leads(self, *, active_before: datetime, limit: int) -> PurgedBatch:
        """Delete up to ``limit`` leads last heard of (created, or repeated) before ``active_before``, with
        their repeat notices; a lead whose card is being sent or checked is left for the next run."""
        recent_repeat = sa.exists().where(
            lead_repeats.c.lead_id == leads.c.id, lead_repeats.c.created_at >= active_before
        )
        expired = sa.and_(
            leads.c.created_at < active_before,
            leads.c.post_state.notin_(IN_FLIGHT_POST_STATES),
            ~recent_repeat,
        )
        ids = await self._lock(leads, leads.c.id, expired, limit=limit)
        if not ids:
            return PurgedBatch()
        repeats = await self.conn.execute(sa.delete(lead_repeats).where(lead_repeats.c.lead_id.in_(ids)))
        rows = await self.conn.execute(sa.delete(leads).where(leads.c.id.in_(ids)))
        return PurgedBatch(selected=len(ids), deleted={"lead": _count(rows), "lead_repeat": _count(repeats)})

    # --- helpers ----------------------------------------------------------------------------------

    async def _lock(
        self, table: sa.Table, key: sa.Column[Any], where: sa.ColumnElement[bool], *, limit: int
    ) -> list[Any]:
        """Keys of up to ``limit`` rows of ``table`` matching ``where``, locked; rows others hold are
        skipped (``FOR UPDATE SKIP LOCKED``)."""
        rows = await self.conn.execute(
            sa.select(key).select_from(table).where(where).limit(limit).with_for_update(skip_locked=True)
        )
        return [r[0] for r in rows]

    async def _delete_blobs(self, where: sa.ColumnElement[bool]) -> dict[str, int]:
        """Delete the blobs matching ``where``; the count per blob kind."""
        rows = await self.conn.execute(sa.delete(blobs).where(where).returning(blobs.c.kind))
        counts: dict[str, int] = {}
        for (kind,) in rows:
            counts[kind] = counts.get(kind, 0) + 1
        return counts


def _count(result: Any) -> int:
    return int(result.rowcount or 0)
