"""``/status`` per event (issue 23, the venue's day): one line per event of today (running, or ended
earlier in its own local day), from its local midnight; none while the default event is the only one (no
change for an operator without events)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from shared.db.tables import sessions
from shared.events import Event
from shared.overview import gather_overview
from shared.repositories import Database
from shared.settings import BudgetSettings
from telegram_gateway.admin import status_text

pytestmark = pytest.mark.integration
NOW = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)
BUDGET = BudgetSettings(DAILY_BUDGET_USD="5", IMAGE_RPD_LIMIT="1000")


async def test_status_has_no_event_lines_without_events(db: Database) -> None:
    view = await gather_overview(db, None, budget=BUDGET, env_maintenance=False, now=NOW)
    assert "Event " not in status_text(view)


async def test_status_names_each_running_event_with_its_day(db: Database) -> None:
    async with db.transaction() as repos:
        await repos.events.save(
            Event(id="tokyo", name="Tokyo fair", time_zone="Asia/Tokyo", daily_budget_usd=3.0)
        )
    view = await gather_overview(db, None, budget=BUDGET, env_maintenance=False, now=NOW)
    text = status_text(view)
    assert (
        "Event Tokyo fair (Asia/Tokyo) today: 0 sessions, 0 delivered, 0 failed, $0.00 of $3.00, 0 leads."
        in text
    )
    assert "(UTC) today: 0 sessions, 0 delivered, 0 failed, $0.00 of $5.00, 0 leads." in text  # the default


async def test_today_is_each_events_local_day_so_one_that_ended_earlier_in_it_stays(db: Database) -> None:
    """At 20:00 UTC on 1 December it is 12:00 in Los Angeles (its day began 08:00 UTC) and 05:00 on
    2 December in Tokyo (its day began 15:00 UTC)."""
    events = (
        # ended 11:00 local today: its day still counts
        Event(id="la", name="LA brunch", time_zone="America/Los_Angeles", ends_at=NOW - timedelta(hours=1)),
        # ended 23:00 local yesterday (14:00 UTC: later than LA's end of day in UTC, but Tokyo's yesterday)
        Event(id="tokyo", name="Tokyo night", time_zone="Asia/Tokyo", ends_at=NOW - timedelta(hours=6)),
        # starts later
        Event(id="later", name="Later", time_zone="UTC", starts_at=NOW + timedelta(hours=2)),
        # running
        Event(id="berlin", name="Berlin", time_zone="Europe/Berlin", starts_at=NOW - timedelta(days=1)),
    )
    async with db.transaction() as repos:
        for event in events:
            await repos.events.save(event)
        for event_id, hours_ago in (("la", 3), ("la", 13)):  # 17:00 UTC is LA's today, 07:00 UTC is not
            session = await repos.sessions.create(station="s", token=f"t-{hours_ago}")
            await repos.conn.execute(
                sa.update(sessions)
                .where(sessions.c.id == session.id)
                .values(event_id=event_id, created_at=NOW - timedelta(hours=hours_ago))
            )
    view = await gather_overview(db, None, budget=BUDGET, env_maintenance=False, now=NOW)
    by_id = {e["id"]: e for e in view.to_json()["events"]}
    assert set(by_id) == {"default", "la", "berlin"}
    assert (by_id["la"]["running"], by_id["berlin"]["running"]) == (False, True)
    assert by_id["la"]["today"]["sessions"] == 1
    text = status_text(view)
    assert "Event LA brunch (America/Los_Angeles, ended 11:00) today: 1 sessions, 0 delivered" in text
    assert "Event Berlin (Europe/Berlin) today: 0 sessions" in text
    assert "Tokyo night" not in text and "Later" not in text
