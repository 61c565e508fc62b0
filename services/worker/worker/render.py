"""Rendering one job: which variant runs (the registry :data:`worker.variants.VARIANTS`), the steps every
variant shares, and the figure → composite fallback (spec/002 "Which path runs"; DESIGN.md §5).

``STICKER_RENDER_MODE=composite`` runs composite. Otherwise ``LIKENESS_MODE`` (``classic``/``hybrid``) wins
over ``CONSISTENCY_MODE``: 1 runs the consistency path (the legacy path when no anchor could be drawn),
0 the legacy path. A figure path whose sheets are never valid falls back to composite when
``FIGURE_FALLBACK_ENABLED`` (log ``FIGURE_FALLBACK_TO_COMPOSITE`` and a calm admin notice), else the
attempt fails (``invalid``).

:class:`PipelineRenderer` is what the worker's :class:`worker.generation.Generator` calls per job; the
dev render CLI (``devstack.render``) builds a :class:`worker.context.RenderContext` itself and calls
:func:`render_job`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog

from shared.domain import Blob, Job
from shared.errors import ErrorClass, RetryableJobError
from shared.events import Event
from shared.outfits import Outfit
from shared.repositories import Database
from worker.context import DbArtefacts, NoValidSheet, RenderContext
from worker.cost import Alerter, CostLedger, DbUsageStore, UsageStore, warn_image_rpd
from worker.imaging.finish import Sticker
from worker.likeness import LikenessScorer, PackJudge
from worker.providers.chain import ProviderChain
from worker.settings import PipelineSettings
from worker.steps.inputs import face_crop, prepare_inputs
from worker.steps.likeness import attach_likeness
from worker.steps.passport import appearance_passport
from worker.steps.slots import stickers_of
from worker.store_outage import DEFAULT_PATIENCE_S, patiently
from worker.variants import VARIANTS, resolve_variant

__all__ = ["Pack", "PipelineRenderer", "render_job", "resolve_mode", "startup_fields"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Pack:
    """The 12 stickers of a job, in pose order, and the seconds spent per stage of :func:`render_job`."""

    stickers: list[Sticker]
    timings: dict[str, float] = field(default_factory=dict)


def resolve_mode(settings: PipelineSettings) -> str:
    """The name of the variant the settings select (:func:`worker.variants.resolve_variant`)."""
    return resolve_variant(settings).name


def startup_fields(settings: PipelineSettings) -> dict[str, object]:
    """The ``STARTUP`` line's mode fields (spec/002: ``render_mode``, ``likeness``, ``consistency_mode``,
    ``sheet_layout``) and the variant they select."""
    return {
        "render_mode": settings.sticker_render_mode,
        "likeness": settings.likeness_mode,
        "consistency_mode": int(settings.consistency_mode),
        "sheet_layout": settings.sheet_layout,
        "variant": resolve_mode(settings),
    }


#: Artefact kind (a blob of the job, like ``passport``/``anchor``): the figure path of this job fell back to
#: composite; its text is the reason. A retry of the job goes to composite at once (spec/002 "Which path
#: runs": the fallback is per job).
FIGURE_FAILED = "figure_failed"


async def render_job(ctx: RenderContext) -> Pack:
    """Render the 12 stickers of ``ctx``'s job.

    Returns:
        The pack, with seconds per stage (``passport``, ``anchor``, ``generate``, ``cut``, ``skin``,
        ``finish``, ``qa``, ``likeness``, ``regen`` …); each sticker with its likeness to the guest or the
        reason it has none (:func:`worker.steps.likeness.attach_likeness`; ``not_scored`` when ``ctx``
        has no scorer).

    Raises:
        NoFaceError, PermanentJobError: the selfie cannot be used.
        ContentRefused: every provider refused the selfie as content; nothing more was sent.
        JobCostExceeded: ``JOB_MAX_COST_USD`` reached before a call.
        ProviderUnavailable: no provider could serve (``credit``, ``auth``, ``config``, ``outage``,
            ``budget``).
        RetryableJobError: a charged failure (no valid sheet and no fallback, a missing figure that
            could not be drawn, …).
    """
    variant = resolve_variant(ctx.settings)
    mode = variant.name
    log.info(
        "JOB_RENDER_MODE", job=str(ctx.job_id) if ctx.job_id else None, mode=mode, providers=ctx.chain.names
    )
    ctx.events.append({"event": "JOB_RENDER_MODE", "mode": mode})
    async with ctx.stage("inputs"):
        inputs = await ctx.cpu(prepare_inputs, ctx.selfie, ctx.selfie_meta)
    if ctx.likeness is not None:
        ctx.judge = PackJudge(ctx.likeness, ctx.selfie, inputs.face)
    async with ctx.stage("passport"):
        passport = await appearance_passport(
            ctx, ctx.artefacts, inputs.selfie, card_attempts=ctx.settings.card_attempts
        )
    face = await ctx.cpu(face_crop, inputs.rgb, inputs.face, passport)
    enabled = ctx.settings.figure_fallback_enabled
    fallback = VARIANTS[variant.fallback] if variant.fallback is not None and enabled else None
    if variant.fallback is None:
        drawn = await variant.draw(ctx, inputs, face, passport)
    elif fallback is not None and await ctx.artefacts.get(FIGURE_FAILED) is not None:
        # An earlier attempt of this job drew every figure sheet in vain and fell back; this selfie would
        # most likely fail them again, so the retry (e.g. after a refunded pause) does not pay for them twice.
        ctx.event("FIGURE_SKIPPED_AFTER_FALLBACK", mode=mode)
        drawn = await fallback.draw(ctx, inputs, face, passport)
    else:
        try:
            drawn = await variant.draw(ctx, inputs, face, passport)
        except NoValidSheet as exc:
            if fallback is None:
                raise RetryableJobError(f"no valid sheet: {exc}", error_class=ErrorClass.INVALID) from exc
            ctx.event("FIGURE_FALLBACK_TO_COMPOSITE", level="warning", mode=mode, reason=str(exc))
            await ctx.artefacts.put(FIGURE_FAILED, str(exc).encode(), "text/plain")
            if ctx.alert is not None:
                with contextlib.suppress(Exception):
                    await ctx.alert(
                        "figure_fallback",
                        f"A job's figure sheets were never valid ({mode}); it was rebuilt as composite.",
                        timedelta(minutes=10),
                    )
            drawn = await fallback.draw(ctx, inputs, face, passport)
    await attach_likeness(ctx, ctx.judge, drawn.slots, variant=drawn.path)
    return Pack(stickers=stickers_of(drawn.slots), timings=dict(ctx.timings))


class PipelineRenderer:
    """The worker's renderer: builds each job's context (ledger bound to the job, artefacts as the job's
    blobs) and renders it; after each job, the image-requests-per-day warning.

    Args:
        settings: the pipeline's settings.
        chain: the provider chain (one per process).
        db: the database (``api_usage``, blobs).
        alert: admin alerts with a cooldown.
        cut_slots: the process-wide ``CUT_MAX_PARALLEL`` semaphore.
        usage: where calls are recorded (default ``api_usage``).
        clock: UTC now.
        store_patience_s: how long its writes wait for Postgres to come back (``STORE_WAIT_MAX_SEC``).
        likeness: the process's likeness scorer (``None``: stickers are not scored).
    """

    def __init__(
        self,
        *,
        settings: PipelineSettings,
        chain: ProviderChain,
        db: Database,
        alert: Alerter | None,
        cut_slots: asyncio.Semaphore,
        usage: UsageStore | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        store_patience_s: float = DEFAULT_PATIENCE_S,
        likeness: LikenessScorer | None = None,
    ) -> None:
        self.settings = settings
        self.chain = chain
        self.db = db
        self.alert = alert
        self.cut_slots = cut_slots
        self.usage = usage or DbUsageStore(db, patience_s=store_patience_s)
        self.store_patience_s = store_patience_s
        self.clock = clock
        self.likeness = likeness

    async def _event_of(self, job: Job) -> Event | None:
        """The event of the job's session (its budgets; ``None``: the job or its session is gone), found as
        every job's is (:meth:`shared.repositories.jobs.JobRepository.get_context`)."""

        async def once() -> Event | None:
            async with self.db.transaction() as repos:
                ctx = await repos.jobs.get_context(job.id)
                return ctx.event if ctx is not None else None

        return await patiently(once, patience_s=self.store_patience_s, what="events")

    async def __call__(self, job: Job, selfie: Blob, outfit: Outfit) -> Pack:
        """Render ``job`` from its stored selfie blob (see :func:`render_job` for what is raised)."""
        ledger = CostLedger(
            self.usage,
            job_id=job.id,
            created_at=job.created_at,
            max_cost_usd=self.settings.job_max_cost_usd,
            daily_budget_usd=self.settings.daily_budget_usd,
            event=await self._event_of(job),
            clock=self.clock,
        )
        ctx = RenderContext(
            job_id=job.id,
            selfie=selfie.data,
            selfie_meta=dict(selfie.meta),
            outfit=outfit,
            settings=self.settings,
            chain=self.chain,
            ledger=ledger,
            artefacts=DbArtefacts(self.db, job.id, patience_s=self.store_patience_s),
            cut_slots=self.cut_slots,
            alert=self.alert,
            likeness=self.likeness,
        )
        try:
            pack = await render_job(ctx)
        except Exception:
            await self._after_job(job, ledger)
            raise
        await self._after_job(job, ledger)
        return pack

    async def _after_job(self, job: Job, ledger: CostLedger) -> None:
        log.info(
            "JOB_COST", job=str(job.id), attempt_usd=round(ledger.attempt_spend, 4), calls=len(ledger.calls)
        )
        try:
            await warn_image_rpd(
                self.usage,
                self.alert,
                providers=self.chain.names,
                limit=self.settings.image_rpd_limit,
                warn_frac=self.settings.image_rpd_warn_frac,
                now=self.clock(),
            )
        except Exception as exc:  # a warning never fails a job
            log.warning("IMAGE_RPD_CHECK_FAILED", error=type(exc).__name__)
