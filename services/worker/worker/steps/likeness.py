"""Likeness in pack QA (issue 20): each finished sticker's face against the guest's selfie
(:class:`worker.likeness.PackJudge`, in the scoring process), beside the vision QA's outliers.

A sticker with no face where one is expected (``no_face_found``), or a face over its bound
(``likeness_far``; :data:`shared.likeness.LIKENESS_MAX_DISTANCE`, or
:data:`shared.likeness.LIKENESS_MAX_DISTANCE_EYES_HIDDEN` for a pose that hides the eyes) is an outlier
in the same shape as :func:`worker.steps.qa.identity_outliers` returns, so the variants merge both and the
existing caps and budgets apply (:mod:`worker.steps.regen`). ``LIKENESS_QA_ENABLED=false`` still scores
every sticker (stored, logged, observed) but makes no outliers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from shared import metrics
from worker.context import RenderReport, gather_or_cancel
from worker.likeness import PackJudge
from worker.steps.slots import Defect, Slot

__all__ = [
    "NOT_SCORED",
    "attach_likeness",
    "judge_slots",
    "likeness_outliers",
    "mark_outliers",
    "merge_outliers",
]

#: The reason of a sticker rendered without a scorer (a render context built without one: tests, tools).
NOT_SCORED = "not_scored"


async def judge_slots(calls: RenderReport, judge: PackJudge, slots: Sequence[Slot]) -> None:
    """Judge every slot of ``slots`` with a finished sticker and no judgement yet (in place,
    :attr:`Slot.likeness`), all submitted at once to the scoring process; logs ``LIKENESS`` with each
    judged slot's selfie distance (or reason) and anchor distance. Never raises for the scorer's sake."""
    todo = [slot for slot in slots if slot.sticker is not None and slot.likeness is None]
    if not todo:
        return
    async with calls.stage("likeness"):
        found = await gather_or_cancel(judge.sticker(s.sticker.png, s.pose) for s in todo if s.sticker)
    for slot, judgement in zip(todo, found, strict=True):
        slot.likeness = judgement
    pairs = list(zip(todo, found, strict=True))
    calls.event(
        "LIKENESS",
        distances={s.index: j.distance if j.distance is not None else j.reason for s, j in pairs},
        anchor={s.index: j.anchor_distance for s, j in pairs if j.anchor_distance is not None},
    )


async def likeness_outliers(
    calls: RenderReport, judge: PackJudge | None, judged: Sequence[Slot], *, enabled: bool
) -> dict[int, list[str]]:
    """Which of ``judged`` (finished slots) are likeness outliers.

    Args:
        judge: the job's judge (``None``: no scorer, no outliers).
        judged: the slots to judge, in the order the caller's positions refer to.
        enabled: ``LIKENESS_QA_ENABLED`` (off: judged and logged, no outliers).

    Returns:
        0-based positions in ``judged`` → reasons (``likeness_far``, ``no_face_found``); logs
        ``LIKENESS_OUTLIERS`` (1-based slot numbers, reasons, distances) when there are any.
    """
    if judge is None:
        return {}
    await judge_slots(calls, judge, judged)
    outliers: dict[int, list[str]] = {}
    logged: dict[int, dict[str, object]] = {}
    for position, slot in enumerate(judged):
        found = slot.likeness
        if found is not None and found.defect is not None:
            outliers[position] = [found.defect]
            logged[slot.index + 1] = {"why": found.defect, "distance": found.distance, "bound": found.bound}
    if outliers:
        level = "warning" if enabled else "info"
        calls.event("LIKENESS_OUTLIERS", level=level, acted=enabled, outliers=logged)
    return outliers if enabled else {}


def mark_outliers(judged: Sequence[Slot], outliers: Mapping[int, list[str]], defect: Defect) -> None:
    """Give the slots at ``outliers``' positions in ``judged`` their reasons (added) and, unless they
    already have one, the ``defect`` (``qa``, ``likeness``) that makes them regeneration candidates."""
    for position, reasons in outliers.items():
        slot = judged[position]
        slot.reasons = [*slot.reasons, *(r for r in reasons if r not in slot.reasons)]
        slot.defect = slot.defect or defect


def merge_outliers(*found: Mapping[int, list[str]]) -> dict[int, list[str]]:
    """Positions → reasons of several checks (vision QA, likeness) as one outlier map, reasons in order."""
    merged: dict[int, list[str]] = {}
    for one in found:
        for position, reasons in one.items():
            merged.setdefault(position, [])
            merged[position] += [r for r in reasons if r not in merged[position]]
    return dict(sorted(merged.items()))


async def attach_likeness(
    calls: RenderReport, judge: PackJudge | None, slots: Sequence[Slot], *, variant: str
) -> None:
    """Judge what is not judged yet, then give each slot's sticker its likeness (in place:
    :attr:`worker.imaging.finish.Sticker.likeness` / ``likeness_reason``; :data:`NOT_SCORED` without a
    judge) and observe each judged distance in ``stk_sticker_likeness{variant}``; logs
    ``LIKENESS_PACK``."""
    if judge is not None:
        await judge_slots(calls, judge, slots)
    for slot in slots:
        if slot.sticker is None:
            continue
        if slot.likeness is None:
            slot.sticker = dataclasses.replace(slot.sticker, likeness=None, likeness_reason=NOT_SCORED)
            continue
        slot.sticker = dataclasses.replace(
            slot.sticker, likeness=slot.likeness.judged, likeness_reason=slot.likeness.reason
        )
        if slot.likeness.judged is not None:
            metrics.STICKER_LIKENESS.labels(variant=variant).observe(slot.likeness.judged)
    stickers = [s.sticker for s in slots if s.sticker is not None]
    values = [s.likeness for s in stickers if s.likeness is not None]
    calls.event(
        "LIKENESS_PACK",
        variant=variant,
        judged=len(values),
        max=max(values, default=None),
        reasons={k: s.likeness_reason for k, s in enumerate(stickers) if s.likeness_reason},
    )
