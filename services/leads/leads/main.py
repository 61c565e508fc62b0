"""Composition root of the leads service: ``python -m leads``. With ``LEADS_ENABLED=0`` it only idles.

Wiring only, handed to :class:`shared.runtime.ServiceRuntime`: three stream consumers (:func:`consumers`:
``stk:leads``, a hint that wakes the publisher; ``tg:results:leads``, outcomes of card and notice commands;
``tg:updates:leads``, button presses routed by the gateway) and one duty (:func:`duties`: the publisher
of :mod:`leads.publishing`). A failing tick is logged and the duty goes
on, so no fault in leads can end the process on its own (spec/000 "Isolation between the guest flow and
leads").
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Unpack

from leads.backoff import Backoff
from leads.buttons import ButtonHandler
from leads.outcomes import OutcomeHandler, PublishPolicy
from leads.publishing import SERVICE, LeadPublisher
from leads.settings import LeadsSettings
from shared import streams
from shared.logging import configure_logging
from shared.messages import LeadButtonPressed, LeadCreated, LeadRepeated, LeadsChatMessage, TelegramResult
from shared.repositories import Database
from shared.runtime import Duty, Given, ServiceRuntime
from shared.settings import settings_or_exit
from shared.streams import Publisher, StreamConsumer, route

SHUTDOWN_GRACE_SEC = 5.0


def utc_now() -> datetime:
    return datetime.now(UTC)


def policy_from(settings: LeadsSettings) -> PublishPolicy:
    """The publishing rules of ``settings`` (spec/000 "Lead card publishing")."""
    return PublishPolicy(
        chat_id=settings.leads_chat_id,
        backoff=Backoff(steps=settings.backoff_sec, later=settings.later_sec),
        alert_after=settings.alert_after,
        alert_every=timedelta(seconds=settings.alert_every_sec),
        repeat_max_failures=settings.repeat_max_failures,
        per_minute=settings.group_per_minute,
        result_timeout=timedelta(seconds=settings.result_timeout_sec),
        probe_max=settings.probe_max,
    )


@dataclass
class LeadsService:
    """The wired parts of the service; ``wake`` is set whenever the publisher has something new to do."""

    publisher: LeadPublisher
    outcomes: OutcomeHandler
    buttons: ButtonHandler
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    async def wake_on_hint(self, _message: LeadCreated | LeadRepeated) -> None:
        """``stk:leads`` handler: a lead or repeat was stored; the rows say what to do."""
        self.wake.set()


def build_service(
    policy: PublishPolicy,
    *,
    db: Database,
    publisher: Publisher,
    now: Callable[[], datetime] = utc_now,
    admin_ids: frozenset[int] = frozenset(),
) -> LeadsService:
    """Wire the publisher, the outcome handler and the button handler on one clock; ``admin_ids`` may
    finish and reopen any lead (``ADMIN_USER_IDS``)."""
    wake = asyncio.Event()
    outcomes = OutcomeHandler(db=db, publisher=publisher, policy=policy, now=now, on_change=wake.set)
    return LeadsService(
        publisher=LeadPublisher(db=db, publisher=publisher, policy=policy, outcomes=outcomes, now=now),
        outcomes=outcomes,
        buttons=ButtonHandler(
            db=db, publisher=publisher, now=now, per_minute=policy.per_minute, admin_ids=admin_ids
        ),
        wake=wake,
    )


def duties(service: LeadsService, settings: LeadsSettings) -> list[Duty]:
    """The leads service's periodic duties, every ``LEADS_PUBLISH_INTERVAL_SEC``: the publisher (at once
    again after progress or a wake-up). Its errors are logged per tick and never end the loop (spec/000
    "Isolation between the guest flow and leads")."""
    interval = settings.publish_interval_sec
    return [
        Duty(
            "publisher",
            interval,
            service.publisher.tick,
            failed_event="LEADS_PUBLISH_FAILED",
            log_detail=True,
            wake=service.wake,
            repeat_on_progress=True,
        ),
    ]


def consumers(service: LeadsService, rt: ServiceRuntime, settings: LeadsSettings) -> list[StreamConsumer]:
    """``stk:leads`` (wakes the publisher), ``tg:results:leads`` (command outcomes), ``tg:updates:leads``
    (button presses), ``LEADS_SLOTS`` slots each."""
    slots = settings.leads_slots
    return [
        rt.consumer(
            streams.LEADS,
            route(LeadCreated, service.wake_on_hint),
            route(LeadRepeated, service.wake_on_hint),
            slots=slots,
        ),
        rt.consumer(
            streams.results_stream(SERVICE), route(TelegramResult, service.outcomes.apply), slots=slots
        ),
        rt.consumer(
            streams.TG_UPDATES_LEADS,
            route(LeadButtonPressed, service.buttons.press),
            route(LeadsChatMessage, service.buttons.note_chat_message),
            slots=slots,
        ),
    ]


async def run(settings: LeadsSettings, **given: Unpack[Given]) -> int:
    """Run leads until SIGTERM/SIGINT (or ``stop``); returns the exit code (:mod:`shared.runtime`). With
    ``LEADS_ENABLED=0`` only the ops server runs."""
    async with ServiceRuntime(SERVICE, settings, **given) as rt:
        if not settings.leads_enabled:
            return await rt.run(drain_timeout_s=0, startup={"leads_enabled": False})
        service = build_service(
            policy_from(settings), db=rt.db, publisher=rt.publisher, admin_ids=settings.admin_ids
        )
        return await rt.run(
            consumers=consumers(service, rt, settings),
            duties=duties(service, settings),
            drain_timeout_s=SHUTDOWN_GRACE_SEC,
            startup={
                "leads_enabled": True,
                "chat_id": settings.leads_chat_id,
                "backoff_sec": list(settings.backoff_sec),
                "later_sec": settings.later_sec,
                "per_minute": settings.group_per_minute,
            },
        )


def main() -> None:
    settings = settings_or_exit(LeadsSettings, SERVICE)
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
