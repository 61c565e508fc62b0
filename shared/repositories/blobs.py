"""Blob store in Postgres (``bytea``): selfies and stickers, addressed by id, never sent on streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import blobs
from shared.domain import Blob
from shared.repositories._rows import from_row


@dataclass(frozen=True, slots=True)
class StickerSummary:
    """A stored sticker without its bytes, for the admin job page (issue 20 item 5).

    ``likeness``: the face-descriptor distance to the guest's selfie the worker stored in the blob's
    ``meta["likeness"]`` (0 = the same descriptor, smaller is more alike; ``None`` when it stored none, or
    a value that is not a JSON number). ``likeness_reason``: its ``meta["likeness_reason"]`` (why no
    distance was judged, e.g. ``no_face_found``; ``None`` when one was). ``scored``: the blob has a
    ``likeness`` key at all; stickers stored before issue 20 have neither key.
    """

    position: int
    emoji: str | None
    likeness: float | None
    likeness_reason: str | None
    scored: bool


def _blob(row: Any) -> Blob:
    m = row._mapping
    return from_row(Blob, row, meta=dict(m["meta"]), data=bytes(m["data"]))


class BlobRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def put(
        self,
        *,
        kind: str,
        data: bytes,
        content_type: str,
        job_id: UUID | None = None,
        position: int | None = None,
        meta: dict[str, Any] | None = None,
    ) -> UUID:
        """Store ``data`` (bytes) and return the new blob id."""
        blob_id = uuid4()
        await self.conn.execute(
            sa.insert(blobs).values(
                id=blob_id,
                kind=kind,
                job_id=job_id,
                position=position,
                content_type=content_type,
                meta=meta or {},
                data=data,
                size=len(data),
            )
        )
        return blob_id

    async def get(self, blob_id: UUID) -> Blob | None:
        row = (await self.conn.execute(sa.select(blobs).where(blobs.c.id == blob_id))).one_or_none()
        return _blob(row) if row else None

    async def for_job(self, job_id: UUID, kind: str) -> list[Blob]:
        """The job's blobs of ``kind`` ordered by position."""
        rows = await self.conn.execute(
            sa.select(blobs).where(blobs.c.job_id == job_id, blobs.c.kind == kind).order_by(blobs.c.position)
        )
        return [_blob(r) for r in rows]

    async def positions_for_job(self, job_id: UUID, kind: str) -> list[tuple[int, str | None]]:
        """``(position, meta emoji)`` of the job's blobs of ``kind`` by position, without their bytes."""
        rows = await self.conn.execute(
            sa.select(blobs.c.position, blobs.c.meta["emoji"].astext)
            .where(blobs.c.job_id == job_id, blobs.c.kind == kind, blobs.c.position.isnot(None))
            .order_by(blobs.c.position)
        )
        return [(int(r[0]), r[1]) for r in rows]

    async def sticker_summaries(self, job_id: UUID) -> list[StickerSummary]:
        """The job's stickers (blobs of kind ``sticker`` with a position) by position, without their bytes:
        emoji and likeness from their ``meta``. A ``likeness`` that is not a JSON number reads as ``None``
        rather than failing the query."""
        likeness = blobs.c.meta["likeness"]
        rows = await self.conn.execute(
            sa.select(
                blobs.c.position,
                blobs.c.meta["emoji"].astext,
                sa.case((sa.func.jsonb_typeof(likeness) == "number", likeness.astext.cast(sa.Float))),
                blobs.c.meta["likeness_reason"].astext,
                blobs.c.meta.has_key("likeness"),
            )
            .where(blobs.c.job_id == job_id, blobs.c.kind == "sticker", blobs.c.position.isnot(None))
            .order_by(blobs.c.position)
        )
        return [
            StickerSummary(
                position=int(r[0]), emoji=r[1], likeness=r[2], likeness_reason=r[3], scored=bool(r[4])
            )
            for r in rows
        ]

    async def at_position(self, job_id: UUID, kind: str, position: int) -> Blob | None:
        """The job's blob of ``kind`` at ``position``, or ``None``."""
        row = (
            await self.conn.execute(
                sa.select(blobs)
                .where(blobs.c.job_id == job_id, blobs.c.kind == kind, blobs.c.position == position)
                .limit(1)
            )
        ).one_or_none()
        return _blob(row) if row else None

    async def ids_for_job(self, job_id: UUID, kind: str) -> list[UUID]:
        rows = await self.conn.execute(
            sa.select(blobs.c.id)
            .where(blobs.c.job_id == job_id, blobs.c.kind == kind)
            .order_by(blobs.c.position)
        )
        return [r[0] for r in rows]

    async def delete_for_job(self, job_id: UUID, kind: str) -> int:
        """Delete the job's blobs of ``kind``; returns how many were deleted."""
        result = await self.conn.execute(
            sa.delete(blobs).where(blobs.c.job_id == job_id, blobs.c.kind == kind)
        )
        return int(result.rowcount or 0)
