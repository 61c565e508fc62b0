"""``GET /admin/events/{id}/report`` and ``.csv`` on real Postgres: per local day of the event and a total,
counting only that event's sessions, jobs, provider calls and leads (two events with interleaved data)."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from ingest.main import create_app
from shared.db.tables import leads
from shared.events import Event
from shared.repositories import Database
from shared.streams import Publisher
from tests.event_helpers import guest
from tests.ingest.ingest_helpers import ingest_settings

pytestmark = pytest.mark.integration
ADMIN_TOKEN = "admin-token-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LA = Event(id="la", name="LA party", time_zone="America/Los_Angeles", daily_budget_usd=5.0)
TOKYO = Event(id="tokyo", name="Tokyo fair", time_zone="Asia/Tokyo")


def utc(day: int, hour: int) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


@pytest.fixture
async def api(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        ingest_settings(database_url, redis_url, ADMIN_TOKEN=ADMIN_TOKEN), db=db, publisher=Publisher(redis)
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://booth") as c:
        yield c


async def a_lead(db: Database, event_id: str | None, at: datetime, n: int) -> None:
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.insert(leads).values(
                request_id=f"req-{n:08d}",
                name="M",
                contact=f"m{n}@example.com",
                contact_kind="email",
                contact_key=f"m{n}@example.com",
                event_id=event_id,
                created_at=at,
            )
        )


@pytest.fixture
async def two_events(db: Database) -> None:
    async with db.transaction() as repos:
        await repos.events.save(LA)
        await repos.events.save(TOKYO)
    # 10 March 20:00 UTC: LA 13:00 on the 10th, Tokyo 05:00 on the 11th
    await guest(db, "la", utc(10, 20), "delivered", cost=1.25)
    await guest(db, "tokyo", utc(10, 20), "delivered", cost=2.0)
    # 11 March 05:00 UTC: LA 22:00 on the 10th, Tokyo 14:00 on the 11th
    await guest(db, "la", utc(11, 5), "failed", "timeout", cost=0.5)
    await guest(db, "tokyo", utc(11, 5), "failed", "content", cost=0.25)
    # 11 March 08:00 UTC: LA 01:00 on the 11th
    await guest(db, "la", utc(11, 8), "failed", "timeout")
    await a_lead(db, "la", utc(11, 8), 1)
    await a_lead(db, "tokyo", utc(10, 20), 2)
    await a_lead(db, None, utc(10, 20), 3)


async def test_the_report_counts_only_its_events_guests_per_local_day(
    api: httpx.AsyncClient, two_events: None
) -> None:
    answer = await api.get("/admin/events/la/report", headers=AUTH)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["event"]["time_zone"] == "America/Los_Angeles"
    assert [
        (
            d["day"],
            d["sessions"],
            d["photos"],
            d["packs_delivered"],
            d["failures_by_class"],
            d["cost_usd"],
            d["leads"],
        )
        for d in body["days"]
    ] == [
        ("2026-03-10", 2, 2, 1, {"timeout": 1}, 1.75, 0),
        ("2026-03-11", 1, 1, 0, {"timeout": 1}, 0.0, 1),
    ]
    assert body["total"] == {
        "day": "total",
        "sessions": 3,
        "photos": 3,
        "packs_delivered": 1,
        "failures": 2,
        "failures_by_class": {"timeout": 2},
        "cost_usd": 1.75,
        "leads": 1,
    }
    tokyo = (await api.get("/admin/events/tokyo/report", headers=AUTH)).json()
    assert [d["day"] for d in tokyo["days"]] == ["2026-03-11"]
    assert tokyo["total"]["sessions"] == 2
    assert tokyo["total"]["failures_by_class"] == {"content": 1}
    assert tokyo["total"]["cost_usd"] == 2.25
    assert tokyo["total"]["leads"] == 1


async def test_the_csv_parses_and_names_the_file(api: httpx.AsyncClient, two_events: None) -> None:
    answer = await api.get("/admin/events/la/report.csv", headers=AUTH)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.headers["content-disposition"] == 'attachment; filename="la-report.csv"'
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0] == [
        "day",
        "sessions",
        "photos",
        "packs_delivered",
        "failures",
        "cost_usd",
        "leads",
        "failures_timeout",
    ]
    assert rows[1:] == [
        ["2026-03-10", "2", "2", "1", "1", "1.75", "0", "1"],
        ["2026-03-11", "1", "1", "0", "1", "0.0", "1", "1"],
        ["total", "3", "3", "1", "2", "1.75", "1", "2"],
    ]


async def test_an_unknown_event_is_404_and_the_report_needs_the_admin_token(
    api: httpx.AsyncClient,
) -> None:
    for path in ("/admin/events/nope/report", "/admin/events/nope/report.csv"):
        answer = await api.get(path, headers=AUTH)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "unknown_event"
        assert (await api.get(path)).status_code == 401
    empty = (await api.get("/admin/events/default/report", headers=AUTH)).json()
    assert empty["days"] == [] and empty["total"]["sessions"] == 0
