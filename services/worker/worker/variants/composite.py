"""Composite path (``STICKER_RENDER_MODE=composite``, or the figure fallback; spec/002): 2 sheets of 6
heads in sequence (sheet 2 with sheet 1 as a reference), each head composed with Pillow onto the outfit's
body template for its pose; ``SHEET_ATTEMPTS`` (2) per sheet with identity QA per sheet against the
selfie (and each head's likeness to it, issue 20), and the best cells of both attempts used (a present
head that QA and the likeness check accept; the earlier attempt
wins a tie). A cell without any usable head fails the attempt."""

from __future__ import annotations

from cartoon.composite import compose_head
from cartoon.poses import POSES
from shared.errors import ErrorClass, RetryableJobError
from worker.context import RenderContext
from worker.providers.answers import Passport
from worker.providers.base import InputImage, ProviderCallError
from worker.providers.images import encode_drawing
from worker.steps.inputs import Inputs
from worker.steps.likeness import likeness_outliers, merge_outliers
from worker.steps.qa import identity_outliers
from worker.steps.sheets import PromptTerms, SheetPlan, draw_sheet, plan_sheets
from worker.steps.slots import Slot, finish_slots
from worker.variants.base import Drawn

__all__ = ["draw_composite", "render_composite"]


async def _heads_of_sheet(
    ctx: RenderContext, plan: SheetPlan, refs: list[InputImage], selfie: InputImage, passport: Passport | None
) -> tuple[dict[int, Slot], InputImage | None]:
    terms = PromptTerms(outfit=ctx.outfit, art_style=ctx.settings.art_style, passport=passport)
    chosen: dict[int, Slot] = {}
    reference: InputImage | None = None
    for attempt in range(1, ctx.settings.sheet_attempts + 1):
        try:
            image, cut = await draw_sheet(ctx, plan, refs, terms, kind="heads")
        except (RetryableJobError, ProviderCallError) as exc:
            ctx.event(
                "SHEET_FAILED", level="warning", sheet=plan.number, attempt=attempt, error=str(exc)[:200]
            )
            continue
        ctx.event("HEAD_SHEET", sheet=plan.number, attempt=attempt, cut=cut.describe())
        reference = reference or await ctx.cpu(encode_drawing, image[..., :3], "reference")
        fresh = []
        for figure in cut.figures:
            index = plan.first_slot + figure.cell
            if index in chosen or figure.touches_edge:
                continue
            pose = POSES[index]
            composed = await ctx.cpu(compose_head, ctx.outfit, pose, figure.rgba)
            fresh.append(Slot(index=index, pose=pose, figure=composed))
        await finish_slots(ctx, fresh)
        far = await likeness_outliers(ctx, ctx.judge, fresh, enabled=ctx.settings.likeness_qa_enabled)
        found = await identity_outliers(
            ctx,
            selfie,
            [s.outlined for s in fresh if s.outlined is not None],
            qa_identity_enabled=ctx.settings.qa_identity_enabled,
            kind="sheet_qa",
            grid=(plan.cols, plan.rows),
        )
        outliers = merge_outliers(found, far)
        for position, slot in enumerate(fresh):
            if position in outliers and attempt < ctx.settings.sheet_attempts:
                slot.reasons = outliers[position]
                continue  # the next attempt may draw this head better
            slot.defect = None
            chosen[slot.index] = slot
        if len(chosen) == plan.figures:
            break
    return chosen, reference


async def render_composite(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> list[Slot]:
    """The 12 finished slots of the composite path.

    Raises:
        RetryableJobError: (``invalid``) a head could not be had in ``SHEET_ATTEMPTS`` attempts.
        ProviderUnavailable, JobCostExceeded: from the chain.
    """
    refs = [inputs.selfie, *([face] if face is not None else [])]
    slots: dict[int, Slot] = {}
    previous: InputImage | None = None
    for plan in plan_sheets("2x6", ctx.settings.figure_sheet_aspect):
        sheet_refs = [*refs, *([previous] if previous is not None else [])]
        chosen, previous = await _heads_of_sheet(ctx, plan, sheet_refs, inputs.selfie, passport)
        slots.update(chosen)
        missing = [plan.first_slot + k for k in range(plan.figures) if plan.first_slot + k not in chosen]
        if missing:
            raise RetryableJobError(
                f"composite: no usable head for stickers {[m + 1 for m in missing]}",
                error_class=ErrorClass.INVALID,
            )
    return [slots[k] for k in sorted(slots)]


async def draw_composite(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> Drawn:
    """The composite path as the registry draws it (:func:`render_composite`)."""
    return Drawn(await render_composite(ctx, inputs, face, passport), "composite")
