"""Composition root of the delivery service: ``python -m delivery``."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

import structlog

from delivery.deadlines import enforce_deadlines, resend_flooded_texts
from delivery.packs import SERVICE, PackDelivery
from delivery.settings import DeliverySettings
from shared import streams
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.digest import send_digest_if_due
from shared.lifecycle import consumer_name, drain, run_until_stopped, sleep_or_stop, stop_on_signals
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.repositories import Database
from shared.streams import Publisher, build_consumer, create_redis

log = structlog.get_logger(__name__)


async def run_sweeper(delivery: PackDelivery, settings: DeliverySettings, stop: asyncio.Event) -> None:
    """Due readiness polls every ``SWEEP_INTERVAL_SEC``; lost ``stk:delivery`` hints every few seconds."""
    ticks = 0
    while not stop.is_set():
        try:
            await delivery.poll_due()
            await delivery.retry_flooded_sets()
            await enforce_deadlines(
                delivery.db,
                delivery.publisher,
                notice_after_s=settings.delay_notice_sec,
                deadline_s=settings.delivery_deadline_sec,
            )
            await resend_flooded_texts(
                delivery.db, delivery.publisher, deadline_s=settings.delivery_deadline_sec
            )
            if ticks % max(1, int(settings.reconcile_interval_sec / settings.sweep_interval_sec)) == 0:
                await delivery.republish_rendered()
                await send_digest_if_due(
                    delivery.db, delivery.publisher, now=datetime.now(UTC), hour_utc=settings.digest_hour_utc
                )
        except Exception as exc:
            log.warning("SWEEP_FAILED", error=type(exc).__name__)
        ticks += 1
        await sleep_or_stop(stop, settings.sweep_interval_sec)


async def run(settings: DeliverySettings) -> int:
    name = consumer_name(settings.consumer_name, SERVICE)
    db = Database(create_engine(settings.database_url))
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    publisher = Publisher(redis, maxlen=settings.stream_maxlen)
    delivery = PackDelivery(db=db, publisher=publisher, settings=settings)
    consumers = [
        build_consumer(
            redis,
            settings,
            stream=streams.DELIVERY,
            group=SERVICE,
            consumer=name,
            handler=delivery.handle_rendered,
            slots=settings.delivery_slots,
            on_dead=dead_letter_alerter(db, publisher),
        ),
        build_consumer(
            redis,
            settings,
            stream=streams.results_stream(SERVICE),
            group=SERVICE,
            consumer=name,
            handler=delivery.handle_result,
            slots=settings.results_slots,
            on_dead=dead_letter_alerter(db, publisher),
        ),
    ]
    stop = stop_on_signals()
    tasks = [asyncio.create_task(c.run(stop), name=c.stream) for c in consumers]
    tasks.append(asyncio.create_task(run_sweeper(delivery, settings, stop), name="sweeper"))
    ops = await start_ops_server(
        settings.ops_port, ready=db.ping, alive=lambda: all(not t.done() for t in tasks)
    )
    log.info("STARTUP", service=SERVICE, consumer=name)
    await run_until_stopped(stop, tasks)
    log.info("SHUTDOWN", service=SERVICE)
    await drain(consumers, timeout_s=5)
    await asyncio.gather(*tasks, return_exceptions=True)
    if ops is not None:
        await ops.cleanup()
    await redis.aclose()
    await db.dispose()
    return 0


def main() -> None:
    settings = DeliverySettings()
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
