"""The ``make bench`` rows "Fleet": packs per minute for 1, 2 and 4 worker processes sharing one fleet
provider budget, against the budget-bound ideal, and the most image calls the AI simulator saw in flight
against the budget (issue 12 item 4).

Each worker is a real ``python -m worker`` process with ``WORKER_SLOTS`` slots and its own
``AI_MAX_PARALLEL_IMAGES``; all of them use one private Redis (``devstack.servers.RedisServer``), a fresh
Postgres database and the AI simulator (``python -m simulators.ai``, latency ``latency_s`` per call), with
Gemini as the only provider, so every image call is one account's. The budget
(``AI_FLEET_MAX_IMAGES_IN_FLIGHT``) is below what 4 processes would send (4 × ``AI_MAX_PARALLEL_IMAGES``)
and above what one may (so 1 process is bound by its own limit, 2 and 4 by the fleet's).

Per worker count: the stream gets ``packs`` jobs at once (consistency variant, the astronaut fixture);
packs per minute is counted from the first image call (``api_usage``) to the last job reaching
``rendered`` (``job_events``): worker start-up and the first passport call are not counted, the drain of the
last pack (its post-processing and pack QA) is. The ideal is what the image calls allow:
``60 × min(budget, processes × AI_MAX_PARALLEL_IMAGES) ÷ (image calls per pack × seconds per image call)``,
both measured in the same run (``api_usage``: image calls of the run ÷ packs, their mean latency as the
worker saw it). The in-flight figure is the simulator's ``GET /sim/in-flight`` maximum of
``gemini:image`` over the run. The reference row runs the 4 processes again with the fleet budget off
(``AI_FLEET_MAX_IMAGES_IN_FLIGHT=0``): what the simulator sees without it (the in-flight check can fail).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import sqlalchemy as sa

from devstack.bench.report import Options, Row
from devstack.infra import drop_database, free_port, migrated_database
from devstack.processes import FAST_TIMINGS, REPO, Stack, StackConfig
from devstack.servers import RedisServer
from shared import streams
from shared.db import create_engine
from shared.db.tables import api_usage, job_events
from shared.domain import JobStatus
from shared.messages import JobQueued
from shared.repositories import Database
from shared.streams import Publisher, create_redis

__all__ = ["FleetPlan", "Run", "measure", "run_fleet"]

GROUP = "Fleet (provider budget shared by worker processes)"
TARGET_SHARE = 0.8  # of the ideal: few packs, so the drain of the last one weighs in
PHOTO = REPO.parent / "shared" / "fixtures" / "photos" / "astronaut-portrait.png"
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class FleetPlan:
    """The sizes of one fleet benchmark."""

    workers: tuple[int, ...] = (1, 2, 4)
    packs: int = 6  # per worker count
    slots: int = 4  # WORKER_SLOTS
    per_process: int = 3  # AI_MAX_PARALLEL_IMAGES
    budget: int = 4  # AI_FLEET_MAX_IMAGES_IN_FLIGHT
    latency_s: float = 2.0  # the simulator's added latency per call
    reference: bool = True  # also 4 processes without the budget, until they pass it


#: The tests' quick run: 2 packs at once still ask for 2 image calls against a budget of 1.
QUICK = FleetPlan(workers=(1, 2), packs=2, slots=2, per_process=1, budget=1, latency_s=0.3, reference=False)


@dataclass(frozen=True)
class Run:
    """What one worker count did: packs, their span (s) from the first image call to the last pack, image
    calls and their mean latency (s), and the most image calls the simulator saw in flight."""

    workers: int
    budget: int
    packs: int
    span_s: float
    image_calls: int
    image_latency_s: float
    max_in_flight: int
    failed: int
    fail_opens: int = 0
    load: float = 0.0  # the 1-minute load average when the run ended

    @property
    def per_minute(self) -> float:
        return 60.0 * self.packs / self.span_s if self.span_s > 0 else 0.0

    def ideal(self, per_process: int) -> float:
        """The budget-bound packs per minute (see the module docstring)."""
        slots = min(self.budget, self.workers * per_process) if self.budget else self.workers * per_process
        calls_per_pack = self.image_calls / max(self.packs, 1)
        return 60.0 * slots / (calls_per_pack * self.image_latency_s) if self.image_latency_s else 0.0


def _selfie() -> bytes:
    import io

    from PIL import Image

    with Image.open(PHOTO) as opened:
        image = opened.convert("RGB")
    image.thumbnail((1024, 1024))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


async def _enqueue(db_url: str, redis_url: str, count: int, selfie: bytes) -> list[uuid.UUID]:
    db = Database(create_engine(db_url, pool_size=2))
    redis = create_redis(redis_url)
    ids = []
    try:
        async with db.transaction() as repos:
            for i in range(count):
                token = f"bench-{uuid.uuid4().hex[:12]}"
                session = await repos.sessions.create(station="bench", token=token)
                await repos.sessions.bind_telegram(
                    token, user_id=10 + i, chat_id=10 + i, name="B", language="en"
                )
                job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
                await repos.blobs.put(kind="selfie", data=selfie, content_type="image/jpeg", job_id=job.id)
                ids.append(job.id)
        publisher = Publisher(redis)
        for job_id in ids:
            await publisher.publish(streams.JOBS, JobQueued(job_id=job_id))
        async with db.transaction() as repos:  # as ingest does: the reconciler need not publish them again
            await repos.jobs.mark_dispatched(ids, JobStatus.QUEUED)
    finally:
        await redis.aclose()
        await db.dispose()
    return ids


async def _progress(
    db_url: str, ids: list[uuid.UUID]
) -> tuple[list[datetime], int, list[tuple[datetime, float]]]:
    """Times the jobs became ``rendered``, how many ``failed``, and their image calls as ``(sent at,
    latency s)``."""
    engine = create_engine(db_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            events = (
                await conn.execute(
                    sa.select(job_events.c.to_status, job_events.c.at).where(job_events.c.job_id.in_(ids))
                )
            ).all()
            calls = (
                await conn.execute(
                    sa.select(api_usage.c.latency_ms, api_usage.c.created_at).where(
                        api_usage.c.job_id.in_(ids),
                        api_usage.c.call_type == "image",
                        api_usage.c.outcome == "ok",
                    )
                )
            ).all()
    finally:
        await engine.dispose()
    rendered = sorted(at for status, at in events if status == "rendered")
    failed = sum(1 for status, _at in events if status == "failed")
    return rendered, failed, [(row[1] - timedelta(milliseconds=row[0]), row[0] / 1000) for row in calls]


Workers = list[tuple[subprocess.Popen[bytes], int]]


def _start_workers(stack: Stack, count: int, env: dict[str, str]) -> Workers:
    procs = []
    for i in range(count):
        port = free_port()
        worker_env = {**stack.env("worker"), **env, "OPS_PORT": str(port), "CONSUMER_NAME": f"bench-w{i}"}
        log = open(stack.config.log_dir / f"worker-{i}.log", "ab")  # noqa: SIM115 - owned by the child
        procs.append(
            (
                subprocess.Popen(
                    stack.command("worker"), env=worker_env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO
                ),
                port,
            )
        )
        log.close()
    for proc, port in procs:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"a bench worker exited with {proc.returncode}; see {stack.config.log_dir}"
                )
            try:
                if stack.http.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("a bench worker did not get healthy in 60 s")
            time.sleep(0.2)
    return procs


def _stop_workers(procs: Workers) -> None:
    for proc, _port in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc, _port in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _fail_opens(stack: Stack) -> int:
    """``FLEET_BUDGET_UNAVAILABLE`` lines in the workers' logs so far (calls sent without a fleet slot)."""
    return sum(
        path.read_text(errors="replace").count("FLEET_BUDGET_UNAVAILABLE")
        for path in stack.config.log_dir.glob("worker-*.log")
    )


def _one(
    stack: Stack,
    plan: FleetPlan,
    workers: int,
    budget: int,
    selfie: bytes,
    *,
    timeout_s: float,
    stop_over: int | None = None,
) -> Run:
    """One worker count; with ``stop_over``, stop (SIGKILL) as soon as the simulator saw more image calls in
    flight than that (the reference run only needs to see it)."""
    env = {
        **FAST_TIMINGS,
        "WORKER_SLOTS": str(plan.slots),
        "AI_MAX_PARALLEL_IMAGES": str(plan.per_process),
        "AI_FLEET_MAX_IMAGES_IN_FLIGHT": str(budget),
        "FALLBACK_AI_PROVIDER": "",  # one account: every image call is gemini's
        "LOG_LEVEL": "WARNING",
    }
    opened_before = _fail_opens(stack)
    procs = _start_workers(stack, workers, env)
    try:
        httpx.delete(f"{stack.ai_sim_url}/sim/in-flight", timeout=5).raise_for_status()
        ids = asyncio.run(_enqueue(stack.config.database_url, stack.config.redis_url, plan.packs, selfie))
        deadline = time.monotonic() + timeout_s
        while True:
            rendered, failed, calls = asyncio.run(_progress(stack.config.database_url, ids))
            seen = stack.http.get(f"{stack.ai_sim_url}/sim/in-flight", timeout=5).json()
            over = stop_over is not None and seen["max"].get("gemini:image", 0) > stop_over
            if over or len(rendered) + failed >= len(ids) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        if stop_over is not None:
            for proc, _port in procs:
                proc.kill()
        _stop_workers(procs)
    first_call = min((sent for sent, _latency in calls), default=None)
    span = (rendered[-1] - first_call).total_seconds() if rendered and first_call else 0.0
    return Run(
        workers=workers,
        budget=budget,
        packs=len(rendered),
        span_s=span,
        image_calls=len(calls),
        image_latency_s=statistics.fmean(latency for _n, latency in calls) if calls else 0.0,
        max_in_flight=int(seen["max"].get("gemini:image", 0)),
        failed=failed,
        fail_opens=_fail_opens(stack) - opened_before,
        load=os.getloadavg()[0],
    )


def run_fleet(plan: FleetPlan, workdir: Path) -> tuple[list[Run], Run | None]:
    """Run the plan on a private Redis, a fresh database and the AI simulator; the runs with the budget,
    and the reference run without it (``None`` unless ``plan.reference``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = os.environ.get("DATABASE_URL", DEFAULT_DB)
    database = f"sb_bench_fleet_{os.getpid()}"
    redis_server = RedisServer(workdir / "redis")
    redis_server.start()
    db_url = migrated_database(server, database)
    stack = Stack(
        StackConfig(
            database_url=db_url,
            redis_url=redis_server.url,
            log_dir=workdir / "logs",
            ai_sim=True,
            extra_env={"AISIM_LATENCY_SEC": str(plan.latency_s)},
        )
    )
    selfie = _selfie()
    try:
        stack.start("ai-sim")
        stack.wait_http(f"{stack.ai_sim_url}/healthz", "ai-sim")
        timeout_s = 150.0
        runs = [_one(stack, plan, n, plan.budget, selfie, timeout_s=timeout_s) for n in plan.workers]
        reference = None
        if plan.reference:
            reference = _one(stack, plan, max(plan.workers), 0, selfie, timeout_s=60.0, stop_over=plan.budget)
    finally:
        stack.stop_all()
        redis_server.stop()
        drop_database(server, database)
    return runs, reference


def measure(options: Options) -> list[Row]:
    """The rows (see the module docstring); ``options.quick``: 1 and 2 workers, 2 packs, short latency."""
    plan = QUICK if options.quick else FleetPlan()
    runs, reference = run_fleet(plan, options.workdir)
    rows = []
    for run in runs:
        ideal = run.ideal(plan.per_process)
        share = run.per_minute / ideal if ideal else 0.0
        own = run.workers * plan.per_process
        bound = "the fleet budget" if plan.budget < own else "AI_MAX_PARALLEL_IMAGES"
        met = run.packs == plan.packs and share >= TARGET_SHARE
        note = (
            f"{run.packs}/{plan.packs} packs, {run.failed} failed; "
            f"{run.image_calls / max(run.packs, 1):.1f} image calls per pack at {run.image_latency_s:.2f} s; "
            f"bound by {bound}; WORKER_SLOTS={plan.slots}, "
            f"AI_MAX_PARALLEL_IMAGES={plan.per_process}, simulator latency {plan.latency_s} s"
        )
        if not met:
            note += (
                f"; missed: CPU (load average {run.load:.0f} on {os.cpu_count()} CPUs at the end: the "
                "simulator draws every image and each pack costs ~2 CPU-s of post-processing, so image calls "
                "last longer and slots wait for cuts) and the drain of the last pack (its cut and pack QA "
                "after its last image call) weigh on so few packs; more packs per run, a longer provider "
                "latency and an idle machine bring it to the ideal"
            )
        rows.append(
            Row(
                group=GROUP,
                name=f"packs per minute, {run.workers} worker process{'es' if run.workers > 1 else ''}",
                ours=f"{run.per_minute:.1f}/min",
                reference=f"{ideal:.1f}/min budget-bound ideal",
                ratio=share,
                target=f"≥ {TARGET_SHARE:.0%} of the ideal",
                met=met,
                note=note,
            )
        )
        rows.append(
            Row(
                group=GROUP,
                name=f"max image calls in flight (simulator), {run.workers} worker process"
                f"{'es' if run.workers > 1 else ''}",
                ours=str(run.max_in_flight),
                reference=f"{plan.budget} AI_FLEET_MAX_IMAGES_IN_FLIGHT",
                ratio=run.max_in_flight / plan.budget,
                target="never above the budget",
                met=run.max_in_flight <= plan.budget,
                note=f"{run.workers} × AI_MAX_PARALLEL_IMAGES = {own} without the budget; "
                f"{run.fail_opens} × FLEET_BUDGET_UNAVAILABLE (calls sent without a slot)",
            )
        )
    if reference is not None:
        rows.append(
            Row(
                group=GROUP,
                name=f"max image calls in flight, {reference.workers} processes, no budget (reference)",
                ours=str(reference.max_in_flight),
                reference=f"{plan.budget} (the budget of the rows above)",
                ratio=reference.max_in_flight / plan.budget,
                target="above the budget (proves the in-flight check can fail)",
                met=reference.max_in_flight > plan.budget,
                note="AI_FLEET_MAX_IMAGES_IN_FLIGHT=0, stopped once the simulator saw more than the budget",
            )
        )
    return rows
