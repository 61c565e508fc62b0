"""One photo check per capture (issue 19, "Overload degrades, never collapses").

The kiosk makes a ``capture_id`` once per photo and sends it with the upload and every retry of it
(``kiosk.js`` ``newCaptureId``). A retry of a capture whose check is still running **joins** that check
instead of queueing a second one; a retry after its check ended gets the stored outcome: the job row
for an accepted photo (:func:`ingest.kiosk.accept_photo`), the refusal for a refused one (kept for
``remember_s`` in this process and in Redis under ``stk:capture-refusal:<session>:<capture>``, so a
retry sent to another replica is answered too), without its photo being checked again. Such an answer is
a :class:`RepeatedRefusal`: the refusal was counted when it happened, and is not counted again.

A new check is refused at once with 503 ``busy`` and ``Retry-After`` when the pool would answer it later
than ``max_wait_s`` (:meth:`ingest.photo_pool.PhotoChecker.expected_answer_s`, behind the checks of this
process not yet ended); the kiosk shows that it
is working and sends the same capture again after ``Retry-After``. A check all of whose clients have gone
(disconnected) is dropped when its turn comes, before it starts.

A retry that reaches another ingest replica while the first check still runs there checks the photo
again (the refusal store is shared, the running check is not); it is still counted once by
``PHOTO_RATE_LIMIT`` (:meth:`ingest.ratelimit.RateLimiter.hit_once`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import redis.asyncio as aioredis
import redis.exceptions
import structlog
from starlette.requests import ClientDisconnect

from ingest.api.errors import ApiError
from ingest.photo import CheckedPhoto
from ingest.photo_pool import PhotoChecker
from shared.errors import UploadRejected

__all__ = ["CaptureChecks", "RepeatedRefusal"]

log = structlog.get_logger(__name__)
_Key = tuple[UUID, str]


class RepeatedRefusal(UploadRejected):
    """The refusal of a capture answered again to a retry of it (joined, or stored): the same ``code``,
    ``detail`` and ``status``; not counted again as a refusal."""


@dataclass
class _Flight:
    """One capture's check: its task and how many requests wait for its answer now."""

    task: asyncio.Task[CheckedPhoto]
    waiters: int = 0
    forget: asyncio.TimerHandle | None = field(default=None)


def _busy(retry_after_s: int) -> ApiError:
    return ApiError(
        503,
        "busy",
        f"Many photos are being checked; send this one again in {retry_after_s} s.",
        retry_after_s=retry_after_s,
    )


class CaptureChecks:
    """The photo checks of one ingest process, one per capture (module docstring).

    Args:
        photos: the photo-check pool.
        redis: where refusals are kept for the other replicas (a Redis outage only loses that).
        max_wait_s: the longest answer time a new check may expect before it is refused ``busy`` (s).
        remember_s: how long an ended check's outcome is kept (s).
    """

    def __init__(
        self,
        photos: PhotoChecker,
        redis: aioredis.Redis,
        *,
        max_wait_s: float,
        remember_s: int = 600,
        redis_timeout_s: float = 0.5,
    ) -> None:
        self.photos = photos
        self.redis = redis
        self.max_wait_s = max_wait_s
        self.remember_s = remember_s
        self.redis_timeout_s = redis_timeout_s
        self._flights: dict[_Key, _Flight] = {}

    def running(self, session_id: UUID, capture_id: str) -> bool:
        """Whether this capture's check is running (or queued) in this process."""
        flight = self._flights.get((session_id, capture_id))
        return flight is not None and not flight.task.done()

    async def refuse_if_refused(self, session_id: UUID, capture_id: str) -> None:
        """Raise the capture's stored refusal as a :class:`RepeatedRefusal`, if it has one."""
        flight = self._flights.get((session_id, capture_id))
        if flight is not None and flight.task.done() and not flight.task.cancelled():
            error = flight.task.exception()
            if isinstance(error, UploadRejected):
                raise _repeated(error)
        stored = await self._redis(self.redis.get(_redis_key(session_id, capture_id)))
        if stored:
            code, detail, status = json.loads(stored)
            raise RepeatedRefusal(code, detail, status=status)

    async def check(
        self, session_id: UUID, capture_id: str, data: bytes | None, *, gone: asyncio.Event | None = None
    ) -> CheckedPhoto:
        """The capture's normalised JPEG and face (:class:`ingest.photo.CheckedPhoto`): from its running or
        ended check, else from a new one of ``data``
        (None: only join; when the check ended meanwhile, 503 ``busy`` with ``Retry-After: 1``).

        ``gone`` is set when the client waiting here disconnects: it stops waiting, and the check is
        dropped before it starts when no client waits for it any more.

        Raises:
            ApiError: 503 ``busy`` (``retry_after_s``): a new check would answer later than ``max_wait_s``.
            UploadRejected: the photo is refused (a :class:`RepeatedRefusal` to a request that joined).
            PhotoCheckUnavailable: as :meth:`ingest.photo_pool.PhotoChecker.check`.
            ClientDisconnect: ``gone`` was set before the answer.
        """
        key = (session_id, capture_id)
        flight = self._flights.get(key)
        owner = flight is None
        if flight is None:
            if data is None:
                raise _busy(1)
            ahead = sum(not f.task.done() for f in self._flights.values())
            expected = self.photos.expected_answer_s(ahead)
            if expected > self.max_wait_s:
                retry_after = min(30, max(1, math.ceil(expected - self.max_wait_s)))
                log.info("PHOTO_CHECK_BUSY", expected_s=round(expected, 1), retry_after_s=retry_after)
                raise _busy(retry_after)
            flight = _Flight(asyncio.create_task(self._run(key, data)))
            flight.task.add_done_callback(_retrieved)
            self._flights[key] = flight
        flight.waiters += 1
        try:
            if gone is None:
                checked = await asyncio.shield(flight.task)
            else:
                checked = await _unless(gone, flight.task)
        except UploadRejected as exc:
            if owner:
                raise
            raise _repeated(exc) from None
        finally:
            flight.waiters -= 1
        return checked

    def forget(self, session_id: UUID, capture_id: str) -> None:
        """Drop an accepted capture's check: its job row answers the retries from now on."""
        flight = self._flights.pop((session_id, capture_id), None)
        if flight is not None and flight.forget is not None:
            flight.forget.cancel()

    async def _run(self, key: _Key, data: bytes) -> CheckedPhoto:
        flight = self._flights[key]
        try:
            checked = await self.photos.check(data, gone=lambda: flight.waiters == 0)
        except UploadRejected as exc:
            stored = json.dumps([exc.code, exc.detail, exc.status])
            await self._redis(self.redis.set(_redis_key(*key), stored, ex=self.remember_s))
            self._forget_later(key, flight)
            raise
        except BaseException:
            if self._flights.get(key) is flight:  # an outage or a gone client: the next retry checks again
                del self._flights[key]
            raise
        self._forget_later(key, flight)
        return checked

    def _forget_later(self, key: _Key, flight: _Flight) -> None:
        def forget() -> None:
            if self._flights.get(key) is flight:
                del self._flights[key]

        flight.forget = asyncio.get_running_loop().call_later(self.remember_s, forget)

    async def _redis(self, call: Awaitable[Any]) -> Any:
        """Await a Redis call; ``None`` when Redis does not answer (a refusal then stays in this process
        only)."""
        try:
            async with asyncio.timeout(self.redis_timeout_s):
                return await call
        except (TimeoutError, OSError, redis.exceptions.RedisError) as exc:
            log.warning("CAPTURE_STORE_UNAVAILABLE", error=type(exc).__name__)
            return None


def _retrieved(task: asyncio.Task[CheckedPhoto]) -> None:
    """Mark a flight's exception as seen: a flight nobody waits for any more ends unread."""
    if not task.cancelled():
        task.exception()


def _redis_key(session_id: UUID, capture_id: str) -> str:
    return f"stk:capture-refusal:{session_id}:{capture_id}"


def _repeated(error: UploadRejected) -> RepeatedRefusal:
    return RepeatedRefusal(error.code, error.detail, status=error.status)


async def _unless(gone: asyncio.Event, task: asyncio.Task[CheckedPhoto]) -> CheckedPhoto:
    """``task``'s result, or ClientDisconnect once ``gone`` is set first (``task`` goes on)."""
    watcher = asyncio.create_task(gone.wait())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    raise ClientDisconnect()
