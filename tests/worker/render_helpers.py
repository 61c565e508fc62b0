"""Rendering a job in tests: the real pipeline (:func:`worker.render.render_job`) with the real SDK
adapters pointed at the AI provider simulator, costs and artefacts in memory."""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from PIL import Image

from shared.outfits import get_outfit
from tests.simulators.ai.helpers import RunningAiSim, photo
from worker.context import MemoryArtefacts, RenderContext
from worker.cost import CostLedger, MemoryUsageStore, UsageStore
from worker.providers.base import Provider
from worker.providers.chain import ChainPolicy, ProviderChain
from worker.render import Pack, render_job
from worker.settings import PipelineSettings
from worker.variants import VARIANTS


@dataclass
class Rendered:
    """A render's pack (or error), its context and the alerts it raised."""

    ctx: RenderContext
    pack: Pack | None = None
    error: BaseException | None = None
    alerts: list[str] = field(default_factory=list)

    def events(self, marker: str) -> list[dict[str, Any]]:
        return [e for e in self.ctx.events if e["event"] == marker]


def settings(variant: str, **overrides: Any) -> PipelineSettings:
    return PipelineSettings().model_copy(update={**VARIANTS[variant].selected_by, **overrides})


async def render(
    aisim: RunningAiSim,
    variant: str,
    *,
    providers: tuple[str, ...] = ("gemini",),
    photo_name: str = "astronaut-portrait.png",
    outfit: str = "chef",
    artefacts: MemoryArtefacts | None = None,
    store: UsageStore | None = None,
    **overrides: Any,
) -> Rendered:
    """Render one pack through the simulator; never raises (the error is returned). Calls are recorded in
    ``store`` (e.g. ``api_usage`` through :class:`worker.cost.DbUsageStore`), in memory by default."""
    clients: list[Provider] = [aisim.gemini() if name == "gemini" else aisim.openai() for name in providers]
    chosen = settings(variant, **overrides)
    alerts: list[str] = []

    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        alerts.append(key)
        return True

    async def no_wait(_seconds: float) -> None:
        return None

    ctx = RenderContext(
        job_id=None,
        selfie=photo(photo_name),
        outfit=get_outfit(outfit),
        settings=chosen,
        chain=ProviderChain(
            clients, ChainPolicy(), image_slots=asyncio.Semaphore(9), alert=alert, sleep=no_wait
        ),
        ledger=CostLedger(
            store or MemoryUsageStore(),
            job_id=None,
            created_at=datetime.now(UTC),
            max_cost_usd=chosen.job_max_cost_usd,
        ),
        artefacts=artefacts or MemoryArtefacts(),
        cut_slots=asyncio.Semaphore(2),
        alert=alert,
    )
    result = Rendered(ctx=ctx, alerts=alerts)
    try:
        result.pack = await render_job(ctx)
    except Exception as exc:
        result.error = exc
    finally:
        for client in clients:
            await client.aclose()
    return result


def sticker_sizes(pack: Pack) -> list[tuple[int, int]]:
    sizes = []
    for sticker in pack.stickers:
        with Image.open(io.BytesIO(sticker.png)) as image:
            sizes.append(image.size)
    return sizes
