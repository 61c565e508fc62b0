"""The chaos sweep moves a fault stranded on a guest whose jobs ended to a sweep guest, against the real
Telegram simulator: the moved fault is answered to the new guest's call, the faults that never count as
unmet stay where they were."""

from __future__ import annotations

import asyncio

import pytest

from devstack.chaos import faults as F
from devstack.chaos.run import reaim_faults
from devstack.chaos.traffic import GuestPlan, photos
from tests.simulators.tgsim_helpers import TOKEN, serving, sim_config

pytestmark = pytest.mark.integration


def _plan(user_id: int, *kinds: str) -> GuestPlan:
    plan = GuestPlan(user_id, photos()["jpeg"], "pirate", tags=kinds)
    plan.tg_faults = [(k, body) for k in kinds for body in F.guest_tg_faults(k, user_id, 0)]
    return plan


async def test_a_stranded_fault_moves_to_the_sweep_guest_and_meets_their_call() -> None:
    old = _plan(700_001, "tg:429-long:create", "tg:413:create", "tg:429-short:upload")
    new = GuestPlan(790_000, photos()["jpeg"], "chef")
    async with serving(sim_config()) as sim:
        for _kind, body in old.tg_faults:
            await sim.post("/sim/faults", body)
        await asyncio.to_thread(reaim_faults, sim.url, old, new)

        async with sim.http.get(f"{sim.url}/sim/faults") as response:
            left = {(f["method"], f["error_code"], f["chat_id"]) for f in await response.json()}
        assert left == {("createNewStickerSet", 413, 700_001), ("uploadStickerFile", 429, 700_001)}
        assert new.tags == ("tg:429-long:create",)
        assert [body["chat_id"] for _kind, body in new.tg_faults] == [790_000]

        for _kind, body in new.tg_faults:  # as play_guest does before the guest presses Start
            await sim.post("/sim/faults", body)
        create = {"user_id": 790_000, "name": "s_by_bot", "title": "t", "stickers": "[]"}
        async with sim.http.post(f"{sim.url}/bot{TOKEN}/createNewStickerSet", data=create) as response:
            answer = await response.json()
        assert answer["error_code"] == 429 and answer["parameters"]["retry_after"] == F.LONG_HOLD_S


async def test_a_fault_the_run_did_not_aim_is_refused_not_moved() -> None:
    old = _plan(700_002, "tg:drop")
    async with serving(sim_config()) as sim:
        await sim.post("/sim/faults", {"method": "sendMessage", "error_code": 502, "chat_id": 700_002})
        with pytest.raises(RuntimeError, match="did not aim"):
            await asyncio.to_thread(reaim_faults, sim.url, old, GuestPlan(790_001, photos()["jpeg"], "chef"))
