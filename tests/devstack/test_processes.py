"""Exit accounting of the devstack processes: what we killed or stopped is ``caused``; a process that ends
by itself is not, and the restart policy starts it again (real OS processes, no services)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from devstack import processes
from devstack.processes import Stack, StackConfig

pytestmark = pytest.mark.integration


class ScriptStack(Stack):
    """A stack whose "services" are tiny Python scripts (``exit`` ends with code 3 after a moment)."""

    def command(self, name: str) -> list[str]:
        code = (
            "import time; time.sleep(0.3); raise SystemExit(3)"
            if name == "exit"
            else "import time; time.sleep(60)"
        )
        return [sys.executable, "-c", code]


def stack(tmp_path: Path) -> ScriptStack:
    return ScriptStack(StackConfig(database_url="postgresql://x/y", redis_url="redis://x", log_dir=tmp_path))


def wait_exit(s: Stack, name: str) -> None:
    deadline = time.monotonic() + 20
    while s.procs[name].poll() is None:
        assert time.monotonic() < deadline, f"{name} did not exit"
        time.sleep(0.05)


def test_kills_and_stops_are_caused_and_a_crash_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(processes.MODULES, "exit", "unused")
    monkeypatch.setitem(processes.MODULES, "sleep", "unused")
    s = stack(tmp_path)
    s.start("sleep")
    s.start("exit")
    s.kill("sleep")
    wait_exit(s, "exit")
    assert s.restart_exited() == ["exit"]  # started again, as a restart policy does
    assert "exit" in s.procs
    wait_exit(s, "exit")
    s.start("sleep")
    s.stop_all()
    assert [(e.service, e.returncode, e.caused) for e in s.exits] == [
        ("sleep", -9, True),
        ("exit", 3, False),
        ("sleep", -15, True),
        ("exit", 3, False),  # it had ended by itself before stop_all reached it
    ]


@pytest.mark.parametrize(
    ("ai_sim", "environ", "chain"),
    [
        (False, {}, ("local", "")),  # nothing to call: every service is told the local renderer draws
        (False, {"GEMINI_API_KEY": "k"}, (None, None)),  # a key: the services' own defaults apply
        (False, {"PRIMARY_AI_PROVIDER": "openai"}, ("openai", None)),  # the operator's choice stands
        (True, {}, (None, None)),  # the AI simulator stands in for both providers
        # the services read their env case-insensitively (shared.settings): so does the stack
        (False, {"gemini_api_key": "k"}, (None, None)),
        (False, {"primary_ai_provider": "openai"}, (None, None)),
    ],
)
def test_without_a_provider_key_the_stack_names_the_local_renderer(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ai_sim: bool,
    environ: dict[str, str],
    chain: tuple[str | None, str | None],
) -> None:
    for key in (*processes.PROVIDER_KEYS, "PRIMARY_AI_PROVIDER", "FALLBACK_AI_PROVIDER"):
        monkeypatch.delenv(key, raising=False)
        monkeypatch.delenv(key.lower(), raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    s = Stack(
        StackConfig(database_url="postgresql://x/y", redis_url="redis://x", log_dir=tmp_path, ai_sim=ai_sim)
    )
    for service in ("ingest", "worker"):  # the consent screen and the chain that really draws agree
        env = s.env(service)
        assert (env.get("PRIMARY_AI_PROVIDER"), env.get("FALLBACK_AI_PROVIDER")) == chain, service
