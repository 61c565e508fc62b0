"""Composition root of the leads service: ``python -m leads``. With ``LEADS_ENABLED=0`` it only idles."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys

import structlog

from leads.cards import SERVICE, CardPublisher
from leads.settings import LeadsSettings
from shared import streams
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.repositories import Database
from shared.streams import Publisher, build_consumer, create_redis

log = structlog.get_logger(__name__)


async def run_reconciler(cards: CardPublisher, settings: LeadsSettings, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            await cards.republish_due(
                grace_s=settings.reconcile_grace_sec, republish_after_s=settings.republish_after_sec
            )
        except Exception as exc:
            log.warning("RECONCILE_FAILED", error=type(exc).__name__)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=settings.reconcile_interval_sec)


async def run(settings: LeadsSettings) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    db = Database(create_engine(settings.database_url))
    if not settings.leads_enabled:
        log.info("STARTUP", service=SERVICE, leads_enabled=False)
        ops = await start_ops_server(settings.ops_port, ready=db.ping, alive=lambda: True)
        await stop.wait()
        if ops is not None:
            await ops.cleanup()
        await db.dispose()
        return 0
    consumer_name = settings.consumer_name or f"{SERVICE}-{socket.gethostname()}-{os.getpid()}"
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    cards = CardPublisher(
        db=db, publisher=Publisher(redis, maxlen=settings.stream_maxlen), chat_id=settings.leads_chat_id
    )
    consumers = [
        build_consumer(
            redis,
            settings,
            stream=streams.LEADS,
            group=SERVICE,
            consumer=consumer_name,
            handler=cards.handle_created,
            slots=settings.leads_slots,
            on_dead=dead_letter_alerter(db, cards.publisher),
        ),
        build_consumer(
            redis,
            settings,
            stream=streams.results_stream(SERVICE),
            group=SERVICE,
            consumer=consumer_name,
            handler=cards.handle_result,
            slots=settings.leads_slots,
            on_dead=dead_letter_alerter(db, cards.publisher),
        ),
    ]
    tasks = [asyncio.create_task(c.run(stop), name=c.stream) for c in consumers]
    tasks.append(asyncio.create_task(run_reconciler(cards, settings, stop), name="reconciler"))
    ops = await start_ops_server(
        settings.ops_port, ready=db.ping, alive=lambda: all(not t.done() for t in tasks)
    )
    log.info("STARTUP", service=SERVICE, leads_enabled=True, consumer=consumer_name)
    await asyncio.wait([asyncio.create_task(stop.wait()), *tasks], return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    for consumer in consumers:
        for task in await consumer.drain(timeout_s=5):
            task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if ops is not None:
        await ops.cleanup()
    await redis.aclose()
    await db.dispose()
    return 0


def main() -> None:
    settings = LeadsSettings()
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
