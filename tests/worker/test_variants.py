"""Each variant end to end on the AI provider simulator through the real SDKs (spec/002 "How the variants
differ"): the calls it makes, the stickers it returns, and the rules of its steps: anchor verify with one
retry, artefacts reused by a job retry, the passport's two attempts, single-figure regeneration of missing,
edge-cut and outlier figures with the cap and the second QA, figure → composite fallback."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cartoon.poses import POSES
from shared.errors import ContentRefused, ErrorClass, RetryableJobError
from tests.simulators.ai.helpers import RunningAiSim
from worker.context import MemoryArtefacts

from .render_helpers import Rendered, render, sticker_sizes

pytestmark = pytest.mark.integration


def kinds(calls: list[dict[str, Any]]) -> Counter[str]:
    return Counter(call["kind"] for call in calls)


def assert_pack(result: Rendered) -> None:
    assert result.error is None, result.error
    assert result.pack is not None
    assert [s.emoji for s in result.pack.stickers] == [p.emoji for p in POSES]
    assert all(max(size) == 512 and min(size) <= 512 for size in sticker_sizes(result.pack))


async def test_consistency_draws_an_anchor_and_all_sheets_with_it_as_image_1(aisim: RunningAiSim) -> None:
    result = await render(aisim, "consistency")
    assert_pack(result)
    calls = await aisim.calls()
    assert kinds(calls) == Counter(passport=1, anchor=1, verify=1, sheet=3, pack_qa=1)
    sheets = [c for c in calls if c["kind"] == "sheet"]
    assert all(c["roles"] == ["anchor", "selfie", "face"] and c["size"] == "2K" for c in sheets)
    anchor = next(c for c in calls if c["kind"] == "anchor")
    assert (anchor["size"], anchor["aspect"]) == ("1K", "1:1")
    assert result.events("ANCHOR_SKIN_SHIFT")


async def test_classic_draws_sheet_1_first_then_the_rest_with_it_and_checks_each_sheet(
    aisim: RunningAiSim,
) -> None:
    result = await render(aisim, "classic")
    assert_pack(result)
    calls = await aisim.calls()
    assert kinds(calls) == Counter(passport=1, sheet=3, sheet_qa=3)
    sheets = [c for c in calls if c["kind"] == "sheet"]
    assert sheets[0]["roles"] == ["selfie", "face"]
    assert [c["roles"] for c in sheets[1:]] == [["selfie", "face", "reference"]] * 2


async def test_hybrid_locks_colours_and_checks_the_pack_once_through_openai(aisim: RunningAiSim) -> None:
    result = await render(aisim, "hybrid", providers=("openai",))
    assert_pack(result)
    calls = await aisim.calls()
    assert {c["provider"] for c in calls} == {"openai"}
    assert kinds(calls) == Counter(passport=1, sheet=3, pack_qa=1)
    assert result.events("HYBRID_COLOUR")


async def test_legacy_draws_two_sheets_of_six_in_sequence(aisim: RunningAiSim) -> None:
    result = await render(aisim, "legacy")
    assert_pack(result)
    calls = await aisim.calls()
    assert [c["kind"] for c in calls] == ["passport", "sheet", "sheet_qa", "sheet", "sheet_qa"]
    sheets = [c for c in calls if c["kind"] == "sheet"]
    assert [c["aspect"] for c in sheets] == ["2:3", "2:3"]  # FIGURE_SHEET_ASPECT: 2 columns × 3 rows
    assert sheets[1]["roles"][-1] == "reference"


async def test_composite_composes_two_sheets_of_heads_onto_body_templates(aisim: RunningAiSim) -> None:
    result = await render(aisim, "composite")
    assert_pack(result)
    assert [c["kind"] for c in await aisim.calls()] == ["passport", "heads", "sheet_qa", "heads", "sheet_qa"]


async def test_a_verified_anchor_mismatch_draws_exactly_one_more_anchor(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/verify", {"mismatches": ["hair_length"], "count": 1})
    result = await render(aisim, "consistency")
    assert_pack(result)
    assert kinds(await aisim.calls())["anchor"] == 2
    assert [e["event"] for e in result.ctx.events if e["event"].startswith("ANCHOR_")][:2] == [
        "ANCHOR_MISMATCH",
        "ANCHOR_VERIFIED",
    ]


async def test_a_job_retry_reuses_the_passport_and_the_anchor(aisim: RunningAiSim) -> None:
    artefacts = MemoryArtefacts()
    assert_pack(await render(aisim, "consistency", artefacts=artefacts))
    assert set(artefacts.items) == {"passport", "anchor"}
    aisim.state.reset()
    again = await render(aisim, "consistency", artefacts=artefacts)
    assert_pack(again)
    assert kinds(await aisim.calls()) == Counter(sheet=3, pack_qa=1)
    assert again.events("PASSPORT_REUSED") and again.events("ANCHOR_REUSED")


async def test_without_a_passport_after_two_refusals_the_job_goes_on(aisim: RunningAiSim) -> None:
    await aisim.fault("safety", request="passport", count=2)
    result = await render(aisim, "classic")
    assert_pack(result)
    assert len(result.events("APPEARANCE_ATTEMPT_FAILED")) == 2 and result.events("APPEARANCE_FAILED")


async def test_missing_and_edge_cut_figures_become_single_figure_regenerations(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing", "edge_cut"], "count": 1})
    result = await render(aisim, "consistency")
    assert_pack(result)
    figures = [c for c in await aisim.calls() if c["kind"] == "figure"]
    assert len(figures) == 2 and all(c["size"] == "1K" for c in figures)
    regenerated = sorted(e["slot"] for e in result.events("REGENERATED"))
    sheet = next(e["sheet"] for e in result.events("SHEET") if "missing [3]" in e["cut"])
    assert regenerated == [4 * sheet, 4 * sheet + 3]  # the edge-cut first cell and the missing last one


async def test_a_missing_figure_that_cannot_be_drawn_fails_the_attempt(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing"], "count": 1})
    await aisim.fault("no_image", request="figure", count=5)  # (a refusal would stop the job: content)
    result = await render(aisim, "consistency")
    assert isinstance(result.error, RetryableJobError) and result.error.error_class is ErrorClass.INVALID


async def test_a_refused_regeneration_stops_the_pack_and_nothing_more_is_sent(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing"], "count": 1})
    await aisim.fault("safety", request="figure", count=5)
    result = await render(aisim, "consistency")  # one provider in the chain: it refused, the job stops
    assert isinstance(result.error, ContentRefused) and result.error.error_class is ErrorClass.CONTENT
    calls = await aisim.calls()
    refused = [k for k, c in enumerate(calls) if c["outcome"] == "safety"]
    assert len(refused) == 1 and calls[refused[0] + 1 :] == []  # no pack QA, no other figure


async def test_qa_outliers_are_regenerated_under_the_cap_and_kept_only_if_a_second_qa_accepts(
    aisim: RunningAiSim,
) -> None:
    outliers = [{"index": k, "reasons": ["hair_length"]} for k in (2, 4, 6, 8, 10, 12)]
    await aisim.post("/sim/qa", {"outliers": outliers, "count": 1})
    await aisim.post("/sim/qa", {"outliers": [{"index": 1, "reasons": ["skin_tone"]}], "count": 1})
    result = await render(aisim, "consistency")
    assert_pack(result)
    assert kinds(await aisim.calls())["figure"] == 4  # CONSISTENCY_MAX_REGEN
    assert len(result.events("REGEN_CAP_REACHED")) == 2
    assert [e["slot"] for e in result.events("REGEN_REJECTED")] == [1]  # the second QA rejected sticker 2
    assert sorted(e["slot"] for e in result.events("REGENERATED")) == [3, 5, 7]


async def test_figure_sheets_never_valid_fall_back_to_composite(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing"], "count": 1})
    result = await render(aisim, "legacy", figure_sheet_attempts=1)
    assert_pack(result)
    assert result.events("FIGURE_FALLBACK_TO_COMPOSITE") and result.alerts == ["figure_fallback"]
    assert kinds(await aisim.calls())["heads"] == 2


async def test_a_retry_of_a_job_that_fell_back_goes_to_composite_at_once(aisim: RunningAiSim) -> None:
    """The first attempt paid for figure sheets that were never valid; the retry (same artefacts, e.g.
    after a refunded pause) does not draw them again (the full chaos run saw such a job pass
    JOB_MAX_COST_USD on its second attempt)."""
    artefacts = MemoryArtefacts()
    await aisim.post("/sim/imperfections", {"kinds": ["missing"], "count": 1})
    first = await render(aisim, "legacy", figure_sheet_attempts=1, artefacts=artefacts)
    assert_pack(first)
    assert first.events("FIGURE_FALLBACK_TO_COMPOSITE")
    drawn = kinds(await aisim.calls())
    assert drawn["sheet"] == 1  # the figure sheet drawn in vain
    retry = await render(aisim, "legacy", figure_sheet_attempts=1, artefacts=artefacts)
    assert_pack(retry)
    assert retry.events("FIGURE_SKIPPED_AFTER_FALLBACK") and not retry.events("FIGURE_FALLBACK_TO_COMPOSITE")
    again = kinds(await aisim.calls()) - drawn
    assert again["sheet"] == 0 and again["heads"] == 2


async def test_without_the_fallback_no_valid_sheet_fails_the_attempt(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing"], "count": 1})
    result = await render(aisim, "legacy", figure_sheet_attempts=1, figure_fallback_enabled=False)
    assert isinstance(result.error, RetryableJobError) and result.error.error_class is ErrorClass.INVALID
    assert kinds(await aisim.calls())["heads"] == 0
