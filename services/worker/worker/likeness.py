"""Likeness of each sticker to its guest (issue 20): the face descriptor distance
(:func:`shared.imaging.faces.descriptor_distance`) between the face drawn on a sticker and the guest's face
in the selfie (and the anchor portrait's, where the variant has one), judged against the calibrated bounds
of :mod:`shared.likeness`.

dlib's descriptor holds the GIL for ~150 ms a face (:mod:`shared.imaging.faces`), so every detection and
descriptor runs in another process: :class:`LikenessScorer` owns one small process pool per worker
process (one child by default, started lazily with ``forkserver`` so it never inherits the event loop's
threads, its models loaded once by the pool's initializer) and is closed with the worker. A child that
dies (OOM kill, a crash in dlib) breaks the pool: the stickers it was judging get ``None`` with reason
:data:`SCORER_UNAVAILABLE`, never a failed job, and the next call starts a fresh pool.

What goes to the child is bytes (the stored selfie, the anchor's PNG, the sticker's PNG), decoded there;
what comes back is the 128-d descriptor as float32 bytes, or the reason there is none.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import structlog
from PIL import Image

from cartoon.poses import Pose
from shared.childproc import exit_with
from shared.errors import UnavailableError
from shared.imaging.decode import decode_rgb
from shared.imaging.faces import (
    FaceBox,
    descriptor_distance,
    detect_faces,
    face_descriptor,
    largest_face,
    load_descriptor,
)
from shared.likeness import LIKENESS_MAX_DISTANCE, LIKENESS_MAX_DISTANCE_EYES_HIDDEN

__all__ = [
    "EYES_HIDDEN",
    "EYES_HIDDEN_OVERLAYS",
    "NEUTRAL_GREY",
    "NO_FACE_FOUND",
    "NO_SELFIE_FACE",
    "SCORER_UNAVAILABLE",
    "Descriptor",
    "Judgement",
    "LikenessScorer",
    "PackJudge",
    "ScorerUnavailable",
    "eyes_hidden",
    "judge",
    "sticker_on_grey",
]

log = structlog.get_logger(__name__)
T = TypeVar("T")
Descriptor = npt.NDArray[np.float32]

#: The face overlays of :data:`cartoon.poses.POSES` that cover or close the eyes (the 😎 shades, the 😍
#: heart eyes, the 😴 closed eyes): the descriptor leans on the eyes, so these poses have their own bound
#: (:data:`shared.likeness.LIKENESS_MAX_DISTANCE_EYES_HIDDEN`; ``None`` = not judged, the calibrated
#: choice: their distances overlap other people's), and a face the detector cannot find on them is not a
#: defect.
EYES_HIDDEN_OVERLAYS = frozenset({"sunglasses", "heart_eyes", "closed_eyes"})
#: Grey level (0–255) a sticker's transparent pixels become before detection: mid grey, so neither the
#: white die-cut outline nor a dark costume merges with the background.
NEUTRAL_GREY = 128

# Reasons a sticker has no likeness (Sticker.likeness_reason, the sticker blob's meta).
NO_FACE_FOUND = "no_face_found"  #: the detector found no face on a sticker that shows the eyes
EYES_HIDDEN = "eyes_hidden"  #: a pose that hides the eyes: no face found, or not judged (not a defect)
NO_SELFIE_FACE = "no_selfie_face"  #: the selfie has no face to compare with (``REQUIRE_FACE=false``)
SCORER_UNAVAILABLE = "scorer_unavailable"  #: the scoring process died or did not answer in time


class ScorerUnavailable(UnavailableError):
    """The scoring process died, could not start, or did not answer within the timeout."""


def eyes_hidden(pose: Pose) -> bool:
    """Whether ``pose`` draws something over the eyes (:data:`EYES_HIDDEN_OVERLAYS`)."""
    return bool(EYES_HIDDEN_OVERLAYS.intersection(pose.face))


@dataclass(frozen=True, slots=True)
class Judgement:
    """One sticker's likeness.

    Attributes:
        distance: descriptor distance to the selfie's face (0 = identical; unitless, dlib's metric), or
            ``None`` when no face was found or there is nothing to compare with.
        reason: why the sticker was not judged (:data:`NO_FACE_FOUND`, :data:`EYES_HIDDEN`,
            :data:`NO_SELFIE_FACE`, :data:`SCORER_UNAVAILABLE`); ``None``: judged. An eyes-hidden pose
            without a bound keeps its measured ``distance`` (logged) with reason :data:`EYES_HIDDEN`.
        anchor_distance: descriptor distance to the anchor portrait's face (``None``: no anchor, or no
            face found on it or on the sticker).
        bound: the bound ``distance`` is held against (:mod:`shared.likeness`; ``None``: none).
        hidden_eyes: the pose hides the eyes.
    """

    distance: float | None
    reason: str | None = None
    anchor_distance: float | None = None
    bound: float | None = LIKENESS_MAX_DISTANCE
    hidden_eyes: bool = False

    @property
    def judged(self) -> float | None:
        """The distance that counts (stored, observed): ``distance`` when the sticker was judged."""
        return self.distance if self.reason is None else None

    @property
    def defect(self) -> str | None:
        """Why this sticker should be regenerated (``likeness_far``: over its bound; ``no_face_found``:
        no face where one is expected), or ``None``."""
        if self.reason is None and self.distance is not None and self.bound is not None:
            return "likeness_far" if self.distance > self.bound else None
        return NO_FACE_FOUND if self.reason == NO_FACE_FOUND else None

    def worse_than(self, other: Judgement) -> bool:
        """Whether this is a worse likeness than ``other`` (no face counts as infinitely far)."""
        mine = self.distance if self.distance is not None else float("inf")
        theirs = other.distance if other.distance is not None else float("inf")
        return mine > theirs


def judge(
    sticker: Descriptor | None,
    sticker_reason: str | None,
    selfie: Descriptor | None,
    anchor: Descriptor | None,
    pose: Pose,
) -> Judgement:
    """The judgement of one sticker from the descriptors (pure).

    Args:
        sticker: the sticker face's descriptor, or ``None`` with ``sticker_reason``.
        sticker_reason: why there is no sticker descriptor (:data:`NO_FACE_FOUND`,
            :data:`SCORER_UNAVAILABLE`).
        selfie: the selfie face's descriptor (``None``: no face in the selfie).
        anchor: the anchor face's descriptor, if the variant has an anchor with a face.
        pose: the sticker's pose (whether it hides the eyes).
    """
    hidden = eyes_hidden(pose)
    bound = LIKENESS_MAX_DISTANCE_EYES_HIDDEN if hidden else LIKENESS_MAX_DISTANCE
    if selfie is None:
        return Judgement(None, NO_SELFIE_FACE, bound=bound, hidden_eyes=hidden)
    if sticker is None:
        reason = EYES_HIDDEN if hidden and sticker_reason == NO_FACE_FOUND else sticker_reason
        return Judgement(None, reason or NO_FACE_FOUND, bound=bound, hidden_eyes=hidden)
    to_anchor = round(descriptor_distance(sticker, anchor), 4) if anchor is not None else None
    return Judgement(
        round(descriptor_distance(sticker, selfie), 4),
        reason=EYES_HIDDEN if bound is None else None,
        anchor_distance=to_anchor,
        bound=bound,
        hidden_eyes=hidden,
    )


# --- what runs in the scoring process -----------------------------------------------------------------


def sticker_on_grey(png: bytes) -> npt.NDArray[np.uint8]:
    """A sticker (PNG, RGBA) composited on :data:`NEUTRAL_GREY`: H×W×3 uint8 RGB for the detector."""
    with Image.open(io.BytesIO(png)) as image:
        rgba = np.asarray(image.convert("RGBA"), np.float32)
    alpha = rgba[..., 3:] / 255.0
    return np.ascontiguousarray(rgba[..., :3] * alpha + NEUTRAL_GREY * (1.0 - alpha), dtype=np.uint8)


def _descriptor_of(rgb: npt.NDArray[np.uint8], face: FaceBox | None) -> tuple[bytes | None, str | None]:
    if face is None or len(face.landmarks) != 5:
        face = largest_face(detect_faces(rgb))
    if face is None:
        return None, NO_FACE_FOUND
    return face_descriptor(rgb, face).tobytes(), None


def _child_init(service_pid: int) -> None:
    exit_with(service_pid)
    load_descriptor()


def _describe_photo(data: bytes, face_meta: dict[str, Any] | None) -> tuple[bytes | None, str | None]:
    """The descriptor of the face in a stored photo (``face_meta``: the face ingest stored, same grid as
    :func:`shared.imaging.decode.decode_rgb`; without it or its landmarks, the largest face found)."""
    rgb = decode_rgb(data)
    return _descriptor_of(rgb, FaceBox.from_meta(face_meta) if face_meta is not None else None)


def _describe_drawing(png: bytes) -> tuple[bytes | None, str | None]:
    """The descriptor of the largest face on a drawing (a sticker or the anchor, RGBA or RGB PNG)."""
    return _descriptor_of(sticker_on_grey(png), None)


# --- the pool, in the worker's process ----------------------------------------------------------------


class LikenessScorer:
    """Detections and descriptors in a process pool of ``processes`` children (one per worker process is
    the default). Not benchmarked yet: one probe on this 2-core machine under other load spent 4.2 s in
    the ``likeness`` stage of a consistency pack (the pool's start and model load, the selfie, the anchor
    and 12 stickers); dlib's descriptor alone is ~150 ms a face (:mod:`shared.imaging.faces`).

    Args:
        processes: children in the pool.
        timeout_s: the longest wait for one answer (s); past it the answer counts as unavailable.
        start_method: ``forkserver`` (default) or ``spawn``; never ``fork`` (the worker has threads).

    Thread- and task-safe; :meth:`close` shuts the pool down (the worker's runtime calls it at exit).
    """

    def __init__(
        self, *, processes: int = 1, timeout_s: float = 30.0, start_method: str = "forkserver"
    ) -> None:
        self._processes = processes
        self._timeout_s = timeout_s
        self._context = multiprocessing.get_context(start_method)
        if start_method == "forkserver":  # the server imports the scoring code once, not the whole service
            self._context.set_forkserver_preload(["worker.likeness"])
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise ScorerUnavailable("the scorer is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self._processes,
                    mp_context=self._context,
                    initializer=_child_init,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def _discard(self, pool: concurrent.futures.ProcessPoolExecutor, *, kill: bool = False) -> None:
        """Forget a broken or hung pool (the next call starts a fresh one); ``kill``: SIGKILL its
        children first (a hung child never ends on its own, and ``shutdown`` would wait for it)."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        if kill:
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                with contextlib.suppress(OSError, ValueError):
                    process.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def child_pids(self) -> list[int]:
        """Process ids of the pool's running children (empty before the first call; tests kill one)."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return [p.pid for p in processes.values() if p.pid is not None]

    async def _run(
        self, fn: Callable[..., tuple[bytes | None, str | None]], *args: Any
    ) -> tuple[Descriptor | None, str | None]:
        pool = self._executor()
        try:
            future = pool.submit(fn, *args)
        except BrokenProcessPool as exc:  # the child died while idle (between jobs)
            log.warning("LIKENESS_SCORER_DIED", error=str(exc)[:200])
            self._discard(pool)
            raise ScorerUnavailable(f"the scoring process died: {exc}") from exc
        except RuntimeError as exc:  # submit after a shutdown (the worker is stopping)
            raise ScorerUnavailable(f"{type(exc).__name__}: {exc}") from exc
        try:
            data, reason = await asyncio.wait_for(asyncio.wrap_future(future), self._timeout_s)
        except BrokenProcessPool as exc:
            log.warning("LIKENESS_SCORER_DIED", error=str(exc)[:200])
            self._discard(pool)
            raise ScorerUnavailable(f"the scoring process died: {exc}") from exc
        except TimeoutError as exc:
            log.warning("LIKENESS_SCORER_HUNG", timeout_s=self._timeout_s)
            self._discard(pool, kill=True)
            raise ScorerUnavailable(f"no answer within {self._timeout_s} s") from exc
        except Exception as exc:  # raised in the child (an undecodable PNG, dlib): that answer only
            log.warning("LIKENESS_SCORE_FAILED", error=f"{type(exc).__name__}: {exc}"[:200])
            raise ScorerUnavailable(f"{type(exc).__name__}: {exc}") from exc
        if data is None:
            return None, reason
        return np.frombuffer(data, np.float32).copy(), None

    async def photo(self, data: bytes, face: FaceBox | None) -> tuple[Descriptor | None, str | None]:
        """The descriptor of the guest's face in the stored selfie (``face``: the one ingest stored, in
        :func:`shared.imaging.decode.decode_rgb`'s grid; ``None``: the largest found), or ``None`` and
        :data:`NO_FACE_FOUND`.

        Raises:
            ScorerUnavailable: the scoring process died or did not answer in time.
        """
        return await self._run(_describe_photo, data, face.to_meta() if face is not None else None)

    async def drawing(self, png: bytes) -> tuple[Descriptor | None, str | None]:
        """The descriptor of the largest face on a drawing (a sticker's PNG, the anchor's; transparency
        on :data:`NEUTRAL_GREY`), or ``None`` and :data:`NO_FACE_FOUND`.

        Raises:
            ScorerUnavailable: the scoring process died or did not answer in time.
        """
        return await self._run(_describe_drawing, png)

    async def close(self, *, wait_s: float = 10.0) -> None:
        """Shut the pool down: wait up to ``wait_s`` seconds (in a thread) for its children to exit,
        then kill them (a hung child must not hold the worker's shutdown)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await asyncio.wait_for(asyncio.to_thread(pool.shutdown, True, cancel_futures=True), wait_s)
        except TimeoutError:
            log.warning("LIKENESS_SCORER_KILLED_AT_EXIT", wait_s=wait_s)
            self._discard(pool, kill=True)


class PackJudge:
    """One job's likeness judge: the selfie's descriptor (computed once, on first use, from the face
    ingest stored), the anchor's where the variant has one, and each sticker's judgement.

    Args:
        scorer: the worker process's :class:`LikenessScorer`.
        selfie: the stored selfie's bytes (what :func:`shared.imaging.decode.decode_rgb` reads).
        face: the guest's face in it (:attr:`worker.steps.inputs.Inputs.face`; ``None``: none found).
    """

    def __init__(self, scorer: LikenessScorer, selfie: bytes, face: FaceBox | None) -> None:
        self._scorer = scorer
        self._selfie_bytes = selfie
        self._face = face
        self._selfie: tuple[Descriptor | None, str | None] | None = None
        self._anchor: Descriptor | None = None
        self._lock = asyncio.Lock()
        #: Set at this pack's first ScorerUnavailable: the rest of the pack is not scored (one hung
        #: child costs a pack at most one ``timeout_s``, not one per sticker).
        self._unavailable = False

    async def selfie(self) -> tuple[Descriptor | None, str | None]:
        """The selfie's descriptor, or ``None`` and the reason (:data:`NO_SELFIE_FACE`,
        :data:`SCORER_UNAVAILABLE`: for the rest of this pack)."""
        async with self._lock:
            if self._selfie is None:
                if self._face is None:
                    self._selfie = (None, NO_SELFIE_FACE)
                elif self._unavailable:
                    return None, SCORER_UNAVAILABLE
                else:
                    try:
                        found, reason = await self._scorer.photo(self._selfie_bytes, self._face)
                    except ScorerUnavailable:
                        self._unavailable = True
                        return None, SCORER_UNAVAILABLE
                    self._selfie = (found, None) if found is not None else (None, NO_SELFIE_FACE)
                    if found is None:
                        log.warning("LIKENESS_SELFIE_FACE_NOT_DESCRIBED", reason=reason)
            return self._selfie

    async def use_anchor(self, png: bytes) -> bool:
        """Take the anchor portrait (PNG) as the second reference; ``False`` when no face is found on it
        or the scorer is unavailable (the stickers are then judged against the selfie alone)."""
        if self._unavailable:
            return False
        try:
            self._anchor, _reason = await self._scorer.drawing(png)
        except ScorerUnavailable:
            self._unavailable = True
            self._anchor = None
        return self._anchor is not None

    async def sticker(self, png: bytes, pose: Pose) -> Judgement:
        """The judgement of one finished sticker (its PNG) drawn in ``pose``; never raises (an unavailable
        scorer gives ``None`` with :data:`SCORER_UNAVAILABLE`)."""
        selfie, selfie_reason = await self.selfie()
        if selfie is None and selfie_reason == SCORER_UNAVAILABLE:
            return Judgement(None, SCORER_UNAVAILABLE, hidden_eyes=eyes_hidden(pose))
        if selfie is None:
            return judge(None, None, None, None, pose)
        if self._unavailable:
            return Judgement(None, SCORER_UNAVAILABLE, hidden_eyes=eyes_hidden(pose))
        try:
            found, reason = await self._scorer.drawing(png)
        except ScorerUnavailable:
            self._unavailable = True
            found, reason = None, SCORER_UNAVAILABLE
        return judge(found, reason, selfie, self._anchor, pose)
