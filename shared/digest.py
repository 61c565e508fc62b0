"""The daily digest to the admin chat: exactly once per UTC day across restarts and replicas, because
the last day sent is a ``settings`` row claimed with a conditional upsert (DESIGN.md §9; spec/000
"Deadlines persisted in the database": "the last sent day is a settings row").
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from shared import command_ids
from shared.alerts import ADMIN_TEXT_TTL
from shared.commands import SendAdminMessage
from shared.domain import JobStatus
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.repositories.event_report import event_report
from shared.streams import Publisher
from shared.subjects import AdminText

KEY = "digest_day"


async def claim_day(repos: Repositories, day: date) -> bool:
    """Record ``day`` as sent; ``True`` for exactly one caller per day."""
    return await repos.settings.claim_value(KEY, day.isoformat())


async def digest_text(repos: Repositories, day: date) -> str:
    """Yesterday's numbers (UTC): jobs by outcome and failure class, leads received."""
    start = datetime.combine(day - timedelta(days=1), time(), UTC)
    end = start + timedelta(days=1)
    counts = await repos.jobs.counts_created_between(start, end)
    lead_count = await repos.leads.count_created_between(start, end)
    by_status, failures = counts.by_status, counts.failed_by_class
    total = sum(by_status.values())
    delivered, failed = by_status.get(JobStatus.DELIVERED, 0), by_status.get(JobStatus.FAILED, 0)
    lines = [
        f"Daily digest for {start.date().isoformat()} (UTC)",
        f"Photos: {total}, delivered: {delivered}, failed: {failed}",
    ]
    if failures:
        lines.append(
            "Failures: " + ", ".join(f"{k or 'unknown'} {v}" for k, v in sorted(failures.items(), key=str))
        )
    lines.append(f"Leads: {lead_count}")
    lines.extend(await event_lines(repos, day - timedelta(days=1)))
    return "\n".join(lines)


async def event_lines(repos: Repositories, local_day: date) -> list[str]:
    """One line per event (not the default one) that had guests, calls or leads on its own local calendar
    day ``local_day`` (its time zone): photos, delivered, failed, cost USD, leads. None without events."""
    lines = []
    for event in await repos.events.all():
        if event.is_default:
            continue
        row = next((r for r in await event_report(repos.conn, event) if r.day == local_day), None)
        if row is None:
            continue
        lines.append(
            f"Event {event.name} ({local_day.isoformat()}, {event.time_zone}): photos {row.photos}, "
            f"delivered {row.packs_delivered}, failed {sum(row.failures.values())}, "
            f"${row.cost_usd:.2f}, leads {row.leads}"
        )
    return lines


async def send_digest_if_due(db: Database, publisher: Publisher, *, now: datetime, hour_utc: int) -> bool:
    """Send the digest for ``now``'s day once ``hour_utc`` has come; ``True`` when this call sent it."""
    if now.hour < hour_utc:
        return False
    day = now.date()
    command_id = command_ids.digest(day)
    async with db.transaction() as repos:
        if not await claim_day(repos, day):
            return False
        body = await digest_text(repos, day)
        subject = AdminText(id=day.isoformat(), what="digest")
        message = SendAdminMessage(text=body)
        await add_command(repos, command_id, message, subject=subject, expires_at=now + ADMIN_TEXT_TTL)
    await dispatch_commands(db, publisher, [command_id])
    return True
