"""Legacy figure path (``CONSISTENCY_MODE=0``, or the anchor failed; spec/002): the selfie and face crop, 2
sheets of 6 in sequence, sheet 2 with sheet 1 as a reference; strict sheet validity (any missing or extra
figure burns one of ``FIGURE_SHEET_ATTEMPTS``); identity QA and likeness (issue 20) per sheet against the
selfie and at most one sheet regeneration for QA, likeness or edge defects, kept only when it has fewer
defects. No single-figure regeneration: an edge cut that stays is logged ``EDGE_CUT_LEFT``."""

from __future__ import annotations

from worker.context import NoValidSheet, RenderContext
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.providers.images import encode_drawing
from worker.steps.inputs import Inputs
from worker.steps.likeness import likeness_outliers, merge_outliers
from worker.steps.qa import identity_outliers
from worker.steps.sheets import (
    PromptTerms,
    SheetPlan,
    SheetResult,
    plan_sheets,
    sheet_with_attempts,
    strict,
)
from worker.steps.slots import Slot, finish_slots, slots_from_sheets
from worker.variants.base import Drawn

__all__ = ["draw_legacy", "render_legacy"]


async def _defects(ctx: RenderContext, result: SheetResult, selfie: InputImage) -> tuple[list[Slot], int]:
    """The sheet's finished slots and its defect count (edge or flat cuts + QA or likeness outliers)."""
    slots = [s for s in slots_from_sheets([result]) if s.figure is not None]
    await finish_slots(ctx, slots)
    far = await likeness_outliers(ctx, ctx.judge, slots, enabled=ctx.settings.likeness_qa_enabled)
    found = await identity_outliers(
        ctx,
        selfie,
        [s.outlined for s in slots if s.outlined is not None],
        qa_identity_enabled=ctx.settings.qa_identity_enabled,
        kind="sheet_qa",
        grid=(result.plan.cols, result.plan.rows),
    )
    outliers = merge_outliers(found, far)
    for position, reasons in outliers.items():
        slots[position].reasons = reasons
    defects = sum(1 for s in slots if s.defect in ("edge", "flat")) + len(outliers)
    return slots, defects


async def render_legacy(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> list[Slot]:
    """The 12 finished slots of the legacy figure path.

    Raises:
        NoValidSheet: a sheet was never valid in ``FIGURE_SHEET_ATTEMPTS`` attempts.
        ProviderUnavailable, JobCostExceeded: from the chain.
    """
    s = ctx.settings
    refs = [inputs.selfie, *([face] if face is not None else [])]
    terms = PromptTerms(outfit=ctx.outfit, art_style=s.art_style, passport=passport)
    plans: list[SheetPlan] = plan_sheets("2x6", s.figure_sheet_aspect)
    slots: list[Slot] = []
    previous: InputImage | None = None
    for plan in plans:
        sheet_refs = [*refs, *([previous] if previous is not None else [])]
        result = await sheet_with_attempts(
            ctx, plan, sheet_refs, terms, attempts=s.figure_sheet_attempts, accept=strict
        )
        if result is None:
            raise NoValidSheet(f"sheet {plan.number} never valid")
        sheet_slots, defects = await _defects(ctx, result, inputs.selfie)
        if defects and result.attempts < s.figure_sheet_attempts:
            ctx.event("SHEET_REGENERATED", sheet=plan.number, defects=defects)
            again = await sheet_with_attempts(ctx, plan, sheet_refs, terms, attempts=1, accept=strict)
            if again is not None:
                again_slots, again_defects = await _defects(ctx, again, inputs.selfie)
                if again_defects < defects:
                    result, sheet_slots, defects = again, again_slots, again_defects
        for slot in sheet_slots:
            if slot.defect == "edge":
                ctx.event("EDGE_CUT_LEFT", level="warning", slot=slot.index)
            elif slot.defect == "flat":
                ctx.event("FLAT_CUT_LEFT", level="warning", slot=slot.index)
            slot.defect = None
        slots += sheet_slots
        previous = await ctx.cpu(encode_drawing, result.image[..., :3], "reference")
    return slots


async def draw_legacy(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> Drawn:
    """The legacy figure path as the registry draws it (:func:`render_legacy`)."""
    return Drawn(await render_legacy(ctx, inputs, face, passport), "legacy")
