"""Single-figure regeneration (spec/002 "Single-figure regeneration" and its limits).

Every defective slot is redrawn once, all in parallel, as one figure at 1K: QA outliers, likeness outliers
(issue 20: :mod:`worker.steps.likeness`), edge cuts, flat cuts and slivers at most
``CONSISTENCY_MAX_REGEN`` (4) per pack, missing figures outside that cap. Time budgets: edge or flat cut
``EDGE_REGEN_TIMEOUT_SEC`` (35 s), QA or likeness outlier ``CONSISTENCY_REGEN_BUDGET_SEC`` (20 s), missing
figure none. A regenerated figure replaces the original only if a second QA does not reject it and its
likeness is not a defect further from the guest than the original's; a regeneration that fails or runs out
of time leaves the original in place (``CONSISTENCY_REGEN_TIMEOUT``, ``CONSISTENCY_REGEN_FAILED``,
``EDGE_CUT_LEFT``, ``FLAT_CUT_LEFT``). A missing figure that cannot be drawn leaves the pack incomplete:
the attempt fails (``RetryableJobError``, the job's normal retry).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shared.errors import ErrorClass, ProviderUnavailable, RetryableJobError
from worker.context import ProviderCalls, gather_or_cancel
from worker.likeness import PackJudge
from worker.providers.base import InputImage, ProviderCallError
from worker.steps.likeness import judge_slots
from worker.steps.qa import identity_outliers
from worker.steps.sheets import PromptTerms, draw_single
from worker.steps.slots import Slot, finish_slots

__all__ = ["regenerate"]

_LEFT_MARKER = {"edge": "EDGE_CUT_LEFT", "flat": "FLAT_CUT_LEFT"}
# The vision QA's outliers before likeness's: the score is calibrated on offline drawings only
# (shared/likeness.py), so under the cap it never pushes out what the paid QA named.
_ORDER = {"missing": 0, "small": 0, "edge": 1, "flat": 1, "qa": 2, "likeness": 3}


async def _draw_one(
    calls: ProviderCalls, slot: Slot, refs: Sequence[InputImage], terms: PromptTerms
) -> npt.NDArray[np.uint8] | None:
    _image, cut = await draw_single(calls, "figure", slot.pose.name, refs, terms)
    if not cut.figures or cut.edge_cut or cut.figures[0].flat_cut:
        return None
    return cut.figures[0].rgba


async def regenerate(
    calls: ProviderCalls,
    slots: Sequence[Slot],
    refs: Sequence[InputImage],
    terms: PromptTerms,
    *,
    qa_reference: InputImage | None,
    qa_identity_enabled: bool,
    consistency_max_regen: int,
    edge_regen_timeout_sec: float,
    consistency_regen_budget_sec: float,
    judge: PackJudge | None = None,
    likeness_qa_enabled: bool = True,
) -> None:
    """Redraw the defective slots (in place) under the caps and budgets, then finish them.

    Args:
        slots: the pack's 12 slots (defects set, stickers finished where there is a figure).
        refs: the reference images of a single-figure request (as for the path's sheets).
        terms: the path's prompt terms (as for its sheets).
        qa_reference: image 1 of the second QA (``None``: no second QA).
        qa_identity_enabled: ``QA_IDENTITY_ENABLED`` (off: the second QA accepts every figure).
        consistency_max_regen: redraws of capped defects per pack (``CONSISTENCY_MAX_REGEN``, 4).
        edge_regen_timeout_sec: an edge or flat cut's budget (``EDGE_REGEN_TIMEOUT_SEC``, 35 s).
        consistency_regen_budget_sec: a QA or likeness outlier's budget (``CONSISTENCY_REGEN_BUDGET_SEC``,
            20 s).
        judge: the job's likeness judge: every regenerated figure is scored, and one further from the
            guest than the original it would replace, with a likeness defect, is rejected
            (``REGEN_REJECTED``); ``None``: not scored.
        likeness_qa_enabled: ``LIKENESS_QA_ENABLED`` (off: scored, never rejected for likeness).

    Raises:
        RetryableJobError: (``invalid``) a missing figure could not be drawn.
        ProviderUnavailable: a missing figure could not be drawn because no provider serves.
        JobCostExceeded: the job's ceiling was reached.
        ContentRefused: the selfie was refused (the other regenerations in flight are cancelled).
    """
    defective = sorted(
        (s for s in slots if s.defect is not None), key=lambda s: (_ORDER[s.defect or "qa"], s.index)
    )
    capped = [s for s in defective if s.defect not in ("missing", "small")]
    chosen = [s for s in defective if s.defect in ("missing", "small")]
    chosen += capped[:consistency_max_regen]
    for slot in capped[consistency_max_regen:]:
        calls.event("REGEN_CAP_REACHED", level="warning", slot=slot.index, defect=slot.defect)
    if not chosen:
        return

    def budget(slot: Slot) -> float | None:
        if slot.defect in ("edge", "flat"):
            return edge_regen_timeout_sec
        if slot.defect in ("qa", "likeness"):
            return consistency_regen_budget_sec
        return None

    async def one(slot: Slot) -> npt.NDArray[np.uint8] | None:
        try:
            return await asyncio.wait_for(_draw_one(calls, slot, refs, terms), budget(slot))
        except TimeoutError:
            calls.event("CONSISTENCY_REGEN_TIMEOUT", level="warning", slot=slot.index, defect=slot.defect)
        except (RetryableJobError, ProviderCallError) as exc:
            calls.event("CONSISTENCY_REGEN_FAILED", level="warning", slot=slot.index, error=str(exc)[:200])
        except ProviderUnavailable as exc:
            if slot.figure is None:
                raise
            calls.event("CONSISTENCY_REGEN_FAILED", level="warning", slot=slot.index, error=str(exc)[:200])
        return None

    async with calls.stage("regen"):
        drawn = await gather_or_cancel(one(slot) for slot in chosen)
    fresh: list[Slot] = []
    for slot, figure in zip(chosen, drawn, strict=True):
        if figure is None:
            if slot.figure is None:
                raise RetryableJobError(
                    f"the missing figure {slot.index + 1} ({slot.pose.name}) could not be drawn",
                    error_class=ErrorClass.INVALID,
                )
            if slot.defect in _LEFT_MARKER:
                calls.event(_LEFT_MARKER[slot.defect], level="warning", slot=slot.index)
            continue
        fresh.append(Slot(index=slot.index, pose=slot.pose, figure=figure, regenerated=True))
    await finish_slots(calls, fresh)
    if judge is not None:
        await judge_slots(calls, judge, fresh)
    rejected: dict[int, list[str]] = {}
    replaceable = [f for f in fresh if slots[f.index].figure is not None]
    if qa_reference is not None and replaceable:
        outlined = [f.outlined for f in replaceable if f.outlined is not None]
        found = await identity_outliers(
            calls, qa_reference, outlined, qa_identity_enabled=qa_identity_enabled, kind="pack_qa"
        )
        rejected = {replaceable[k].index: reasons for k, reasons in found.items()}
    for new in replaceable if likeness_qa_enabled else ():
        before, after = slots[new.index].likeness, new.likeness
        if after is not None and after.defect and before is not None and after.worse_than(before):
            rejected.setdefault(new.index, []).append(after.defect)
    for new in fresh:
        old = slots[new.index]
        if new.index in rejected:
            calls.event("REGEN_REJECTED", slot=new.index, reasons=rejected[new.index])
            continue
        old.figure, old.sticker, old.outlined, old.qa = new.figure, new.sticker, new.outlined, new.qa
        old.likeness = new.likeness
        old.defect, old.regenerated = None, True
        calls.event("REGENERATED", slot=new.index)
