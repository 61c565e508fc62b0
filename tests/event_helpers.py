"""Guests of an event at a chosen moment, for the tests of the venue's day (issue 23): the report, the
digests."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from shared.db.tables import api_usage, jobs, sessions
from shared.repositories import Database


async def guest(
    db: Database, event_id: str, at: datetime, status: str, error_class: str | None = None, cost: float = 0.0
) -> None:
    """One guest of ``event_id`` at ``at``: a session, a job ending ``status``, a provider call."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station=f"st-{event_id}", token=f"t-{event_id}-{at:%d%H}")
        await repos.conn.execute(
            sa.update(sessions).where(sessions.c.id == session.id).values(event_id=event_id, created_at=at)
        )
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.id)
            .values(status=status, error_class=error_class, created_at=at)
        )
        await repos.conn.execute(
            sa.insert(api_usage).values(
                job_id=job.id,
                event_id=event_id,
                provider="gemini",
                model="m",
                kind="sheet",
                call_type="image",
                outcome="ok",
                cost_usd=cost,
                created_at=at,
            )
        )
