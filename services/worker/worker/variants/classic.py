"""Classic and hybrid paths (``LIKENESS_MODE=classic|hybrid``, spec/002): the selfie and the face crop
only, no anchor; sheet 1 first, the rest in parallel with sheet 1 as a reference.

- classic: identity QA per sheet against the selfie; skin untouched.
- hybrid: a ``COLOR LOCK`` block in every prompt; skin and hair moved to targets (the 12 figures' median
  pulled toward the selfie by ``HYBRID_SELFIE_PULL``) and green spill removed; one pack-level QA against
  the selfie.

Both judge each sticker's likeness to the selfie (issue 20). Failures and outliers of either become
single-figure regenerations in both.
"""

from __future__ import annotations

from shared.imaging.lab import hex_to_lab
from worker.context import NoValidSheet, RenderContext, gather_or_cancel
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.providers.images import encode_drawing
from worker.providers.prompts import ColourLock
from worker.steps.colour import hybrid_colours
from worker.steps.inputs import Inputs
from worker.steps.likeness import likeness_outliers, mark_outliers
from worker.steps.qa import identity_outliers
from worker.steps.regen import regenerate
from worker.steps.sheets import PromptTerms, SheetResult, lenient, plan_sheets, sheet_with_attempts
from worker.steps.slots import Slot, finish_slots, slots_from_sheets
from worker.variants.base import Drawn

__all__ = ["draw_classic", "draw_hybrid", "render_classic"]


async def render_classic(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None, *, hybrid: bool
) -> list[Slot]:
    """The 12 finished slots of the classic (or hybrid) path.

    Raises:
        NoValidSheet: a sheet was never valid in ``FIGURE_SHEET_ATTEMPTS`` attempts.
        RetryableJobError: a missing figure could not be drawn.
        ContentRefused: the selfie was refused (the other sheets in flight are cancelled).
        ProviderUnavailable, JobCostExceeded: from the chain.
    """
    s = ctx.settings
    refs = [inputs.selfie, *([face] if face is not None else [])]
    lock = ColourLock(passport.skin_tone_hex, passport.hair_color_hex) if hybrid and passport else None
    terms = PromptTerms(outfit=ctx.outfit, art_style=s.art_style, passport=passport, colour_lock=lock)
    plans = plan_sheets(s.sheet_layout, s.figure_sheet_aspect)

    async def sheet(plan_index: int, extra: list[InputImage]) -> SheetResult | None:
        return await sheet_with_attempts(
            ctx,
            plans[plan_index],
            [*refs, *extra],
            terms,
            attempts=s.figure_sheet_attempts,
            accept=lenient,
        )

    first = await sheet(0, [])
    if first is None:
        raise NoValidSheet("sheet 0 never valid")
    reference = await ctx.cpu(encode_drawing, first.image[..., :3], "reference")
    rest = await gather_or_cancel(sheet(k, [reference]) for k in range(1, len(plans)))
    results = [first, *rest]
    if any(result is None for result in results):
        raise NoValidSheet("a sheet after the first was never valid")
    slots = slots_from_sheets(results)
    if hybrid:
        skin = hex_to_lab(passport.skin_tone_hex) if passport else None
        hair = hex_to_lab(passport.hair_color_hex) if passport and passport.hair_color_hex else None
        await hybrid_colours(
            ctx,
            slots,
            skin,
            hair,
            pull=s.hybrid_selfie_pull,
            strength=s.consistency_skin_strength,
            max_de=s.skin_norm_max_de,
        )
    await finish_slots(ctx, slots)
    finished = [slot for slot in slots if slot.outlined is not None]
    far = await likeness_outliers(ctx, ctx.judge, finished, enabled=s.likeness_qa_enabled)
    if hybrid:
        judged = finished
        mark_outliers(
            judged,
            await identity_outliers(
                ctx,
                inputs.selfie,
                [x.outlined for x in judged if x.outlined is not None],
                qa_identity_enabled=s.qa_identity_enabled,
            ),
            "qa",
        )
    else:
        per_sheet = [
            [
                slot
                for slot in slots[plan.first_slot : plan.first_slot + plan.figures]
                if slot.outlined is not None
            ]
            for plan in plans
        ]
        found = await gather_or_cancel(
            (
                identity_outliers(
                    ctx,
                    inputs.selfie,
                    [x.outlined for x in judged if x.outlined is not None],
                    qa_identity_enabled=s.qa_identity_enabled,
                    kind="sheet_qa",
                    grid=(plan.cols, plan.rows),
                )
                for plan, judged in zip(plans, per_sheet, strict=True)
            )
        )
        for judged, outliers in zip(per_sheet, found, strict=True):
            mark_outliers(judged, outliers, "qa")
    mark_outliers(finished, far, "likeness")
    await regenerate(
        ctx,
        slots,
        refs,
        terms,
        qa_reference=inputs.selfie,
        qa_identity_enabled=s.qa_identity_enabled,
        consistency_max_regen=s.consistency_max_regen,
        edge_regen_timeout_sec=s.edge_regen_timeout_sec,
        consistency_regen_budget_sec=s.consistency_regen_budget_sec,
        judge=ctx.judge,
        likeness_qa_enabled=s.likeness_qa_enabled,
    )
    return slots


async def draw_classic(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> Drawn:
    """The classic path as the registry draws it (:func:`render_classic`)."""
    return Drawn(await render_classic(ctx, inputs, face, passport, hybrid=False), "classic")


async def draw_hybrid(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> Drawn:
    """The hybrid path as the registry draws it (:func:`render_classic` with ``hybrid``)."""
    return Drawn(await render_classic(ctx, inputs, face, passport, hybrid=True), "hybrid")
