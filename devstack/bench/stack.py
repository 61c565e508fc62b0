"""A partial stack for a benchmark: the Telegram simulator and the services it names, as processes, on a
database of their own and a private redis-server (so nothing else on the machine is flushed or slowed).

Also the figures the benchmarks read from ``/proc`` about a process and all its descendants
(``/proc/<pid>/task/*/children``): memory (``smaps_rollup`` ``Pss``: each shared page split between the
processes sharing it, so forked processes are not counted twice; ``status`` ``VmRSS``) and CPU time
(``stat`` utime + stime).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from devstack.infra import drop_database, migrated_database
from devstack.processes import FAST_TIMINGS, Stack, StackConfig
from devstack.servers import RedisServer

__all__ = ["bench_stack", "descendants", "rss_bytes", "tree_cpu_s", "tree_pss_bytes"]

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextlib.contextmanager
def bench_stack(
    workdir: Path,
    name: str,
    services: Sequence[str],
    *,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """The Telegram simulator and ``services`` (names of :data:`devstack.processes.SERVICES`) running on
    database ``sb_bench_<name>_<pid>`` of ``DATABASE_URL``'s server (created, migrated, dropped
    afterwards) and a redis-server of their own in ``workdir``. ``extra_env`` goes to every process (the
    simulator reads its ``TGSIM_*`` settings from it).

    Raises:
        RuntimeError: a process did not get healthy (its log is in ``workdir/logs``).
    """
    postgres_url = os.environ.get("DATABASE_URL", DEFAULT_POSTGRES)
    database = f"sb_bench_{name}_{os.getpid()}"
    redis = RedisServer(workdir / "redis")
    redis.start()
    db_url = migrated_database(postgres_url, database)
    stack = Stack(
        StackConfig(
            database_url=db_url,
            redis_url=redis.url,
            log_dir=workdir / "logs",
            # every simulated kiosk posts from 127.0.0.1, so the per-client session limit is lifted
            extra_env={**FAST_TIMINGS, "SESSIONS_RATE_LIMIT": "100000", **(extra_env or {})},
        )
    )
    try:
        stack.start("telegram-sim")
        stack.wait_http(f"{stack.sim_url}/healthz", "telegram-sim")
        for service in services:
            stack.start(service)
        stack.wait_healthy()
        yield stack
    finally:
        stack.stop_all()
        redis.stop()
        drop_database(postgres_url, database)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (children, grandchildren …) that still exists."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                with contextlib.suppress(OSError):
                    todo += [
                        int(c) for c in Path(f"/proc/{current}/task/{task}/children").read_text().split()
                    ]
    return found


def _kib_field(path: str, field: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` alone (``VmRSS``), in bytes; 0 when it is gone."""
    return _kib_field(f"/proc/{pid}/status", "VmRSS:")


def tree_pss_bytes(pid: int) -> int:
    """Proportional memory (``Pss``) of ``pid`` and its descendants, in bytes."""
    return sum(_kib_field(f"/proc/{p}/smaps_rollup", "Pss:") for p in descendants(pid))


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its living descendants."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in descendants(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / ticks
