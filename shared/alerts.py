"""Admin alerts: one Telegram chat; the same key is sent at most once per cooldown (10 minutes by default)
and repeats inside it are counted, then mentioned with the next alert (DESIGN.md §9, spec/000 "Delivery
and messages": admin alert).

Alerts go through the gateway's ``tg_commands`` outbox as ``send_admin_message``; the gateway alone knows
``ADMIN_CHAT_ID`` (like the bot token, Telegram addressing stays in one service). An alert raised while
Redis or the gateway is down is sent when they are back; one held longer than :data:`ADMIN_TEXT_TTL` (by
a Telegram flood wait) is cancelled unsent (``expires_at``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import structlog

from shared import command_ids
from shared.commands import SendAdminMessage
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.subjects import AdminText

log = structlog.get_logger(__name__)
DEFAULT_COOLDOWN = timedelta(minutes=10)
#: An admin text (an alert, the digest) still held by a flood wait this long after it was queued is
#: cancelled unsent: the same as the day within which the old resend sweep sent them again (issue 21).
ADMIN_TEXT_TTL = timedelta(days=1)


async def queue_alert(
    repos: Repositories, *, key: str, text: str, cooldown: timedelta = DEFAULT_COOLDOWN
) -> str | None:
    """Record alert ``key`` in the open transaction; returns the command id to dispatch after the commit,
    or ``None`` when the key is inside its cooldown (the repeat is counted)."""
    suppressed = await repos.alerts.claim_send(key, cooldown=cooldown)
    if suppressed is None:
        log.info("ALERT_SUPPRESSED", key=key)
        return None
    minutes = int(cooldown.total_seconds() // 60)
    body = text if not suppressed else f"{text}\n(+{suppressed} similar in the last {minutes} min)"
    command_id = command_ids.alert(key, time.time_ns())
    subject = AdminText(id=command_ids.name_hash(key), what="alert")
    expires = datetime.now(UTC) + ADMIN_TEXT_TTL
    await add_command(repos, command_id, SendAdminMessage(text=body), subject=subject, expires_at=expires)
    log.warning("ADMIN_ALERT", key=key, text=text, suppressed=suppressed)
    return command_id


async def send_alert(
    db: Database, publisher: Publisher, *, key: str, text: str, cooldown: timedelta = DEFAULT_COOLDOWN
) -> bool:
    """:func:`queue_alert` in its own transaction, then dispatch. Returns whether an alert was queued."""
    async with db.transaction() as repos:
        command_id = await queue_alert(repos, key=key, text=text, cooldown=cooldown)
    if command_id is None:
        return False
    await dispatch_commands(db, publisher, [command_id])
    return True


def dead_letter_alerter(db: Database, publisher: Publisher) -> Callable[[str, str, str], Awaitable[None]]:
    """An ``on_dead`` callback for :class:`shared.streams.StreamConsumer`: one alert per stream per
    cooldown when entries are dead-lettered (DESIGN.md §3)."""

    async def alert(stream: str, entry_id: str, reason: str) -> None:
        await send_alert(
            db,
            publisher,
            key=f"dead_letter:{stream}",
            text=f"Stream {stream}: entry {entry_id} dead-lettered ({reason})",
        )

    return alert
