"""``GET /admin/preflight``: the admin page's Preflight tile reads the last stored report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from shared.preflight import REPORT_KEY, CheckResult, Report
from shared.repositories import Database
from tests.ingest.conftest import ADMIN_AUTH

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_no_report_yet(admin_client: httpx.AsyncClient, db: Database) -> None:
    response = await admin_client.get("/admin/preflight", headers=ADMIN_AUTH)
    assert response.json() == {"report": None, "age_s": None}


async def test_the_last_report_with_its_age(admin_client: httpx.AsyncClient, db: Database) -> None:
    report = Report(
        at=datetime.now(UTC) - timedelta(minutes=10),
        source="k8s",
        results=(CheckResult("redis", "fail", "cannot reach", "start Redis"),),
    )
    async with db.transaction() as repos:
        await repos.settings.put(REPORT_KEY, report.to_json())
    body = (await admin_client.get("/admin/preflight", headers=ADMIN_AUTH)).json()
    assert body["report"] == report.to_json() and body["report"]["ok"] is False
    assert 590 < body["age_s"] < 700


async def test_it_needs_the_token(admin_client: httpx.AsyncClient) -> None:
    assert (await admin_client.get("/admin/preflight")).status_code == 401
