"""The chaos run: many guest journeys and leads while services are SIGKILLed, Redis restarts empty and
Postgres crashes; then the invariants are checked from the database and the Telegram simulator.

Everything runs on servers of its own (spare ports, a temporary folder), so a restart touches nothing
else on the machine. Used by ``make chaos`` (full size) and, small, by ``make test``.

Invariants (issue 5): every accepted photo ended ``delivered`` with exactly one sticker set and one link
message, or ``failed`` with exactly one failure message; no set created twice; every lead published
exactly once; no job charged more attempts than ``MAX_ATTEMPTS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import asyncpg
import httpx

from devstack.infra import with_database
from devstack.journey import LINK, bot_texts, chat_messages
from devstack.processes import SERVICES, Stack, StackConfig
from devstack.servers import PostgresServer, RedisServer
from shared.db import plain_url
from shared.migrate import migrate

CARD = re.compile(r"Lead #(\d+)\b")
FAULT_KINDS = (*(f"kill:{s}" for s in SERVICES), "redis_restart", "postgres_restart")
MAX_ATTEMPTS = 2
CHAOS_ENV = {
    "STREAM_LEASE_SEC": "5",
    "RECONCILE_GRACE_SEC": "2",
    "RECONCILE_INTERVAL_SEC": "1",
    "REPUBLISH_AFTER_SEC": "15",
    "SENDING_STALE_SEC": "10",
    "HEARTBEAT_SEC": "1",
    "HEARTBEAT_TIMEOUT_SEC": "12",
    "RETRY_DELAY_SEC": "1",
    "MAX_ATTEMPTS": str(MAX_ATTEMPTS),
    "PACK_POLL_FAST_SEC": "0.5",
    "SWEEP_INTERVAL_SEC": "0.5",
    "STREAM_BLOCK_MS": "500",
    "WORKER_SLOTS": "2",
    "LOG_LEVEL": "INFO",
    # every simulated visitor posts from 127.0.0.1: the per-client lead limit would refuse them
    "LEADS_RATE_LIMIT": "100000",
}


@dataclass
class ChaosReport:
    journeys: int
    leads: int
    faults: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    recover_s: list[float] = field(default_factory=list)
    rejected: int = 0
    seconds: float = 0.0
    logs: Path | None = None

    def table(self) -> str:
        rows = [
            ("journeys (photos accepted)", f"{self.journeys} ({self.journeys - self.rejected})"),
            ("leads", str(self.leads)),
            *((f"fault {kind}", str(n)) for kind, n in sorted(self.faults.items())),
            ("faults total", str(sum(self.faults.values()))),
            *((f"jobs {k}", str(v)) for k, v in sorted(self.outcomes.items())),
            ("lost", str(len(self.lost))),
            ("duplicated", str(len(self.duplicated))),
            (
                "time to recover (s) median/max",
                f"{_median(self.recover_s):.1f}/{max(self.recover_s, default=0):.1f}"
                if self.recover_s
                else "-",
            ),
            ("run time (s)", f"{self.seconds:.0f}"),
        ]
        width = max(len(r[0]) for r in rows)
        lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
        lines += [f"LOST {x}" for x in self.lost] + [f"DUPLICATED {x}" for x in self.duplicated]
        if self.logs is not None:
            lines.append(f"logs kept in {self.logs}")
        lines.append(
            f"chaos: journeys={self.journeys} leads={self.leads} faults={sum(self.faults.values())} "
            f"lost={len(self.lost)} duplicated={len(self.duplicated)}"
        )
        return "\n".join(lines)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


class Chaos:
    """Owns the servers and the stack of one chaos run."""

    def __init__(self, *, base: Path, seed: int) -> None:
        self.base = base
        self.rng = random.Random(seed)
        self.pg = PostgresServer(base / "pg")
        self.redis = RedisServer(base / "redis")
        self.stack: Stack | None = None
        self.lock = threading.Lock()  # faults and the supervisor never touch processes at once
        self.stop = threading.Event()

    # --- set-up -------------------------------------------------------------------------------------

    def start(self) -> Stack:
        self.pg.init()
        self.pg.start()
        self.redis.start()
        db_url = with_database(self.pg.url, "postgres")
        asyncio.run(migrate(db_url, wait_s=30))
        config = StackConfig(
            database_url=db_url,
            redis_url=self.redis.url,
            log_dir=self.base / "logs",
            extra_env=dict(CHAOS_ENV),
        )
        self.stack = Stack(config)
        self.stack.start_all()
        return self.stack

    def shutdown(self) -> None:
        self.stop.set()
        if self.stack is not None:
            with contextlib.suppress(Exception):
                self.stack.stop_all()
        self.redis.stop()
        self.pg.stop()

    # --- faults -------------------------------------------------------------------------------------

    def inject(self, kind: str) -> float:
        """Inject one fault; returns the seconds until the stack answered health checks again."""
        assert self.stack is not None
        started = time.monotonic()
        with self.lock:
            if kind.startswith("kill:"):
                name = kind.removeprefix("kill:")
                if name in self.stack.procs:
                    self.stack.kill(name)
                time.sleep(self.rng.uniform(0.2, 1.5))
                self.stack.start(name)
            elif kind == "redis_restart":
                self.redis.restart_empty()
            elif kind == "postgres_restart":
                self.pg.restart()
        self._wait_recovered()
        return time.monotonic() - started

    def _wait_recovered(self, timeout_s: float = 90) -> None:
        assert self.stack is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self.stack.wait_healthy(timeout_s=5)
                return
            except RuntimeError:
                self._restart_exited()

    def _restart_exited(self) -> None:
        """Like a container runtime's restart policy: a service that exited is started again."""
        assert self.stack is not None
        for name, proc in list(self.stack.procs.items()):
            if proc.poll() is not None and name != "telegram-sim":
                self.stack.procs.pop(name)
                self.stack.start(name)

    def supervise(self) -> None:
        while not self.stop.wait(1.0):
            with self.lock:
                self._restart_exited()

    def fault_loop(self, faults: int, report: ChaosReport, interval: tuple[float, float]) -> None:
        kinds = list(FAULT_KINDS)
        plan = [kinds[i % len(kinds)] for i in range(faults)]
        self.rng.shuffle(plan)
        for kind in plan:
            if self.stop.wait(self.rng.uniform(*interval)):
                return
            report.recover_s.append(self.inject(kind))
            report.faults[kind] += 1


# --- the traffic ------------------------------------------------------------------------------------


def _retrying(call: Any, *, timeout_s: float = 180) -> httpx.Response:
    """Call until a non-5xx answer arrives, as the kiosk page does on network errors."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            response: httpx.Response = call()
            if response.status_code < 500:
                return response
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("the stack did not answer")
        time.sleep(0.5)


class Endpoints(Protocol):
    """Where a stack answers: the kiosk API and the Telegram simulator (a ``Stack``, or compose's ports)."""

    @property
    def ingest_url(self) -> str: ...

    @property
    def sim_url(self) -> str: ...


def play_guest(stack: Endpoints, photo: bytes, user_id: int, outfit: str) -> str | None:
    """One guest up to an accepted upload; returns the job id (``None`` when the photo was refused)."""
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=30) as kiosk,
        httpx.Client(base_url=stack.sim_url) as sim,
    ):
        session = _retrying(lambda: kiosk.post("/sessions", json={"station": "chaos"})).json()
        token = session["deep_link"].split("start=", 1)[1]
        sim.post(f"/sim/users/{user_id}/messages", json={"text": f"/start {token}", "first_name": "G"})
        deadline = time.monotonic() + 240
        while not _retrying(lambda: kiosk.get(f"/sessions/{session['id']}")).json()["telegram_linked"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"guest {user_id} was never linked")
            time.sleep(0.5)
        _retrying(lambda: kiosk.put(f"/sessions/{session['id']}/outfit", json={"outfit_id": outfit}))
        capture = uuid.uuid4().hex
        upload = _retrying(
            lambda: kiosk.post(
                f"/sessions/{session['id']}/photo",
                files={"photo": ("p.jpg", photo)},
                data={"capture_id": capture},
            )
        )
        return str(upload.json()["job_id"]) if upload.status_code in (200, 202) else None


def submit_lead(stack: Endpoints, n: int) -> int:
    body = {
        "requestId": f"chaos-lead-{n:05d}",
        "name": f"Lead {n}",
        "contact": f"+1555{n:07d}",
        "message": "hi",
    }
    response = _retrying(lambda: httpx.post(f"{stack.ingest_url}/leads", json=body, timeout=30))
    response.raise_for_status()
    return int(response.json()["lead_number"])


# --- the invariants ---------------------------------------------------------------------------------


async def _rows(db_url: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(plain_url(db_url))
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


def wait_final(db_url: str, timeout_s: float) -> dict[str, tuple[str, int, int]]:
    """Wait until no job is active; returns ``{job_id: (status, attempts, tg_user_id)}``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            rows = asyncio.run(
                _rows(
                    db_url,
                    "SELECT j.id::text, j.status, j.attempts, s.tg_user_id"
                    " FROM jobs j JOIN sessions s ON s.id = j.session_id",
                )
            )
        except (OSError, asyncpg.PostgresError):
            rows = None
        if rows is not None and all(r["status"] in ("delivered", "failed") for r in rows):
            return {r[0]: (r[1], r[2], r[3]) for r in rows}
        if time.monotonic() > deadline:
            active = [r[0] for r in rows or [] if r["status"] not in ("delivered", "failed")]
            raise TimeoutError(f"jobs still active after {timeout_s:.0f}s: {active[:10]}")
        time.sleep(1)


def check_invariants(
    sim_url: str,
    leads_chat_id: int,
    jobs: dict[str, tuple[str, int, int]],
    lead_numbers: list[int],
    report: ChaosReport,
) -> None:
    """Record in ``report`` every job, set and lead card that breaks the invariants (module docstring)."""
    with httpx.Client(base_url=sim_url, timeout=30) as sim:
        sets = sim.get("/sim/sticker-sets").json()
        set_names = Counter(s["name"] for s in (sets["sticker_sets"] if isinstance(sets, dict) else sets))
        creates = sim.get("/sim/calls", params={"method": "createNewStickerSet"}).json()
        calls = creates["calls"] if isinstance(creates, dict) else creates
        for job_id, (status, attempts, user_id) in jobs.items():
            report.outcomes[status] += 1
            texts = bot_texts(chat_messages(sim, user_id))
            links = [m for t in texts if (m := LINK.search(t))]
            failures = [
                t for t in texts if t.startswith("Something went wrong") or t.startswith("We couldn't find")
            ]
            if attempts > MAX_ATTEMPTS:
                report.duplicated.append(f"job {job_id}: charged {attempts} attempts")
            if status == "delivered":
                if len(links) != 1:
                    (report.lost if not links else report.duplicated).append(
                        f"job {job_id}: {len(links)} links"
                    )
                elif set_names[links[0]["name"]] != 1:
                    report.duplicated.append(
                        f"job {job_id}: set {links[0]['name']} x{set_names[links[0]['name']]}"
                    )
                elif len(sim.get(f"/sim/sticker-sets/{links[0]['name']}").json()["stickers"]) != 12:
                    report.lost.append(f"job {job_id}: set incomplete")
            elif len(failures) != 1 or links:
                target = report.lost if not failures and not links else report.duplicated
                target.append(f"job {job_id} failed: {len(failures)} failure texts, {len(links)} links")
        created_ok = Counter(c["params"].get("name") for c in calls if c["ok"])
        for name, count in created_ok.items():
            if count > 1:
                report.duplicated.append(f"set {name} created {count} times")
        cards: Counter[int] = Counter()
        for message in chat_messages(sim, leads_chat_id):
            match = CARD.match(message.get("text") or "")
            if match and (message.get("from") or {}).get("is_bot"):
                cards[int(match[1])] += 1
        for number in lead_numbers:
            if cards[number] == 0:
                report.lost.append(f"lead {number}: no card")
            elif cards[number] > 1:
                report.duplicated.append(f"lead {number}: {cards[number]} cards")


def run(
    *,
    journeys: int,
    leads: int,
    faults: int,
    photo: bytes,
    seed: int = 7,
    interval: tuple[float, float] = (2, 6),
) -> ChaosReport:
    """Play ``journeys`` guests and ``leads`` leads under ``faults`` faults; returns the report."""
    base = Path(tempfile.mkdtemp(prefix="sb-chaos-"))
    base.chmod(0o755)
    chaos = Chaos(base=base, seed=seed)
    report = ChaosReport(journeys=journeys, leads=leads)
    started = time.monotonic()
    finished = False
    try:
        stack = chaos.start()
        supervisor = threading.Thread(target=chaos.supervise, daemon=True)
        supervisor.start()
        faulter = threading.Thread(target=chaos.fault_loop, args=(faults, report, interval), daemon=True)
        faulter.start()
        outfits = ["astronaut", "pirate", "chef", "superhero"]
        with ThreadPoolExecutor(max_workers=6) as pool:
            guest_futures = [
                pool.submit(play_guest, stack, photo, 700_000 + i, outfits[i % len(outfits)])
                for i in range(journeys)
            ]
            lead_futures = [pool.submit(submit_lead, stack, i) for i in range(leads)]
            job_ids = [f.result() for f in guest_futures]
            lead_numbers = sorted({f.result() for f in lead_futures})
        report.rejected = sum(1 for j in job_ids if j is None)
        faulter.join()
        jobs = wait_final(stack.config.database_url, timeout_s=600)
        time.sleep(3)  # let the last link/failure messages and cards land
        _wait_leads_published(stack.config.database_url, timeout_s=120)
        accepted = {j for j in job_ids if j is not None}
        for job_id in accepted - set(jobs):
            report.lost.append(f"job {job_id}: accepted but not in the database")
        check_invariants(stack.sim_url, stack.config.leads_chat_id, jobs, lead_numbers, report)
        finished = True
    finally:
        report.seconds = time.monotonic() - started
        chaos.shutdown()
        if finished and not report.lost and not report.duplicated:
            shutil.rmtree(base, ignore_errors=True)
        else:
            report.logs = base / "logs"
            print(f"chaos: logs kept in {report.logs}")
    return report


def _wait_leads_published(db_url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            rows = asyncio.run(_rows(db_url, "SELECT count(*) FROM leads WHERE published_at IS NULL"))
            if rows[0][0] == 0:
                return
        time.sleep(1)
