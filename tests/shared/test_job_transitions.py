"""The job state machine of :mod:`shared.repositories.jobs` on real Postgres: every edge declared in
``ALLOWED`` has a method that takes it and writes exactly one ``job_events`` row; an undeclared edge is
refused before any SQL; a transition that lost its race returns ``None`` and writes no event (DESIGN.md §3).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from shared.db.tables import jobs
from shared.domain import Job, JobStatus
from shared.errors import UndeclaredTransition
from shared.repositories import Database, Repositories
from shared.repositories.jobs import ALLOWED

pytestmark = pytest.mark.integration

Q, P, R, D, DONE, F = (
    JobStatus.QUEUED,
    JobStatus.PROCESSING,
    JobStatus.RENDERED,
    JobStatus.DELIVERING,
    JobStatus.DELIVERED,
    JobStatus.FAILED,
)
OWNER = "worker-1"
NOW = datetime.now(UTC)
Move = Callable[[Repositories, Job], Awaitable[Job | None]]

#: name → (from, to, the call). Together they must cover every edge of ALLOWED.
CASES: dict[str, tuple[JobStatus, JobStatus, Move]] = {
    "claim": (Q, P, lambda r, j: r.jobs.claim(j.id, owner="worker-2")),
    "fail (deadline, queued)": (
        Q,
        F,
        lambda r, j: r.jobs.fail(j.id, from_statuses=(Q,), error_class="deadline", error="late"),
    ),
    "mark_rendered": (P, R, lambda r, j: r.jobs.mark_rendered(j.id, owner=OWNER, stickers=12)),
    "requeue_for_retry": (
        P,
        Q,
        lambda r, j: r.jobs.requeue_for_retry(
            j.id, owner=OWNER, error_class="timeout", error="slow", not_before=NOW + timedelta(seconds=10)
        ),
    ),
    "requeue_refunded": (P, Q, lambda r, j: r.jobs.requeue_refunded(j.id, owner=OWNER, error_class="credit")),
    "requeue_after_shutdown (free)": (
        P,
        Q,
        lambda r, j: r.jobs.requeue_after_shutdown(j.id, owner=OWNER, free=True),
    ),
    "requeue_after_shutdown (charged)": (
        P,
        Q,
        lambda r, j: r.jobs.requeue_after_shutdown(j.id, owner=OWNER, free=False),
    ),
    "requeue_crashed": (P, Q, lambda r, j: r.jobs.requeue_crashed(j)),
    "fail (processing)": (
        P,
        F,
        lambda r, j: r.jobs.fail(j.id, from_statuses=(P,), owner=OWNER, error_class="invalid", error="x"),
    ),
    "start_delivery": (
        R,
        D,
        lambda r, j: r.jobs.start_delivery(
            j.id, sticker_set_name="sbx_by_bot", at=NOW, first_poll_at=NOW + timedelta(seconds=2)
        ),
    ),
    "fail (rendered)": (
        R,
        F,
        lambda r, j: r.jobs.fail(j.id, from_statuses=(R,), error_class="internal", error="set refused"),
    ),
    "mark_delivered": (D, DONE, lambda r, j: r.jobs.mark_delivered(j.id, link_sent_at=NOW)),
    "fail (delivering)": (
        D,
        F,
        lambda r, j: r.jobs.fail(j.id, from_statuses=(D,), error_class="internal", error="link failed"),
    ),
    "retry_failed": (F, Q, lambda r, j: r.jobs.retry_failed(j.id, note="admin retry")),
}


async def job_in(db: Database, status: JobStatus) -> Job:
    """A job put straight into ``status`` (owned by ``OWNER`` with a fresh heartbeat, one event so far)."""
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token=f"tok-{status}-{id(object())}")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.id)
            .values(status=status.value, owner=OWNER, heartbeat_at=sa.func.now(), attempts=1)
        )
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current


async def events_of(db: Database, job: Job) -> list[tuple[str | None, str]]:
    async with db.transaction() as repos:
        return [(e[0], e[1]) for e in await repos.jobs.events(job.id)]


def test_the_cases_cover_every_declared_edge_and_nothing_else() -> None:
    declared = {(a, b) for a, targets in ALLOWED.items() for b in targets}
    assert {(a, b) for a, b, _ in CASES.values()} == declared
    assert set(ALLOWED) == set(JobStatus)


@pytest.mark.parametrize("name", list(CASES))
async def test_each_declared_edge_moves_the_job_and_writes_one_event(db: Database, name: str) -> None:
    source, target, move = CASES[name]
    job = await job_in(db, source)
    async with db.transaction() as repos:
        moved = await move(repos, job)
    assert moved is not None and moved.status is target
    assert await events_of(db, job) == [(None, "queued"), (source.value, target.value)]


@pytest.mark.parametrize("name", list(CASES))
async def test_a_transition_that_lost_its_race_returns_none_and_writes_no_event(
    db: Database, name: str
) -> None:
    source, _target, move = CASES[name]
    job = await job_in(db, source)

    async def attempt() -> Job | None:
        async with db.transaction() as repos:
            return await move(repos, job)

    results = await asyncio.gather(attempt(), attempt())
    assert sorted(r is None for r in results) == [False, True]  # one winner, one loser
    assert len(await events_of(db, job)) == 2  # "photo accepted" and the winner's
    async with db.transaction() as repos:  # and once it moved on, the same call changes nothing
        assert await move(repos, job) is None
    assert len(await events_of(db, job)) == 2


async def test_a_worker_that_no_longer_owns_the_job_cannot_move_it(db: Database) -> None:
    job = await job_in(db, P)
    async with db.transaction() as repos:
        assert await repos.jobs.mark_rendered(job.id, owner="someone-else", stickers=12) is None
        assert await repos.jobs.requeue_refunded(job.id, owner="someone-else", error_class="credit") is None
    assert await events_of(db, job) == [(None, "queued")]


async def test_a_crash_requeue_yields_to_an_owner_that_beat_meanwhile(db: Database) -> None:
    seen = await job_in(db, P)
    async with db.transaction() as repos:
        assert await repos.jobs.heartbeat(seen.id, owner=OWNER)  # alive after all: a newer heartbeat_at
        assert await repos.jobs.requeue_crashed(seen) is None
    assert await events_of(db, seen) == [(None, "queued")]


UNDECLARED = [(a, b) for a, b in itertools.product(JobStatus, JobStatus) if b not in ALLOWED[a]]


@pytest.mark.parametrize(("source", "target"), UNDECLARED, ids=[f"{a}->{b}" for a, b in UNDECLARED])
async def test_an_undeclared_edge_is_refused_and_changes_nothing(
    db: Database, source: JobStatus, target: JobStatus
) -> None:
    job = await job_in(db, source)
    async with db.transaction() as repos:
        with pytest.raises(UndeclaredTransition):
            await repos.jobs._transition(job.id, (source,), target, note="not allowed")
        assert (await repos.jobs.get(job.id)) == job
    assert await events_of(db, job) == [(None, "queued")]


async def test_failing_a_final_job_is_refused(db: Database) -> None:
    job = await job_in(db, DONE)
    async with db.transaction() as repos:
        with pytest.raises(UndeclaredTransition):
            await repos.jobs.fail(job.id, from_statuses=(D, DONE), error_class="internal", error="x")
        with pytest.raises(UndeclaredTransition):
            await repos.jobs.fail(job.id, from_statuses=(), error_class="internal", error="x")


async def test_requeues_count_attempts_as_the_rules_say(db: Database) -> None:
    """Charged retry and crash: +1 attempt; refund: none; shutdown: a free requeue or an attempt (spec/000
    "Graceful shutdown and requeue", DESIGN.md §5)."""
    expected = {
        "requeue_for_retry": (2, 0),
        "requeue_crashed": (2, 0),
        "requeue_refunded": (1, 0),
        "requeue_after_shutdown (free)": (1, 1),
        "requeue_after_shutdown (charged)": (2, 0),
    }
    for name, (attempts, free_requeues) in expected.items():
        job = await job_in(db, P)
        async with db.transaction() as repos:
            moved = await CASES[name][2](repos, job)
        assert moved is not None and (moved.attempts, moved.free_requeues) == (attempts, free_requeues), name
        assert moved.owner is None, name


async def test_an_admin_retry_starts_a_fresh_run(db: Database) -> None:
    job = await job_in(db, F)
    async with db.transaction() as repos:
        retried = await repos.jobs.retry_failed(job.id, note="admin retry")
    assert retried is not None
    assert (retried.attempts, retried.error_class, retried.owner) == (0, None, None)
    assert retried.created_at > job.created_at
