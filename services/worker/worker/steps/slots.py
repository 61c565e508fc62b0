"""The 12 places of a pack: which figure fills each, what is wrong with it, and its finished sticker.

A slot's defect decides its single-figure regeneration (spec/002 "Single-figure regeneration"):
``missing`` (no figure: outside the cap, no time budget, must be drawn), ``edge`` (touches the sheet
border) and ``flat`` (cut at a cell line; both ``EDGE_REGEN_TIMEOUT_SEC``), ``small`` (a sliver after
export, handled like ``missing``), ``qa`` (a QA outlier) and ``likeness`` (no face where one is expected, or
a face too far from the guest's: :mod:`worker.steps.likeness`; both ``CONSISTENCY_REGEN_BUDGET_SEC``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from cartoon.poses import POSES, Pose
from worker.context import RenderReport
from worker.imaging.finish import MIN_COVERAGE, Sticker, StickerQA, finish_sticker
from worker.likeness import Judgement
from worker.steps.sheets import SheetResult, crowded

__all__ = ["Defect", "Slot", "finish_slots", "slots_from_sheets", "stickers_of"]

Defect = Literal["missing", "edge", "flat", "small", "qa", "likeness"]


@dataclass
class Slot:
    """One sticker of the pack.

    Attributes:
        index: 0..11, the pose's place in :data:`cartoon.poses.POSES`.
        pose: the pose.
        figure: the cut figure (h×w×4 uint8 RGBA) or ``None`` (missing).
        defect: why it should be regenerated, if it should.
        reasons: QA reasons (``hair_length``, ``skin_tone`` …).
        sticker, outlined, qa: the finished sticker, its outlined RGBA and its QA numbers.
        regenerated: the figure came from a single-figure regeneration.
        likeness: the finished sticker's likeness (``None`` until judged; :mod:`worker.steps.likeness`).
    """

    index: int
    pose: Pose
    figure: npt.NDArray[np.uint8] | None = None
    defect: Defect | None = None
    reasons: list[str] = field(default_factory=list)
    sticker: Sticker | None = None
    outlined: npt.NDArray[np.uint8] | None = None
    qa: StickerQA | None = None
    regenerated: bool = False
    likeness: Judgement | None = None


def slots_from_sheets(results: Sequence[SheetResult | None], plans_poses: int = 12) -> list[Slot]:
    """The 12 slots filled from cut sheets (a ``None`` sheet leaves its slots missing), with their
    edge and flat-cut defects; on the one-sheet layout a crowded figure
    (:func:`worker.steps.sheets.crowded`) is an ``edge`` defect too."""
    slots = [Slot(index=k, pose=POSES[k], defect="missing") for k in range(plans_poses)]
    for result in results:
        if result is None:
            continue
        tight = set(crowded(result))
        for figure in result.cut.figures:
            slot = slots[result.plan.first_slot + figure.cell]
            slot.figure = figure.rgba
            edge = figure.touches_edge or figure.cell in tight
            slot.defect = "edge" if edge else "flat" if figure.flat_cut else None
    return slots


def _finish(slot: Slot) -> None:
    assert slot.figure is not None
    slot.sticker, slot.outlined, slot.qa = finish_sticker(slot.figure, slot.pose.emoji)


def _finish_all(slots: Sequence[Slot]) -> None:
    for slot in slots:
        _finish(slot)


async def finish_slots(ctx: RenderReport, slots: Sequence[Slot]) -> None:
    """Outline and export every slot with a figure and no sticker yet (in a thread); log each sticker's
    QA numbers (``STICKER_QA``) and mark slivers (coverage under 8 %) ``small``."""
    todo = [slot for slot in slots if slot.figure is not None and slot.sticker is None]
    if not todo:
        return
    async with ctx.stage("finish"):
        await ctx.cpu(_finish_all, todo)
    for slot in todo:
        qa = slot.qa
        assert qa is not None
        ctx.event(
            "STICKER_QA",
            slot=slot.index,
            coverage=round(qa.coverage, 3),
            fringe=round(qa.fringe, 4),
            fits=qa.fits,
            bytes=qa.bytes,
            despilled=qa.despilled,
        )
        if qa.coverage < MIN_COVERAGE and slot.defect is None:
            slot.defect = "small"


def stickers_of(slots: Sequence[Slot]) -> list[Sticker]:
    """The finished stickers in pack order.

    Raises:
        ValueError: a slot has no sticker (a bug: callers check for missing figures first).
    """
    stickers = []
    for slot in slots:
        if slot.sticker is None:
            raise ValueError(f"slot {slot.index} has no sticker")
        stickers.append(slot.sticker)
    return stickers
