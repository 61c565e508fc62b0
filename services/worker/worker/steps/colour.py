"""Colour steps on the cut figures, before the outline (spec/002 "Skin normalisation", hybrid's targets).

- Consistency: each figure whose mean skin is further than ``CONSISTENCY_SKIN_DE_MAX`` (6 ΔE2000) from
  the anchor's is shifted toward it by ``CONSISTENCY_SKIN_STRENGTH`` (0.85), never by more than
  ``SKIN_NORM_MAX_DE`` (4).
- Hybrid: skin and hair are moved toward targets, the median of the 12 figures pulled toward the selfie by
  ``HYBRID_SELFIE_PULL``, with the same strength and cap; green spill is removed from every figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from shared.imaging.lab import Lab, delta_e, hair_mask, mean_lab, skin_mask
from worker.context import RenderReport
from worker.imaging.skin import (
    ShiftReport,
    capped_shift,
    normalise_skin,
    remove_green_spill,
    shift_region,
)
from worker.steps.slots import Slot

MaskFn = Callable[[npt.NDArray[np.uint8], Lab], npt.NDArray[np.bool_]]

__all__ = ["hybrid_colours", "normalise_pack_skin"]


def _normalise(
    figures: list[npt.NDArray[np.uint8]], reference: Lab, threshold: float, strength: float, max_de: float
) -> list[tuple[npt.NDArray[np.uint8], ShiftReport | None]]:
    return [
        normalise_skin(figure, reference, threshold_de=threshold, strength=strength, max_de=max_de)
        for figure in figures
    ]


async def normalise_pack_skin(
    ctx: RenderReport,
    slots: Sequence[Slot],
    reference: Lab,
    *,
    threshold_de: float,
    strength: float,
    max_de: float,
) -> None:
    """Consistency's skin normalisation to the anchor's skin ``reference`` (Lab): figures further than
    ``threshold_de`` (ΔE2000, ``CONSISTENCY_SKIN_DE_MAX``) are moved ``strength`` of the way
    (``CONSISTENCY_SKIN_STRENGTH``), at most ``max_de`` (``SKIN_NORM_MAX_DE``); logs ``SKIN_NORMALISED``
    per shifted figure."""
    present = [slot for slot in slots if slot.figure is not None]
    async with ctx.stage("skin"):
        done = await ctx.cpu(
            _normalise,
            [slot.figure for slot in present],
            reference,
            threshold_de,
            strength,
            max_de,
        )
    for slot, (figure, report) in zip(present, done, strict=True):
        if report is None or not report.applied_de:
            continue
        slot.figure, slot.sticker = figure, None
        ctx.event(
            "SKIN_NORMALISED",
            slot=slot.index,
            before_de=round(report.before_de, 2),
            applied_de=round(report.applied_de, 2),
        )


def _hybrid(
    figures: list[npt.NDArray[np.uint8]],
    selfie_skin: Lab | None,
    selfie_hair: Lab | None,
    pull: float,
    strength: float,
    max_de: float,
) -> tuple[list[npt.NDArray[np.uint8]], list[tuple[int, str, float]]]:
    """Despilled figures with skin and hair moved to their targets, and (figure, part, ΔE moved) for each
    shift."""
    figures = [remove_green_spill(figure) for figure in figures]
    report: list[tuple[int, str, float]] = []
    parts: tuple[
        tuple[str, Lab | None, Callable[[npt.NDArray[np.uint8], Lab], npt.NDArray[np.bool_]]], ...
    ] = (
        ("skin", selfie_skin, skin_mask),
        ("hair", selfie_hair, hair_mask),
    )
    for part, selfie, find in parts:
        if selfie is None:
            continue
        masks = [find(figure, selfie) for figure in figures]
        means = [mean_lab(figure, mask) for figure, mask in zip(figures, masks, strict=True)]
        seen = [mean for mean in means if mean is not None]
        if not seen:
            continue
        median = np.median(np.stack(seen), axis=0)
        target = median + pull * (selfie - median)
        for k, (mask, current) in enumerate(zip(masks, means, strict=True)):
            if current is None:
                continue
            shift = capped_shift(current, target, strength=strength, max_de=max_de)
            figures[k] = shift_region(figures[k], mask, shift)
            report.append((k, part, delta_e(current, current + shift)))
    return figures, report


async def hybrid_colours(
    ctx: RenderReport,
    slots: Sequence[Slot],
    selfie_skin: Lab | None,
    selfie_hair: Lab | None,
    *,
    pull: float,
    strength: float,
    max_de: float,
) -> None:
    """Hybrid: green spill removed, skin and hair moved to targets pulled ``pull`` of the way from the pack's
    median to the selfie's colour (``HYBRID_SELFIE_PULL``), each shift ``strength`` of the way and at most
    ``max_de`` ΔE2000 (``HYBRID_COLOUR`` per shift)."""
    present = [slot for slot in slots if slot.figure is not None]
    async with ctx.stage("colour"):
        figures, report = await ctx.cpu(
            _hybrid,
            [slot.figure for slot in present],
            selfie_skin,
            selfie_hair,
            pull,
            strength,
            max_de,
        )
    for slot, figure in zip(present, figures, strict=True):
        slot.figure, slot.sticker = figure, None
    for k, part, moved in report:
        ctx.event("HYBRID_COLOUR", slot=present[k].index, part=part, applied_de=round(moved, 2))
