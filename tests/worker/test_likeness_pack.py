"""Likeness on real packs (issue 20): the offline ``local`` provider draws each guest's own face, the
worker's scorer (a real child process with dlib's models) judges the stickers.

- A pack drawn from guest A is flagged against guest B's selfie and passes against A's own (so the
  check can fail).
- Every sticker of a rendered pack carries a distance or a stated reason, and the histogram is observed.
- The descriptors run in the scoring process, never in this one (so never on the event loop).
- A killed scoring process costs the stickers it was judging their score (``scorer_unavailable``), never
  the job; the next call starts a fresh process.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import TypeVar

import numpy as np
import pytest
from PIL import Image
from prometheus_client import REGISTRY

import shared.imaging.faces
from cartoon.poses import POSES
from shared.imaging.decode import decode_rgb
from shared.imaging.faces import detect_faces, largest_face
from shared.outfits import get_outfit, load_catalog
from tests.simulators.ai.helpers import photo
from tests.worker.render_helpers import settings
from worker.context import MemoryArtefacts, RenderContext
from worker.cost import CostLedger, MemoryUsageStore
from worker.likeness import (
    EYES_HIDDEN,
    NO_FACE_FOUND,
    SCORER_UNAVAILABLE,
    LikenessScorer,
    PackJudge,
    ScorerUnavailable,
    eyes_hidden,
)
from worker.providers.chain import ChainPolicy, ProviderChain
from worker.providers.images import encode_photo
from worker.providers.local import LocalProvider
from worker.render import Pack, render_job
from worker.steps.likeness import likeness_outliers, mark_outliers
from worker.steps.regen import regenerate
from worker.steps.sheets import PromptTerms
from worker.steps.slots import Slot

GUEST_A = "face-older-man-white-hair.jpg"
GUEST_B = "face-woman-red-hat.png"
REASONS = {NO_FACE_FOUND, EYES_HIDDEN}
T = TypeVar("T")


@pytest.fixture(scope="module")
def scorer() -> Iterator[LikenessScorer]:
    one = LikenessScorer()
    yield one
    asyncio.run(one.close())


def context(variant: str, selfie: bytes, scorer: LikenessScorer | None, **overrides: object) -> RenderContext:
    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return True

    async def no_wait(_seconds: float) -> None:
        return None

    chosen = settings(variant, **overrides)
    return RenderContext(
        job_id=None,
        selfie=selfie,
        outfit=get_outfit("chef"),
        settings=chosen,
        chain=ProviderChain(
            [LocalProvider(load_catalog())],
            ChainPolicy(),
            image_slots=asyncio.Semaphore(9),
            alert=alert,
            sleep=no_wait,
        ),
        ledger=CostLedger(
            MemoryUsageStore(),
            job_id=None,
            created_at=datetime.now(UTC),
            max_cost_usd=chosen.job_max_cost_usd,
        ),
        artefacts=MemoryArtefacts(),
        cut_slots=asyncio.Semaphore(2),
        alert=alert,
        likeness=scorer,
    )


@pytest.fixture(scope="module")
def pack_a(scorer: LikenessScorer) -> Pack:
    """Guest A's hybrid pack, scored (likeness QA off, so the drawer's own stickers are kept)."""
    return asyncio.run(render_job(context("hybrid", photo(GUEST_A), scorer, likeness_qa_enabled=False)))


def judge_for(scorer: LikenessScorer, name: str) -> PackJudge:
    selfie = photo(name)
    return PackJudge(scorer, selfie, largest_face(detect_faces(decode_rgb(selfie))))


class Report:
    """A render report that keeps its events (the steps' narrow view of a render)."""

    def __init__(self) -> None:
        self.events: list[dict[str, object]] = []

    def event(self, marker: str, *, level: str = "info", **fields: object) -> None:
        self.events.append({"event": marker, **fields})

    @contextlib.asynccontextmanager
    async def stage(self, name: str) -> AsyncIterator[None]:
        yield

    async def cpu(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(fn, *args)


def slots_of(pack: Pack) -> list[Slot]:
    pairs = enumerate(zip(POSES, pack.stickers, strict=True))
    return [Slot(index=k, pose=pose, sticker=sticker) for k, (pose, sticker) in pairs]


async def test_a_pack_is_flagged_against_another_guest_and_not_against_its_own(
    scorer: LikenessScorer, pack_a: Pack
) -> None:
    shown = [k for k, pose in enumerate(POSES) if not eyes_hidden(pose)]
    own_slots, other_slots = slots_of(pack_a), slots_of(pack_a)
    report = Report()
    own = await likeness_outliers(report, judge_for(scorer, GUEST_A), own_slots, enabled=True)
    other = await likeness_outliers(report, judge_for(scorer, GUEST_B), other_slots, enabled=True)
    assert own == {}
    assert set(shown) <= set(other), f"only {sorted(other)} of the eyes-shown stickers {shown} were flagged"
    assert all(reasons == ["likeness_far"] for k, reasons in other.items() if k in shown)
    flagged = [e for e in report.events if e["event"] == "LIKENESS_OUTLIERS"]
    assert len(flagged) == 1 and flagged[0]["acted"] is True


async def test_switched_off_the_check_scores_but_flags_nothing(scorer: LikenessScorer, pack_a: Pack) -> None:
    report = Report()
    slots = slots_of(pack_a)
    found = await likeness_outliers(report, judge_for(scorer, GUEST_B), slots, enabled=False)
    assert found == {}
    assert all(slot.likeness is not None for slot in slots)
    assert [e["acted"] for e in report.events if e["event"] == "LIKENESS_OUTLIERS"] == [False]


def test_every_sticker_has_a_likeness_or_a_reason(pack_a: Pack) -> None:
    assert len(pack_a.stickers) == 12
    for sticker, pose in zip(pack_a.stickers, POSES, strict=True):
        assert (sticker.likeness is None) != (sticker.likeness_reason is None), pose.name
        if sticker.likeness is None:
            assert sticker.likeness_reason in REASONS, pose.name
            assert sticker.likeness_reason != NO_FACE_FOUND or not eyes_hidden(pose)
    judged = [s.likeness for s in pack_a.stickers if s.likeness is not None]
    assert len(judged) >= 9, "the local drawer's faces are found on the eyes-shown poses"
    assert REGISTRY.get_sample_value("stk_sticker_likeness_count", {"variant": "hybrid"}) >= len(judged)


async def test_the_consistency_path_measures_the_anchor_too(scorer: LikenessScorer) -> None:
    ctx = context("consistency", photo(GUEST_A), scorer)
    pack = await render_job(ctx)
    (scored,) = [e for e in ctx.events if e["event"] == "LIKENESS"][-1:]
    assert scored["anchor"], "no sticker was compared with the anchor"
    assert all(s.likeness is not None or s.likeness_reason in REASONS for s in pack.stickers)


async def test_without_a_scorer_every_sticker_says_so() -> None:
    pack = await render_job(context("legacy", photo(GUEST_A), None))
    assert {(s.likeness, s.likeness_reason) for s in pack.stickers} == {(None, "not_scored")}


async def test_descriptors_run_in_the_scoring_process_not_in_this_one(
    scorer: LikenessScorer, pack_a: Pack
) -> None:
    """Every thread of this process is watched (a profile hook on each): the detector and the descriptor
    are never called here, yet the stickers get their distances. The bad case shows the watch works."""
    watched = {shared.imaging.faces.face_descriptor.__code__, shared.imaging.faces.detect_faces.__code__}
    seen: list[str] = []

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code in watched:
            seen.append(frame.f_code.co_name)

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        slots = slots_of(pack_a)
        judge = judge_for(scorer, GUEST_A)  # detects the selfie's face here, in the test: the bad case
        assert seen == ["detect_faces"]
        seen.clear()
        await likeness_outliers(Report(), judge, slots, enabled=True)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert seen == []
    assert sum(slot.likeness is not None and slot.likeness.distance is not None for slot in slots) >= 9
    assert scorer.child_pids() and os.getpid() not in scorer.child_pids()


async def test_a_killed_scoring_process_costs_a_score_not_the_job(pack_a: Pack) -> None:
    scorer = LikenessScorer()
    try:
        judge = judge_for(scorer, GUEST_A)
        sticker = pack_a.stickers[0]
        first = await judge.sticker(sticker.png, POSES[0])
        assert first.distance is not None
        (pid,) = scorer.child_pids()
        os.kill(pid, signal.SIGKILL)
        lost = await judge.sticker(sticker.png, POSES[0])
        assert (lost.distance, lost.reason, lost.defect) == (None, SCORER_UNAVAILABLE, None)
        # the rest of this pack is not scored (a hung child costs a pack one timeout, not twelve) ...
        rest = await judge.sticker(sticker.png, POSES[0])
        assert rest.reason == SCORER_UNAVAILABLE
        # ... and the next pack gets a fresh process
        again = await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0])
        assert again.distance == pytest.approx(first.distance, abs=1e-4)
        assert scorer.child_pids() and pid not in scorer.child_pids()
    finally:
        await scorer.close()


async def _until(check: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    """Poll ``check`` (a state another process changes) until true; fail naming ``what`` after
    ``limit_s`` (a limit for a hang, not a timing assertion)."""
    for _ in range(int(limit_s / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


async def test_a_scoring_process_that_died_between_packs_is_replaced(pack_a: Pack) -> None:
    """The child dies while idle (an OOM kill between jobs): the pool notices and is broken; the next
    pack must get a fresh process, not ``scorer_unavailable`` for ever."""
    scorer = LikenessScorer()
    try:
        sticker = pack_a.stickers[0]
        first = await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0])
        (pid,) = scorer.child_pids()
        pool = scorer._pool
        os.kill(pid, signal.SIGKILL)
        await _until(lambda: bool(getattr(pool, "_broken", False)), "the pool notices its dead child")
        outcomes = [await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0]) for _ in range(2)]
        assert outcomes[-1].distance == pytest.approx(first.distance, abs=1e-4), outcomes
    finally:
        await scorer.close()


async def test_a_hung_scoring_process_is_killed_and_replaced(pack_a: Pack) -> None:
    scorer = LikenessScorer(timeout_s=1.0)
    try:
        sticker = pack_a.stickers[0]
        with pytest.raises(ScorerUnavailable, match="no answer within"):
            await scorer._run(time.sleep, 600)  # a child that never answers
        assert scorer.child_pids() == []  # the hung pool was dropped ...
        scorer._timeout_s = 60.0  # a fresh child loads its models first (~1.5 s): past the test's 1 s
        judged = await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0])
        assert judged.distance is not None  # ... and the next pack is scored by a fresh one
    finally:
        await scorer.close(wait_s=5.0)


async def test_an_error_in_the_child_costs_that_answer_only(pack_a: Pack) -> None:
    scorer = LikenessScorer()
    try:
        sticker = pack_a.stickers[0]
        first = await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0])
        (pid,) = scorer.child_pids()
        with pytest.raises(ScorerUnavailable, match="ValueError"):
            await scorer._run(int, "not a number")  # raises in the child
        broken = await judge_for(scorer, GUEST_A).sticker(b"not a png", POSES[0])
        assert broken.reason == SCORER_UNAVAILABLE
        again = await judge_for(scorer, GUEST_A).sticker(sticker.png, POSES[0])
        assert again.distance == pytest.approx(first.distance, abs=1e-4)
        assert scorer.child_pids() == [pid]  # the same child served all of it
    finally:
        await scorer.close()


async def test_a_render_survives_a_scoring_process_killed_mid_pack() -> None:
    scorer = LikenessScorer()
    killed = asyncio.Event()

    async def killer() -> None:
        while not scorer.child_pids():
            await asyncio.sleep(0.01)
        os.kill(scorer.child_pids()[0], signal.SIGKILL)
        killed.set()

    try:
        task = asyncio.create_task(killer())
        pack = await render_job(context("legacy", photo(GUEST_A), scorer))
        await task
    finally:
        await scorer.close()
    assert killed.is_set() and len(pack.stickers) == 12
    assert any(s.likeness_reason == SCORER_UNAVAILABLE for s in pack.stickers)


async def test_far_stickers_are_regenerated_beside_qa_outliers_under_the_cap(
    scorer: LikenessScorer, pack_a: Pack
) -> None:
    """Guest A's pack judged as if it were guest B's: every eyes-shown sticker is a likeness outlier, the
    regeneration redraws ``CONSISTENCY_MAX_REGEN`` of them (the rest logged ``REGEN_CAP_REACHED``) and
    scores each redraw again."""
    ctx = context("hybrid", photo(GUEST_A), scorer)
    judge = judge_for(scorer, GUEST_B)
    slots = slots_of(pack_a)
    for slot in slots:
        assert slot.sticker is not None
        slot.figure = sticker_rgba(slot.sticker.png)
    far = await likeness_outliers(ctx, judge, slots, enabled=True)
    mark_outliers(slots, far, "likeness")
    assert len(far) >= 9 and all(slots[k].defect == "likeness" for k in far)
    await regenerate(
        ctx,
        slots,
        [encode_photo(decode_rgb(photo(GUEST_A)))],
        PromptTerms(outfit=ctx.outfit, art_style="cute_cartoon", passport=None),
        qa_reference=None,
        qa_identity_enabled=False,
        consistency_max_regen=4,
        edge_regen_timeout_sec=35,
        consistency_regen_budget_sec=20,
        judge=judge,
    )
    capped = [e["slot"] for e in ctx.events if e["event"] == "REGEN_CAP_REACHED"]
    redrawn = [e["slot"] for e in ctx.events if e["event"] in ("REGENERATED", "REGEN_REJECTED")]
    assert len(redrawn) == 4 and len(capped) == len(far) - 4
    assert set(redrawn) | set(capped) == set(far)
    # the redraws are A again: still far from B, so each was scored and either kept (not worse) or rejected
    assert all(slots[k].likeness is not None and slots[k].likeness.defect == "likeness_far" for k in redrawn)


def sticker_rgba(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGBA"), np.uint8)
