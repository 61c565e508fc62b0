"""The one-sheet layout ``SHEET_LAYOUT=1x12`` (issue 12): all 12 figures on one 4 × 3 sheet, through the
real SDKs against the AI provider simulator, and its own validity and room rules
(:mod:`worker.steps.sheets`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from cartoon.sheets import draw_sheets, sheet_layout
from shared.outfits import get_outfit
from tests.simulators.ai.helpers import RunningAiSim
from worker.imaging.cut import cut_sheet
from worker.steps.sheets import ONE_SHEET_MAX_MISSING, SheetResult, crowded, lenient, plan_sheets
from worker.steps.slots import slots_from_sheets

from .render_helpers import render
from .test_variants import assert_pack

pytestmark = pytest.mark.integration


def kinds(calls: list[dict[str, Any]]) -> Counter[str]:
    return Counter(call["kind"] for call in calls)


async def test_consistency_draws_the_pack_on_one_4_by_3_sheet_at_2k(aisim: RunningAiSim) -> None:
    result = await render(aisim, "consistency", sheet_layout="1x12")
    assert_pack(result)
    calls = await aisim.calls()
    assert kinds(calls) == Counter(passport=1, anchor=1, verify=1, sheet=1, pack_qa=1)
    sheet = next(c for c in calls if c["kind"] == "sheet")
    assert (sheet["size"], sheet["aspect"]) == ("2K", "4:3")
    assert sheet["roles"] == ["anchor", "selfie", "face"]
    assert not result.events("REGENERATED")


async def test_hybrid_on_openai_asks_for_1536x1024_and_still_makes_512_px_stickers(
    aisim: RunningAiSim,
) -> None:
    result = await render(aisim, "hybrid", providers=("openai",), sheet_layout="1x12")
    assert_pack(result)
    calls = await aisim.calls()
    assert kinds(calls) == Counter(passport=1, sheet=1, pack_qa=1)
    sheet = next(c for c in calls if c["kind"] == "sheet")
    assert sheet["aspect"] == "3:2"  # the simulator's log of size 1536x1024
    cut = next(e["cut"] for e in result.events("SHEET"))
    assert cut.startswith("12/12 figures, missing []")


async def test_classic_checks_its_one_sheet_once(aisim: RunningAiSim) -> None:
    result = await render(aisim, "classic", sheet_layout="1x12")
    assert_pack(result)
    assert kinds(await aisim.calls()) == Counter(passport=1, sheet=1, sheet_qa=1)


async def test_one_missing_and_one_edge_cut_figure_become_single_figure_regenerations(
    aisim: RunningAiSim,
) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing", "edge_cut"], "count": 1})
    result = await render(aisim, "consistency", sheet_layout="1x12")
    assert_pack(result)
    assert kinds(await aisim.calls())["sheet"] == 1
    assert sorted(e["slot"] for e in result.events("REGENERATED")) == [0, 11]


async def test_touching_neighbours_have_no_outline_room_and_are_redrawn(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["touching"], "count": 1})
    result = await render(aisim, "consistency", sheet_layout="1x12")
    assert_pack(result)
    assert "split [0, 1]" in next(e["cut"] for e in result.events("SHEET"))
    assert sorted(e["slot"] for e in result.events("REGENERATED")) == [0, 1]


async def test_a_sheet_missing_a_row_is_drawn_again_not_patched_with_four_singles(
    aisim: RunningAiSim,
) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing_row"], "count": 1})
    result = await render(aisim, "consistency", sheet_layout="1x12")
    assert_pack(result)
    drawn = kinds(await aisim.calls())
    assert (drawn["sheet"], drawn["figure"]) == (2, 0)
    assert [e["attempt"] for e in result.events("SHEET_INVALID")] == [1]


async def test_a_one_sheet_never_valid_falls_back_to_composite(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/imperfections", {"kinds": ["missing_row"], "count": 1})
    result = await render(aisim, "hybrid", sheet_layout="1x12", figure_sheet_attempts=1)
    assert_pack(result)
    assert result.events("FIGURE_FALLBACK_TO_COMPOSITE")
    assert kinds(await aisim.calls())["heads"] == 2


@pytest.mark.unit
def test_one_sheet_validity_allows_two_missing_and_the_other_layouts_keep_half() -> None:
    one = cut_sheet(np.zeros((1536, 2048, 4), np.uint8), 12)  # nothing on it: 12 missing
    assert not lenient(one)
    for missing in range(13):
        cut = type(one)(expected=12, figures=[], missing=list(range(missing)))
        assert lenient(cut) is (missing <= ONE_SHEET_MAX_MISSING)
    assert lenient(type(one)(expected=4, figures=[], missing=[0, 1]))


@pytest.mark.unit
def test_a_figure_reaching_its_cell_line_is_crowded_only_on_the_one_sheet_layout() -> None:
    grid = sheet_layout("1x12")
    sheet = draw_sheets(None, get_outfit("chef"), grid)[0]
    plan = plan_sheets("1x12", "2:3")[0]
    clean = SheetResult(plan=plan, image=sheet, cut=cut_sheet(sheet, 12), attempts=1)
    assert crowded(clean) == []
    assert [s.defect for s in slots_from_sheets([clean])] == [None] * 12
    moved = sheet.copy()  # figure 6 (row 1, column 1) shifted 120 px right, into its cell's margin
    moved[512:1024, 512 + 120 : 1024 + 120] = sheet[512:1024, 512:1024].copy()
    moved[512:1024, 512 : 512 + 120] = (0, 255, 0)
    cut = cut_sheet(moved, 12)
    assert cut.valid, cut.describe()
    tight = SheetResult(plan=plan, image=moved, cut=cut, attempts=1)
    assert 5 in crowded(tight)
    assert slots_from_sheets([tight])[5].defect == "edge"
    small = sheet_layout("3x4")
    four = draw_sheets(None, get_outfit("chef"), small)[0]
    plan4 = plan_sheets("3x4", "2:3")[0]
    assert crowded(SheetResult(plan=plan4, image=four, cut=cut_sheet(four, 4), attempts=1)) == []
