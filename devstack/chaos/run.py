"""One chaos run: guests (in bursts of kiosks uploading at once) and leads while the faults of
:mod:`devstack.chaos.faults` are injected; then everything is gathered and judged by
:mod:`devstack.chaos.ledger`.

Everything runs on servers of its own (spare ports, a temporary folder), so a restart touches nothing else
on the machine. The AI provider simulator runs too, so provider faults go through the real SDKs. Used by
``make chaos`` (full size) and, small, by ``make test``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import random
import shutil
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from devstack.chaos import faults as F
from devstack.chaos.ledger import (
    PREVIEW_PREFIX,
    BotMessage,
    Guest,
    JobRow,
    LeadSubmission,
    Ledger,
    Observed,
    PauseSeen,
    StickerSet,
    judge,
)
from devstack.chaos.traffic import GuestPlan, photos, play_guest, submit_lead
from devstack.infra import with_database
from devstack.journey import chat_messages
from devstack.processes import Stack, StackConfig
from devstack.servers import PostgresServer, RedisServer
from shared.db import plain_url
from shared.migrate import migrate

MAX_ATTEMPTS = 2
BURST_SIZE = 20
ADMIN_TOKEN = "chaos-admin-token-not-a-secret-0001"
PAUSE_RESUME_AFTER_S = 5.0
#: Seconds between two AI provider faults, and between two leads-group holds (min, max): short, so every
#: one is queued while the first bursts still make calls and is met by them; the stack's faults keep the
#: run's ``interval``.
OUTSIDE_INTERVAL_S = (2.0, 6.0)
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
    "WORKER_SLOTS": str(F.WORKER_SLOTS),
    "LOG_LEVEL": "INFO",
    "AI_TIMEOUT_SEC": "15",
    "VISION_TIMEOUT_SEC": "10",
    "ADMIN_TOKEN": ADMIN_TOKEN,
    # every simulated visitor posts from 127.0.0.1: the per-client lead limit would refuse them
    "LEADS_RATE_LIMIT": "100000",
}
OUTFITS = ("astronaut", "pirate", "chef", "superhero")


@dataclass
class RunResult:
    """The judged run plus what the run itself did (``notes``: admin resumes, faults the product cannot
    meet); ``unmet``: injected faults still queued in a simulator at the end, which the run's traffic never
    met (a fault that never fired proves nothing, so the run fails on them)."""

    ledger: Ledger
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    unmet: list[str] = field(default_factory=list)
    logs: Path | None = None
    swept: int = 0  # sweep waves played to meet faults injected after the planned traffic

    @property
    def ok(self) -> bool:
        """The ledger is clean and every injected fault was met."""
        return self.ledger.ok and not self.unmet

    def table(self) -> str:
        lines = [*self.notes, f"run time (s): {self.seconds:.0f}"]
        if self.logs is not None:
            lines.append(f"logs kept in {self.logs}")
        lines += [f"UNMET {x}" for x in self.unmet]
        return "\n".join([*lines, self.ledger.table(), f"unmet_faults={len(self.unmet)}"])


class Chaos:
    """Owns the servers and the stack of one chaos run and the threads that fault and steer it."""

    def __init__(self, *, base: Path, seed: int) -> None:
        self.base = base
        self.rng = random.Random(seed)
        self.pg = PostgresServer(base / "pg")
        self.redis = RedisServer(base / "redis")
        self.stack: Stack | None = None
        self.lock = threading.Lock()  # faults and the supervisor never touch processes at once
        self.stop = threading.Event()
        self.injected: Counter[str] = Counter()
        self.resumes = 0
        self.pauses: set[PauseSeen] = set()  # every pause the steward saw
        self.shifted: set[str] = set()  # jobs moved back by ``tg:hold-past-deadline:link``

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
            ai_sim=True,
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

    # --- process and store faults -------------------------------------------------------------------

    def inject_stack(self, kind: str) -> None:
        """Kill a service or restart a store, then wait until the stack answers health checks again."""
        assert self.stack is not None
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
            elif kind == "postgres:two-outages":
                for n in range(2):
                    self.pg.stop()
                    time.sleep(F.PG_OUTAGE_S)
                    self.pg.start()
                    if n == 0:
                        time.sleep(F.PG_OUTAGE_GAP_S)
        self.injected[kind] += 1
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not self.stop.is_set():
            try:
                self.stack.wait_healthy(timeout_s=5)
                return
            except RuntimeError:
                with self.lock:
                    self.stack.restart_exited(keep_down=frozenset({"telegram-sim", "ai-sim"}))

    def supervise(self) -> None:
        """The restart policy: a process that exited by itself is recorded (unexpected) and started again."""
        assert self.stack is not None
        while not self.stop.wait(1.0):
            with self.lock:
                self.stack.restart_exited(keep_down=frozenset({"telegram-sim", "ai-sim"}))

    def _loop(self, plan: list[str], interval: tuple[float, float], act: object) -> None:
        for occurrence, kind in enumerate(plan):
            if self.stop.wait(self.rng.uniform(*interval)):
                return
            try:
                act(kind, occurrence)  # type: ignore[operator]
            except (httpx.HTTPError, RuntimeError) as exc:
                print(f"chaos: could not inject {kind}: {exc}")

    # --- faults of the outside world ----------------------------------------------------------------

    def inject_ai(self, kind: str, occurrence: int) -> None:
        assert self.stack is not None
        for body in F.ai_faults(kind, occurrence):
            self.stack.http.post(
                f"{self.stack.ai_sim_url}/sim/faults", json=body, timeout=10
            ).raise_for_status()
        self.injected[kind] += 1

    def inject_burst(self, _kind: str, occurrence: int) -> None:
        """``tg:burst``: one Telegram user (no guest) sends ``BURST_MESSAGES`` messages at once."""
        assert self.stack is not None
        user = F.BURST_USER + occurrence
        with httpx.Client(base_url=self.stack.sim_url, timeout=10) as sim:
            for n in range(F.BURST_MESSAGES):
                body = {"text": f"forwarded message {n}", "first_name": "Chatty", "language_code": "en"}
                sim.post(f"/sim/users/{user}/messages", json=body).raise_for_status()
        self.injected["tg:burst"] += 1

    def move_held_links_back(self, users: frozenset[int]) -> None:
        """``tg:hold-past-deadline:link``: once a job of one of ``users`` has its link refused with 429, move
        its photo (``created_at`` and its first event) back by ``DEADLINE_SHIFT_S``, so that the 15-minute
        deadline passes while the link waits out the hold (the time left is shorter than the hold)."""
        assert self.stack is not None
        db_url = self.stack.config.database_url
        ids = ", ".join(str(int(u)) for u in users)
        while users and not self.stop.wait(1.0):
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                held = _query(
                    db_url,
                    "SELECT DISTINCT j.id::text AS id FROM jobs j JOIN sessions s ON s.id = j.session_id"
                    " JOIN tg_commands c ON c.command_id LIKE 'job:' || j.id::text || ':link%'"
                    f" WHERE s.tg_user_id IN ({ids}) AND c.status = 'failed'"
                    " AND (c.error->>'error_code')::int = 429",
                    timeout_s=5,
                )
                for row in held:
                    if row["id"] in self.shifted:
                        continue
                    job_id, shift = row["id"], f"make_interval(secs => {float(F.DEADLINE_SHIFT_S)})"
                    _query(
                        db_url,
                        f"WITH j AS (UPDATE jobs SET created_at = created_at - {shift} WHERE id = '{job_id}'"
                        f" RETURNING id) UPDATE job_events SET at = at - {shift}"
                        f" WHERE job_id = '{job_id}' RETURNING job_id",
                        timeout_s=5,
                    )
                    self.shifted.add(job_id)
                    print(f"chaos: job {job_id} moved back {F.DEADLINE_SHIFT_S:.0f}s while its link is held")

    def inject_group(self, kind: str, _occurrence: int) -> None:
        assert self.stack is not None
        for body in F.group_tg_faults(kind, self.stack.config.leads_chat_id):
            self.stack.http.post(f"{self.stack.sim_url}/sim/faults", json=body, timeout=10).raise_for_status()
        self.injected[kind] += 1

    def steward(self) -> None:
        """What the staff do: an auto pause is resumed by an admin after ``PAUSE_RESUME_AFTER_S``.

        Flood holds are never lifted early: the gateway keeps Telegram's ``retry_after`` itself (and the
        producers schedule by it), so a hold that ended early in the simulator would only be a simulator
        that disagrees with what it answered."""
        assert self.stack is not None
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        paused_since: float | None = None
        while not self.stop.wait(2.0):
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                pause = self.stack.http.get(
                    f"{self.stack.ingest_url}/admin/status", headers=auth, timeout=5
                ).json()["pause"]
                if pause:
                    self.pauses.add(PauseSeen(str(pause.get("source")), str(pause.get("reason"))))
                if pause and pause.get("source") == "auto":
                    paused_since = paused_since or time.monotonic()
                    if time.monotonic() - paused_since >= PAUSE_RESUME_AFTER_S:
                        self.stack.http.post(
                            f"{self.stack.ingest_url}/admin/resume", headers=auth, timeout=10
                        )
                        self.resumes += 1
                        paused_since = None
                else:
                    paused_since = None


# --- the plan ---------------------------------------------------------------------------------------


def plan_guests(
    journeys: int,
    reps: int,
    rng: random.Random,
    skip: frozenset[str] = frozenset(),
    faces: int | None = None,
) -> list[GuestPlan]:
    """Guests ``700000 + i``: the hard photos and the Telegram faults aimed at guests, each ``reps`` times
    (on distinct guests where there are enough, else several on one), the rest with plain face photos; or,
    past ``faces`` photos with a face, photos without one (cheap to refuse: a short run stays short and
    its burst still sends 20 uploads at once)."""
    pictures = photos()
    hard = [k.removeprefix("photo:") for k in F.PHOTO_KINDS for _ in range(reps)]
    hard = [h for h in hard if f"photo:{h}" not in skip]
    tg = [k for k in F.GUEST_TG_KINDS if k not in skip for _ in range(reps)]
    plans: list[GuestPlan] = []
    plain = itertools.cycle(["jpeg", "png"])
    no_face = itertools.cycle(["no_face:welder", "no_face:pug_heic"])
    for i in range(journeys):
        label = hard[i] if i < len(hard) else next(plain)
        with_face = sum(1 for p in plans if p.photo.face)
        if faces is not None and i >= len(hard) and with_face >= faces:
            label = next(no_face)
        plans.append(GuestPlan(700_000 + i, pictures[label], OUTFITS[i % len(OUTFITS)]))
    faceful = [p for p in plans if p.photo.face]
    rng.shuffle(faceful)
    seen: Counter[str] = Counter()
    for plan, kind in zip(itertools.cycle(faceful), tg, strict=False):
        plan.tg_faults += [(kind, body) for body in F.guest_tg_faults(kind, plan.user_id, seen[kind])]
        plan.tags += (kind,)
        seen[kind] += 1
    for plan in plans:
        if plan.photo.label not in ("jpeg", "png"):
            plan.tags += (f"photo:{plan.photo.label}",)
    if F.SLOW_UPLINK not in skip:
        for plan in [p for p in reversed(faceful) if p.uplink_bps is None][:reps]:
            plan.uplink_bps = F.SLOW_UPLINK_BPS
            plan.tags += (F.SLOW_UPLINK,)
    return plans


def _spread(kinds: tuple[str, ...], reps: int, rng: random.Random, skip: frozenset[str]) -> list[str]:
    plan = [k for k in kinds if k not in skip for _ in range(reps)]
    rng.shuffle(plan)
    return plan


# --- gathering --------------------------------------------------------------------------------------


async def _rows(db_url: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(plain_url(db_url))
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


def _query(db_url: str, query: str, timeout_s: float = 60) -> list[asyncpg.Record]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return asyncio.run(_rows(db_url, query))
        except (OSError, asyncpg.PostgresError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def wait_settled(db_url: str, timeout_s: float) -> None:
    """Wait until no job is active and every lead is published, or ``timeout_s`` passed (the ledger then
    judges what the guests saw by then)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            active = _query(db_url, "SELECT count(*) FROM jobs WHERE status NOT IN ('delivered', 'failed')")
            unpublished = _query(db_url, "SELECT count(*) FROM leads WHERE published_at IS NULL")
            if active[0][0] == 0 and unpublished[0][0] == 0:
                time.sleep(3)  # the last link/failure messages and cards land
                return
        time.sleep(2)


def _message_text(message: dict[str, Any]) -> str:
    """A bot message as the ledger reads it: its text or caption; a sticker as ``[sticker <set name>]``
    (the link's preview, :data:`devstack.chaos.ledger.PREVIEW`)."""
    if sticker := message.get("sticker"):
        return f"{PREVIEW_PREFIX}{sticker.get('set_name', '')}]"
    return str(message.get("text") or message.get("caption") or "")


def simulator_view(sim_url: str, chat_ids: list[int]) -> tuple[dict[int, list[BotMessage]], list[StickerSet]]:
    """What the Telegram simulator at ``sim_url`` holds: the bot's messages in each of ``chat_ids`` and
    every sticker set. Raises ``httpx.HTTPError`` when the simulator does not answer."""
    with httpx.Client(base_url=sim_url, timeout=30) as sim:
        messages: dict[int, list[BotMessage]] = {}
        for chat_id in chat_ids:
            messages[chat_id] = [
                BotMessage(chat_id, _message_text(m), float(m["date"]), m["message_id"])
                for m in chat_messages(sim, chat_id)
                if (m.get("from") or {}).get("is_bot")
            ]
        sets = [
            StickerSet(s["name"], s["owner_user_id"], s["sticker_count"])
            for s in sim.get("/sim/sticker-sets").raise_for_status().json()
        ]
    return messages, sets


def observe(
    stack: Stack,
    guests: list[Guest],
    leads: list[LeadSubmission],
    injected: Counter[str],
    pauses: set[PauseSeen] | None = None,
) -> Observed:
    """Everything the ledger needs, from the rows, the Telegram simulator and the run's records."""
    db_url = stack.config.database_url
    jobs = {
        r["id"]: JobRow(r["id"], r["status"], r["error_class"], r["tg_user_id"])
        for r in _query(
            db_url,
            "SELECT j.id::text AS id, j.status, j.error_class, s.tg_user_id"
            " FROM jobs j JOIN sessions s ON s.id = j.session_id",
        )
    }
    met: dict[str, set[str]] = {}
    for r in _query(db_url, "SELECT job_id::text AS job_id, outcome FROM api_usage WHERE outcome <> 'ok'"):
        if (kind := F.AI_OUTCOME_KIND.get(r["outcome"])) and r["job_id"]:
            met.setdefault(r["job_id"], set()).add(kind)
    tagged = [
        Guest(**{**g.__dict__, "targeted": (*g.targeted, *sorted(met.get(g.job_id or "", ())))})
        for g in guests
    ]
    messages, sets = simulator_view(stack.sim_url, [g.user_id for g in guests] + [stack.config.leads_chat_id])
    return Observed(
        guests=tagged,
        jobs=jobs,
        messages=messages,
        sets=sets,
        leads=leads,
        leads_chat_id=stack.config.leads_chat_id,
        injected=injected,
        exits=list(stack.exits),
        pauses=sorted(pauses or (), key=lambda p: (p.source, p.reason)),
    )


# --- the run ----------------------------------------------------------------------------------------


def run(
    *,
    journeys: int,
    leads: int,
    reps: int = 3,
    seed: int = 7,
    interval: tuple[float, float] = (2, 6),
    settle_s: float = 960,
    lead_every_s: float = 3.0,
    skip: frozenset[str] = frozenset(),
    faces: int | None = None,
) -> RunResult:
    """Play ``journeys`` guests (bursts of :data:`BURST_SIZE`) and ``leads`` leads with every fault kind
    but those in ``skip`` injected ``reps`` times (``faces``: at most so many photos with a face, see
    :func:`plan_guests`); wait up to ``settle_s`` for the outcomes; judge."""
    base = Path(tempfile.mkdtemp(prefix="sb-chaos-"))
    base.chmod(0o755)
    chaos = Chaos(base=base, seed=seed)
    started = time.monotonic()
    result: RunResult | None = None
    try:
        stack = chaos.start()
        guests_plan = plan_guests(journeys, reps, chaos.rng, skip, faces)
        threads = [
            threading.Thread(target=chaos.supervise, daemon=True),
            threading.Thread(target=chaos.steward, daemon=True),
            threading.Thread(
                target=chaos._loop,
                args=(
                    _spread(F.STACK_KINDS, reps, chaos.rng, skip),
                    interval,
                    lambda k, _o: chaos.inject_stack(k),
                ),
                daemon=True,
            ),
            threading.Thread(
                target=chaos._loop,
                args=(_spread(F.AI_KINDS, reps, chaos.rng, skip), OUTSIDE_INTERVAL_S, chaos.inject_ai),
                daemon=True,
            ),
            threading.Thread(
                target=chaos._loop,
                args=(
                    _spread(F.GROUP_TG_KINDS, reps, chaos.rng, skip),
                    OUTSIDE_INTERVAL_S,
                    chaos.inject_group,
                ),
                daemon=True,
            ),
            threading.Thread(
                target=chaos._loop,
                args=(_spread(F.USER_TG_KINDS, reps, chaos.rng, skip), interval, chaos.inject_burst),
                daemon=True,
            ),
            threading.Thread(
                target=chaos.move_held_links_back,
                args=(frozenset(p.user_id for p in guests_plan if "tg:hold-past-deadline:link" in p.tags),),
                daemon=True,
            ),
        ]
        for thread in threads:
            thread.start()
        guests: list[Guest] = []
        lead_results: list[LeadSubmission] = []
        visitor = threading.Thread(
            target=_visitors, args=(stack, leads, lead_every_s, lead_results), daemon=True
        )
        visitor.start()
        for offset in range(0, journeys, BURST_SIZE):
            wave = guests_plan[offset : offset + BURST_SIZE]
            barrier = threading.Barrier(len(wave)) if len(wave) == BURST_SIZE else None
            if barrier is not None:
                chaos.injected[F.BURST] += 1
                for plan in wave:
                    plan.tags += (F.BURST,)
            for plan in wave:
                for kind in plan.tags:
                    if kind.startswith(("tg:", "photo:")) or kind == F.SLOW_UPLINK:
                        chaos.injected[kind] += 1
            kiosk = functools.partial(play_guest, stack.ingest_url, stack.sim_url, before_upload=barrier)
            with ThreadPoolExecutor(max_workers=len(wave)) as pool:
                guests += list(pool.map(kiosk, wave))
        visitor.join()
        for thread in threads[2:-1]:
            thread.join()
        swept = _meet_the_rest(chaos, stack, guests, lead_results, guests_plan, first_lead=leads)
        wait_settled(stack.config.database_url, settle_s)
        ledger = judge(observe(stack, guests, lead_results, chaos.injected, chaos.pauses), F.KINDS)
        notes, unmet = _notes(chaos, stack)
        notes.append(f"sweep waves: {swept} ({swept * SWEEP_GUESTS} guests, {swept} leads)")
        result = RunResult(ledger, notes=notes, unmet=unmet, swept=swept)
    finally:
        seconds = time.monotonic() - started
        chaos.shutdown()
        if result is not None:
            result.seconds = seconds
            if result.ok:
                shutil.rmtree(base, ignore_errors=True)
            else:
                result.logs = base / "logs"
        else:
            print(f"chaos: logs kept in {base / 'logs'}")
    return result


#: The sweep after the planned traffic (see :func:`_meet_the_rest`): guests per wave, its time bound (s:
#: two long flood holds and the jobs around them) and the seconds a guest's last job must have been
#: finished before a fault still aimed at them counts as stranded (their last messages have gone out).
SWEEP_GUESTS = 2
SWEEP_DEADLINE_S = 2 * F.LONG_HOLD_S + 120
STRANDED_AFTER_S = 15


def _meet_the_rest(
    chaos: Chaos,
    stack: Stack,
    guests: list[Guest],
    lead_results: list[LeadSubmission],
    plans: list[GuestPlan],
    *,
    first_lead: int,
) -> int:
    """Meet every injected fault the planned traffic left queued, so the run never judges a fault no guest
    saw. Until nothing counted as unmet is queued, or :data:`SWEEP_DEADLINE_S` passed:

    - a fault aimed at a guest whose jobs all ended (delivered, or failed as designed by another fault,
      e.g. ``ai:content`` or a twice-killed worker) without the call it waits for is *stranded*: it is
      taken out of the simulator and aimed at a sweep guest instead, one guest per stranded guest, tagged
      with its kind so the ledger judges that guest under it;
    - faults anyone's traffic meets (AI faults, the leads group's holds), or stranded ones, are met by a
      sweep wave: :data:`SWEEP_GUESTS` plain guests with a face (user ids from ``790000``, appended to
      ``guests`` and ``plans``) and one lead; the next wave waits until this one's jobs ended;
    - a fault aimed at a guest still in flight is theirs to meet: the sweep waits for it;
    - a fault queued for the fallback provider while none is queued for the primary (its partner, e.g. the
      other half of an ``ai:auth`` pair, was met by a job that had already fallen back for another fault)
      is only met by a call the primary failed: the wave gets an ``ai:overloaded`` fault on the primary
      (counted as injected) so that its call falls back.

    Each decision is printed (``chaos: sweep …``), so an unmet fault at the end names its guest. Returns
    the number of waves played."""
    pictures = photos()
    by_user = {p.user_id: p for p in plans}
    db_url = stack.config.database_url
    deadline = time.monotonic() + SWEEP_DEADLINE_S
    waves = 0
    while time.monotonic() < deadline:
        left = _left_to_meet(stack, by_user, guests)
        if not (left.open or left.stranded or left.waiting):
            break
        if not (left.open or left.stranded):
            time.sleep(2)  # only calls that will be made anyway are left: a guest in flight, a held chat
            continue
        print(f"chaos: sweep wave {waves + 1}: {left}")
        wave = [
            GuestPlan(790_000 + waves * SWEEP_GUESTS + i, pictures["jpeg"], OUTFITS[i % len(OUTFITS)])
            for i in range(SWEEP_GUESTS)
        ]
        for old, new in zip(left.stranded, wave, strict=False):
            reaim_faults(stack.sim_url, by_user[old], new)
        if left.fallback_only:
            chaos.inject_ai("ai:overloaded", 0)
            print("chaos: sweep: ai:overloaded on the primary, so that a call falls back")
        by_user.update((p.user_id, p) for p in wave)
        plans += wave
        waves += 1
        kiosk = functools.partial(play_guest, stack.ingest_url, stack.sim_url)
        with ThreadPoolExecutor(max_workers=SWEEP_GUESTS + 1) as pool:
            lead = pool.submit(submit_lead, stack.ingest_url, first_lead + waves - 1)
            guests += pool.map(kiosk, wave)
            lead_results.append(lead.result())
        users = {p.user_id for p in wave}
        while time.monotonic() < deadline and _ended_guests(db_url, users, guests, after_s=0) != users:
            time.sleep(2)
    return waves


@dataclass
class _Left:
    """Faults still queued that count as unmet: ``open`` ones any traffic meets (AI faults, a chat not
    under a flood hold), guests whose jobs ended with a fault still aimed at them (``stranded``), and
    ``waiting`` ones a call already on its way will meet (a guest in flight, a chat under a hold)."""

    open: list[str]
    stranded: list[int]
    waiting: list[str]
    fallback_only: bool = False

    def __str__(self) -> str:
        return f"open {self.open}, stranded on guests {self.stranded}, waiting {self.waiting}"


def _left_to_meet(stack: Stack, plans: dict[int, GuestPlan], guests: list[Guest]) -> _Left:
    left_ai, left_tg = _queued(stack)
    holds = stack.http.get(f"{stack.sim_url}/sim/holds", timeout=5).raise_for_status().json()
    held = {h["chat_id"] for h in holds if "chat_id" in h}
    unmet = [f for f in left_tg if _counts_as_unmet(f)]
    aimed = {f["chat_id"] for f in unmet if f.get("chat_id") in plans}
    ended = _ended_guests(stack.config.database_url, aimed, guests)
    return _Left(
        open=[_fault_label(f) for f in left_ai]
        + [_fault_label(f) for f in unmet if f.get("chat_id") not in aimed | held],
        stranded=sorted(ended),
        waiting=[
            f"{_fault_label(f)} for chat {f['chat_id']}"
            for f in unmet
            if f.get("chat_id") in (aimed - ended) | held
        ],
        fallback_only=bool(left_ai) and all(f["provider"] != F.PRIMARY_PROVIDER for f in left_ai),
    )


def reaim_faults(sim_url: str, old: GuestPlan, new: GuestPlan) -> None:
    """Move the unmet faults aimed at ``old`` (whose jobs ended) to ``new``, who has not pressed Start yet:
    each is taken out of the simulator (``DELETE /sim/faults?chat_id=``) and added to ``new``'s plan and
    tags with its kind; the faults never counted as unmet go back to ``old`` as they were."""
    dropped = (
        httpx.delete(f"{sim_url}/sim/faults", params={"chat_id": old.user_id}, timeout=10)
        .raise_for_status()
        .json()["dropped"]
    )
    aimed = list(old.tg_faults)
    for fault in dropped:
        if not _counts_as_unmet(fault):
            httpx.post(f"{sim_url}/sim/faults", json=fault, timeout=10).raise_for_status()
            continue
        match = next((pair for pair in aimed if _fault_key(pair[1]) == _fault_key(fault)), None)
        if match is None:
            raise RuntimeError(f"a fault on guest {old.user_id} that the run did not aim: {fault}")
        aimed.remove(match)
        kind = match[0]
        new.tg_faults.append((kind, {**match[1], "chat_id": new.user_id}))
        new.tags += () if kind in new.tags else (kind,)
        print(f"chaos: sweep: {kind} moved from guest {old.user_id} (their jobs ended) to {new.user_id}")


def _fault_key(fault: dict[str, Any]) -> tuple[str, str, int]:
    return (
        str(fault["method"]).lower(),
        str(fault.get("kind") or "error"),
        int(fault.get("error_code") or 500),
    )


def _fault_label(fault: dict[str, Any]) -> str:
    if "provider" in fault:
        return f"ai {fault['kind']}/{fault['provider']}"
    kind = fault.get("kind") or "error"
    return f"tg {fault['method']} {fault['error_code'] if kind == 'error' else kind}"


def _counts_as_unmet(fault: dict[str, Any]) -> bool:
    """Whether a Telegram fault still queued at the end fails the run: not a 413 on sets of at least
    ``min_stickers`` (it stays for every such call), not an ``uploadStickerFile`` one (see
    :func:`_notes`)."""
    return fault.get("min_stickers") is None and str(fault["method"]).lower() != "uploadstickerfile"


def _queued(stack: Stack) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The faults still queued in the AI provider simulator and in the Telegram simulator."""
    left_ai = stack.http.get(f"{stack.ai_sim_url}/sim/faults", timeout=5).raise_for_status().json()
    left_tg = stack.http.get(f"{stack.sim_url}/sim/faults", timeout=5).raise_for_status().json()
    return left_ai, left_tg


def _ended_guests(
    db_url: str, users: set[int], guests: list[Guest], after_s: float = STRANDED_AFTER_S
) -> set[int]:
    """Those of ``users`` with a job whose every job has been delivered or failed for ``after_s``
    seconds, and those whose kiosk gave up before a job was accepted."""
    if not users:
        return set()
    rows = _query(
        db_url,
        "SELECT s.tg_user_id AS user_id, bool_and(j.status IN ('delivered', 'failed')"
        f" AND j.updated_at < now() - make_interval(secs => {float(after_s)})) AS ended"
        " FROM jobs j JOIN sessions s ON s.id = j.session_id"
        f" WHERE s.tg_user_id IN ({', '.join(str(int(u)) for u in users)}) GROUP BY s.tg_user_id",
    )
    ended = {r["user_id"] for r in rows if r["ended"]}
    gave_up = {g.user_id for g in guests if g.user_id in users and g.job_id is None}
    return ended | (gave_up - {r["user_id"] for r in rows})


def _visitors(stack: Stack, leads: int, every_s: float, out: list[LeadSubmission]) -> None:
    """Landing-page visitors: one lead every ``every_s`` seconds, four at a time at most."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = []
        for n in range(leads):
            futures.append(pool.submit(submit_lead, stack.ingest_url, n))
            time.sleep(every_s)
        out.extend(f.result() for f in futures)


def _notes(chaos: Chaos, stack: Stack) -> tuple[list[str], list[str]]:
    """What the run did, and the faults still queued in the simulators (never met by any call).

    ``uploadStickerFile`` faults are not counted as unmet: the gateway sends sticker files inline with
    ``createNewStickerSet`` / ``addStickerToSet`` and never calls ``uploadStickerFile``, so they cannot be
    met; they stay injected to show it, in a note of their own.
    """
    notes = [f"admin resumes: {chaos.resumes}"]
    left_ai, left_tg = _queued(stack)
    unmet = [_fault_label(f) for f in left_ai]
    uploads = [f for f in left_tg if f["method"].lower() == "uploadstickerfile"]
    unmet += [_fault_label(f) for f in left_tg if _counts_as_unmet(f)]
    if uploads:
        notes.append(
            f"uploadStickerFile faults never met (the gateway sends stickers inline and never calls it): "
            f"{len(uploads)}"
        )
    return notes, unmet
