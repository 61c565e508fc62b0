"""A burst of kiosks on a busy machine (issue 19, "Done when"): ``python -m devstack.bench.overload``.

Runs ingest (with the Telegram simulator and the gateway, so every session is linked the real way:
:func:`devstack.bench.ingest._ready_sessions`) on a database and a Redis of its own
(:func:`devstack.bench.stack.bench_stack`), starts two CPU-bound loops beside it (``python -c 'while 1:
pass'``, killed afterwards), and sends ``--kiosks`` uploads at the same moment, half of them photos
without a face (the fixtures' 16-bit welder PNG and the HEIC pug), the others the fixture faces at the
size the kiosk sends (1536 px on the long side, :data:`ingest.api.kiosk.PHOTO_MAX_SIDE_PX`).

Each simulated kiosk keeps ``kiosk.js``'s rules: one ``capture_id`` per photo on every send; an answer
awaited ``ANSWER_S`` after the photo is sent (``uploadAnswerMs``), else the same capture again after 1,
2, 3 s (``uploadRetryMs``, also for a network error or another 5xx); 503 ``busy`` waits ``Retry-After``
(1–10 s) and sends it again, for up to ``BUSY_PATIENCE_S`` in all (``busyPatienceMs``). Every guest must
get an answer within that patience: accepted (202), refused (422 ``no_face``), or ``busy`` and then one of
them. Loopback only; the figures are printed (answers by kind, sends, the longest wait of one request and
of one guest).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from devstack.bench.ingest import PHOTOS, _ready_sessions, make_photos
from devstack.bench.stack import bench_stack
from ingest.api.kiosk import PHOTO_MAX_SIDE_PX

ANSWER_S = 20.0  # kiosk.js TIMING.uploadAnswerMs
RETRY_S = (1.0, 2.0, 3.0)  # kiosk.js TIMING.uploadRetryMs
BUSY_PATIENCE_S = 90.0  # kiosk.js TIMING.busyPatienceMs
NO_FACES = ("png-16bit-welder-low-light.png", "heic-iphone-pug.heic")


@dataclass
class Guest:
    """One simulated kiosk's upload: its final ``answer`` (status and code), every send's wait (s) and
    kind, and the time from the first send to the final answer (s)."""

    face: bool
    answer: str = "none"
    waits: list[float] = field(default_factory=list)
    sends: list[str] = field(default_factory=list)
    total_s: float = 0.0


async def kiosk(client: httpx.AsyncClient, url: str, photo: bytes, face: bool) -> Guest:
    """Upload ``photo`` to ``url`` as ``kiosk.js`` does (module docstring)."""
    guest = Guest(face=face)
    capture = f"cap-{uuid.uuid4().hex[:24]}"
    started = time.monotonic()
    retries = 0
    while True:
        sent = time.monotonic()
        try:
            answer = await client.post(
                url,
                data={"capture_id": capture},
                files={"photo": ("photo.jpg", photo)},
                timeout=httpx.Timeout(ANSWER_S, connect=10.0),
            )
            kind = f"{answer.status_code} {answer.json().get('error', {}).get('code', '')}".strip()
        except httpx.HTTPError as exc:
            answer, kind = None, type(exc).__name__
        guest.waits.append(time.monotonic() - sent)
        guest.sends.append(kind)
        if answer is not None and answer.status_code in (200, 202, 422):
            guest.answer = kind
            break
        if answer is not None and kind == "503 busy":
            if time.monotonic() - started > BUSY_PATIENCE_S:
                guest.answer = "gave up: busy"
                break
            await asyncio.sleep(min(10, max(1, int(answer.headers.get("Retry-After", "1")))))
            continue
        if retries >= len(RETRY_S):
            guest.answer = f"gave up: {kind}"
            break
        await asyncio.sleep(RETRY_S[retries])
        retries += 1
    guest.total_s = time.monotonic() - started
    return guest


def burst_photos(count: int) -> list[tuple[bytes, bool]]:
    """``count`` photos, every other one without a face; the faces at the kiosk's size."""
    faces = make_photos(count, 200_000, megapixels=PHOTO_MAX_SIDE_PX**2 * 2 / 3 / 1e6)
    no_faces = [(PHOTOS / name).read_bytes() for name in NO_FACES]
    return [(no_faces[i // 2 % len(no_faces)], False) if i % 2 else (faces[i], True) for i in range(count)]


def run(kiosks: int, workdir: Path, busy_loops: int) -> list[Guest]:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"LOG_LEVEL": "WARNING", "PHOTO_RATE_LIMIT": "100"}
    with bench_stack(workdir, "overload", ["telegram-gateway", "ingest"], extra_env=env) as stack:
        sessions = _ready_sessions(stack.ingest_url, stack.sim_url, kiosks, first_user=9001)
        photos = burst_photos(kiosks)
        loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(busy_loops)]
        try:
            time.sleep(2)  # the loops take their cores

            async def burst() -> list[Guest]:
                limits = httpx.Limits(max_connections=kiosks * 2)
                async with httpx.AsyncClient(limits=limits) as client:
                    return await asyncio.gather(
                        *(
                            kiosk(client, f"{stack.ingest_url}/sessions/{sid}/photo", data, face)
                            for sid, (data, face) in zip(sessions, photos, strict=True)
                        )
                    )

            print(f"load average before the burst: {os.getloadavg()[0]:.1f}")
            return asyncio.run(burst())
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()


def report(guests: list[Guest]) -> bool:
    """Print the figures; True when every guest got an answer within the kiosk's patience."""
    answers = collections.Counter(g.answer for g in guests)
    sends = collections.Counter(s for g in guests for s in g.sends)
    busy_then = collections.Counter(g.answer for g in guests if "503 busy" in g.sends)
    wrong = [g for g in guests if g.answer != ("202" if g.face else "422 no_face")]
    late = [g for g in guests if g.total_s > BUSY_PATIENCE_S + ANSWER_S or max(g.waits) > ANSWER_S]
    faces = sum(g.face for g in guests)
    print(f"guests: {len(guests)} ({faces} faces, {len(guests) - faces} without)")
    print("final answers: " + ", ".join(f"{k} × {v}" for k, v in sorted(answers.items())))
    print("after busy: " + (", ".join(f"{k} × {v}" for k, v in sorted(busy_then.items())) or "none"))
    print("every send: " + ", ".join(f"{k} × {v}" for k, v in sorted(sends.items())))
    print(
        f"longest wait for one answer: {max(max(g.waits) for g in guests):.1f} s (patience {ANSWER_S:.0f} s)"
    )
    print(f"longest guest, first send to final answer: {max(g.total_s for g in guests):.1f} s")
    print(f"guests with a wrong or no answer: {len(wrong)}; later than the kiosk's patience: {len(late)}")
    return not wrong and not late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kiosks", type=int, default=40)
    parser.add_argument("--busy-loops", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("var/bench-overload"))
    args = parser.parse_args()
    ok = report(run(args.kiosks, args.workdir, args.busy_loops))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
