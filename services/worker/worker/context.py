"""What one render of a job works with: the job's inputs, the provider chain, the cost ledger bound to
the job, the artefact cache, the process-wide limits, and the report of stages, timings and events.

Built per job by :class:`worker.render.PipelineRenderer` (the worker) or by the CLI; the variants
(:mod:`worker.variants`) read it and add to its report. The steps (:mod:`worker.steps`) see only the
narrow parts they use: :class:`RenderReport` (events, stages, threads), :class:`ProviderCalls` (that and
the provider chain) and :class:`ArtefactCache`; settings come to them as keyword arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from uuid import UUID

import numpy as np
import numpy.typing as npt
import structlog

from shared import metrics
from shared.errors import ErrorClass, RetryableJobError
from shared.outfits import Outfit
from shared.repositories import Database
from worker.cost import Alerter, CostLedger
from worker.imaging.cut import SheetCut, cut_sheet
from worker.likeness import LikenessScorer, PackJudge
from worker.providers.base import ImageRequest, VisionRequest
from worker.providers.chain import ImageResult, ProviderChain
from worker.settings import PipelineSettings
from worker.store_outage import DEFAULT_PATIENCE_S, patiently

__all__ = [
    "ArtefactCache",
    "DbArtefacts",
    "MemoryArtefacts",
    "NoValidSheet",
    "ProviderCalls",
    "RenderContext",
    "RenderReport",
    "gather_or_cancel",
]

log = structlog.get_logger(__name__)
T = TypeVar("T")


async def gather_or_cancel(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Run ``aws`` concurrently and return their results in order; when one raises, cancel the others,
    wait until they have unwound (their calls in flight are recorded as ``cancelled``), then raise that
    first error. Unlike :func:`asyncio.gather`, nothing of a failed attempt keeps running (and sending
    the selfie) after the attempt is over, e.g. the other sheets of a job whose selfie was refused."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class NoValidSheet(RetryableJobError):
    """A figure path got no valid sheet within its attempts: the job falls back to composite
    (``FIGURE_FALLBACK_ENABLED``) or the attempt fails as ``invalid`` (spec/002 "Which path runs")."""

    error_class = ErrorClass.INVALID


class ArtefactCache(Protocol):
    """Intermediate artefacts of a job (``passport`` JSON, ``anchor`` PNG), kept so a job retry does not
    pay for them again (spec/002 "Appearance passport", "Anchor")."""

    async def get(self, kind: str) -> bytes | None:
        """The stored artefact of ``kind``, or ``None``."""
        ...

    async def put(self, kind: str, data: bytes, content_type: str) -> None:
        """Store (replace) the artefact of ``kind``."""
        ...


class DbArtefacts:
    """Artefacts as blobs of the job (``blobs.kind`` = ``passport`` / ``anchor``); while Postgres is
    unavailable each read and write is tried again for up to ``patience_s`` (``STORE_WAIT_MAX_SEC``,
    :func:`worker.store_outage.patiently`)."""

    def __init__(self, db: Database, job_id: UUID, *, patience_s: float = DEFAULT_PATIENCE_S) -> None:
        self._db = db
        self._job_id = job_id
        self._patience_s = patience_s

    async def get(self, kind: str) -> bytes | None:
        async def read() -> bytes | None:
            async with self._db.transaction() as repos:
                found = await repos.blobs.for_job(self._job_id, kind)
            return found[0].data if found else None

        return await patiently(read, patience_s=self._patience_s, what=kind)

    async def put(self, kind: str, data: bytes, content_type: str) -> None:
        async def write() -> None:
            async with self._db.transaction() as repos:
                await repos.blobs.delete_for_job(self._job_id, kind)
                await repos.blobs.put(kind=kind, data=data, content_type=content_type, job_id=self._job_id)

        await patiently(write, patience_s=self._patience_s, what=kind)


class MemoryArtefacts:
    """Artefacts in a dict (the CLI, tests)."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    async def get(self, kind: str) -> bytes | None:
        return self.items.get(kind)

    async def put(self, kind: str, data: bytes, content_type: str) -> None:
        self.items[kind] = data


class RenderReport(Protocol):
    """The part of a render that steps without provider calls need: report events, time stages, run
    CPU-bound image code off the event loop (:class:`RenderContext` is one)."""

    def event(self, marker: str, *, level: str = "info", **fields: Any) -> None:
        """Log ``marker`` and keep it for the report."""
        ...

    def stage(self, name: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Time a stage."""
        ...

    async def cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in a thread."""
        ...


class ProviderCalls(RenderReport, Protocol):
    """The part of a render that steps with provider calls need: besides the report, an image or a
    vision answer through the provider chain, charged to the job's cost ledger, and the cut of a sheet
    that came back (at most ``CUT_MAX_PARALLEL`` at once; spec/002 "Cut and chroma key").
    :class:`RenderContext` is one.
    """

    async def image(self, request: ImageRequest) -> ImageResult:
        """One image through the chain (:meth:`worker.providers.chain.ProviderChain.image`, which
        lists what it raises)."""
        ...

    async def vision(self, request: VisionRequest, *, timeout_s: float | None = None) -> dict[str, Any]:
        """One structured vision answer through the chain (``timeout_s`` overrides
        ``VISION_TIMEOUT_SEC``; :meth:`worker.providers.chain.ProviderChain.vision`)."""
        ...

    async def cut(self, image: npt.NDArray[np.uint8], figures: int) -> SheetCut:
        """Key and cut a sheet (H×W×3 or ×4 uint8) expected to hold ``figures`` figures."""
        ...


@dataclass
class RenderContext:
    """One job's render.

    Attributes:
        job_id: the job (``None`` in the CLI).
        selfie: the stored selfie's bytes (JPEG from ingest; any Pillow-readable image).
        outfit: the costume.
        settings: the pipeline's settings.
        chain: the provider chain.
        ledger: the job's cost ledger.
        artefacts: the job's artefact cache.
        cut_slots: the process-wide limit of sheets cut at once (``CUT_MAX_PARALLEL``).
        alert: admin alerts with a cooldown (``None``: log only).
        selfie_meta: the selfie blob's ``meta``; its ``"face"`` is the face ingest found (or ``None``:
            ingest found none), read by :func:`worker.steps.inputs.prepare_inputs`; empty (the CLI, a
            selfie stored before issue 20): the worker detects the face once.
        likeness: the worker process's likeness scorer (``None``: stickers are not scored, their reason
            is ``not_scored``; the worker always has one).
        judge: the job's likeness judge, set by :func:`worker.render.render_job` once the inputs are
            read (``None`` without ``likeness``).
        timings: seconds per stage (summed), for the ``JOB_RENDERED`` line and the CLI report.
        events: what happened (markers and their fields), for the CLI report.
    """

    job_id: UUID | None
    selfie: bytes
    outfit: Outfit
    settings: PipelineSettings
    chain: ProviderChain
    ledger: CostLedger
    artefacts: ArtefactCache
    cut_slots: asyncio.Semaphore
    alert: Alerter | None = None
    selfie_meta: dict[str, Any] = field(default_factory=dict)
    likeness: LikenessScorer | None = None
    judge: PackJudge | None = None
    timings: dict[str, float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    def event(self, marker: str, *, level: str = "info", **fields: Any) -> None:
        """Log ``marker`` with the job id and keep it for the report."""
        self.events.append({"event": marker, **fields})
        getattr(log, level)(marker, job_id=str(self.job_id) if self.job_id else None, **fields)

    @contextlib.asynccontextmanager
    async def stage(self, name: str) -> AsyncIterator[None]:
        """Time a stage (wall seconds, summed when a stage runs several times; ``stk_stage_seconds``)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.timings[name] = self.timings.get(name, 0.0) + elapsed
            metrics.STAGE_SECONDS.labels(stage=name).observe(elapsed)

    async def cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound image code in a thread (the event loop keeps serving the other slots)."""
        return await asyncio.to_thread(fn, *args)

    async def image(self, request: ImageRequest) -> ImageResult:
        """One image through the chain, charged to this job's ledger."""
        return await self.chain.image(request, self.ledger)

    async def vision(self, request: VisionRequest, *, timeout_s: float | None = None) -> dict[str, Any]:
        """One structured vision answer through the chain, charged to this job's ledger."""
        return await self.chain.vision(request, self.ledger, timeout_s=timeout_s)

    async def cut(self, image: npt.NDArray[np.uint8], figures: int) -> SheetCut:
        """Key and cut a sheet in a thread, at most ``CUT_MAX_PARALLEL`` sheets at once per process."""
        async with self.cut_slots:
            return await asyncio.to_thread(cut_sheet, image, figures)
