"""Which failed jobs an admin Retry may queue again (shared.joblife): never a ``content`` refusal or a
``permanent`` failure (no face, no photo, unknown outfit), whose same selfie would fail the same way;
the others while the selfie exists."""

from __future__ import annotations

import pytest

from shared.domain import JobStatus
from shared.joblife import retry_can_help, retry_failed_job
from shared.repositories import Database

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("error_class", "retried"),
    [("content", False), ("permanent", False), ("deadline", True), ("invalid", True), ("job_cost", True)],
)
async def test_retry_queues_only_failures_a_retry_can_fix(
    db: Database, error_class: str, retried: bool
) -> None:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="t")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        await repos.jobs.claim(job.id, owner="w")
        failed = await repos.jobs.fail(
            job.id, from_statuses=(JobStatus.PROCESSING,), error_class=error_class, error="x"
        )
        assert failed is not None and retry_can_help(failed) is retried
        queued = await retry_failed_job(repos, job.id, note="admin retry")
        after = await repos.jobs.get(job.id)
    assert (queued is not None) is retried
    assert after is not None and after.status == (JobStatus.QUEUED if retried else JobStatus.FAILED)
