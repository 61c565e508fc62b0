"""The photo check off the event loop: a bounded pool of processes (issue 12, "Ingest").

Checking an upload (:func:`ingest.photo.check_photo`: decode, normalise, HEIC via pillow-heif, face
detection; the answer is the JPEG and the face found, :class:`ingest.photo.CheckedPhoto`) costs ~0.4 CPU-s
for a 4 MB photo. It runs in ``PHOTO_CHECK_WORKERS`` single-threaded processes
(:class:`concurrent.futures.ProcessPoolExecutor`; default: the CPUs the container may use,
:func:`container_cpus`), so 20 kiosks uploading at once cost at most that many cores, the rest wait their
turn (in this process, not in the executor's queue, so a check whose client has gone is dropped before
it starts; :meth:`PhotoChecker.expected_answer_s` tells how long a new check would take), and the event
loop keeps answering status polls meanwhile. Each process loads its own face detector and landmark model
once (the pool's initializer), so no model is ever shared (issue 8). Processes start from a
fork server that has imported the photo code once (``multiprocessing`` ``forkserver``), so a replacement
process is ready in milliseconds and never inherits the event loop's threads.

A process that dies (an OOM kill, a crash inside a decoder) breaks the pool: every check then in flight
raises :class:`PhotoCheckUnavailable` (503 ``photo_check_unavailable`` with ``Retry-After: 1``; the kiosk
sends the same capture again, which is idempotent), the broken pool is dropped and the next upload gets a
new one. Each process keeps glibc's mmap threshold fixed and hands its freed heap back after each check
(:mod:`ingest.malloc`), so a burst of uploads leaves the pool's memory where it was.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import cv2
import numpy as np
import structlog
from starlette.requests import ClientDisconnect

from ingest import malloc, photo
from shared.childproc import exit_with
from shared.errors import UnavailableError, UploadRejected
from shared.imaging.faces import load_detector

__all__ = ["PhotoCheckUnavailable", "PhotoChecker", "container_cpus"]

log = structlog.get_logger(__name__)
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
#: What one check is taken to last before any was measured (s): ~0.4 CPU-s for a 4 MB photo
#: (issue 12), more on a machine with other work.
FIRST_CHECK_ESTIMATE_S = 1.0
#: Weight of the newest check in the running mean of check times.
_MEAN_WEIGHT = 0.2


class PhotoCheckUnavailable(UnavailableError):
    """The photo-check process died while it checked this upload (HTTP 503 ``photo_check_unavailable``,
    ``Retry-After: 1``); the pool is being replaced, the same upload may be sent again."""


def container_cpus(cpu_max: Path = _CGROUP_CPU_MAX) -> int:
    """CPUs this process may use: its CPU affinity, capped by the cgroup v2 CPU quota (``cpu.max``:
    ``<quota µs> <period µs>``, or ``max``) rounded up; at least 1."""
    cpus = len(os.sched_getaffinity(0))
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        return max(1, cpus)
    if quota != "max" and int(period) > 0:
        cpus = min(cpus, math.ceil(int(quota) / int(period)))
    return max(1, cpus)


def _start_process(service_pid: int) -> None:
    """Pool initializer, once per process: leave with ingest (:func:`shared.childproc.exit_with`), one
    OpenCV thread (the pool is the parallelism), HEIC registered, the face detector and landmark model
    loaded (:func:`shared.imaging.faces.load_detector`)."""
    exit_with(service_pid)
    cv2.setNumThreads(1)
    malloc.fix_mmap_threshold()
    photo.load_decoders()
    load_detector()


def _check(data: bytes, max_bytes: int, max_pixels: int, require_face: bool) -> photo.CheckedPhoto:
    """:func:`ingest.photo.check_photo` in a pool process, then the freed heap back to the OS."""
    try:
        return photo.check_photo(data, max_bytes=max_bytes, max_pixels=max_pixels, require_face=require_face)
    finally:
        malloc.trim()


def _warm() -> float:
    """A first check of a photo without a face (both detection sizes: the slowest kind), timed (s)."""
    time.sleep(0.1)  # held long enough that each warm-up task lands on a process of its own
    noise = np.random.default_rng(0).integers(0, 255, (1536, 1024, 3), dtype=np.uint8)
    data = cv2.imencode(".jpg", noise)[1].tobytes()
    started = time.monotonic()
    try:
        photo.check_photo(data, max_bytes=len(data), max_pixels=noise.size, require_face=True)
    except UploadRejected:
        pass
    finally:
        malloc.trim()
    return time.monotonic() - started


class PhotoChecker:
    """The photo-check pool of one ingest process.

    Args:
        workers: processes (``PHOTO_CHECK_WORKERS``, ≥ 1).
        max_bytes, max_pixels, require_face: passed to :func:`ingest.photo.check_photo`.

    The pool is made on first use (or by :meth:`start`) and closed by :meth:`close` (the app's lifespan).
    """

    def __init__(self, *, workers: int, max_bytes: int, max_pixels: int, require_face: bool) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self._limits = (max_bytes, max_pixels, require_face)
        self._pool: ProcessPoolExecutor | None = None
        self._slots = asyncio.Semaphore(workers)
        self.waiting = 0
        self.mean_check_s = FIRST_CHECK_ESTIMATE_S
        self.checks_started = 0
        self._started: dict[object, float] = {}

    def _current(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["ingest.photo_pool"])
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_start_process,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def start(self) -> list[int]:
        """Start every process now (each loads its detector and times a first check, the first value of
        :attr:`mean_check_s`) instead of on the first uploads; returns their pids. Raises
        :class:`PhotoCheckUnavailable` when a process cannot start."""
        pool = self._current()
        try:
            # One task per process: a submit starts a new process while none is idle.
            futures = [pool.submit(_warm) for _ in range(self.workers)]
            self.mean_check_s = max(await asyncio.gather(*(asyncio.wrap_future(f) for f in futures)))
            return self.pids()
        except BrokenProcessPool as exc:
            self._drop(pool)
            raise PhotoCheckUnavailable("the photo-check processes did not start") from exc

    def expected_answer_s(self, ahead: int) -> float:
        """How long a check asked for now, with ``ahead`` checks running or waiting before it, would take
        to answer (s): its own run plus its turn, at the running mean of the last checks' times (wall
        clock, so a machine busy with other work shows in it), or at the time the longest running check
        has taken so far when that is longer (a machine that just got busy)."""
        turns = max(0, ahead - self.workers + 1) / self.workers
        now = time.monotonic()
        longest_running = max((now - t for t in self._started.values()), default=0.0)
        return max(self.mean_check_s, longest_running) * (1 + turns)

    async def check(self, data: bytes, *, gone: Callable[[], bool] = lambda: False) -> photo.CheckedPhoto:
        """Check an upload in the pool (waits for a free process); returns the normalised JPEG and the
        face found in it (:class:`ingest.photo.CheckedPhoto`).

        ``gone`` is asked when a process is free for this check: true (nobody waits for the answer any
        more) drops the check before it starts.

        Raises:
            UploadRejected: the photo is unusable (codes of :func:`ingest.photo.check_photo`).
            PhotoCheckUnavailable: the process checking it (or another one of the pool) died meanwhile.
            ClientDisconnect: ``gone`` was true when the check's turn came; nothing was checked.
        """
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        try:
            if gone():
                log.info("PHOTO_CHECK_DROPPED", reason="client_gone")
                raise ClientDisconnect()
            return await self._run(data)
        finally:
            self._slots.release()

    async def _run(self, data: bytes) -> photo.CheckedPhoto:
        self.checks_started += 1
        token = object()
        started = self._started[token] = time.monotonic()
        pool = self._current()
        try:
            future: Future[photo.CheckedPhoto] = pool.submit(_check, data, *self._limits)
            checked = await asyncio.wrap_future(future)
        except BrokenProcessPool as exc:
            self._drop(pool)
            raise PhotoCheckUnavailable("the photo check stopped; send the photo again") from exc
        except UploadRejected:
            self._measured(time.monotonic() - started)
            raise
        finally:
            del self._started[token]
        self._measured(time.monotonic() - started)
        return checked

    def _measured(self, seconds: float) -> None:
        self.mean_check_s += _MEAN_WEIGHT * (seconds - self.mean_check_s)

    def pids(self) -> list[int]:
        """The pids of the pool's processes now (empty before first use); for tests and diagnostics."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}  # the executor keeps no public list
        return sorted(processes)

    def _drop(self, broken: ProcessPoolExecutor) -> None:
        if self._pool is broken:
            self._pool = None
            log.warning("PHOTO_CHECK_POOL_BROKEN", workers=self.workers)
            broken.shutdown(wait=False, cancel_futures=True)

    async def close(self) -> None:
        """Stop the pool: queued checks are cancelled, running ones finish first (≤ ~1 s)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)
