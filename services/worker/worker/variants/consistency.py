"""Consistency path (``CONSISTENCY_MODE=1``, spec/002): the anchor portrait is image 1 of every sheet,
the sheets are asked for in parallel with a ``HARD LOCKS`` block; skin normalised to the anchor; one
pack-level QA against the anchor, and each sticker's likeness to the selfie (issue 20); defects and
outliers of either regenerated as single figures."""

from __future__ import annotations

from worker.context import NoValidSheet, RenderContext, gather_or_cancel
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.steps.anchor import Anchor, anchor_portrait
from worker.steps.colour import normalise_pack_skin
from worker.steps.inputs import Inputs
from worker.steps.likeness import likeness_outliers, mark_outliers
from worker.steps.qa import identity_outliers
from worker.steps.regen import regenerate
from worker.steps.sheets import PromptTerms, lenient, plan_sheets, sheet_with_attempts
from worker.steps.slots import Slot, finish_slots, slots_from_sheets
from worker.variants.base import Drawn
from worker.variants.legacy import render_legacy

__all__ = ["draw_consistency", "render_consistency"]


async def render_consistency(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None, anchor: Anchor
) -> list[Slot]:
    """The 12 finished slots of the consistency path.

    Raises:
        NoValidSheet: a sheet was never valid in ``FIGURE_SHEET_ATTEMPTS`` attempts.
        RetryableJobError: a missing figure could not be drawn.
        ContentRefused: the selfie was refused (the other sheets in flight are cancelled).
        ProviderUnavailable, JobCostExceeded: from the chain.
    """
    s = ctx.settings
    refs = [anchor.image, inputs.selfie, *([face] if face is not None else [])]
    terms = PromptTerms(outfit=ctx.outfit, art_style=s.art_style, passport=passport, hard_locks=True)
    plans = plan_sheets(s.sheet_layout, s.figure_sheet_aspect)
    results = await gather_or_cancel(
        sheet_with_attempts(
            ctx,
            plan,
            refs,
            terms,
            attempts=s.figure_sheet_attempts,
            accept=lenient,
        )
        for plan in plans
    )
    if any(result is None for result in results):
        raise NoValidSheet(
            f"sheets never valid: {[p.number for p, r in zip(plans, results, strict=True) if r is None]}"
        )
    slots = slots_from_sheets(results)
    if anchor.skin is not None:
        await normalise_pack_skin(
            ctx,
            slots,
            anchor.skin,
            threshold_de=s.consistency_skin_de_max,
            strength=s.consistency_skin_strength,
            max_de=s.skin_norm_max_de,
        )
    await finish_slots(ctx, slots)
    judged = [slot for slot in slots if slot.outlined is not None]
    outliers, far = await gather_or_cancel(
        [
            identity_outliers(
                ctx,
                anchor.image,
                [slot.outlined for slot in judged if slot.outlined is not None],
                qa_identity_enabled=s.qa_identity_enabled,
            ),
            likeness_outliers(ctx, ctx.judge, judged, enabled=s.likeness_qa_enabled),
        ]
    )
    mark_outliers(judged, outliers, "qa")
    mark_outliers(judged, far, "likeness")
    await regenerate(
        ctx,
        slots,
        refs,
        terms,
        qa_reference=anchor.image,
        qa_identity_enabled=s.qa_identity_enabled,
        consistency_max_regen=s.consistency_max_regen,
        edge_regen_timeout_sec=s.edge_regen_timeout_sec,
        consistency_regen_budget_sec=s.consistency_regen_budget_sec,
        judge=ctx.judge,
        likeness_qa_enabled=s.likeness_qa_enabled,
    )
    return slots


async def draw_consistency(
    ctx: RenderContext, inputs: Inputs, face: InputImage | None, passport: Passport | None
) -> Drawn:
    """The consistency path as the registry draws it: the anchor portrait first, then
    :func:`render_consistency` on it; without an anchor (``ANCHOR_MISSING_LEGACY_PATH``) the legacy path
    draws the pack. ``LIKENESS_NO_ANCHOR_FACE`` when the likeness judge finds no face on the anchor."""
    s = ctx.settings
    anchor = await anchor_portrait(
        ctx,
        ctx.artefacts,
        inputs.selfie,
        face,
        passport,
        outfit=ctx.outfit,
        art_style=s.art_style,
        anchor_retries=s.anchor_retries,
        anchor_verify=s.anchor_verify,
        anchor_verify_timeout_sec=s.anchor_verify_timeout_sec,
        anchor_skin_strength=s.anchor_skin_strength,
        skin_norm_max_de=s.skin_norm_max_de,
    )
    if anchor is not None:
        if ctx.judge is not None and not await ctx.judge.use_anchor(anchor.image.data):
            ctx.event("LIKENESS_NO_ANCHOR_FACE")
        return Drawn(await render_consistency(ctx, inputs, face, passport, anchor), "consistency")
    ctx.event("ANCHOR_MISSING_LEGACY_PATH", level="warning")
    return Drawn(await render_legacy(ctx, inputs, face, passport), "legacy")
