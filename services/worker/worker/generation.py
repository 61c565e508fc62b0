"""The ``stk:jobs`` handler: claim a job, render its 12 stickers, store them, hand off to delivery.

Idempotent: a redelivered hint finds the job already claimed or finished and does nothing. Rendering is the
injected async renderer (:class:`worker.render.PipelineRenderer`: provider calls, CPU work in threads); the
job's heartbeat is refreshed meanwhile so crash recovery can tell a slow job from a dead one, and its
ownership lease is held in Redis so it can also tell a Postgres outage from a dead owner; the job's writes
wait for the store to come back (:mod:`worker.store_outage`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any
from uuid import UUID

import structlog

from shared import metrics, streams
from shared.domain import Blob, Job, JobStatus
from shared.errors import DatabaseUnavailable, ErrorClass, JobError, PermanentJobError, ProviderUnavailable
from shared.events import EventOutfit
from shared.maintenance import current_pause
from shared.messages import JobQueued, JobRendered
from shared.outfits import Outfit
from shared.repositories import Database
from shared.streams import Publisher
from worker import outcomes
from worker.render import Pack
from worker.settings import WorkerSettings
from worker.store_outage import keep_lease, patiently

log = structlog.get_logger(__name__)

#: ``render(job, selfie_bytes, outfit) -> Pack``; raises the errors of :func:`worker.render.render_job`.
#: Renders a job from its stored selfie blob (bytes and ``meta``, whose ``face`` ingest wrote) and outfit.
RenderFn = Callable[[Job, Blob, Outfit], Awaitable[Pack]]


class Generator:
    """Processes jobs for one worker replica (``owner`` = its consumer name)."""

    def __init__(
        self,
        *,
        db: Database,
        publisher: Publisher,
        settings: WorkerSettings,
        catalog: dict[str, Outfit],
        render: RenderFn,
        owner: str,
        notify: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.db = db
        self.publisher = publisher
        self.settings = settings
        self.catalog = catalog
        self.render = render
        self.owner = owner
        self.notify = notify

    async def handle(self, message: JobQueued) -> None:
        """Stream handler for ``stk:jobs``."""
        await self.process(message.job_id)

    async def process(self, job_id: UUID) -> None:
        """Claim and render ``job_id``; every outcome is written to Postgres before this returns.

        Raises:
            DatabaseUnavailable: Postgres is down (the hint stays pending and is retried).
            asyncio.CancelledError: shutdown; the job was requeued first.
        """
        async with self.db.transaction() as repos:
            if await current_pause(repos, env_on=self.settings.maintenance_mode) is not None:
                return  # paused: claim nothing; the hint is published again when the pause ends
            job = await repos.jobs.claim(job_id, owner=self.owner)
        if job is None:
            return
        # Both beat until the job's outcome is stored (also while a write waits for the store).
        beats = [
            asyncio.create_task(self._heartbeat(job.id)),
            asyncio.create_task(
                keep_lease(
                    self.publisher.redis,
                    job.id,
                    self.owner,
                    every_s=self.settings.heartbeat_sec,
                    ttl_s=self.settings.heartbeat_timeout_sec,
                )
            ),
        ]
        try:
            await self._attempt(job)
        finally:
            for beat in beats:
                beat.cancel()

    async def _patiently(self, write: Callable[[], Awaitable[object]], what: str) -> None:
        await patiently(write, patience_s=self.settings.store_wait_max_sec, what=what)

    async def _attempt(self, job: Job) -> None:
        try:
            pack = await self._render(job)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    outcomes.requeue_on_shutdown(self.db, job, owner=self.owner, free_requeues=2)
                )
            raise
        except PermanentJobError as exc:
            await self._patiently(
                partial(
                    outcomes.fail_permanently,
                    self.db,
                    self.publisher,
                    job,
                    owner=self.owner,
                    exc=exc,
                    max_captures=self.settings.max_captures_per_session,
                ),
                "job outcome",
            )
            return
        except ProviderUnavailable as exc:
            await self._patiently(
                partial(
                    outcomes.pause_and_refund,
                    self.db,
                    self.publisher,
                    job,
                    owner=self.owner,
                    exc=exc,
                    notify=self.notify,
                ),
                "job outcome",
            )
            return
        except DatabaseUnavailable as exc:
            # Postgres stayed away longer than STORE_WAIT_MAX_SEC: the store failed, not the job nor the
            # worker; the job goes back to the queue without an attempt consumed once it answers.
            log.warning("JOB_STORE_OUTAGE", job_id=str(job.id), error=str(exc))
            await self._patiently(
                partial(outcomes.requeue_after_store_outage, self.db, job, owner=self.owner), "job outcome"
            )
            return
        except Exception as exc:
            error_class = exc.error_class if isinstance(exc, JobError) else ErrorClass.INTERNAL
            log.exception("JOB_ATTEMPT_FAILED", job_id=str(job.id), error_class=str(error_class))
            await self._patiently(
                partial(
                    outcomes.retry_or_fail,
                    self.db,
                    self.publisher,
                    job,
                    owner=self.owner,
                    error_class=error_class,
                    error=f"{type(exc).__name__}: {exc}",
                    max_attempts=self.settings.max_attempts,
                    retry_delay_s=self.settings.retry_delay_sec,
                ),
                "job outcome",
            )
            return
        await self._patiently(lambda: self._store(job, pack), "stickers")
        await self._patiently(lambda: outcomes.clear_outage_streak(self.db), "outage streak")

    async def _render(self, job: Job) -> Pack:
        async def read() -> list[Any]:
            async with self.db.transaction() as repos:
                return list(await repos.blobs.for_job(job.id, "selfie"))

        selfies = await patiently(read, patience_s=self.settings.store_wait_max_sec, what="selfie")
        if not selfies:
            raise PermanentJobError("the selfie is missing")
        outfit = self.catalog.get(job.outfit_id) or await self._uploaded_outfit(job.outfit_id)
        if outfit is None:
            raise PermanentJobError(f"unknown outfit {job.outfit_id!r}")
        started = time.perf_counter()
        pack = await self.render(job, selfies[0], outfit)
        metrics.STAGE_SECONDS.labels(stage="render_pack").observe(time.perf_counter() - started)
        return pack

    async def _uploaded_outfit(self, outfit_id: str) -> Outfit | None:
        """An outfit an operator uploaded for an event (``event_outfits``) as an :class:`Outfit`: its
        title and prompt on its ``based_on`` catalogue outfit, whose id it keeps (the body template, the
        offline drawing and the ``local`` provider look outfits up by catalogue id; the job keeps the
        uploaded id); ``None`` when there is no such outfit or its base left the catalogue."""

        async def read() -> EventOutfit | None:
            async with self.db.transaction() as repos:
                return await repos.events.outfit(outfit_id)

        uploaded = await patiently(read, patience_s=self.settings.store_wait_max_sec, what="outfit")
        return uploaded.drawn_on(self.catalog) if uploaded else None

    async def _store(self, job: Job, pack: Pack) -> None:
        async with self.db.transaction() as repos:
            # The transition first: a job lost meanwhile (recovered as crashed, failed by a deadline,
            # erased on the guest's request) gets no stickers stored.
            rendered = await repos.jobs.mark_rendered(job.id, owner=self.owner, stickers=len(pack.stickers))
            if rendered is None:
                log.warning("JOB_OWNERSHIP_LOST", job_id=str(job.id))
                return
            await repos.blobs.delete_for_job(job.id, "sticker")
            for position, sticker in enumerate(pack.stickers):
                await repos.blobs.put(
                    kind="sticker",
                    data=sticker.png,
                    content_type="image/png",
                    job_id=job.id,
                    position=position,
                    meta={
                        "emoji": sticker.emoji,
                        "width": sticker.width,
                        "height": sticker.height,
                        "likeness": sticker.likeness,
                        "likeness_reason": sticker.likeness_reason,
                    },
                )
        timings = " ".join(f"{k}={v:.2f}s" for k, v in pack.timings.items())
        log.info("JOB_RENDERED", job_id=str(job.id), stickers=len(pack.stickers), timings=timings)
        metrics.JOBS.labels(outcome="rendered", error_class="").inc()
        if await self.publisher.try_publish(streams.DELIVERY, JobRendered(job_id=job.id)):
            async with self.db.transaction() as repos:
                await repos.jobs.mark_dispatched([job.id], JobStatus.RENDERED)

    async def _heartbeat(self, job_id: UUID) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_sec)
            try:
                async with self.db.transaction() as repos:
                    await repos.jobs.heartbeat(job_id, owner=self.owner)
            except Exception as exc:
                log.warning("HEARTBEAT_FAILED", job_id=str(job_id), error=type(exc).__name__)
