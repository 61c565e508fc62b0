"""``python -m simulators.telegram``: flags, environment and a real process answering ``/healthz``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from simulators.telegram.__main__ import parse_args
from simulators.telegram.config import SimConfig


@pytest.mark.unit
def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TGSIM_TOKEN", "1:from-env")
    monkeypatch.setenv("TGSIM_PORT", "9999")
    monkeypatch.setenv("TGSIM_PRIVATE_PER_SECOND", "0")

    config = SimConfig(
        **parse_args(["--port", "8181", "--bot-username", "other_bot", "--global-per-second", "5"])
    )

    assert (config.token, config.port, config.bot_username) == ("1:from-env", 8181, "other_bot")
    assert config.limits().private_per_second == 0 and config.limits().global_per_second == 5


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.e2e
def test_the_module_serves_until_terminated() -> None:
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("TGSIM_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "simulators.telegram", "--port", str(port), "--token", "5:cli"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
                    assert response.read() == b"ok"
                    break
            except OSError:
                assert process.poll() is None, process.communicate()[0]
                assert time.monotonic() < deadline, "the simulator did not start"
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/bot5:cli/getMe", timeout=10) as response:
            assert b'"username":"stickerbooth_bot"' in response.read()
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert process.returncode == 0


@pytest.mark.unit
def test_a_missing_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TGSIM_TOKEN", raising=False)
    from simulators.telegram.__main__ import main

    assert main(["--port", "0"]) == 2
