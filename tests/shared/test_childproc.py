"""Pool children leave with the service that started them (shared.childproc), even when a fork server
sits between them and the service is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

# A "service": a forkserver pool whose child calls exit_with(service pid), prints the child's pid, and
# waits to be killed.
SERVICE = """
import concurrent.futures, multiprocessing, os, sys, time
from shared.childproc import exit_with

def init(pid, watch):
    if watch:
        exit_with(pid, poll_s=0.05)

if __name__ == "__main__":
    watch = sys.argv[1] == "watch"
    pool = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("forkserver"),
        initializer=init, initargs=(os.getpid(), watch),
    )
    print(pool.submit(os.getpid).result(), flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone for our purpose
        return stat.read().split(")")[-1].split()[0] != "Z"


def _child_of_killed_service(mode: str, tmp_path: Path) -> int:
    script = tmp_path / "service.py"  # a file: the fork server's children import its `init`
    script.write_text(SERVICE)
    service = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True)
    assert service.stdout is not None
    with service.stdout:
        child = int(service.stdout.readline())
        os.kill(service.pid, signal.SIGKILL)
        service.wait()
    return child


def _gone_within(pid: int, limit_s: float) -> bool:
    for _ in range(int(limit_s / 0.05)):  # a limit for a hang, not a timing assertion
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_pool_child_exits_when_its_service_is_killed(tmp_path: Path) -> None:
    child = _child_of_killed_service("watch", tmp_path)
    assert _gone_within(child, 30.0)


def test_without_the_watch_the_child_outlives_its_service(tmp_path: Path) -> None:
    """The reason for exit_with: the check above would see a surviving child."""
    child = _child_of_killed_service("none", tmp_path)
    try:
        assert not _gone_within(child, 1.0)
    finally:
        os.kill(child, signal.SIGKILL)
