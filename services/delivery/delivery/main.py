"""Composition root of the delivery service: ``python -m delivery``.

Wiring only: the ``stk:delivery`` and ``tg:results:delivery`` consumers, the periodic duties
(:func:`duties`) and the retention housekeeping's arq scheduler (:func:`shared.housekeeping.scheduler_task`),
handed to :class:`shared.runtime.ServiceRuntime`. The scheduler lives here because delivery is a non-HTTP
service that already runs the day's other once-per-period work (the digest), runs in every deployment, and
its replicas may be several: arq's unique cron jobs run each housekeeping job once among them.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from typing import Unpack

from delivery.deadlines import enforce_deadlines
from delivery.packs import SERVICE, PackDelivery
from delivery.settings import DeliverySettings
from shared import streams
from shared.digest import send_digest_if_due
from shared.housekeeping import scheduler_task
from shared.logging import configure_logging
from shared.messages import JobRendered, TelegramResult
from shared.runtime import Duty, Given, ServiceRuntime
from shared.settings import settings_or_exit
from shared.streams import route

SHUTDOWN_GRACE_SEC = 5.0


def duties(delivery: PackDelivery, settings: DeliverySettings) -> list[Duty]:
    """The delivery service's periodic duties: every ``SWEEP_INTERVAL_SEC`` the due readiness polls and
    the 5- and 15-minute guest deadlines, in that order; every
    ``RECONCILE_INTERVAL_SEC`` lost ``stk:delivery`` hints and the daily digests (each event's at its
    local ``DIGEST_HOUR``)."""

    async def sweep() -> None:
        await delivery.poll_due()
        await enforce_deadlines(
            delivery.db,
            delivery.publisher,
            notice_after_s=settings.delay_notice_sec,
            deadline_s=settings.delivery_deadline_sec,
        )

    async def reconcile() -> None:
        await delivery.republish_rendered()
        await send_digest_if_due(
            delivery.db, delivery.publisher, now=datetime.now(UTC), hour=settings.digest_hour
        )

    return [
        Duty("sweeper", settings.sweep_interval_sec, sweep, failed_event="SWEEP_FAILED"),
        Duty("reconcile", settings.reconcile_interval_sec, reconcile, failed_event="SWEEP_FAILED"),
    ]


async def run(settings: DeliverySettings, **given: Unpack[Given]) -> int:
    """Run delivery until SIGTERM/SIGINT (or ``stop``); returns the exit code (:mod:`shared.runtime`)."""
    async with ServiceRuntime(SERVICE, settings, **given) as rt:
        delivery = PackDelivery(db=rt.db, publisher=rt.publisher, settings=settings)
        return await rt.run(
            consumers=[
                rt.consumer(
                    streams.DELIVERY,
                    route(JobRendered, delivery.handle_rendered),
                    slots=settings.delivery_slots,
                ),
                rt.consumer(
                    streams.results_stream(SERVICE),
                    route(TelegramResult, delivery.handle_result),
                    slots=settings.results_slots,
                ),
            ],
            duties=duties(delivery, settings),
            tasks=[scheduler_task(rt.db, settings.redis_url, settings)],
            drain_timeout_s=SHUTDOWN_GRACE_SEC,
            startup={"consumer": rt.consumer_name},
        )


def main() -> None:
    settings = settings_or_exit(DeliverySettings, SERVICE)
    configure_logging(service=SERVICE, level=settings.log_level, fmt=settings.log_format)
    sys.exit(asyncio.run(run(settings)))
