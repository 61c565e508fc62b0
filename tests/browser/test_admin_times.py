"""The admin page's event form reads a start or end on the event's own wall clock (``wallToIso`` in
``static/admin/admin.js``) as the server's rule does: Python's zoneinfo with ``fold=0``, the offset in force
before a clock change. Every half hour of every day with a clock change in 2026, in zones with a
spring-forward gap, a skipped midnight, a 30-minute change and none, run in Debian's Chromium."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

ADMIN_JS = Path(__file__).resolve().parents[2] / "services/ingest/ingest/static/admin/admin.js"
ZONES = [
    "America/Los_Angeles",
    "Europe/Berlin",
    "America/Santiago",  # midnight is skipped when its clocks go forward
    "America/Havana",  # likewise
    "Australia/Lord_Howe",  # a 30-minute change
    "Asia/Tokyo",  # none
]


def _function(source: str, name: str) -> str:
    """The source of ``function name(...) {...}`` in ``source`` (braces counted)."""
    start = source.index(f"function {name}(")
    depth = 0
    for i in range(source.index("{", start), len(source)):
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        if depth == 0:
            return source[start : i + 1]
    raise ValueError(name)


def _change_days(zone: str) -> list[datetime]:
    """The 2026 dates (naive midnights) whose UTC offset in ``zone`` differs from the next day's; for a
    zone without changes, one ordinary day."""
    tz = ZoneInfo(zone)
    days = [datetime(2026, 1, 1) + timedelta(days=n) for n in range(366)]
    changes = [
        d
        for d in days
        if d.replace(tzinfo=tz).utcoffset() != (d + timedelta(days=1)).replace(tzinfo=tz).utcoffset()
    ]
    return changes or [datetime(2026, 7, 1)]


def test_wall_times_become_the_instants_python_reads(page: Page) -> None:
    source = ADMIN_JS.read_text()
    cases = [
        (f"{(day + timedelta(minutes=30 * k)):%Y-%m-%dT%H:%M}", zone)
        for zone in ZONES
        for day in _change_days(zone)
        for k in range(48 * 2)  # the change day and the next
    ]
    expected = [
        datetime.fromisoformat(wall)
        .replace(tzinfo=ZoneInfo(zone))
        .astimezone(UTC)
        .strftime("%Y-%m-%dT%H:%M:%S.000Z")
        for wall, zone in cases
    ]
    got = page.evaluate(
        f"""(cases) => {{
            {_function(source, "zoneOffset")}
            {_function(source, "wallToIso")}
            return cases.map(([wall, zone]) => wallToIso(wall, zone));
        }}""",
        [list(c) for c in cases],
    )
    wrong = [(c, g, e) for c, g, e in zip(cases, got, expected, strict=True) if g != e]
    assert len(cases) > 1000 and not wrong, wrong[:10]
