"""``/status`` per event (issue 23, the venue's day): one line per running event, from its local
midnight; none while the default event is the only one (no change for an operator without events)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

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
    assert "Event Tokyo fair (Asia/Tokyo) today: 0 delivered, 0 failed, $0.00 of $3.00, 0 leads." in text
    assert "(UTC) today: 0 delivered, 0 failed, $0.00 of $5.00, 0 leads." in text  # the default event
