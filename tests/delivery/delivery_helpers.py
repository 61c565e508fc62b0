"""A job with its 12 stored stickers in a given state, for the delivery tests."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from shared.db.tables import jobs
from shared.domain import Job
from shared.repositories import Database


async def job_with_stickers(db: Database, **values: Any) -> Job:
    """A guest (user and chat 8) linked to a session, a job with 12 sticker blobs, its row set to
    ``values`` (e.g. ``status="rendered"``)."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t")
        await repos.sessions.bind_telegram("t", user_id=8, chat_id=8, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        for i in range(12):
            await repos.blobs.put(
                kind="sticker", data=b"png", content_type="image/png", job_id=job.id, position=i
            )
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(**values))
    return job
