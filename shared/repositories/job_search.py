"""The admin page's job list (issue 13 item 3): jobs with their guest, station and outfit, found by a
search and paged newest first by keyset on ``(created_at, id)`` (index ``ix_jobs_created``, migration
0006), so a page costs the same however deep it is and a job inserted meanwhile shifts nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import job_events, jobs, sessions
from shared.domain import Job, JobStatus
from shared.repositories._rows import from_row
from shared.repositories.jobs import _job, _job_columns

__all__ = ["JobListing", "JobSearchRepository", "PageCursor"]

_HEX = re.compile(r"^[0-9a-f-]{4,36}$")


@dataclass(frozen=True, slots=True)
class PageCursor:
    """Where the next page starts: after the job created at ``created_at`` with id ``job_id``."""

    created_at: datetime
    job_id: UUID


@dataclass(frozen=True, slots=True)
class JobListing:
    """A job with its guest: first name and ``@username`` (without ``@``) and Telegram user id as the bot
    saw them at the binding (``None`` before it), the kiosk station of its session, and ``requeues``: how
    often the job went back to ``queued`` (:func:`requeues_sql`)."""

    job: Job
    station: str
    guest_name: str | None
    tg_username: str | None
    tg_user_id: int | None
    requeues: int = 0


def _listing(row: Any) -> JobListing:
    return from_row(JobListing, row, job=_job(row), requeues=int(row._mapping["requeues"] or 0))


def requeues_sql() -> sa.ColumnElement[int]:
    """How often the job went back to ``queued`` after its photo was accepted: its ``job_events`` into
    ``queued`` from another state (an admin Retry ``failed → queued``, a worker's requeue
    ``processing → queued``)."""
    return (
        sa.select(sa.func.count())
        .where(
            job_events.c.job_id == jobs.c.id,
            job_events.c.to_status == JobStatus.QUEUED.value,
            job_events.c.from_status.isnot(None),
        )
        .scalar_subquery()
    )


class JobSearchRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def search(
        self,
        *,
        query: str | None = None,
        status: JobStatus | None = None,
        after: PageCursor | None = None,
        limit: int = 50,
    ) -> tuple[list[JobListing], PageCursor | None]:
        """One page of jobs, newest first, and the cursor of the next page (``None`` on the last one).

        Args:
            query: matched case-insensitively against the guest's first name (substring), ``@username``
                (substring; a leading ``@`` is ignored), Telegram user id (all digits: equal), job id
                (hex prefix, dashes allowed) and sticker set name (substring). ``None``/blank: every job.
            status: only jobs in this status.
            after: the cursor a previous page returned.
            limit: jobs per page (the caller bounds it).
        """
        columns: list[sa.ColumnElement[Any]] = [*_job_columns(), sessions.c.station, sessions.c.guest_name]
        columns += [sessions.c.tg_username, sessions.c.tg_user_id, requeues_sql().label("requeues")]
        select = sa.select(*columns).join(sessions, sessions.c.id == jobs.c.session_id)
        text = (query or "").strip()
        if text:
            select = select.where(sa.or_(*_matches(text)))
        if status is not None:
            select = select.where(jobs.c.status == JobStatus(status).value)
        if after is not None:
            select = select.where(sa.tuple_(jobs.c.created_at, jobs.c.id) < (after.created_at, after.job_id))
        select = select.order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(limit + 1)
        rows = [_listing(r) for r in await self.conn.execute(select)]
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = PageCursor(rows[-1].job.created_at, rows[-1].job.id) if more and rows else None
        return rows, cursor


def _matches(text: str) -> list[sa.ColumnElement[bool]]:
    name = text.removeprefix("@")
    conditions = [
        sessions.c.guest_name.icontains(text, autoescape=True),
        jobs.c.sticker_set_name.icontains(text, autoescape=True),
    ]
    if name:
        conditions.append(sessions.c.tg_username.icontains(name, autoescape=True))
    if text.isdigit() and len(text) <= 19:
        conditions.append(sessions.c.tg_user_id == int(text))
    if _HEX.match(text.lower()):
        conditions.append(sa.cast(jobs.c.id, sa.Text).startswith(text.lower(), autoescape=True))
    return conditions
