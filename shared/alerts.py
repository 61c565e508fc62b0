"""Admin alerts: one Telegram chat (``ADMIN_CHAT_ID``); the same key is sent at most once per cooldown
(10 minutes by default) and repeats inside it are counted, then mentioned with the next alert
(DESIGN.md §9, spec/000 "Delivery and messages": admin alert).

Alerts go through the gateway's ``tg_commands`` outbox like every Telegram message, so an alert raised
while Redis or the gateway is down is sent when they are back.
"""

from __future__ import annotations

import hashlib
import time
from datetime import timedelta

import structlog

from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.streams import Publisher

log = structlog.get_logger(__name__)
DEFAULT_COOLDOWN = timedelta(minutes=10)


async def queue_alert(
    repos: Repositories,
    *,
    admin_chat_id: int | None,
    key: str,
    text: str,
    cooldown: timedelta = DEFAULT_COOLDOWN,
) -> str | None:
    """Record alert ``key`` in the open transaction; returns the command id to dispatch after the commit.

    Returns ``None`` when no admin chat is configured or the key is inside its cooldown.
    """
    if admin_chat_id is None:
        log.warning("ALERT_NO_ADMIN_CHAT", key=key, text=text)
        return None
    suppressed = await repos.alerts.claim_send(key, cooldown=cooldown)
    if suppressed is None:
        log.info("ALERT_SUPPRESSED", key=key)
        return None
    body = text if not suppressed else f"{text}\n(+{suppressed} similar in the last {_minutes(cooldown)} min)"
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    command_id = f"alert:{digest}:{time.time_ns()}"
    await add_command(
        repos, command_id, method="send_message", params={"chat_id": admin_chat_id, "text": body}
    )
    log.warning("ADMIN_ALERT", key=key, text=text, suppressed=suppressed)
    return command_id


async def send_alert(
    db: Database,
    publisher: Publisher,
    *,
    admin_chat_id: int | None,
    key: str,
    text: str,
    cooldown: timedelta = DEFAULT_COOLDOWN,
) -> bool:
    """:func:`queue_alert` in its own transaction, then dispatch. Returns whether an alert was queued."""
    async with db.transaction() as repos:
        command_id = await queue_alert(
            repos, admin_chat_id=admin_chat_id, key=key, text=text, cooldown=cooldown
        )
    if command_id is None:
        return False
    await dispatch_commands(db, publisher, [command_id])
    return True


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)
