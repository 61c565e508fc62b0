"""Colour steps on the cut figures, before the outline (spec/002 "Skin normalisation", hybrid's targets).

- Consistency: each figure whose mean skin is further than ``CONSISTENCY_SKIN_DE_MAX`` (6 ΔE2000) from
  the anchor's is shifted toward it by ``CONSISTENCY_SKIN_STRENGTH`` (0.85), never by more than
  ``SKIN_NORM_MAX_DE`` (4).
- Hybrid: skin and hair are moved toward targets, the median of the 12 figures pulled toward the selfie by
  ``HYBRID_SELFIE_PULL``, with the same strength and cap; green spill is removed from every figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from worker.context import RenderContext
from worker.pipeline.skin import (
    Lab,
    capped_shift,
    delta_e,
    hair_mask,
    mean_lab,
    normalise_skin,
    remove_green_spill,
    shift_region,
    skin_mask,
)
from worker.steps.slots import Slot

__all__ = ["hybrid_colours", "normalise_pack_skin"]


def _normalise(
    slots: Sequence[Slot], reference: Lab, threshold: float, strength: float, max_de: float
) -> list[dict[str, float]]:
    report = []
    for slot in slots:
        if slot.figure is None:
            continue
        figure, done = normalise_skin(
            slot.figure, reference, threshold_de=threshold, strength=strength, max_de=max_de
        )
        if done is None or not done.applied_de:
            continue
        slot.figure, slot.sticker = figure, None
        report.append(
            {
                "slot": slot.index,
                "before_de": round(done.before_de, 2),
                "applied_de": round(done.applied_de, 2),
            }
        )
    return report


async def normalise_pack_skin(ctx: RenderContext, slots: Sequence[Slot], reference: Lab) -> None:
    """Consistency's skin normalisation to the anchor's skin ``reference`` (Lab)."""
    s = ctx.settings
    async with ctx.stage("skin"):
        report = await ctx.cpu(
            _normalise,
            slots,
            reference,
            s.consistency_skin_de_max,
            s.consistency_skin_strength,
            s.skin_norm_max_de,
        )
    for entry in report:
        ctx.event("SKIN_NORMALISED", fields=entry)


def _median(values: list[Lab]) -> Lab | None:
    return np.median(np.stack(values), axis=0) if values else None


def _hybrid(
    slots: Sequence[Slot],
    selfie_skin: Lab | None,
    selfie_hair: Lab | None,
    pull: float,
    strength: float,
    max_de: float,
) -> list[dict[str, object]]:
    report: list[dict[str, object]] = []
    figures = [slot for slot in slots if slot.figure is not None]
    for slot in figures:
        assert slot.figure is not None
        slot.figure = remove_green_spill(slot.figure)
        slot.sticker = None
    for part, selfie in (("skin", selfie_skin), ("hair", selfie_hair)):
        if selfie is None:
            continue
        masks = {
            slot.index: (skin_mask(slot.figure, selfie) if part == "skin" else hair_mask(slot.figure, selfie))
            for slot in figures
            if slot.figure is not None
        }
        means = {
            i: mean_lab(slot.figure, masks[slot.index])
            for i, slot in enumerate(figures)
            if slot.figure is not None
        }
        found = [m for m in means.values() if m is not None]
        median = _median(found)
        if median is None:
            continue
        target = median + pull * (selfie - median)
        for i, slot in enumerate(figures):
            current = means.get(i)
            if current is None or slot.figure is None:
                continue
            shift = capped_shift(current, target, strength=strength, max_de=max_de)
            slot.figure = shift_region(slot.figure, masks[slot.index], shift)
            report.append(
                {"slot": slot.index, "part": part, "applied_de": round(delta_e(current, current + shift), 2)}
            )
    return report


async def hybrid_colours(
    ctx: RenderContext, slots: Sequence[Slot], selfie_skin: Lab | None, selfie_hair: Lab | None
) -> None:
    """Hybrid: green spill removed, skin and hair moved to the pulled targets."""
    s = ctx.settings
    async with ctx.stage("colour"):
        report = await ctx.cpu(
            _hybrid,
            slots,
            selfie_skin,
            selfie_hair,
            s.hybrid_selfie_pull,
            s.consistency_skin_strength,
            s.skin_norm_max_de,
        )
    for entry in report:
        ctx.event("HYBRID_COLOUR", fields=entry)
