"""The ``make bench`` rows "Upload → link overhead": what the product adds to the provider's time, over
20 guest journeys through the whole stack (issue 12: "upload → link overhead (minus provider time on the
critical path, reconstructed from ``api_usage``) p50/p95 over 20 journeys").

Set-up: the stack as local processes with default timings (:mod:`devstack.bench.fullstack`), the worker on
the AI provider simulator through the real Gemini SDK at 3 s per image call and 1 s per vision call
(``AISIM_LATENCY_IMAGE_SEC`` / ``AISIM_LATENCY_VISION_SEC``), the default variant (consistency). The
journeys run one after another (:func:`devstack.journey.play`), so no job waits in a queue behind
another: the overhead is what one guest's job costs beyond its provider calls.

Per job:

- **total**: from just before the kiosk sends the photo (``JourneyResult.uploaded_at``) to the Telegram
  simulator receiving the ``sendMessage`` with the pack link (its call log's ``at``), one clock;
- **provider critical path**: each ``api_usage`` row of the job is a call interval ``[created_at −
  latency_ms, created_at]`` (the row is inserted right after the call returns, in its own transaction).
  The critical path is the longest *chain* of calls, each starting after the previous one ended (50 ms of
  overlap tolerated for the row's insert), by total duration: weighted interval scheduling over the
  intervals sorted by end. For the consistency variant that is passport → anchor → verify → the longest
  of the parallel sheets → pack QA. Sheets that start late, or a call waiting for another, are thus our
  overhead, not provider time. The union of all the job's call intervals (time with any call in flight)
  is reported beside it in the note: it is at least the chain, and equal when nothing stalls;
- **overhead** = total − critical path.

The reference of each row is the provider critical path itself (its p50/p95 over the same jobs); the
target is issue 12's: overhead p50 at most half of the 4.35 s measured before this work (2.17 s).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

from devstack.bench.fullstack import PHOTO, journey_stack, query
from devstack.bench.report import Options, Row
from devstack.journey import LINK, JourneyResult, play

__all__ = ["TARGET_P50_S", "Call", "JobTiming", "critical_path", "measure", "union"]

#: Half of the 4.35 s overhead p50 measured before this work (issue 12).
TARGET_P50_S = 4.35 / 2
IMAGE_LATENCY_S = 3.0
VISION_LATENCY_S = 1.0
OVERLAP_S = 0.05
FIRST_USER = 610_000


@dataclass(frozen=True)
class Call:
    """One provider call of a job: ``start`` and ``end`` in Unix seconds."""

    start: float
    end: float
    call_type: str = ""

    @property
    def seconds(self) -> float:
        return self.end - self.start


def critical_path(calls: Sequence[Call], *, overlap_s: float = OVERLAP_S) -> float:
    """Seconds of the longest chain of calls in which each starts after the previous one ended (up to
    ``overlap_s`` earlier): weighted interval scheduling by end time. 0 for no calls."""
    ordered = sorted(calls, key=lambda c: c.end)
    best: list[float] = []
    for i, call in enumerate(ordered):
        before = [best[j] for j in range(i) if ordered[j].end <= call.start + overlap_s]
        best.append(call.seconds + max(before, default=0.0))
    return max(best, default=0.0)


def union(calls: Sequence[Call]) -> float:
    """Seconds during which at least one of ``calls`` was in flight."""
    total, reach = 0.0, float("-inf")
    for call in sorted(calls, key=lambda c: c.start):
        if call.end > reach:
            total += call.end - max(call.start, reach)
            reach = call.end
    return total


@dataclass(frozen=True)
class JobTiming:
    """One delivered journey: seconds from upload to link, of the provider critical path, of all calls in
    flight (union), from ``rendered`` to the link (delivery's leg), and the number of provider calls."""

    total_s: float
    critical_s: float
    union_s: float
    delivery_s: float
    calls: int

    @property
    def overhead_s(self) -> float:
        return self.total_s - self.critical_s


def _epoch(at: datetime) -> float:
    return at.timestamp()


def link_time(sim_url: str, chat_id: int) -> float | None:
    """Unix time the simulator received the ``sendMessage`` with the pack link for ``chat_id``."""
    calls = httpx.get(f"{sim_url}/sim/calls", params={"method": "sendMessage"}, timeout=30).json()
    for record in calls:
        params = record.get("params") or {}
        if (
            str(params.get("chat_id")) == str(chat_id)
            and record.get("ok")
            and LINK.search(params.get("text", ""))
        ):
            return float(record["at"])
    return None


def timing(database_url: str, sim_url: str, result: JourneyResult, user_id: int) -> JobTiming | None:
    """The job's :class:`JobTiming`, or ``None`` when it was not delivered with a link."""
    linked = link_time(sim_url, user_id)
    if result.status != "delivered" or result.job_id is None or linked is None:
        return None
    rows = query(
        database_url,
        "SELECT created_at, latency_ms, call_type FROM api_usage WHERE job_id = $1::uuid",
        result.job_id,
    )
    calls = [
        Call(_epoch(r["created_at"]) - r["latency_ms"] / 1000, _epoch(r["created_at"]), r["call_type"])
        for r in rows
    ]
    rendered = query(
        database_url,
        "SELECT max(at) AS at FROM job_events WHERE job_id = $1::uuid AND to_status = 'rendered'",
        result.job_id,
    )
    rendered_at = rendered[0]["at"] if rendered and rendered[0]["at"] is not None else None
    return JobTiming(
        total_s=linked - result.uploaded_at,
        critical_s=critical_path(calls),
        union_s=union(calls),
        delivery_s=linked - _epoch(rendered_at) if rendered_at is not None else float("nan"),
        calls=len(calls),
    )


def _pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–1) of ``values``, linear between closest ranks (``statistics.quantiles``'
    inclusive method); the value itself for one."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def run(
    workdir: Path,
    *,
    journeys: int,
    image_s: float = IMAGE_LATENCY_S,
    vision_s: float = VISION_LATENCY_S,
) -> tuple[list[JobTiming], int]:
    """Play ``journeys`` journeys one after another; returns the delivered ones' timings and how many
    journeys were not delivered."""
    photo = PHOTO.read_bytes()
    env = {"AISIM_LATENCY_IMAGE_SEC": str(image_s), "AISIM_LATENCY_VISION_SEC": str(vision_s)}
    timings: list[JobTiming] = []
    lost = 0
    with journey_stack("overhead", workdir, extra_env=env) as stack:
        # one unmeasured journey first: imports, connection pools and the SDK clients warm up
        for index in range(journeys + 1):
            user_id = FIRST_USER + index
            result = play(
                stack.ingest_url, stack.sim_url, photo, user_id=user_id, filename=PHOTO.name, timeout_s=300
            )
            if index == 0:
                continue
            measured = timing(stack.config.database_url, stack.sim_url, result, user_id)
            if measured is None:
                lost += 1
            else:
                timings.append(measured)
    return timings, lost


def measure(options: Options) -> list[Row]:
    """Rows: overhead p50 and p95 (target: p50 ≤ 2.17 s), each against the provider critical path's
    same percentile; quick: 1 journey (after the warm-up) at 0.3 s / 0.1 s per call (figures prove only that
    it runs)."""
    journeys = 1 if options.quick else 20
    image_s, vision_s = (0.3, 0.1) if options.quick else (IMAGE_LATENCY_S, VISION_LATENCY_S)
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    timings, lost = run(options.workdir, journeys=journeys, image_s=image_s, vision_s=vision_s)
    load = f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} CPUs"
    if not timings:
        raise RuntimeError(f"no journey of {journeys} was delivered; logs in {options.workdir}")
    overheads = [t.overhead_s for t in timings]
    critical = [t.critical_s for t in timings]
    totals = [t.total_s for t in timings]
    p50, p95 = _pct(overheads, 0.5), _pct(overheads, 0.95)
    setting = f"AI simulator {image_s:g} s/image call, {vision_s:g} s/vision call, consistency"
    common = (
        f"{len(timings)} of {journeys} journeys delivered one after another ({setting}); upload → link "
        f"p50 {_pct(totals, 0.5):.2f} s; all calls in flight (union) p50 "
        f"{_pct([t.union_s for t in timings], 0.5):.2f} s; rendered → link p50 "
        f"{_pct([t.delivery_s for t in timings], 0.5):.2f} s; {timings[0].calls} provider calls per job; "
        f"run {time.monotonic() - started:.0f} s, {load}"
    )
    if lost:
        common += f"; {lost} not delivered (left out)"
    met = p50 <= TARGET_P50_S
    why = (
        ""
        if met
        else "; missed: delivery's leg (rendered → link) is no longer idle, the rest is the worker's CPU "
        "between calls (post-processing of the sheets, storing), slowed by the other processes sharing "
        "this machine's CPUs (see the load average); post-processing off the event "
        "loop and at ≤ 1.5× its floor (issue 12 item 2) and a quiet machine would bring it down"
    )
    return [
        Row(
            group="Upload → link overhead",
            name="overhead p50 (upload → link − provider critical path)",
            ours=f"{p50:.2f} s",
            reference=f"{_pct(critical, 0.5):.2f} s provider critical path p50",
            ratio=p50 / _pct(critical, 0.5),
            target=f"≤ {TARGET_P50_S:.2f} s (half of 4.35 s, issue 12)",
            met=met,
            note=common + why,
        ),
        Row(
            group="Upload → link overhead",
            name="overhead p95",
            ours=f"{p95:.2f} s",
            reference=f"{_pct(critical, 0.95):.2f} s provider critical path p95",
            ratio=p95 / _pct(critical, 0.95),
            target="reported (no target of its own)",
            met=None,
        ),
    ]
