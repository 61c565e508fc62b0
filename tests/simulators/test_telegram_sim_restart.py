"""The simulator as compose runs it: staff groups created at start, and update numbering that survives a
restart (with or without its data dir), so a bot's ``offset`` never skips a new update."""

from __future__ import annotations

from pathlib import Path

import pytest
from telegram import Bot

from simulators.telegram.__main__ import parse_args
from simulators.telegram.config import SimConfig
from tests.simulators.tgsim_helpers import TOKEN, RunningSim, serve, sim_config

STAFF = -1001000000001


async def _updates(running: RunningSim, offset: int) -> list[dict[str, object]]:
    """``getUpdates`` without a long poll; returns the ``result`` list."""
    async with running.http.post(
        f"{running.url}/bot{TOKEN}/getUpdates", json={"offset": offset, "timeout": 0}
    ) as response:
        assert response.status == 200, await response.text()
        result: list[dict[str, object]] = (await response.json())["result"]
        return result


@pytest.mark.unit
def test_group_flags_become_the_groups_setting() -> None:
    values = parse_args(["--token", "1:x", f"--group={STAFF}=Staff leads", "--group=-42=Admins"])

    assert SimConfig(**values).groups == {STAFF: "Staff leads", -42: "Admins"}
    with pytest.raises(ValueError, match="must be negative"):
        SimConfig(token="1:x", groups={42: "a private chat"})


@pytest.mark.integration
async def test_configured_groups_exist_from_the_start_and_after_a_reset() -> None:
    runner, running = await serve(sim_config(groups={STAFF: "Sticker Booth leads"}))
    try:
        async with Bot(TOKEN, base_url=f"{running.url}/bot") as bot:
            sent = await bot.send_message(STAFF, "a lead card")
            assert sent.chat.title == "Sticker Booth leads" and sent.chat.type == "supergroup"
            await running.post("/sim/reset")
            assert (await bot.send_message(STAFF, "after reset")).chat.id == STAFF
    finally:
        await running.http.close()
        await runner.cleanup()


@pytest.mark.integration
async def test_a_restart_without_state_numbers_from_the_bots_offset() -> None:
    """The gateway keeps its offset; a simulator restarted empty must not number below it."""
    runner, running = await serve(sim_config())
    try:
        for text in ("/start", "one", "two"):
            await running.say(7, text)
        seen = await _updates(running, 0)
        offset = int(str(seen[-1]["update_id"])) + 1
    finally:
        await running.http.close()
        await runner.cleanup()

    runner, running = await serve(sim_config())
    try:
        assert await _updates(running, offset) == []
        await running.say(7, "after the restart")
        fresh = await _updates(running, offset)
        assert [u["message"]["text"] for u in fresh] == ["after the restart"]  # type: ignore[index]
    finally:
        await running.http.close()
        await runner.cleanup()


def _what_a_kill_leaves(data_dir: Path) -> Path:
    """A copy of ``data_dir`` without ``state.json``, as if the autosave had not run since the batch."""
    killed = data_dir / "killed"
    killed.mkdir()
    for kept in data_dir.glob("next_update_id"):
        (killed / kept.name).write_bytes(kept.read_bytes())
    return killed


@pytest.mark.integration
async def test_a_kill_between_saves_never_reuses_a_handed_out_id(tmp_path: Path) -> None:
    """SIGKILL a moment after ``getUpdates``: the last snapshot predates the batch, the counter does not."""
    runner, running = await serve(sim_config(data_dir=tmp_path))
    try:
        await running.say(7, "/start")
        await running.say(7, "handed out")
        seen = await _updates(running, 0)
        offset = int(str(seen[-1]["update_id"])) + 1
        killed = _what_a_kill_leaves(tmp_path)
    finally:
        await running.http.close()
        await runner.cleanup()

    runner, running = await serve(sim_config(data_dir=killed))
    try:
        await running.say(7, "first after the kill")
        fresh = await _updates(running, offset)
        assert [u["message"]["text"] for u in fresh] == ["first after the kill"]  # type: ignore[index]
    finally:
        await running.http.close()
        await runner.cleanup()
