"""``make preflight`` on the stack of ``make up`` (issue 18 item 6 "Done when"): the whole stack runs as
processes; the preflight runner, in the environment devstack started the services with, prints every
check green and exits 0. With ``BOT_USERNAME`` set to another bot, a 30-character bot username, a staff
group the bot is not in, or an unknown model name, it exits 1 and names the cause."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import preflight as devstack_preflight
from devstack.processes import REPO, Stack
from tests.simulators.ai.helpers import KEY, RunningAiSim

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stack(namespace: Any) -> Iterator[Stack]:
    with namespace.running_stack("sb_e2e_preflight", extra_env={}) as s:
        yield s


def run_preflight(stack: Stack, **overrides: str) -> tuple[int, str]:
    """The runner in the stack's environment (as ``make preflight``) with ``overrides``: its exit status
    and its table."""
    env = {**devstack_preflight.preflight_env(stack.config), **overrides}
    done = subprocess.run(
        [sys.executable, "-m", "shared.preflight", "--source", "test"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return done.returncode, done.stdout


def test_the_stack_of_make_up_is_ready(stack: Stack, tmp_path: Any) -> None:
    path = tmp_path / "up-stack.json"
    devstack_preflight.write_stack_file(stack.config, path)
    script = (
        "import pathlib, sys; from devstack import preflight; "
        f"sys.exit(preflight.main(pathlib.Path({str(path)!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [line for line in lines if line.startswith(("FAIL", "WARN"))], done.stdout
    for name in (
        "postgres",
        "redis",
        "telegram.bot_username",
        "telegram.staff_group",
        "telegram.admins",
        "ai.local",
    ):
        assert any(line.startswith("ok") and f" {name} " in line for line in lines), (name, done.stdout)
    assert lines[-1].startswith("READY")


@pytest.mark.parametrize(
    ("overrides", "failed", "cause"),
    [
        ({"BOT_USERNAME": "another_booth_bot"}, "telegram.bot_username", "another_booth_bot"),
        ({"BOT_USERNAME": "a" * 26 + "_bot"}, "settings.bot_username", "30 characters"),
        ({"LEADS_CHAT_ID": "-1009999999999"}, "telegram.staff_group", "LEADS_CHAT_ID=-1009999999999"),
    ],
)
def test_a_broken_precondition_exits_1_naming_the_cause(
    stack: Stack, overrides: dict[str, str], failed: str, cause: str
) -> None:
    code, out = run_preflight(stack, **overrides)
    assert code == 1, out
    line = next(line for line in out.splitlines() if line.startswith("FAIL") and f" {failed} " in line)
    assert cause in line
    assert out.splitlines()[-1].startswith("NOT READY")


async def test_an_unknown_model_exits_1_naming_it(stack: Stack, aisim: RunningAiSim) -> None:
    import asyncio

    code, out = await asyncio.to_thread(
        run_preflight,
        stack,
        PRIMARY_AI_PROVIDER="gemini",
        FALLBACK_AI_PROVIDER="",
        GEMINI_API_KEY=KEY,
        AI_BASE_URL_GEMINI=aisim.url,
        GEMINI_IMAGE_MODEL="gemini-9-imagine",
    )
    assert code == 1, out
    # a model the catalogue does not know is refused by the worker's settings, as at the worker's start
    line = next(line for line in out.splitlines() if line.startswith("FAIL") and " settings.ai " in line)
    assert "GEMINI_IMAGE_MODEL" in line and "gemini-9-imagine" in line
