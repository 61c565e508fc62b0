"""The daily digest to the admin chat: exactly once per UTC day across restarts and replicas, because
the last day sent is a ``settings`` row claimed with a conditional upsert (DESIGN.md §9; spec/000
"Deadlines persisted in the database": "the last sent day is a settings row").
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from shared import command_ids
from shared.commands import SendAdminMessage
from shared.db.tables import jobs, leads, settings
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.streams import Publisher

KEY = "digest_day"


async def claim_day(repos: Repositories, day: date) -> bool:
    """Record ``day`` as sent; ``True`` for exactly one caller per day."""
    stmt = insert(settings).values(key=KEY, value=day.isoformat())
    claimed = (
        await repos.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[settings.c.key],
                set_={"value": stmt.excluded.value, "updated_at": sa.func.now()},
                where=settings.c.value != stmt.excluded.value,
            ).returning(settings.c.key)
        )
    ).one_or_none()
    return claimed is not None


async def digest_text(repos: Repositories, day: date) -> str:
    """Yesterday's numbers (UTC): jobs by outcome and failure class, leads received."""
    start = datetime.combine(day - timedelta(days=1), time(), UTC)
    end = start + timedelta(days=1)
    in_day = (jobs.c.created_at >= start, jobs.c.created_at < end)
    by_status: dict[str, int] = dict(
        (
            await repos.conn.execute(
                sa.select(jobs.c.status, sa.func.count()).where(*in_day).group_by(jobs.c.status)
            )
        ).all()
    )
    failures: dict[str | None, int] = dict(
        (
            await repos.conn.execute(
                sa.select(jobs.c.error_class, sa.func.count())
                .where(*in_day, jobs.c.status == "failed")
                .group_by(jobs.c.error_class)
            )
        ).all()
    )
    lead_count = (
        await repos.conn.execute(
            sa.select(sa.func.count()).where(leads.c.created_at >= start, leads.c.created_at < end)
        )
    ).scalar_one()
    total = sum(by_status.values())
    lines = [
        f"Daily digest for {start.date().isoformat()} (UTC)",
        f"Photos: {total}, delivered: {by_status.get('delivered', 0)}, failed: {by_status.get('failed', 0)}",
    ]
    if failures:
        lines.append(
            "Failures: " + ", ".join(f"{k or 'unknown'} {v}" for k, v in sorted(failures.items(), key=str))
        )
    lines.append(f"Leads: {lead_count}")
    return "\n".join(lines)


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
        await add_command(repos, command_id, SendAdminMessage(text=body))
    await dispatch_commands(db, publisher, [command_id])
    return True
