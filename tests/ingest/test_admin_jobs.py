"""The admin API for jobs and the queue: behind the token; retry of a failed job; pause and resume."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import streams
from shared.db.tables import jobs
from shared.domain import Job, JobStatus
from shared.housekeeping import RetentionPolicy, purge_selfies
from shared.repositories import Database
from shared.settings import RetentionSettings
from tests.ingest.conftest import ADMIN_AUTH

pytestmark = pytest.mark.integration
AUTH = ADMIN_AUTH


async def failed_job(db: Database, *, with_selfie: bool = True, error_class: str = "deadline") -> Job:
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="tok")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        if with_selfie:
            await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        await repos.jobs.claim(job.id, owner="w")
        failed = await repos.jobs.fail(
            job.id, from_statuses=(JobStatus.PROCESSING,), error_class=error_class, error="test failure"
        )
        assert failed is not None
        await repos.conn.execute(sa.update(jobs).where(jobs.c.id == job.id).values(attempts=2))
        failed = await repos.jobs.get(job.id)
    assert failed is not None
    return failed


async def test_admin_routes_need_the_token(admin_client: httpx.AsyncClient) -> None:
    assert (await admin_client.get("/admin/jobs")).status_code == 401
    assert (
        await admin_client.get("/admin/jobs", headers={"Authorization": "Bearer wrong"})
    ).status_code == 401
    assert (await admin_client.get("/admin/jobs", headers=AUTH)).status_code == 200


async def test_without_the_token_bad_parameters_are_a_401_not_a_422(admin_client: httpx.AsyncClient) -> None:
    """The token is checked before the parameters: a 422 would describe the route to a stranger."""
    for path in ("/admin/jobs?status=bogus", "/admin/jobs/not-a-uuid", "/admin/leads?limit=0"):
        response = await admin_client.get(path)
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized", path
    assert (await admin_client.post("/admin/jobs/not-a-uuid/retry")).status_code == 401
    assert (await admin_client.get("/admin/jobs?status=bogus", headers=AUTH)).status_code == 422


async def test_a_failed_job_is_retried_with_a_fresh_deadline(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    job = await failed_job(db)
    response = await admin_client.post(f"/admin/jobs/{job.id}/retry", headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["attempts"], body["error_class"]) == ("queued", 0, None)
    assert body["created_at"] > job.created_at.isoformat()
    assert await redis.xlen(streams.JOBS) == 1
    detail = (await admin_client.get(f"/admin/jobs/{job.id}", headers=AUTH)).json()
    assert [e["to"] for e in detail["events"]] == ["queued", "processing", "failed", "queued"]
    again = await admin_client.post(f"/admin/jobs/{job.id}/retry", headers=AUTH)
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_retryable"


async def test_retrying_a_job_that_does_not_exist_is_a_404(admin_client: httpx.AsyncClient) -> None:
    response = await admin_client.post("/admin/jobs/00000000-0000-0000-0000-000000000000/retry", headers=AUTH)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


async def test_a_job_whose_selfie_is_gone_cannot_be_retried(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    job = await failed_job(db, with_selfie=False)
    response = await admin_client.post(f"/admin/jobs/{job.id}/retry", headers=AUTH)
    assert response.status_code == 409


async def test_after_the_selfie_retention_window_retry_is_no_longer_offered_and_refused(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    """Issue 11 item 2: inside ``SELFIE_RETENTION_HOURS`` a failed job is retryable; the housekeeping after
    it deletes the selfie, and the admin page no longer offers Retry (a direct call is a 409)."""
    job = await failed_job(db)
    policy = RetentionPolicy.from_settings(RetentionSettings())
    await purge_selfies(db, policy, now=datetime.now(UTC) + timedelta(hours=23))
    assert (await admin_client.get(f"/admin/jobs/{job.id}", headers=AUTH)).json()["retryable"] is True
    await purge_selfies(db, policy, now=datetime.now(UTC) + timedelta(hours=24, minutes=1))
    shown = (await admin_client.get(f"/admin/jobs/{job.id}", headers=AUTH)).json()
    assert shown["retryable"] is False and shown["selfie_deleted"] is True
    response = await admin_client.post(f"/admin/jobs/{job.id}/retry", headers=AUTH)
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_retryable"


async def test_a_job_whose_selfie_the_providers_refused_is_not_retryable_but_shows_its_class(
    admin_client: httpx.AsyncClient, db: Database, redis: aioredis.Redis
) -> None:
    refused = await failed_job(db, error_class="content")
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="tok2")
        other = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=other.id)
        await repos.jobs.claim(other.id, owner="w")
        await repos.jobs.fail(
            other.id, from_statuses=(JobStatus.PROCESSING,), error_class="invalid", error="no valid sheet"
        )
    listed = {j["id"]: j for j in (await admin_client.get("/admin/jobs", headers=AUTH)).json()["jobs"]}
    assert (listed[str(refused.id)]["error_class"], listed[str(refused.id)]["retryable"]) == (
        "content",
        False,
    )
    assert (listed[str(other.id)]["error_class"], listed[str(other.id)]["retryable"]) == ("invalid", True)
    detail = (await admin_client.get(f"/admin/jobs/{refused.id}", headers=AUTH)).json()
    assert (detail["error_class"], detail["retryable"]) == ("content", False)
    response = await admin_client.post(f"/admin/jobs/{refused.id}/retry", headers=AUTH)
    assert response.status_code == 409 and response.json()["error"]["code"] == "content_refused"
    assert await redis.xlen(streams.JOBS) == 0
    async with db.transaction() as repos:
        still = await repos.jobs.get(refused.id)
    assert still is not None and still.status == "failed"


async def test_pause_and_resume_from_the_admin_api(admin_client: httpx.AsyncClient) -> None:
    paused = (await admin_client.post("/admin/pause", headers=AUTH)).json()
    assert paused["pause"]["source"] == "admin"
    assert (await admin_client.post("/sessions", json={})).status_code == 503
    resumed = (await admin_client.post("/admin/resume", headers=AUTH)).json()
    assert resumed["pause"] is None
    assert (await admin_client.post("/sessions", json={})).status_code == 201
