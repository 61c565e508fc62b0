"""The ``make bench`` rows "Cost per pack": USD, image calls, vision calls and stickers valid per pack for
each pipeline variant and, where it applies, each ``SHEET_LAYOUT`` (issue 12 item 3 and its bench row
"cost and calls per pack per variant").

Every pack goes through the worker's own render path (:func:`devstack.render.render_pack`: the real
provider chain and the real google-genai / openai SDK adapters) against the AI provider simulator served
in this process with no added latency, on the hold-out-like fixture photos (``../shared/fixtures/photos``:
the six human faces; the pug and the truncated JPEG are refused at upload, so no pack is drawn for them).
Cost and calls are the pack's ``api_usage`` rows as the cost module writes them
(:class:`worker.cost.CostLedger`, priced by :mod:`worker.providers.prices`), summed per pack and
averaged over the photos. The reference is the default, consistency with ``3x4``, measured in the same
run. The layouts apply to the consistency, classic and hybrid paths; legacy draws 2 sheets of 6 and
composite 2 sheets of 6 heads whatever ``SHEET_LAYOUT`` says.

"Valid" counts the stickers of a delivered pack that left the pipeline without a defect: 512 px on one
side, at most 512 KB, and not left with an edge or flat cut, a capped, rejected, failed or timed-out
regeneration (``EDGE_CUT_LEFT``, ``FLAT_CUT_LEFT``, ``REGEN_CAP_REACHED``, ``REGEN_REJECTED``,
``CONSISTENCY_REGEN_FAILED``, ``CONSISTENCY_REGEN_TIMEOUT``); a failed pack counts 0. The simulator
draws clean sheets, so this shows that each layout's sheets cut and pass their rules on real faces; it
is not a model's error rate (the tests script imperfect sheets for that).

The target is issue 12's yardstick, "a public sample generator makes 12 low-quality stickers for about
$0.15": at most $0.15 per pack with 12 of 12 valid.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from pydantic import SecretStr

from devstack.bench.report import Options, Row
from devstack.render import RenderedPack, render_pack
from simulators.ai import AiSimConfig, create_app
from worker.imaging.export import MAX_STICKER_BYTES, STICKER_SIDE_PX
from worker.settings import PipelineSettings

__all__ = ["PHOTOS", "TARGET_USD", "Config", "PackCost", "configs", "measure", "pack_cost", "run"]

PHOTOS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "photos"
#: The human faces among the fixtures (SOURCES.md), in the order a quick run takes them.
FACES = (
    "astronaut-portrait.png",
    "face-older-man-white-hair.jpg",
    "face-woman-red-hat.png",
    "child-face-paint.png",
    "exif-orient-6-face.jpg",
    "png-16bit-welder-low-light.png",
)
TARGET_USD = 0.15
OUTFITS = ("chef", "pirate", "wizard", "astronaut", "cowboy", "superhero")
_KEY = "bench-sim-key"
_LEFT = (
    "EDGE_CUT_LEFT",
    "FLAT_CUT_LEFT",
    "REGEN_CAP_REACHED",
    "REGEN_REJECTED",
    "CONSISTENCY_REGEN_FAILED",
    "CONSISTENCY_REGEN_TIMEOUT",
)


@dataclass(frozen=True)
class Config:
    """One measured configuration: a variant (:data:`worker.variants.VARIANTS`), a ``SHEET_LAYOUT``
    (``None``: the variant ignores it) and the provider that serves it."""

    variant: str
    layout: str | None
    provider: str = "gemini"

    @property
    def label(self) -> str:
        where = "" if self.provider == "gemini" else f", {self.provider} only"
        return f"{self.variant}, {self.layout or '2 sheets of 6'}{where}"


REFERENCE = Config("consistency", "3x4")


def configs(quick: bool) -> list[Config]:
    """Every variant × layout on Gemini (the primary), then the default and the one-sheet layout on the
    OpenAI fallback alone; a quick run takes the reference and the one-sheet consistency pack."""
    if quick:
        return [REFERENCE, Config("consistency", "1x12")]
    layered = [
        Config(v, layout) for v in ("consistency", "classic", "hybrid") for layout in ("3x4", "2x6", "1x12")
    ]
    return [
        *layered,
        Config("legacy", None),
        Config("composite", None),
        Config("consistency", "3x4", "openai"),
        Config("consistency", "1x12", "openai"),
    ]


@dataclass(frozen=True)
class PackCost:
    """One pack's ``api_usage`` sums: USD, image and vision calls, valid stickers (0 when it failed),
    whether it fell back to composite, and the error class name of a failed pack."""

    usd: float
    image_calls: int
    vision_calls: int
    valid: int
    fell_back: bool
    failed: str | None = None


def pack_cost(rendered: RenderedPack) -> PackCost:
    """Sum a render's calls and count its valid stickers (module docstring)."""
    calls = rendered.ledger.calls
    valid = 0
    if rendered.pack is not None:
        left = {e.get("slot") for e in rendered.ctx.events if e["event"] in _LEFT}
        valid = sum(
            1
            for k, s in enumerate(rendered.pack.stickers)
            if k not in left and max(s.width, s.height) == STICKER_SIDE_PX and len(s.png) <= MAX_STICKER_BYTES
        )
    return PackCost(
        usd=sum(c.cost_usd for c in calls),
        image_calls=sum(1 for c in calls if c.call_type == "image"),
        vision_calls=sum(1 for c in calls if c.call_type == "vision"),
        valid=valid,
        fell_back=any(e["event"] == "FIGURE_FALLBACK_TO_COMPOSITE" for e in rendered.ctx.events),
        failed=None if rendered.error is None else type(rendered.error).__name__,
    )


def _settings(base: PipelineSettings, url: str, config: Config) -> PipelineSettings:
    key = SecretStr(_KEY)
    update: dict[str, object] = {
        "primary_ai_provider": config.provider,
        "fallback_ai_provider": "",
        "gemini_api_key": key if config.provider == "gemini" else None,
        "openai_api_key": key if config.provider == "openai" else None,
        "ai_base_url_gemini": url,
        "ai_base_url_openai": f"{url}/v1",
    }
    if config.layout is not None:
        update["sheet_layout"] = config.layout
    return base.model_copy(update=update)


async def run(config_list: Sequence[Config], photos: Sequence[str]) -> dict[Config, list[PackCost]]:
    """Serve the simulator, render one pack per photo per configuration (an outfit per photo, the
    same for every configuration), and return the packs' sums."""
    runner = web.AppRunner(create_app(AiSimConfig(keys=_KEY, latency_sec=0.0)), shutdown_timeout=2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    url = f"http://{host}:{port}"
    base = PipelineSettings()
    results: dict[Config, list[PackCost]] = {}
    try:
        data = [(PHOTOS / name).read_bytes() for name in photos]
        for config in config_list:
            settings = _settings(base, url, config)
            results[config] = [
                pack_cost(
                    await render_pack(photo, OUTFITS[k % len(OUTFITS)], config.variant, settings=settings)
                )
                for k, photo in enumerate(data)
            ]
    finally:
        await runner.cleanup()
    return results


def _row(config: Config, packs: list[PackCost], reference: list[PackCost]) -> Row:
    usd = statistics.fmean(p.usd for p in packs)
    ref_usd = statistics.fmean(p.usd for p in reference)
    images = statistics.fmean(p.image_calls for p in packs)
    vision = statistics.fmean(p.vision_calls for p in packs)
    valid = statistics.fmean(p.valid for p in packs)
    met = usd <= TARGET_USD and all(p.valid == 12 for p in packs)
    note = (
        f"mean of {len(packs)} packs (${min(p.usd for p in packs):.3f} to ${max(p.usd for p in packs):.3f})"
    )
    fallbacks = sum(p.fell_back for p in packs)
    if fallbacks:
        note += f"; {fallbacks} fell back to composite after invalid figure sheets"
    failed = [p.failed for p in packs if p.failed]
    if failed:
        note += f"; {len(failed)} failed ({', '.join(failed)})"
    if not met:
        why = []
        if usd > TARGET_USD and fallbacks:
            why.append("the packs that fell back paid for their invalid sheets first")
        if usd > TARGET_USD and config.layout != "1x12" and config.variant not in ("legacy", "composite"):
            why.append("every 2K sheet costs: layout 1x12 draws one")
        elif usd > TARGET_USD and not fallbacks:
            why.append("the image model's prices: a cheaper model or 1K sheets")
        if any(p.valid < 12 and not p.failed for p in packs):
            why.append("stickers left with a defect")
        note += "; missed: " + ("; ".join(why) or "a failed pack")
    return Row(
        group="Cost per pack",
        name=config.label,
        ours=f"${usd:.3f} · {images:.1f} image + {vision:.1f} vision calls · {valid:.1f}/12 valid",
        reference=f"${ref_usd:.3f} ({REFERENCE.label})",
        ratio=usd / ref_usd if ref_usd else None,
        target=f"≤ ${TARGET_USD:.2f}, 12/12 valid",
        met=met,
        note=note,
    )


def measure(options: Options) -> list[Row]:
    """One row per configuration of :func:`configs`, each against the consistency ``3x4`` reference of
    the same run; a quick run draws one photo. Logging is the caller's (``python -m devstack.bench``
    lowers the pipeline's lines to warnings; a test keeps its own capture)."""
    photos = FACES[:1] if options.quick else FACES[:3]
    results = asyncio.run(run(configs(options.quick), photos))
    reference = results[REFERENCE]
    return [_row(config, packs, reference) for config, packs in results.items()]
