"""The days the limits count in: the UTC day of ``DAILY_BUDGET_USD`` and "failed today", and the
Pacific-time day of ``IMAGE_RPD_LIMIT`` (DESIGN.md §5, spec/002 "Cost ceiling")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

__all__ = ["pacific_day_start", "utc_day_start"]


def utc_day_start(now: datetime) -> datetime:
    """00:00 UTC of the day holding ``now`` (aware): the daily budget's day and the operators' "today"."""
    return datetime.combine(now.astimezone(UTC).date(), datetime.min.time(), UTC)


def pacific_day_start(now: datetime) -> datetime:
    """The start (as UTC) of the Pacific-time day holding ``now``: Gemini's requests-per-day quota
    resets at midnight Pacific (REFERENCE.md). US daylight time runs from the second Sunday of March,
    02:00, to the first Sunday of November, 02:00 (UTC−7; UTC−8 otherwise)."""

    def sunday(year: int, month: int, nth: int) -> date:
        first = date(year, month, 1)
        return first + timedelta(days=(6 - first.weekday()) % 7 + 7 * (nth - 1))

    utc = now.astimezone(UTC)
    year = utc.year
    dst_start = datetime.combine(sunday(year, 3, 2), datetime.min.time(), UTC) + timedelta(hours=10)
    dst_end = datetime.combine(sunday(year, 11, 1), datetime.min.time(), UTC) + timedelta(hours=9)
    offset = timedelta(hours=-7) if dst_start <= utc < dst_end else timedelta(hours=-8)
    local = utc + offset
    return datetime.combine(local.date(), datetime.min.time(), UTC) - offset
