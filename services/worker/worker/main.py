"""Composition root of the worker: ``python -m worker``.

Runs the ``stk:jobs`` consumer with ``WORKER_SLOTS`` slots and the sweeper. On SIGTERM: stop taking work,
give running jobs ``SHUTDOWN_GRACE_SEC`` to finish, then cancel them (each requeues itself) and exit.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta

import httpx
import structlog
from pydantic import ValidationError

from shared import streams
from shared.alerts import dead_letter_alerter, send_alert
from shared.db import create_engine
from shared.lifecycle import consumer_name, drain, run_until_stopped, stop_on_signals
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.outfits import load_catalog
from shared.repositories import Database
from shared.streams import Publisher, build_consumer, create_redis
from worker.cost import Alerter
from worker.generation import Generator
from worker.providers.factory import build_chain, build_providers
from worker.render import PipelineRenderer, startup_fields
from worker.settings import WorkerSettings
from worker.sweeper import run_sweeper

log = structlog.get_logger(__name__)
SERVICE = "worker"
SHUTDOWN_GRACE_SEC = 15.0


def notifier(url: str | None) -> Callable[[str], Awaitable[None]] | None:
    """POST a fixed text to ``NOTIFY_URL`` (e.g. an ntfy topic); failures are logged, never raised."""
    if not url:
        return None

    async def notify(message: str) -> None:
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                await client.post(url, content=message.encode())
        except httpx.HTTPError as exc:
            log.warning("NOTIFY_FAILED", error=type(exc).__name__)

    return notify


def alerter(db: Database, publisher: Publisher) -> Alerter:
    """Admin alerts with a per-key cooldown (:func:`shared.alerts.send_alert`)."""

    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return await send_alert(db, publisher, key=key, text=text, cooldown=cooldown)

    return alert


async def run(settings: WorkerSettings) -> int:
    owner = consumer_name(settings.consumer_name, SERVICE)
    db = Database(create_engine(settings.database_url))
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    publisher = Publisher(redis, maxlen=settings.stream_maxlen)
    catalog = load_catalog()
    providers, warnings = build_providers(settings, catalog)
    for warning in warnings:
        log.warning("STARTUP_PROVIDER", detail=warning)
    alert = alerter(db, publisher)
    renderer = PipelineRenderer(
        settings=settings,
        chain=build_chain(settings, providers, alert=alert),
        db=db,
        alert=alert,
        cut_slots=asyncio.Semaphore(settings.cut_max_parallel),
    )
    generator = Generator(
        db=db,
        publisher=publisher,
        settings=settings,
        catalog=catalog,
        render=renderer,
        owner=owner,
        notify=notifier(settings.notify_url),
    )
    consumer = build_consumer(
        redis,
        settings,
        stream=streams.JOBS,
        group=SERVICE,
        consumer=owner,
        handler=generator.handle,
        slots=settings.worker_slots,
        on_dead=dead_letter_alerter(db, publisher),
    )
    stop = stop_on_signals()
    tasks = [
        asyncio.create_task(consumer.run(stop), name="jobs"),
        asyncio.create_task(run_sweeper(db, publisher, settings, stop), name="sweeper"),
    ]
    ops = await start_ops_server(
        settings.ops_port, ready=db.ping, alive=lambda: all(not t.done() for t in tasks)
    )
    log.info(
        "STARTUP",
        service=SERVICE,
        consumer=owner,
        **startup_fields(settings),
        providers=",".join(p.name for p in providers),
        slots=settings.worker_slots,
    )
    await run_until_stopped(stop, tasks)
    log.info("SHUTDOWN", service=SERVICE, running=consumer.busy)
    await drain([consumer], timeout_s=SHUTDOWN_GRACE_SEC)
    await asyncio.gather(*tasks, return_exceptions=True)
    if ops is not None:
        await ops.cleanup()
    for provider in providers:
        await provider.aclose()
    await redis.aclose()
    await db.dispose()
    return 0


def main() -> None:
    try:
        settings = WorkerSettings()
    except ValidationError as exc:  # e.g. an empty STICKER_RENDER_MODE: a start-up error (spec/002)
        print(f"worker: invalid settings: {exc}", file=sys.stderr)
        sys.exit(2)
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
