"""Jobs and their transition log (``job_events``): the one home of the job state machine.

DESIGN.md §3 "Job state machine": ``queued → processing → rendered → delivering → delivered``, plus
``failed`` from any non-final state, ``processing → queued`` on a retry or requeue, and an admin retry
``failed → queued``. Each arrow is a method of :class:`JobRepository`::

               claim             mark_rendered          start_delivery          mark_delivered
    queued ──────────▶ processing ──────────▶ rendered ──────────▶ delivering ──────────▶ delivered
     ▲ ▲ │                 │ │                   │                     │
     │ │ │                 │ │  requeue_for_retry, requeue_refunded,   │
     │ └─┼─────────────────┘ │  requeue_after_shutdown, requeue_crashed│
     │   │ fail (deadline)   │ fail                │ fail                │ fail
     │   ▼                   ▼                     ▼                     ▼
     │ ┌─────────────────────────────────────────────────────────────────────┐
     │ │                               failed                                │
     │ └─────────────────────────────────────────────────────────────────────┘
     │                                   │
     └──────── retry_failed (admin) ─────┘

:data:`ALLOWED` declares these edges once. Every transition method goes through
:meth:`JobRepository._transition`, which refuses an undeclared edge at call time
(:class:`shared.errors.UndeclaredTransition`) and then runs one conditional
``UPDATE jobs … WHERE id = … AND status IN (…) [AND owner = …] RETURNING …`` plus its ``job_events`` row,
both in the caller's transaction. A transition that finds the job elsewhere (the race was lost) returns
``None`` and writes nothing. A transition also cancels the job's pending guest texts it made obsolete
(:data:`GUEST_TEXTS`). The use cases around the transitions (fail and tell the guest, republish the
queue, admin retry) are in :mod:`shared.joblife`.

The methods that change columns but not the status (``heartbeat``, ``claim_poll``, ``schedule_poll``,
``claim_delay_notice``, ``mark_dispatched``) are conditional updates too and return
whether they applied; they write no event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.db.tables import job_events, jobs, sessions
from shared.domain import ACTIVE_JOB_STATUSES, Job, JobContext, JobCounts, JobStatus
from shared.errors import ErrorClass, UndeclaredTransition
from shared.repositories._rows import from_row
from shared.repositories.events import EventRepository
from shared.repositories.tg_commands import TelegramCommandRepository
from shared.subjects import JobStepName

_QUEUED, _PROCESSING, _RENDERED = JobStatus.QUEUED, JobStatus.PROCESSING, JobStatus.RENDERED
_DELIVERING, _DELIVERED, _FAILED = JobStatus.DELIVERING, JobStatus.DELIVERED, JobStatus.FAILED

#: The state machine's edges, ``from → {to, …}`` (DESIGN.md §3): the only place they are declared.
ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    _QUEUED: frozenset({_PROCESSING, _FAILED}),  # claim; the 15-minute deadline (DESIGN.md §6)
    _PROCESSING: frozenset({_RENDERED, _QUEUED, _FAILED}),  # rendered; retry/refund/shutdown/crash; failed
    _RENDERED: frozenset({_DELIVERING, _FAILED}),
    _DELIVERING: frozenset({_DELIVERED, _FAILED}),
    _DELIVERED: frozenset(),
    _FAILED: frozenset({_QUEUED}),  # admin retry
}

#: The guest's job texts (:class:`shared.subjects.JobStep` steps) with the statuses in which each still
#: makes sense: a transition to any other status cancels the job's pending ones in its own transaction
#: (issue 21; a text held by a flood wait is sent when the wait ends unless this made it obsolete). The
#: failure text (``failure_text``) applies while the job is ``failed``: nothing but an admin retry (a fresh
#: run, ``failed → queued``) leaves that status, and then a failure text still held by a flood wait would
#: tell a guest about to get their pack that it went wrong.
GUEST_TEXTS: dict[JobStepName, frozenset[JobStatus]] = {
    "failure_text": frozenset({_FAILED}),
    "still_working": frozenset(ACTIVE_JOB_STATUSES),  # delivery's 5-minute notice
    "generating": frozenset({_QUEUED, _PROCESSING}),  # ingest's "Generating…"
    "unavailable": frozenset({_QUEUED}),  # the worker's "your photo is saved" during a pause
}

#: What a job leaving ``processing`` hands back: nobody owns it, its stream hint must be sent again.
_RELEASED: dict[str, Any] = {"owner": None, "dispatched_at": None}
#: An admin retry starts a fresh run (spec/002 "Job-level outcomes"; ``created_at`` is set to now: a new
#: cost ceiling and deadline) with nothing left of the failed one.
_FRESH_RUN: dict[str, Any] = {
    **_RELEASED,
    "attempts": 0,
    "free_requeues": 0,
    "not_before": None,
    "error_class": None,
    "error": None,
    "delay_notice_sent_at": None,
    "failure_notice_sent_at": None,
}
#: At most this many characters of an error text are kept in ``jobs.error`` / an event's note.
ERROR_CHARS = 2000
NOTE_CHARS = 200


def accepted_at_sql() -> sa.ColumnElement[datetime]:
    """When the guest's photo of the job was accepted: its first ``job_events`` row (``None → queued``,
    "photo accepted", :meth:`JobRepository.insert_queued`), else ``jobs.created_at``. Unlike
    ``created_at``, which an admin retry resets (a fresh run), this never moves: the guest's wait for
    their link runs from here however often the job was queued again."""
    first = (
        sa.select(sa.func.min(job_events.c.at))
        .where(job_events.c.job_id == jobs.c.id, job_events.c.from_status.is_(None))
        .scalar_subquery()
    )
    return sa.func.coalesce(first, jobs.c.created_at)


def _job(row: Any) -> Job:
    return from_row(Job, row, status=JobStatus(row._mapping["status"]))


def _job_columns() -> list[sa.Column[Any]]:
    return [jobs.c[name] for name in Job.__slots__]


def _values(statuses: Iterable[JobStatus]) -> list[str]:
    return [JobStatus(s).value for s in statuses]


class JobRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def get(self, job_id: UUID) -> Job | None:
        row = (await self.conn.execute(sa.select(*_job_columns()).where(jobs.c.id == job_id))).one_or_none()
        return _job(row) if row else None

    async def get_context(self, job_id: UUID) -> JobContext | None:
        """The job with its session's Telegram chat, language, delivery and event: the one way a job's
        event is found for what its guest is told (:class:`shared.events.Event`)."""
        row = (
            await self.conn.execute(
                sa.select(
                    *_job_columns(),
                    sessions.c.tg_user_id,
                    sessions.c.tg_chat_id,
                    sessions.c.language,
                    sessions.c.delivery,
                    sessions.c.event_id,
                )
                .join(sessions, sessions.c.id == jobs.c.session_id)
                .where(jobs.c.id == job_id)
            )
        ).one_or_none()
        if row is None:
            return None
        event = await EventRepository(self.conn).get(row._mapping["event_id"])
        return from_row(JobContext, row, job=_job(row), event=event)

    async def accepted_at(self, job_id: UUID) -> datetime | None:
        """When the job's photo was accepted (:func:`accepted_at_sql`); ``None`` for an unknown job."""
        value: datetime | None = await self.conn.scalar(
            sa.select(accepted_at_sql()).where(jobs.c.id == job_id)
        )
        return value

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

    # --- transitions (DESIGN.md §3; the edges are ALLOWED) -------------------------------------------

    async def insert_queued(self, *, session_id: UUID, capture_id: str, outfit_id: str) -> Job:
        """Insert a new ``queued`` job (and its first event, from ``None``)."""
        job_id = uuid4()
        row = (
            await self.conn.execute(
                sa.insert(jobs)
                .values(
                    id=job_id,
                    session_id=session_id,
                    capture_id=capture_id,
                    outfit_id=outfit_id,
                    status=_QUEUED.value,
                )
                .returning(*_job_columns())
            )
        ).one()
        await self._event(job_id, None, _QUEUED, "photo accepted")
        return _job(row)

    async def claim(self, job_id: UUID, *, owner: str) -> Job | None:
        """``queued → processing`` for ``owner`` when the job is due (``not_before`` passed)."""
        return await self._transition(
            job_id,
            (_QUEUED,),
            _PROCESSING,
            note=f"claimed by {owner}",
            values={"owner": owner, "heartbeat_at": sa.func.now()},
            where=(sa.or_(jobs.c.not_before.is_(None), jobs.c.not_before <= sa.func.now()),),
        )

    async def mark_rendered(self, job_id: UUID, *, owner: str, stickers: int) -> Job | None:
        """``processing → rendered`` while ``owner`` still holds the job (``stickers``: how many were
        stored); the error of an earlier attempt is cleared."""
        return await self._transition(
            job_id,
            (_PROCESSING,),
            _RENDERED,
            owner=owner,
            note=f"{stickers} stickers",
            values={**_RELEASED, "error_class": None, "error": None},
        )

    async def requeue_for_retry(
        self, job_id: UUID, *, owner: str, error_class: str, error: str, not_before: datetime
    ) -> Job | None:
        """``processing → queued`` after a charged failure: one attempt consumed, due at ``not_before``
        (DESIGN.md §5, ``RETRY_DELAY_SEC``). ``error`` must be redacted already."""
        return await self._transition(
            job_id,
            (_PROCESSING,),
            _QUEUED,
            owner=owner,
            note=f"retry after {error_class}",
            values={
                **_RELEASED,
                "attempts": jobs.c.attempts + 1,
                "error_class": str(error_class),
                "error": error[:ERROR_CHARS],
                "not_before": not_before,
            },
        )

    async def requeue_refunded(self, job_id: UUID, *, owner: str, error_class: str) -> Job | None:
        """``processing → queued`` without consuming an attempt: no provider could serve and the queue
        pauses (DESIGN.md §5: ``credit``, ``auth``, ``config``, ``outage``, ``budget``); due as soon as it
        resumes."""
        return await self._transition(
            job_id,
            (_PROCESSING,),
            _QUEUED,
            owner=owner,
            note=f"refunded: {error_class}",
            values={**_RELEASED, "not_before": None, "error_class": str(error_class)},
        )

    async def requeue_after_shutdown(self, job_id: UUID, *, owner: str, free: bool) -> Job | None:
        """``processing → queued`` for a job cancelled by a shutdown: ``free`` uses up one of the free
        requeues, otherwise an attempt is consumed (spec/000 "Graceful shutdown and requeue")."""
        counter = jobs.c.free_requeues if free else jobs.c.attempts
        return await self._transition(
            job_id,
            (_PROCESSING,),
            _QUEUED,
            owner=owner,
            note="requeued on shutdown",
            values={**_RELEASED, counter.name: counter + 1},
        )

    async def requeue_crashed(self, job: Job) -> Job | None:
        """``processing → queued`` for a job whose owner stopped heart-beating (``crashed``, DESIGN.md §5):
        one attempt consumed, due at once. Applies only while the heartbeat is still ``job.heartbeat_at``
        (an owner that beat meanwhile is alive and keeps its job)."""
        return await self._transition(
            job.id,
            (_PROCESSING,),
            _QUEUED,
            note=f"crashed: owner {job.owner} died",
            values={
                **_RELEASED,
                "attempts": jobs.c.attempts + 1,
                "error_class": str(ErrorClass.CRASHED),
                "not_before": sa.func.now(),
            },
            where=(jobs.c.heartbeat_at == job.heartbeat_at,),
        )

    async def fail(
        self,
        job_id: UUID,
        *,
        from_statuses: Iterable[JobStatus],
        error_class: str,
        error: str,
        owner: str | None = None,
        created_at: datetime | None = None,
    ) -> Job | None:
        """``<one of from_statuses> → failed`` with ``error_class`` and ``error`` (redacted by the caller).

        Args:
            owner: when given, the job must still be owned by this worker.
            created_at: when given, only the run that started then (an admin retry starts a new one).

        Call :func:`shared.joblife.fail_job`, which also tells the guest and the admin.
        """
        return await self._transition(
            job_id,
            tuple(from_statuses),
            _FAILED,
            owner=owner,
            note=f"{error_class}: {error[:NOTE_CHARS]}",
            values={"error_class": str(error_class), "error": error[:ERROR_CHARS], "owner": None},
            where=() if created_at is None else (jobs.c.created_at == created_at,),
        )

    async def start_delivery(
        self, job_id: UUID, *, sticker_set_name: str, at: datetime, first_poll_at: datetime
    ) -> Job | None:
        """``rendered → delivering``: the sticker set ``sticker_set_name`` was created ``at``, the selfie
        counts as erased then (the caller deletes its blobs in the same transaction, DESIGN.md §12), and the
        first readiness poll is due at ``first_poll_at``."""
        return await self._transition(
            job_id,
            (_RENDERED,),
            _DELIVERING,
            note=f"sticker set {sticker_set_name}",
            values={
                "sticker_set_name": sticker_set_name,
                "set_created_at": at,
                "next_poll_at": first_poll_at,
                "selfie_deleted_at": at,
            },
        )

    async def mark_delivered(self, job_id: UUID, *, link_sent_at: datetime) -> Job | None:
        """``delivering → delivered``: the pack link reached the guest."""
        return await self._transition(
            job_id, (_DELIVERING,), _DELIVERED, note="link sent", values={"link_sent_at": link_sent_at}
        )

    async def deliver_download(self, job_id: UUID, *, at: datetime) -> Job | None:
        """``rendered → delivering → delivered`` in one go for a guest without Telegram: the pack is
        delivered as its download page (:mod:`shared.downloads`), which opens the moment the stickers are
        stored, so there is no set to create and no link to send. The selfie counts as erased ``at`` (the
        caller deletes its blobs in the same transaction, as for a created set, DESIGN.md §12);
        ``link_sent_at`` is ``at``, so the stickers' retention runs from it."""
        started = await self._transition(
            job_id, (_RENDERED,), _DELIVERING, note="download page", values={"selfie_deleted_at": at}
        )
        if started is None:
            return None
        return await self.mark_delivered(job_id, link_sent_at=at)

    async def retry_failed(self, job_id: UUID, *, note: str) -> Job | None:
        """``failed → queued`` as a fresh run (``created_at`` now; attempts, errors and notices cleared).

        Call :func:`shared.joblife.retry_failed_job`, which first checks that the selfie still exists.
        """
        return await self._transition(
            job_id, (_FAILED,), _QUEUED, note=note, values={**_FRESH_RUN, "created_at": sa.func.now()}
        )

    async def _transition(
        self,
        job_id: UUID,
        from_statuses: tuple[JobStatus, ...],
        to_status: JobStatus,
        *,
        note: str,
        owner: str | None = None,
        values: dict[str, Any] | None = None,
        where: Sequence[sa.ColumnElement[bool]] = (),
    ) -> Job | None:
        """Move ``job_id`` from one of ``from_statuses`` to ``to_status`` if nothing else moved it first.

        Raises:
            UndeclaredTransition: ``from_statuses`` is empty or holds a state with no edge to ``to_status``
                in :data:`ALLOWED` (a bug; raised before any SQL runs).

        Returns:
            The updated job, or ``None`` when the job is not in an allowed state (the race was lost).
        """
        undeclared = [str(s) for s in from_statuses if to_status not in ALLOWED[JobStatus(s)]]
        if undeclared or not from_statuses:
            raise UndeclaredTransition(f"job transition {undeclared} → {to_status} is not in ALLOWED")
        conditions = [jobs.c.id == job_id, jobs.c.status.in_(_values(from_statuses)), *where]
        if owner is not None:
            conditions.append(jobs.c.owner == owner)
        old_status = sa.select(jobs.c.status).where(jobs.c.id == job_id).scalar_subquery()
        row = (
            await self.conn.execute(
                sa.update(jobs)
                .where(*conditions)
                .values(status=to_status.value, updated_at=sa.func.now(), **(values or {}))
                .returning(*_job_columns(), old_status.label("old_status"))
            )
        ).one_or_none()
        if row is None:
            return None
        await self._event(job_id, JobStatus(row._mapping["old_status"]), to_status, note)
        obsolete = [step for step, live in GUEST_TEXTS.items() if to_status not in live]
        if obsolete:
            await TelegramCommandRepository(self.conn).cancel_pending("job", job_id, step=obsolete)
        return _job(row)

    # --- conditional updates without a state change --------------------------------------------------

    async def heartbeat(self, job_id: UUID, *, owner: str) -> bool:
        """Refresh ownership of a running job; ``False`` when it is no longer ours."""
        return await self._update(
            job_id,
            {"heartbeat_at": sa.func.now()},
            jobs.c.status == _PROCESSING.value,
            jobs.c.owner == owner,
            touch=False,
        )

    async def claim_poll(self, job: Job, *, next_poll_at: datetime) -> bool:
        """Take readiness poll number ``job.polls + 1`` of a ``delivering`` job and schedule the next one
        at ``next_poll_at``; ``False`` when another replica took it (``polls`` moved) or the job moved."""
        return await self._update(
            job.id,
            {"polls": job.polls + 1, "next_poll_at": next_poll_at},
            jobs.c.status == _DELIVERING.value,
            jobs.c.polls == job.polls,
        )

    async def schedule_poll(self, job_id: UUID, *, at: datetime) -> bool:
        """The next readiness poll of a ``delivering`` job is due ``at`` (the next link send waits for it,
        ``LINK_RETRY_DELAY_SEC``); ``False`` when the job is no longer ``delivering``."""
        return await self._update(job_id, {"next_poll_at": at}, jobs.c.status == _DELIVERING.value)

    async def claim_delay_notice(self, job_id: UUID, *, created_at: datetime) -> bool:
        """Mark the run that started at ``created_at`` as told "still working" (DESIGN.md §6): ``True`` for
        one caller only, while the job is active and no notice was sent for this run."""
        return await self._update(
            job_id,
            {"delay_notice_sent_at": sa.func.now()},
            jobs.c.delay_notice_sent_at.is_(None),
            jobs.c.status.in_(_values(ACTIVE_JOB_STATUSES)),
            jobs.c.created_at == created_at,
        )

    async def _update(
        self, job_id: UUID, values: dict[str, Any], *where: sa.ColumnElement[bool], touch: bool = True
    ) -> bool:
        """``UPDATE jobs SET values [, updated_at = now()] WHERE id = job_id AND where``; applied or not."""
        if touch:
            values = {**values, "updated_at": sa.func.now()}
        result = await self.conn.execute(sa.update(jobs).where(jobs.c.id == job_id, *where).values(**values))
        return bool(result.rowcount)

    # --- queries -------------------------------------------------------------------------------------

    async def due_for_dispatch(
        self, status: JobStatus, *, grace: timedelta, republish_after: timedelta, limit: int
    ) -> list[Job]:
        """Outbox reconciler query: jobs in ``status`` whose stream hint was never sent or may be lost.

        A job qualifies when it is due (``not_before`` passed) and either was never dispatched and is older
        than ``grace``, or was dispatched longer than ``republish_after`` ago and still sits in ``status``.
        """
        now = sa.func.now()
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(
                jobs.c.status == JobStatus(status).value,
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

    async def mark_dispatched(self, job_ids: Sequence[UUID], status: JobStatus) -> None:
        """Record that the stream hint for these jobs (still in ``status``) was published."""
        if job_ids:
            await self.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id.in_(tuple(job_ids)), jobs.c.status == JobStatus(status).value)
                .values(dispatched_at=sa.func.now())
            )

    async def stale_processing(self, *, heartbeat_before: datetime, limit: int = 100) -> list[Job]:
        """Jobs in ``processing`` whose owner stopped heart-beating before ``heartbeat_before``."""
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(jobs.c.status == _PROCESSING.value, jobs.c.heartbeat_at < heartbeat_before)
            .order_by(jobs.c.heartbeat_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def in_status(self, status: JobStatus, *, limit: int = 100) -> list[Job]:
        rows = await self.conn.execute(
            sa.select(*_job_columns())
            .where(jobs.c.status == JobStatus(status).value)
            .order_by(jobs.c.created_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def active_created_before(
        self, before: datetime, *, without_delay_notice: bool = False, limit: int = 200
    ) -> list[Job]:
        """Jobs not yet final that were created before ``before`` (deadline sweeps, DESIGN.md §6).

        ``without_delay_notice``: only those whose "still working" notice was not sent yet.
        """
        conditions = [jobs.c.status.in_(_values(ACTIVE_JOB_STATUSES)), jobs.c.created_at <= before]
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
            .where(
                jobs.c.status == _FAILED.value, jobs.c.error_class == error_class, jobs.c.updated_at >= since
            )
            .order_by(jobs.c.updated_at)
            .limit(limit)
        )
        return [_job(r) for r in rows]

    async def recent(self, *, limit: int = 100, status: JobStatus | None = None) -> list[Job]:
        """The newest jobs first, optionally only those in ``status``."""
        query = sa.select(*_job_columns()).order_by(jobs.c.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(jobs.c.status == JobStatus(status).value)
        return [_job(r) for r in await self.conn.execute(query)]

    async def count_by_status(self) -> dict[JobStatus, int]:
        """How many jobs are in each status (statuses with none are missing)."""
        rows = await self.conn.execute(sa.select(jobs.c.status, sa.func.count()).group_by(jobs.c.status))
        return {JobStatus(r[0]): int(r[1]) for r in rows}

    async def counts_created_between(self, start: datetime, end: datetime) -> JobCounts:
        """Jobs whose current run was created in ``[start, end)``: by status, and the failed ones by error
        class (the daily digest, DESIGN.md §9)."""
        in_range = (jobs.c.created_at >= start, jobs.c.created_at < end)
        by_status = await self.conn.execute(
            sa.select(jobs.c.status, sa.func.count()).where(*in_range).group_by(jobs.c.status)
        )
        by_class = await self.conn.execute(
            sa.select(jobs.c.error_class, sa.func.count())
            .where(*in_range, jobs.c.status == _FAILED.value)
            .group_by(jobs.c.error_class)
        )
        return JobCounts(
            by_status={JobStatus(r[0]): int(r[1]) for r in by_status},
            failed_by_class={r[0]: int(r[1]) for r in by_class},
        )

    async def events(self, job_id: UUID) -> list[tuple[str | None, str, str | None, datetime]]:
        """The job's transitions, oldest first: ``(from_status, to_status, note, at)``."""
        rows = await self.conn.execute(
            sa.select(job_events.c.from_status, job_events.c.to_status, job_events.c.note, job_events.c.at)
            .where(job_events.c.job_id == job_id)
            .order_by(job_events.c.id)
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def _event(
        self, job_id: UUID, from_status: JobStatus | None, to_status: JobStatus, note: str | None
    ) -> None:
        await self.conn.execute(
            sa.insert(job_events).values(
                job_id=job_id,
                from_status=None if from_status is None else from_status.value,
                to_status=to_status.value,
                note=note,
            )
        )
