"""Composition root of the leads service: ``python -m leads``. With ``LEADS_ENABLED=0`` it only idles.

Three stream consumers and one loop: ``stk:leads`` (a hint that wakes the publisher), ``tg:results:leads``
(outcomes of card and notice commands), ``tg:updates:leads`` (button presses routed by the gateway) and
the publisher loop (:mod:`leads.publishing`), which catches every error per iteration and never returns,
so no fault in leads can end the process on its own (spec/000 "Isolation between the guest flow and
leads").
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from leads.backoff import Backoff
from leads.buttons import ButtonHandler
from leads.outcomes import OutcomeHandler, PublishPolicy
from leads.publishing import SERVICE, LeadPublisher
from leads.settings import LeadsSettings
from shared import streams
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.lifecycle import consumer_name, drain, run_until_stopped, stop_on_signals
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.repositories import Database
from shared.streams import Publisher, StreamConsumer, build_consumer, create_redis

log = structlog.get_logger(__name__)


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

    async def wake_on_hint(self, _message: Any) -> None:
        """``stk:leads`` handler: a lead or repeat was stored; the rows say what to do."""
        self.wake.set()


def build_service(
    policy: PublishPolicy, *, db: Database, publisher: Publisher, now: Callable[[], datetime] = utc_now
) -> LeadsService:
    """Wire the publisher, the outcome handler and the button handler on one clock."""
    wake = asyncio.Event()
    outcomes = OutcomeHandler(db=db, publisher=publisher, policy=policy, now=now, on_change=wake.set)
    return LeadsService(
        publisher=LeadPublisher(db=db, publisher=publisher, policy=policy, outcomes=outcomes, now=now),
        outcomes=outcomes,
        buttons=ButtonHandler(db=db, publisher=publisher, now=now, per_minute=policy.per_minute),
        wake=wake,
    )


async def run_publisher(service: LeadsService, interval_s: float, stop: asyncio.Event) -> None:
    """Tick until ``stop``: at once after progress or a wake-up, else every ``interval_s`` seconds."""
    while not stop.is_set():
        service.wake.clear()
        try:
            progressed = await service.publisher.tick()
        except Exception as exc:
            log.warning("LEADS_PUBLISH_FAILED", error=type(exc).__name__, detail=str(exc)[:200])
            progressed = False
        if progressed:
            continue
        try:
            await service.buttons.resend_flooded_edits()
        except Exception as exc:
            log.warning("LEADS_RESEND_FAILED", error=type(exc).__name__)
        waits = [asyncio.create_task(stop.wait()), asyncio.create_task(service.wake.wait())]
        await asyncio.wait(waits, timeout=interval_s, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()


def build_consumers(
    service: LeadsService, settings: LeadsSettings, *, redis: Any, db: Database, publisher: Publisher
) -> list[StreamConsumer]:
    consumer = consumer_name(settings.consumer_name, SERVICE)
    routes = [
        (streams.LEADS, service.wake_on_hint),
        (streams.results_stream(SERVICE), service.outcomes.handle),
        (streams.TG_UPDATES_LEADS, service.buttons.handle),
    ]
    return [
        build_consumer(
            redis,
            settings,
            stream=stream,
            group=SERVICE,
            consumer=consumer,
            handler=handler,
            slots=settings.leads_slots,
            on_dead=dead_letter_alerter(db, publisher),
        )
        for stream, handler in routes
    ]


async def run(settings: LeadsSettings) -> int:
    stop = stop_on_signals()
    db = Database(create_engine(settings.database_url))
    if not settings.leads_enabled:
        log.info("STARTUP", service=SERVICE, leads_enabled=False)
        ops = await start_ops_server(settings.ops_port, ready=db.ping, alive=lambda: True)
        await stop.wait()
        if ops is not None:
            await ops.cleanup()
        await db.dispose()
        return 0
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    publisher = Publisher(redis, maxlen=settings.stream_maxlen)
    service = build_service(policy_from(settings), db=db, publisher=publisher)
    consumers = build_consumers(service, settings, redis=redis, db=db, publisher=publisher)
    tasks = [asyncio.create_task(c.run(stop), name=c.stream) for c in consumers]
    tasks.append(
        asyncio.create_task(run_publisher(service, settings.publish_interval_sec, stop), name="publisher")
    )
    ops = await start_ops_server(
        settings.ops_port, ready=db.ping, alive=lambda: all(not t.done() for t in tasks)
    )
    log.info(
        "STARTUP",
        service=SERVICE,
        leads_enabled=True,
        chat_id=settings.leads_chat_id,
        backoff_sec=list(settings.backoff_sec),
        later_sec=settings.later_sec,
        per_minute=settings.group_per_minute,
    )
    await run_until_stopped(stop, tasks)
    await drain(consumers, timeout_s=5)
    await asyncio.gather(*tasks, return_exceptions=True)
    if ops is not None:
        await ops.cleanup()
    with contextlib.suppress(Exception):
        await redis.aclose()
    await db.dispose()
    return 0


def main() -> None:
    settings = LeadsSettings()
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
