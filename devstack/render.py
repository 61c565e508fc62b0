"""``python -m devstack.render`` (``make render``): render a pack from a photo without the services.

    make render PHOTO=../shared/fixtures/photos/astronaut-portrait.png OUTFIT=chef VARIANT=hybrid OUT=out/r

Writes ``OUT/01-waving.png`` … ``12-victory.png`` (the Telegram stickers), ``OUT/contact.png`` (the 12 on
one sheet) and ``OUT/report.json`` (variant, providers, seconds per stage, every provider call with its
cost, the pipeline's events). Providers come from the environment as in the worker (``PRIMARY_AI_PROVIDER``,
``GEMINI_API_KEY``, ``AI_BASE_URL_GEMINI`` …): with no key set, the offline ``local`` provider renders.
Variants: those of :data:`worker.variants.VARIANTS` (``consistency``, ``classic``, ``hybrid``, ``legacy``,
``composite``; each sets the ``STICKER_RENDER_MODE``, ``LIKENESS_MODE`` and ``CONSISTENCY_MODE`` that select
it). Exit status 0 on success, 1 when
the pack could not be rendered (the error is printed), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pillow_heif
from PIL import Image
from pydantic import ValidationError

from cartoon.poses import POSES
from shared.errors import JobError
from shared.logging import configure_logging
from shared.outfits import load_catalog
from worker.context import MemoryArtefacts, RenderContext
from worker.cost import CostLedger, MemoryUsageStore
from worker.imaging.contact import contact_sheet
from worker.imaging.finish import Sticker
from worker.likeness import LikenessScorer
from worker.providers.factory import build_chain, build_providers
from worker.render import Pack, render_job, resolve_mode
from worker.settings import PipelineSettings
from worker.variants import VARIANTS

__all__ = ["RenderedPack", "cli", "main", "render_pack", "render_to_folder"]


def _write_stickers(stickers: Sequence[Sticker], out: Path) -> list[dict[str, Any]]:
    """Write the 12 PNGs and the contact sheet; returns one entry per sticker for the report."""
    out.mkdir(parents=True, exist_ok=True)
    files: list[dict[str, Any]] = []
    images = []
    for k, (sticker, pose) in enumerate(zip(stickers, POSES, strict=False), start=1):
        name = f"{k:02d}-{pose.name}.png"
        (out / name).write_bytes(sticker.png)
        files.append(
            {
                "file": name,
                "emoji": sticker.emoji,
                "width": sticker.width,
                "height": sticker.height,
                "bytes": len(sticker.png),
                "likeness": sticker.likeness,
                "likeness_reason": sticker.likeness_reason,
            }
        )
        with Image.open(io.BytesIO(sticker.png)) as image:
            images.append(np.asarray(image.convert("RGBA"), np.uint8))
    Image.fromarray(contact_sheet(images, 4, 3, cell_px=384, numbered=False)).save(out / "contact.png")
    return files


@dataclass
class RenderedPack:
    """One render: the pack (``None`` when it failed, with the ``error`` the worker would have seen),
    the cost ledger holding every provider call as an ``api_usage`` row, the context (events), the
    providers of the chain, their start-up warnings and the wall seconds."""

    pack: Pack | None
    error: JobError | None
    ledger: CostLedger
    ctx: RenderContext
    providers: list[str]
    warnings: list[str]
    seconds: float


async def render_pack(
    photo: bytes,
    outfit_id: str,
    variant: str,
    *,
    settings: PipelineSettings | None = None,
    likeness: LikenessScorer | None = None,
) -> RenderedPack:
    """Render a pack the way a worker slot does (the chain and providers the settings configure, costs
    in memory, each sticker's likeness scored in a scoring process: ``likeness``, else one started and
    stopped for this pack); a pack that could not be rendered is returned with its error, not raised.

    Raises:
        KeyError: unknown outfit or variant.
    """
    catalog = load_catalog()
    outfit = catalog[outfit_id]
    base = settings or PipelineSettings()
    chosen = base.model_copy(update=VARIANTS[variant].selected_by)
    providers, warnings = build_providers(chosen, catalog)
    store = MemoryUsageStore()
    ledger = CostLedger(
        store,
        job_id=None,
        created_at=datetime.now(UTC),
        max_cost_usd=chosen.job_max_cost_usd,
        daily_budget_usd=chosen.daily_budget_usd,
    )
    ctx = RenderContext(
        job_id=None,
        selfie=photo,
        outfit=outfit,
        settings=chosen,
        chain=build_chain(chosen, providers, alert=None),
        ledger=ledger,
        artefacts=MemoryArtefacts(),
        cut_slots=asyncio.Semaphore(chosen.cut_max_parallel),
        likeness=likeness or LikenessScorer(),
    )
    started = time.perf_counter()
    pack: Pack | None = None
    error: JobError | None = None
    try:
        pack = await render_job(ctx)
    except JobError as exc:
        error = exc
    finally:
        for provider in providers:
            await provider.aclose()
        if likeness is None and ctx.likeness is not None:
            await ctx.likeness.close()
    return RenderedPack(
        pack=pack,
        error=error,
        ledger=ledger,
        ctx=ctx,
        providers=[p.name for p in providers],
        warnings=warnings,
        seconds=time.perf_counter() - started,
    )


async def render_to_folder(
    photo: bytes, outfit_id: str, variant: str, out: Path, *, settings: PipelineSettings | None = None
) -> dict[str, Any]:
    """Render and write the pack; returns the report (also written to ``out/report.json``).

    Raises:
        KeyError: unknown outfit or variant.
        JobError: the pack could not be rendered (the job's outcome in the worker).
    """
    rendered = await render_pack(photo, outfit_id, variant, settings=settings)
    if rendered.error is not None:
        raise rendered.error
    pack = rendered.pack
    assert pack is not None
    files = await asyncio.to_thread(_write_stickers, pack.stickers, out)
    ledger = rendered.ledger
    report = {
        "variant": variant,
        "mode": resolve_mode(rendered.ctx.settings),
        "outfit": outfit_id,
        "providers": rendered.providers,
        "warnings": rendered.warnings,
        "seconds": round(rendered.seconds, 3),
        "stages": {name: round(value, 3) for name, value in pack.timings.items()},
        "cost_usd": round(ledger.attempt_spend, 4),
        "calls": [{k: v for k, v in asdict(call).items() if k != "job_id"} for call in ledger.calls],
        "events": rendered.ctx.events,
        "stickers": files,
    }
    await asyncio.to_thread(
        (out / "report.json").write_text, json.dumps(report, indent=2, default=str), encoding="utf-8"
    )
    return report


def cli(argv: Sequence[str] | None = None) -> int:
    """Parse the flags, render, print where the files are. Returns the exit status (logging as the
    caller configured it)."""
    parser = argparse.ArgumentParser(prog="python -m devstack.render", description=__doc__.split("\n")[0])
    parser.add_argument("--photo", required=True, type=Path, help="a face photo (JPEG, PNG, HEIC …)")
    parser.add_argument("--outfit", default="chef", help=f"one of {', '.join(load_catalog())}")
    parser.add_argument("--variant", default="consistency", choices=sorted(VARIANTS))
    parser.add_argument("--out", default=Path("out/render"), type=Path, help="folder for the PNGs and report")
    parser.add_argument(
        "--layout", choices=("3x4", "2x6", "1x12"), help="SHEET_LAYOUT (default: the environment's)"
    )
    args = parser.parse_args(argv)
    pillow_heif.register_heif_opener()  # iPhone photos (HEIC) straight from an operator's folder
    if args.outfit not in load_catalog():
        parser.error(f"unknown outfit {args.outfit!r}")
    try:
        settings = PipelineSettings()
    except ValidationError as exc:
        print(f"invalid settings: {exc}", file=sys.stderr)
        return 2
    if args.layout:
        settings = settings.model_copy(update={"sheet_layout": args.layout})
    try:
        report = asyncio.run(
            render_to_folder(args.photo.read_bytes(), args.outfit, args.variant, args.out, settings=settings)
        )
    except JobError as exc:
        print(f"could not render: {type(exc).__name__} ({exc.error_class}): {exc}", file=sys.stderr)
        return 1
    print(
        f"{args.variant} ({report['mode']}) with {'+'.join(report['providers'])}: 12 stickers in {args.out}/ "
        f"in {report['seconds']} s, {report['cost_usd']} USD; contact sheet {args.out / 'contact.png'}"
    )
    return 0


def main() -> int:
    """The command: warnings and errors logged to stderr, then :func:`cli`."""
    configure_logging(service="render", level="WARNING", fmt="console")
    return cli()


if __name__ == "__main__":
    sys.exit(main())
