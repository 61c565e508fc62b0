"""The ``make bench`` rows "Gateway": a mixed load of Telegram messages under Telegram's limits (issue 12).

The load: 300 messages, 260 to 30 private chats (9 or 8 each) and 20 to each of 2 groups, interleaved
chat after chat as a busy venue produces them. The limits, enforced by the Telegram simulator
(:mod:`simulators.telegram.ratelimit`, token buckets, a 429 with ``retry_after`` when one is empty) and
taken from core.telegram.org/bots/faq (REFERENCE.md "Telegram: rate limits and flood control"): 30
messages/s across all chats (bucket 30), 1 message/s per private chat (bucket 3: "short bursts
tolerated", the simulator's default), 20 messages/min per group (bucket 20). (With a bucket of 1 per
private chat, a sender pacing at exactly 1 s is refused whenever two requests arrive a few ms closer than
they were sent.)

- **ours**: the telegram-gateway process (default ``OUTBOX_SLOTS``, its :mod:`telegram_gateway.flood`
  limiter), fed through the outbox the way every service asks for messages (``tg_commands`` rows, then
  hints on ``tg:outbox``).
- **reference**: python-telegram-bot with its ``AIORateLimiter`` alone (:mod:`devstack.bench.ptb_reference`,
  its own process, as many concurrent senders as the gateway has slots), after the simulator's buckets
  were refilled, in the same run.

Rows, for both: messages per second (300 ÷ the time from the first ``sendMessage`` the simulator saw to
the last accepted one) as a share of the allowed rate (300 ÷ the shortest time the limits allow: the
largest of what the global, each private chat's and each group's bucket needs), and the number of 429
answers. Target for ours: ≥ 0.9 of the allowed rate with no 429.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from devstack.bench.report import Options, Row
from devstack.bench.stack import bench_stack, tree_cpu_s
from devstack.processes import DEV_BOT_TOKEN, REPO, Stack
from shared import command_ids
from shared.commands import SendMessage
from shared.db import create_engine
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database
from shared.streams import Publisher, create_redis
from shared.subjects import AdminText
from simulators.telegram.ratelimit import TokenBucket

__all__ = ["LIMITS", "TARGET_SHARE", "limits_bound_s", "measure", "mixed_load"]

GROUP = "Gateway: mixed load under Telegram's limits"
#: The simulator's limits for this benchmark (env of :class:`simulators.telegram.config.SimConfig`).
LIMITS = {
    "TGSIM_GLOBAL_PER_SECOND": "30",
    "TGSIM_PRIVATE_PER_SECOND": "1",
    "TGSIM_PRIVATE_BURST": "3",
    "TGSIM_GROUP_PER_MINUTE": "20",
}
GROUPS = (-1009000000001, -1009000000002)
SLOTS = 8  # the gateway's OUTBOX_SLOTS default, used by the reference's senders too
TARGET_SHARE = 0.9
FIRST_USER = 600001


def mixed_load(total: int, private_chats: int, per_group: int) -> list[tuple[int, str]]:
    """``(chat_id, text)`` in sending order: ``per_group`` messages to each of :data:`GROUPS`, the rest
    spread over ``private_chats`` private chats (user ids from 600001), one message per chat in turn."""
    counts = {FIRST_USER + i: 0 for i in range(private_chats)}
    private_total = total - per_group * len(GROUPS)
    for i in range(private_total):
        counts[FIRST_USER + i % private_chats] += 1
    counts.update(dict.fromkeys(GROUPS, per_group))
    order: list[tuple[int, str]] = []
    sent: Counter[int] = Counter()
    while len(order) < total:
        for chat_id, count in counts.items():
            if sent[chat_id] < count:
                sent[chat_id] += 1
                order.append((chat_id, f"bench message {sent[chat_id]} of {count}"))
    return order


def limits_bound_s(load: Sequence[tuple[int, str]]) -> float:
    """The shortest time (s) from the first to the last message that the token buckets of :data:`LIMITS`
    allow: a bucket of capacity ``c`` refilled at ``r``/s lets ``n`` messages through in
    ``max(0, n - c) / r`` seconds; the load needs the largest of the global and the per-chat figures."""
    global_rate = float(LIMITS["TGSIM_GLOBAL_PER_SECOND"])
    private_rate, private_burst = (
        float(LIMITS["TGSIM_PRIVATE_PER_SECOND"]),
        int(LIMITS["TGSIM_PRIVATE_BURST"]),
    )
    group_rate = float(LIMITS["TGSIM_GROUP_PER_MINUTE"]) / 60.0
    group_burst = int(float(LIMITS["TGSIM_GROUP_PER_MINUTE"]))
    per_chat = Counter(chat for chat, _text in load)
    needs = [max(0, len(load) - math.floor(global_rate)) / global_rate]
    for chat, n in per_chat.items():
        rate, burst = (group_rate, group_burst) if chat < 0 else (private_rate, private_burst)
        needs.append(max(0, n - burst) / rate)
    return max(needs)


@dataclass(frozen=True)
class Outcome:
    """What the simulator saw of one sender: accepted messages, 429 answers, seconds from the first
    ``sendMessage`` to the last accepted one, and which bucket each 429 found empty (``overall``,
    ``private``, ``group``; :func:`empty_buckets`)."""

    accepted: int
    too_many: int
    span_s: float
    refused_by: Counter[str]
    cpu_s: float = 0.0  # CPU seconds the sending process used for the load


def empty_buckets(calls: Sequence[dict[str, Any]]) -> Counter[str]:
    """Replay the calls (in order, at the simulator's ``at`` times) through token buckets of
    :data:`LIMITS`, as :mod:`simulators.telegram.ratelimit` keeps them, and name the bucket that was empty
    at each 429 (``overall`` first when both were; ``unclear`` when the replay finds a token, i.e. the
    simulator's clock and ``at`` disagree by a few ms)."""
    private = (float(LIMITS["TGSIM_PRIVATE_PER_SECOND"]), float(LIMITS["TGSIM_PRIVATE_BURST"]))
    group_burst = float(LIMITS["TGSIM_GROUP_PER_MINUTE"])
    group = (group_burst / 60.0, group_burst)
    overall_rate = float(LIMITS["TGSIM_GLOBAL_PER_SECOND"])
    start = calls[0]["at"] if calls else 0.0
    overall = TokenBucket(overall_rate, overall_rate, overall_rate, start)
    chats: dict[int, TokenBucket] = {}
    found: Counter[str] = Counter()
    for call in calls:
        chat_id = int(call["params"]["chat_id"])
        rate, capacity = group if chat_id < 0 else private
        chat = chats.setdefault(chat_id, TokenBucket(capacity, rate, capacity, start))
        overall_wait, chat_wait = overall.wait(call["at"]), chat.wait(call["at"])
        if call["ok"]:
            overall.take()
            chat.take()
        elif call.get("error_code") == 429:
            kind = "group" if chat_id < 0 else "private"
            found["overall" if overall_wait > 0 else kind if chat_wait > 0 else "unclear"] += 1
    return found


def _calls_since(sim: httpx.Client, seq: int) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = sim.get("/sim/calls", params={"method": "sendMessage", "since": seq}).json()
    return [c for c in calls if c["params"].get("text", "").startswith("bench message")]


def _outcome(calls: Sequence[dict[str, Any]]) -> Outcome:
    ok = [c for c in calls if c["ok"]]
    too_many = sum(1 for c in calls if c.get("error_code") == 429)
    span = max(c["at"] for c in ok) - min(c["at"] for c in calls) if ok else float("nan")
    return Outcome(len(ok), too_many, span, empty_buckets(sorted(calls, key=lambda c: c["seq"])))


def _last_seq(sim: httpx.Client) -> int:
    calls = sim.get("/sim/calls").json()
    return int(calls[-1]["seq"]) if calls else 0


def _wait_accepted(sim: httpx.Client, seq: int, total: int, timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        calls = _calls_since(sim, seq)
        if sum(1 for c in calls if c["ok"]) >= total or time.monotonic() > deadline:
            return calls
        time.sleep(0.5)


async def _enqueue(stack: Stack, load: Sequence[tuple[int, str]]) -> None:
    """Write one ``tg_commands`` row per message in one transaction, then publish the hints."""
    db = Database(create_engine(stack.config.database_url))
    publisher = Publisher(create_redis(stack.config.redis_url))
    try:
        ids = [command_ids.alert(f"bench-gateway:{i}", time.time_ns()) for i in range(len(load))]
        async with db.transaction() as repos:
            for command_id, (chat_id, text) in zip(ids, load, strict=True):
                subject = AdminText(id=command_ids.name_hash(command_id), what="alert")
                await add_command(repos, command_id, SendMessage(chat_id=chat_id, text=text), subject=subject)
        await dispatch_commands(db, publisher, ids)
    finally:
        await publisher.redis.aclose()
        await db.dispose()


def _open_chats(sim: httpx.Client, load: Sequence[tuple[int, str]]) -> None:
    """Every private chat of the load starts the bot (a plain message: the gateway answers nothing)."""
    for chat_id in sorted({chat for chat, _ in load if chat > 0}):
        sim.post(f"/sim/users/{chat_id}/messages", json={"text": "hello"}).raise_for_status()


def _refill(sim: httpx.Client) -> None:
    """Set the limits again: the simulator's buckets start full (``POST /sim/limits``)."""
    limits = sim.get("/sim/limits").raise_for_status().json()
    sim.post("/sim/limits", json=limits).raise_for_status()


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # ended children that were waited for
    return usage.ru_utime + usage.ru_stime


def run(load: Sequence[tuple[int, str]], workdir: Path, timeout_s: float) -> tuple[Outcome, Outcome]:
    """Ours, then the reference, on one simulator; returns their outcomes."""
    groups = json.dumps({str(g): f"Bench group {i + 1}" for i, g in enumerate(GROUPS)})
    env = {**LIMITS, "TGSIM_GROUPS": groups, "LOG_LEVEL": "WARNING", "OUTBOX_SLOTS": str(SLOTS)}
    with (
        bench_stack(workdir, "gateway", ["telegram-gateway"], extra_env=env) as stack,
        httpx.Client(base_url=stack.sim_url, timeout=30) as sim,
    ):
        _open_chats(sim, load)
        time.sleep(1.5)  # the gateway takes the "hello" updates; nothing is sent for them
        _refill(sim)
        seq = _last_seq(sim)
        gateway_pid = stack.procs["telegram-gateway"].pid
        cpu_before = tree_cpu_s(gateway_pid)
        asyncio.run(_enqueue(stack, load))
        ours = _outcome(_wait_accepted(sim, seq, len(load), timeout_s))
        ours = replace(ours, cpu_s=tree_cpu_s(gateway_pid) - cpu_before)

        _refill(sim)
        seq = _last_seq(sim)
        plan = workdir / "ptb-plan.json"
        plan.write_text(
            json.dumps(
                {
                    "base_url": stack.sim_url,
                    "token": DEV_BOT_TOKEN,
                    "slots": SLOTS,
                    "max_retries": 3,
                    "messages": [list(m) for m in load],
                }
            )
        )
        children_before = _children_cpu_s()
        subprocess.run(
            [sys.executable, "-m", "devstack.bench.ptb_reference", str(plan)],
            env=stack.env("ptb-reference"),
            cwd=REPO,
            check=True,
            timeout=timeout_s,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        reference = replace(_outcome(_calls_since(sim, seq)), cpu_s=_children_cpu_s() - children_before)
    return ours, reference


def measure(options: Options) -> list[Row]:
    """The rows of the module docstring (``quick``: 40 messages to 5 private chats and 2 groups)."""
    options.workdir.mkdir(parents=True, exist_ok=True)
    load = mixed_load(40, 5, 4) if options.quick else mixed_load(300, 30, 20)
    bound = limits_bound_s(load)
    allowed = len(load) / bound if bound else float("inf")
    load_avg = os.getloadavg()[0]
    ours, reference = run(load, options.workdir, timeout_s=60 if options.quick else 120)
    chats = len({chat for chat, _ in load})
    what = f"{len(load)} messages to {chats - len(GROUPS)} private chats and {len(GROUPS)} groups"
    limits = "limits 30 msg/s overall, 1 msg/s per private chat (burst 3), 20 msg/min per group"
    rows = []
    for label, outcome in (
        ("telegram-gateway", ours),
        ("python-telegram-bot AIORateLimiter alone", reference),
    ):
        rate = len(load) / outcome.span_s if outcome.span_s > 0 else float("nan")
        complete = outcome.accepted >= len(load)
        share = rate / allowed if complete else 0.0
        is_ours = outcome is ours
        met = share >= TARGET_SHARE and outcome.too_many == 0 and complete if is_ours else None
        note = f"{limits}; allowed {allowed:.1f} msg/s ({len(load)} in {bound:.1f} s)"
        if outcome.too_many:
            refused = ", ".join(f"{n} {kind}" for kind, n in sorted(outcome.refused_by.items()))
            note += f"; empty bucket at each 429: {refused}"
        if not complete:
            note += f"; only {outcome.accepted} of {len(load)} accepted in time"
        note += f"; {outcome.cpu_s / len(load) * 1000:.1f} ms CPU per message in the sending process"
        if is_ours and complete and not met and outcome.too_many:
            note += (
                "; missed by its 429s: the gateway paces at HEADROOM (95 %) of each published rate, and "
                "still a request reached Telegram early enough to find a bucket empty; more headroom, or "
                "less jitter between the gateway and Telegram, would avoid that"
            )
        elif is_ours and complete and not met:
            note += (
                "; missed without a 429, so not by Telegram's limits; the causes this benchmark does not "
                f"separate: CPU starvation (load average {load_avg:.1f} on {os.cpu_count()} CPUs when it "
                "began), Postgres round trips per command, outbox slots held while a chat's 1 s pacing "
                "waits. Run it on a quiet machine first; then fewer round trips per command or more "
                "OUTBOX_SLOTS"
            )
        rows.append(
            Row(
                GROUP,
                f"{label}: {what}",
                f"{rate:.1f} msg/s = {share:.2f} of allowed, {outcome.too_many} × 429",
                f"allowed {allowed:.1f} msg/s" if is_ours else "",
                f"≥ {TARGET_SHARE:g} of allowed, 0 × 429" if is_ours else "",
                met,
                ratio=share,
                note=note,
            )
        )
    ours_share, ref_share = (rows[0].ratio or 0.0), (rows[1].ratio or 0.0)
    rows.append(
        Row(
            GROUP,
            "share of the allowed rate, gateway vs PTB's AIORateLimiter",
            f"{ours_share:.2f}, {ours.too_many} × 429",
            f"{ref_share:.2f}, {reference.too_many} × 429",
            "",
            None,
            ratio=ours_share / ref_share if ref_share else None,
        )
    )
    return rows
