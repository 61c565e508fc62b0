"""The whole stack for the journey benchmarks (``overhead``, ``soak``): the five services, the Telegram
simulator and the AI provider simulator as local processes (:class:`devstack.processes.Stack`, as
``make demo --ai-sim`` runs them), with the services' **default** timings (not the tests' fast ones).

Stores: a fresh Postgres database on ``DATABASE_URL``'s server (dropped afterwards) and a private
``redis-server`` 7 on a free port (``devstack.infra.redis_server_executable``), so the benchmark shares no
Redis database with anything else on the machine and Redis' server-wide ``used_memory`` is the stack's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from devstack.infra import drop_database, free_port, migrated_database, start_redis_server
from devstack.processes import REPO, Stack, StackConfig
from shared.db import plain_url

__all__ = ["DEFAULT_DB", "PHOTO", "journey_stack", "query"]

DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/postgres"
#: A fixture selfie that passes ingest's photo check (the e2e tests' photo).
PHOTO = REPO.parent / "shared" / "fixtures" / "photos" / "face-woman-red-hat.png"


@contextlib.contextmanager
def journey_stack(name: str, workdir: Path, *, extra_env: dict[str, str] | None = None) -> Iterator[Stack]:
    """A running stack with the AI simulator on database ``sb_bench_<name>_<pid>`` and a private Redis;
    everything is stopped (and the database dropped) on leaving.

    Raises:
        RuntimeError: no ``redis-server`` 7 on ``PATH``, or a process did not become healthy (its log is
            under ``workdir/logs``).
    """
    server = os.environ.get("DATABASE_URL", DEFAULT_DB)
    database = f"sb_bench_{name}_{os.getpid()}"
    db_url = migrated_database(server, database)
    redis_port = free_port()
    redis = start_redis_server(redis_port, workdir / "redis")
    stack = Stack(
        StackConfig(
            database_url=db_url,
            redis_url=f"redis://127.0.0.1:{redis_port}/0",
            log_dir=workdir / "logs",
            ai_sim=True,
            # every simulated kiosk posts from 127.0.0.1: one venue NAT's share would throttle the soak
            extra_env={"SESSIONS_RATE_LIMIT": "100000", **(extra_env or {})},
        )
    )
    try:
        stack.start_all()
        yield stack
    finally:
        stack.stop_all()
        redis.terminate()
        with contextlib.suppress(Exception):
            redis.wait(timeout=5)
        drop_database(server, database)


def query(database_url: str, sql: str, *args: Any) -> Sequence[asyncpg.Record]:
    """Run one read-only ``sql`` with ``args`` on ``database_url``; returns its rows."""

    async def run() -> Sequence[asyncpg.Record]:
        conn = await asyncpg.connect(plain_url(database_url), timeout=10)
        try:
            rows: Sequence[asyncpg.Record] = await conn.fetch(sql, *args)
            return rows
        finally:
            await conn.close()

    return asyncio.run(run())
