"""Composition root of the worker: ``python -m worker``.

Wiring only: the ``stk:jobs`` consumer with ``WORKER_SLOTS`` slots and the sweeper duty, handed to
:class:`shared.runtime.ServiceRuntime`. On SIGTERM: stop taking work, give running jobs
``SHUTDOWN_GRACE_SEC`` to finish, then cancel them (each requeues itself) and exit.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Unpack

import httpx
import structlog

from shared import streams
from shared.alerts import send_alert
from shared.logging import configure_logging
from shared.messages import JobQueued
from shared.outfits import load_catalog
from shared.repositories import Database
from shared.runtime import Duty, Given, ServiceRuntime
from shared.settings import settings_or_exit
from shared.streams import Publisher, route
from worker.cost import Alerter
from worker.generation import Generator
from worker.lifecycle import warn_model_shutdowns
from worker.likeness import LikenessScorer
from worker.providers.factory import build_chain, build_providers
from worker.render import PipelineRenderer, startup_fields
from worker.settings import WorkerSettings
from worker.sweeper import sweep_once

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


#: How often the configured models' shutdown dates are looked at (the alert itself is once a day at most).
LIFECYCLE_INTERVAL_SEC = 3600.0


def duties(db: Database, publisher: Publisher, settings: WorkerSettings) -> list[Duty]:
    """The worker's periodic duties: crash recovery, auto-pause end and the ``stk:jobs`` outbox
    reconciler, every ``RECONCILE_INTERVAL_SEC`` (:func:`worker.sweeper.sweep_once`); the configured
    models' shutdown alert, hourly (:func:`worker.lifecycle.warn_model_shutdowns`)."""
    sweep = partial(sweep_once, db, publisher, settings)
    alert = alerter(db, publisher)

    async def lifecycle() -> None:
        await warn_model_shutdowns(settings.configured_models(), alert, today=datetime.now(UTC).date())

    return [
        Duty("sweeper", settings.reconcile_interval_sec, sweep, failed_event="SWEEP_FAILED"),
        Duty("model_lifecycle", LIFECYCLE_INTERVAL_SEC, lifecycle, failed_event="MODEL_LIFECYCLE_FAILED"),
    ]


async def run(settings: WorkerSettings, **given: Unpack[Given]) -> int:
    """Run the worker until SIGTERM/SIGINT (or ``stop``); returns the exit code (:mod:`shared.runtime`)."""
    async with ServiceRuntime(SERVICE, settings, **given) as rt:
        catalog = load_catalog()
        providers, warnings = build_providers(settings, catalog)
        for warning in warnings:
            log.warning("STARTUP_PROVIDER", detail=warning)
        for provider in providers:
            rt.closing(provider.aclose)
        alert = alerter(rt.db, rt.publisher)
        # one scoring process for the replica's slots, started on the first sticker, stopped at exit
        scorer = LikenessScorer()
        rt.closing(scorer.close)
        renderer = PipelineRenderer(
            settings=settings,
            chain=build_chain(settings, providers, alert=alert, redis=rt.redis),
            db=rt.db,
            alert=alert,
            cut_slots=asyncio.Semaphore(settings.cut_max_parallel),
            store_patience_s=settings.store_wait_max_sec,
            likeness=scorer,
        )
        generator = Generator(
            db=rt.db,
            publisher=rt.publisher,
            settings=settings,
            catalog=catalog,
            render=renderer,
            owner=rt.consumer_name,
            notify=notifier(settings.notify_url),
        )
        # No time limit on a job's handler: a job legitimately runs minutes (AI_TIMEOUT_SEC per provider
        # call, retries, STORE_WAIT_MAX_SEC waits for Postgres) and the worker has no per-job time limit
        # setting; every call bounds itself, delivery's deadline fails an overdue job from outside, and a
        # cancellation would requeue the job as at shutdown. Its entry keeps its lease while it runs.
        jobs = rt.consumer(
            streams.JOBS,
            route(JobQueued, generator.handle),
            slots=settings.worker_slots,
            handler_timeout_s=None,
        )
        return await rt.run(
            consumers=[jobs],
            duties=duties(rt.db, rt.publisher, settings),
            drain_timeout_s=SHUTDOWN_GRACE_SEC,
            startup={
                "consumer": rt.consumer_name,
                **startup_fields(settings),
                "providers": ",".join(p.name for p in providers),
                "slots": settings.worker_slots,
            },
            shutdown=lambda: {"running": jobs.busy},
        )


def main() -> None:
    # e.g. an empty STICKER_RENDER_MODE is a start-up error (spec/002)
    settings = settings_or_exit(WorkerSettings, SERVICE)
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
