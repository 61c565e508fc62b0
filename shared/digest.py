"""The daily digest to the admin chat (issue 23, the venue's day): one message per event and local day,
sent once the event's local yesterday is over and its local clock has reached the digest hour
(``DIGEST_HOUR``, delivery's setting; ``DIGEST_HOUR_UTC`` is its old name), so an event in Los Angeles
gets its digest at 09:00 in Los Angeles about its whole local yesterday, and one in Tokyo at 09:00 in Tokyo.

- **The default event's digest** counts every guest of the deployment (photos by outcome, failures by
  class, leads), as the one digest did before events, over the default event's local yesterday (UTC unless
  an operator changed its zone, so a deployment without events gets the same message at the same hour).
- **Each other event's digest** counts only that event's own guests, calls and leads
  (:func:`shared.repositories.event_report.event_report`, one local day of it), and is sent for each local
  yesterday its run met (:meth:`shared.events.Event.ran_during`): an event that ended stops sending.

At most once per event per local day across restarts and replicas: the local day last sent is a
``settings`` row per event (``digest_day`` for the default event, ``digest_day:<event id>`` for the others)
claimed with a conditional upsert (DESIGN.md §9; spec/000 "Deadlines persisted in the database": "the last
sent day is a settings row") in the transaction that queues the message, whose command id
(:func:`shared.command_ids.digest`) is the gateway's idempotency key as well. A digest held by a flood wait
for :data:`shared.alerts.ADMIN_TEXT_TTL` is cancelled unsent. A replica or restart that reaches an event's
hour later the same local day sends what was not sent yet; a local day on which delivery never ran past
the hour gets no digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from shared import command_ids
from shared.alerts import ADMIN_TEXT_TTL
from shared.commands import SendAdminMessage
from shared.domain import JobStatus
from shared.events import DEFAULT_EVENT, Event, day_start, zone
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.repositories.event_report import event_report
from shared.streams import Publisher
from shared.subjects import AdminText

__all__ = ["KEY", "DigestDay", "digest_text", "due_digest", "event_digest_text", "send_digest_if_due"]

#: The ``settings`` key of the default event's last digest day (the key of the digest before events).
KEY = "digest_day"


@dataclass(frozen=True, slots=True)
class DigestDay:
    """One event's digest that is due: sent on local day ``today`` about ``[start, end)`` (UTC), its
    local ``yesterday``."""

    event: Event
    today: date
    start: datetime
    end: datetime

    @property
    def yesterday(self) -> date:
        return self.today - timedelta(days=1)

    @property
    def settings_key(self) -> str:
        return KEY if self.event.is_default else f"{KEY}:{self.event.id}"

    @property
    def command_id(self) -> str:
        return command_ids.digest(self.today, None if self.event.is_default else self.event.id)

    @property
    def subject(self) -> AdminText:
        """The command's subject: ``id`` the local day sent (the default event) or ``<event id>:<day>``."""
        day = self.today.isoformat()
        return AdminText(id=day if self.event.is_default else f"{self.event.id}:{day}", what="digest")


def due_digest(event: Event, now: datetime, hour: int) -> DigestDay | None:
    """The digest of ``event`` due at ``now`` (aware): ``None`` before ``hour`` (0–23) on its local clock,
    and for an event other than the default one whose run did not meet its local yesterday."""
    local = now.astimezone(zone(event.time_zone))
    if local.hour < hour:
        return None
    end = day_start(now, event.time_zone)
    start = day_start(end - timedelta(hours=12), event.time_zone)
    if not (event.is_default or event.ran_during(start, end)):
        return None
    return DigestDay(event, local.date(), start, end)


def _failures(failures: Mapping[str | None, int]) -> list[str]:
    if not failures:
        return []
    return ["Failures: " + ", ".join(f"{k or 'unknown'} {v}" for k, v in sorted(failures.items(), key=str))]


async def digest_text(repos: Repositories, day: DigestDay) -> str:
    """The default event's digest: every guest's photos of ``day``'s local yesterday by outcome and
    failure class, and the leads received then."""
    counts = await repos.jobs.counts_created_between(day.start, day.end)
    lead_count = await repos.leads.count_created_between(day.start, day.end)
    by_status = counts.by_status
    total = sum(by_status.values())
    delivered, failed = by_status.get(JobStatus.DELIVERED, 0), by_status.get(JobStatus.FAILED, 0)
    return "\n".join(
        [
            f"Daily digest for {day.yesterday.isoformat()} ({day.event.time_zone})",
            f"Photos: {total}, delivered: {delivered}, failed: {failed}",
            *_failures(counts.failed_by_class),
            f"Leads: {lead_count}",
        ]
    )


async def event_digest_text(repos: Repositories, day: DigestDay) -> str:
    """An event's digest (not the default one): its own sessions, photos, packs, failures by class, cost
    (USD, against its daily budget when it has one) and leads on its local yesterday."""
    event = day.event
    *_, total = await event_report(repos.conn, event, start=day.start, end=day.end)
    cost = f"Cost: ${total.cost_usd:.2f}"
    if event.daily_budget_usd is not None:
        cost += f" of ${event.daily_budget_usd:.2f} daily budget"
    return "\n".join(
        [
            f"Daily digest of {event.name} for {day.yesterday.isoformat()} ({event.time_zone})",
            f"Sessions: {total.sessions}, photos: {total.photos}, delivered: {total.packs_delivered}, "
            f"failed: {sum(total.failures.values())}",
            *_failures(total.failures),
            cost,
            f"Leads: {total.leads}",
        ]
    )


async def send_digest_if_due(db: Database, publisher: Publisher, *, now: datetime, hour: int) -> list[str]:
    """Queue and dispatch every event's digest due at ``now`` (aware) and not sent yet (module docstring);
    returns the ids of the events whose digest this call sent (usually none). Without a default event row
    (migration 0014 makes it, the admin API refuses to delete it) the deployment's digest is still sent,
    on UTC days.

    Args:
        hour: the local hour (0–23) from which an event's digest of its yesterday is sent.

    Raises:
        DatabaseUnavailable: Postgres could not be reached (the next call tries again).
    """
    async with db.transaction() as repos:
        events = await repos.events.all()
    if not any(e.is_default for e in events):
        events.insert(0, Event(id=DEFAULT_EVENT, name="default"))
    sent: list[str] = []
    queued: list[str] = []
    for event in events:
        day = due_digest(event, now, hour)
        if day is None:
            continue
        async with db.transaction() as repos:
            if not await repos.settings.claim_value(day.settings_key, day.today.isoformat()):
                continue
            body = await (digest_text(repos, day) if event.is_default else event_digest_text(repos, day))
            if not await add_command(
                repos,
                day.command_id,
                SendAdminMessage(text=body),
                subject=day.subject,
                expires_at=now + ADMIN_TEXT_TTL,
            ):
                continue
        sent.append(event.id)
        queued.append(day.command_id)
    if queued:
        await dispatch_commands(db, publisher, queued)
    return sent
