"""Composition root of the worker: ``python -m worker``.

Runs the ``stk:jobs`` consumer with ``WORKER_SLOTS`` slots and the sweeper. On SIGTERM: stop taking work,
give running jobs ``SHUTDOWN_GRACE_SEC`` to finish, then cancel them (each requeues itself) and exit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable

import httpx
import structlog

from shared import streams
from shared.alerts import dead_letter_alerter
from shared.db import create_engine
from shared.logging import configure_logging
from shared.ops import start_ops_server
from shared.outfits import load_catalog
from shared.repositories import Database
from shared.streams import Publisher, build_consumer, create_redis
from worker.generation import Generator
from worker.pipeline import render_pack
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


async def run(settings: WorkerSettings) -> int:
    owner = settings.consumer_name or f"{SERVICE}-{socket.gethostname()}-{os.getpid()}"
    db = Database(create_engine(settings.database_url))
    redis = create_redis(settings.redis_url, block_ms=settings.stream_block_ms)
    publisher = Publisher(redis, maxlen=settings.stream_maxlen)
    generator = Generator(
        db=db,
        publisher=publisher,
        settings=settings,
        catalog=load_catalog(),
        render=lambda selfie, outfit, layout: render_pack(selfie, outfit, layout=layout),
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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
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
        render_mode=settings.sticker_render_mode,
        likeness="",
        consistency_mode=0,
        sheet_layout=settings.sheet_layout,
        provider="local",
        slots=settings.worker_slots,
    )
    await asyncio.wait([asyncio.create_task(stop.wait()), *tasks], return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    log.info("SHUTDOWN", service=SERVICE, running=consumer.busy)
    still_running = await consumer.drain(timeout_s=SHUTDOWN_GRACE_SEC)
    for task in still_running:
        task.cancel()
    await asyncio.gather(*still_running, return_exceptions=True)
    await asyncio.gather(*tasks, return_exceptions=True)
    if ops is not None:
        await ops.cleanup()
    await redis.aclose()
    await db.dispose()
    return 0


def main() -> None:
    settings = WorkerSettings()
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
