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


#: A "service" that, on SIGTERM, marks itself stopping and exits (0) only once every one of ``sys.argv[2]``
#: services is stopping too: stopped one after another, the first would wait for the rest forever.
WAITS_FOR_THE_OTHERS = """
import pathlib, signal, sys, time
marks, count, name = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def stopping(*_):
    (marks / f"stopping-{name}").touch()
    while len(list(marks.glob("stopping-*"))) < count:
        time.sleep(0.02)
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stopping)
(marks / f"ready-{name}").touch()
time.sleep(120)
"""


def test_stop_all_signals_every_service_before_waiting_for_any(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    names = ["ingest", "worker", "delivery"]

    class WaitingStack(Stack):
        def command(self, name: str) -> list[str]:
            return [sys.executable, "-c", WAITS_FOR_THE_OTHERS, str(marks), str(len(names)), name]

    s = WaitingStack(StackConfig(database_url="postgresql://x/y", redis_url="redis://x", log_dir=tmp_path))
    for name in names:
        s.start(name)
    deadline = time.monotonic() + 30
    while len(list(marks.glob("ready-*"))) < len(names):
        assert time.monotonic() < deadline, "the services did not start"
        time.sleep(0.05)
    s.stop_all()
    # all three exited by themselves after the SIGTERM (none was SIGKILLed), newest recorded first
    assert [(e.service, e.returncode, e.caused) for e in s.exits] == [
        ("delivery", 0, True),
        ("worker", 0, True),
        ("ingest", 0, True),
    ]
    assert s.procs == {}


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
