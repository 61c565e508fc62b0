"""The photo check off the event loop: a bounded pool of processes (issue 12, "Ingest").

Checking an upload (:func:`ingest.photo.check_photo`: decode, normalise, HEIC via pillow-heif, face
detection) costs ~0.4 CPU-s for a 4 MB photo. It runs in ``PHOTO_CHECK_WORKERS`` single-threaded processes
(:class:`concurrent.futures.ProcessPoolExecutor`; default: the CPUs the container may use,
:func:`container_cpus`), so 20 kiosks uploading at once cost at most that many cores, the rest wait their
turn, and the event loop keeps answering status polls meanwhile. Each process loads its own face
detector once (the pool's initializer), so no classifier is ever shared (issue 8). Processes start from a
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
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import cv2
import structlog

from ingest import malloc, photo
from shared.errors import UnavailableError
from shared.imaging.faces import load_detector

__all__ = ["PhotoCheckUnavailable", "PhotoChecker", "container_cpus"]

log = structlog.get_logger(__name__)
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


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


def _start_process() -> None:
    """Pool initializer, once per process: one OpenCV thread (the pool is the parallelism), HEIC
    registered, every cascade loaded."""
    cv2.setNumThreads(1)
    malloc.fix_mmap_threshold()
    photo.load_decoders()
    load_detector()


def _check(data: bytes, max_bytes: int, max_pixels: int, require_face: bool) -> bytes:
    """:func:`ingest.photo.check_photo` in a pool process, then the freed heap back to the OS."""
    try:
        return photo.check_photo(data, max_bytes=max_bytes, max_pixels=max_pixels, require_face=require_face)
    finally:
        malloc.trim()


def _warm() -> int:
    time.sleep(0.1)  # held long enough that each warm-up task lands on a process of its own
    return os.getpid()


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

    def _current(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["ingest.photo_pool"])
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=context, initializer=_start_process
            )
        return self._pool

    async def start(self) -> list[int]:
        """Start every process now (each loads its detector) instead of on the first uploads; returns
        their pids. Raises :class:`PhotoCheckUnavailable` when a process cannot start."""
        pool = self._current()
        try:
            # One task per process: a submit starts a new process while none is idle.
            futures = [pool.submit(_warm) for _ in range(self.workers)]
            await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
            return self.pids()
        except BrokenProcessPool as exc:
            self._drop(pool)
            raise PhotoCheckUnavailable("the photo-check processes did not start") from exc

    async def check(self, data: bytes) -> bytes:
        """Check an upload in the pool (waits for a free process); returns the normalised JPEG.

        Raises:
            UploadRejected: the photo is unusable (codes of :func:`ingest.photo.check_photo`).
            PhotoCheckUnavailable: the process checking it (or another one of the pool) died meanwhile.
        """
        pool = self._current()
        try:
            future: Future[bytes] = pool.submit(_check, data, *self._limits)
            return await asyncio.wrap_future(future)
        except BrokenProcessPool as exc:
            self._drop(pool)
            raise PhotoCheckUnavailable("the photo check stopped; send the photo again") from exc

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
