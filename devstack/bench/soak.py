"""The ``make bench`` rows "Soak": many guest journeys with the fast AI simulator (no added latency), and
whether what the stack keeps grows with them (issue 12: "a soak of 1,000 journeys with the fast
simulator (Postgres rows per job, Redis memory, process RSS before and after: flat)").

Set-up: the stack as local processes with default timings and a private Redis
(:mod:`devstack.bench.fullstack`),
``concurrency`` kiosks playing :func:`devstack.journey.play` at once. Count: ``journeys`` (1,000), but at
most what fits ``budget_s`` (240 s) on this machine: the first half runs until half the journeys or half
the budget, whichever comes first, and the second half plays as many journeys as the first did, so both
halves have the same size. A warm-up of ``concurrency`` journeys comes first (imports, pools, caches).

Snapshots after the warm-up (*start*), at half-way and at the end:

- Postgres: ``count(*)`` of every table of the schema (``alembic_version`` aside) and the number of jobs;
  **rows per job** of a half = rows added in it ÷ jobs added in it. Flat: the second half's within 5 % of
  the first's (per job the same rows are written and the same personal blobs erased; more per job later
  means something accumulates).
- Redis: ``INFO memory`` ``used_memory``, and the part of it that is not stream entries (``used_memory`` −
  Σ ``MEMORY USAGE`` of every ``stk:*``/``tg:*`` stream). Stream entries are kept by design for
  ``STREAM_RETENTION_HOURS`` (24 h, issue 11), so they grow with every journey in a soak shorter than that;
  flat is asked of the rest: at the end within 10 % of half-way.
- RSS of each service process (``VmRSS`` of ``/proc/<pid>/status``): flat = at the end within 10 % of
  half-way. Why 10 %: CPython keeps freed arenas and glibc's malloc fragments, so a process's RSS moves by
  a few % without a leak; a leak of 10 KB per journey would add ~5 MB over 500 journeys, over 10 % of a
  ~50 MB service only in a longer run, which is why the row also gives KB per journey.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis as redis_lib

from devstack.bench.fullstack import PHOTO, journey_stack, query
from devstack.bench.report import Options, Row
from devstack.journey import play
from devstack.processes import SERVICES, Stack

__all__ = ["Snapshot", "measure", "rss_kb", "run", "snapshot"]

DEFAULT_JOURNEYS = 1000
DEFAULT_BUDGET_S = 240.0
ROWS_TOLERANCE = 0.05
MEMORY_TOLERANCE = 0.10
FIRST_USER = 620_000


@dataclass(frozen=True)
class Snapshot:
    """What the stack holds at one moment: rows per table, jobs, Redis bytes (all, and not streams) and
    each service's RSS in KB."""

    rows: dict[str, int]
    jobs: int
    redis_used: int
    redis_streams: int
    rss_kb: dict[str, int] = field(default_factory=dict)

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def redis_other(self) -> int:
        return self.redis_used - self.redis_streams


def rss_kb(pid: int) -> int:
    """Resident set size of process ``pid`` in KB (``VmRSS``); 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def snapshot(stack: Stack) -> Snapshot:
    """Count the stack's rows, Redis memory and process RSS now."""
    url = stack.config.database_url
    tables = [
        r["tablename"]
        for r in query(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        if r["tablename"] != "alembic_version"
    ]
    counts = query(url, " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM \"{t}\"" for t in tables))
    rows = {r["t"]: int(r["n"]) for r in counts}
    client = redis_lib.Redis.from_url(stack.config.redis_url)
    try:
        info: dict[str, Any] = client.info("memory")  # type: ignore[assignment]
        used = int(info["used_memory"])
        streams = 0
        for prefix in ("stk:*", "tg:*"):
            for key in client.scan_iter(match=prefix, count=1000, _type="stream"):
                usage: Any = client.memory_usage(key, samples=0)
                streams += int(usage or 0)
    finally:
        client.close()
    rss = {name: rss_kb(proc.pid) for name, proc in stack.procs.items() if name in SERVICES}
    return Snapshot(rows=rows, jobs=rows.get("jobs", 0), redis_used=used, redis_streams=streams, rss_kb=rss)


@dataclass
class Phase:
    """Journeys played by :func:`play_many`: how many were delivered, and how many were not."""

    delivered: int = 0
    other: int = 0

    @property
    def played(self) -> int:
        return self.delivered + self.other


def play_many(
    stack: Stack, users: Callable[[], int], *, count: int, deadline: float | None, concurrency: int
) -> Phase:
    """Play ``count`` journeys, ``concurrency`` at once, starting no new one after ``deadline``
    (monotonic seconds; ``None``: no limit)."""
    photo = PHOTO.read_bytes()
    phase = Phase()
    lock = threading.Lock()
    started = itertools.count()

    def kiosk() -> None:
        while next(started) < count and (deadline is None or time.monotonic() < deadline):
            result = play(
                stack.ingest_url, stack.sim_url, photo, user_id=users(), filename=PHOTO.name, poll_s=0.25
            )
            with lock:
                if result.status == "delivered" and result.link:
                    phase.delivered += 1
                else:
                    phase.other += 1

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in [pool.submit(kiosk) for _ in range(concurrency)]:
            future.result()
    return phase


@dataclass(frozen=True)
class SoakResult:
    start: Snapshot
    half: Snapshot
    end: Snapshot
    first: Phase
    second: Phase
    elapsed_s: float
    asked: int


def run(
    workdir: Path,
    *,
    journeys: int = DEFAULT_JOURNEYS,
    budget_s: float = DEFAULT_BUDGET_S,
    concurrency: int = 4,
) -> SoakResult:
    """Warm up, then two equal halves of at most ``journeys`` in ``budget_s`` seconds (module docstring)."""
    ids = itertools.count(FIRST_USER)
    id_lock = threading.Lock()

    def users() -> int:
        with id_lock:
            return next(ids)

    with journey_stack("soak", workdir) as stack:
        play_many(stack, users, count=concurrency, deadline=None, concurrency=concurrency)
        start = snapshot(stack)
        began = time.monotonic()
        first = play_many(
            stack, users, count=journeys // 2, deadline=began + budget_s / 2, concurrency=concurrency
        )
        half = snapshot(stack)
        second = play_many(stack, users, count=first.played, deadline=None, concurrency=concurrency)
        end = snapshot(stack)
        elapsed = time.monotonic() - began
    return SoakResult(start, half, end, first, second, elapsed, journeys)


def _per_job(before: Snapshot, after: Snapshot) -> float:
    jobs = after.jobs - before.jobs
    return (after.total_rows - before.total_rows) / jobs if jobs else float("nan")


def _growth(before: float, after: float) -> float:
    return (after - before) / before if before else float("inf")


def rows(result: SoakResult) -> list[Row]:
    """The soak's rows from one :class:`SoakResult`."""
    played = result.first.played + result.second.played
    delivered = result.first.delivered + result.second.delivered
    count = (
        f"{played} journeys ({delivered} delivered) with the fast simulator in {result.elapsed_s:.0f} s, "
        f"{result.first.played} per half"
    )
    if played < result.asked:
        count += f"; {result.asked} asked, cut to what fits the time budget on this machine"
    first, second = _per_job(result.start, result.half), _per_job(result.half, result.end)
    growth_by_table = {
        t: (result.end.rows.get(t, 0) - result.half.rows.get(t, 0))
        - (result.half.rows.get(t, 0) - result.start.rows.get(t, 0))
        for t in result.end.rows
    }
    moved = ", ".join(f"{t} {d:+d}" for t, d in sorted(growth_by_table.items()) if d) or "none"
    rows_met = abs(second - first) <= ROWS_TOLERANCE * first
    table = [
        Row(
            group="Soak",
            name="Postgres rows per job, second half",
            ours=f"{second:.1f} rows/job",
            reference=f"{first:.1f} rows/job in the first half",
            ratio=second / first if first else None,
            target=f"flat: within {ROWS_TOLERANCE:.0%}",
            met=rows_met,
            note=f"{count}; rows {result.start.total_rows} → {result.half.total_rows} → "
            f"{result.end.total_rows}; second half minus first half by table: {moved}"
            + ("" if rows_met else "; missed: a table grows faster per job later (see the tables named)"),
        )
    ]
    half_other, end_other = result.half.redis_other, result.end.redis_other
    redis_met = _growth(half_other, end_other) <= MEMORY_TOLERANCE
    per_journey = (result.end.redis_used - result.half.redis_used) / max(1, result.second.played)
    table.append(
        Row(
            group="Soak",
            name="Redis used_memory other than stream entries, end",
            ours=f"{end_other / 1e6:.2f} MB",
            reference=f"{half_other / 1e6:.2f} MB at half-way",
            ratio=end_other / half_other if half_other else None,
            target=f"flat: within {MEMORY_TOLERANCE:.0%}",
            met=redis_met,
            note=f"used_memory {result.start.redis_used / 1e6:.2f} → {result.half.redis_used / 1e6:.2f} → "
            f"{result.end.redis_used / 1e6:.2f} MB ({per_journey / 1e3:.1f} KB per journey in the second "
            f"half), of which stream entries {result.end.redis_streams / 1e6:.2f} MB at the end, kept by "
            "design for STREAM_RETENTION_HOURS (24 h)"
            + ("" if redis_met else "; missed: keys other than streams grow with journeys"),
        )
    )
    for name in SERVICES:
        half_kb, end_kb = result.half.rss_kb.get(name, 0), result.end.rss_kb.get(name, 0)
        if not half_kb:
            continue
        met = _growth(half_kb, end_kb) <= MEMORY_TOLERANCE
        kb_per = (end_kb - half_kb) / max(1, result.second.played)
        table.append(
            Row(
                group="Soak",
                name=f"RSS of {name}, end",
                ours=f"{end_kb / 1024:.0f} MB",
                reference=f"{half_kb / 1024:.0f} MB at half-way",
                ratio=end_kb / half_kb,
                target=f"flat: within {MEMORY_TOLERANCE:.0%}",
                met=met,
                note=f"{result.start.rss_kb.get(name, 0) / 1024:.0f} MB after the warm-up; "
                f"{kb_per:+.1f} KB per journey in the second half"
                + (
                    ""
                    if met
                    else f"; missed: it grew in the second half ({result.second.played} journeys); with "
                    "few journeys per half this can still be warm-up (the high-water mark of concurrent "
                    "renders' image buffers) rather than a leak: a longer soak, or tracemalloc snapshots "
                    "at half-way and end, would tell them apart"
                ),
            )
        )
    return table


def measure(options: Options) -> list[Row]:
    """Rows of a soak of up to 1,000 journeys in 240 s (quick: one journey per half after one of warm-up,
    one at a time: the figures prove only that it runs)."""
    if options.quick:
        result = run(options.workdir, journeys=2, budget_s=120.0, concurrency=1)
    else:
        result = run(options.workdir)
    return rows(result)
