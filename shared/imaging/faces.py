"""The product's one face module: detection, landmarks and the face descriptor, all on dlib.

Ingest finds the face once, on the normalised upload, and stores what the worker needs with the photo
(:meth:`FaceBox.to_meta` in the selfie blob's ``meta``); the worker reads it back
(:meth:`FaceBox.from_meta`) and never detects on the selfie again, so the two can never disagree
(issue 20). The worker also uses this module on stickers, for the likeness score.

Models, all shipped inside registry packages (nothing is downloaded at run time):

- **Detector**: dlib's HOG + linear SVM frontal face detector (``dlib.get_frontal_face_detector``; its
  weights are compiled into the ``dlib-bin`` wheel). It slides an 80×80 px window over an image pyramid,
  so it runs on a grey copy scaled to :data:`DETECT_SIDES_PX`: first the small copy (a kiosk close-up is
  found there in ~10–20 ms), and only when that finds nothing the larger one, which finds faces down to
  80/1100 ≈ 7 % of the photo's longest side. Choice by measurement: ``make face-eval`` (BENCHMARKS.md).
- **Landmarks**: dlib's 5-point shape predictor (``shape_predictor_5_face_landmarks.dat`` from
  ``face-recognition-models``, MIT; the model itself released into the public domain by its author,
  Davis King, per github.com/davisking/dlib-models' README): the two corners of each eye and the point
  under the nose, in that model's order (0–1 the subject's left eye, 2–3 the right eye, 4 the nose).
- **Descriptor**: dlib's ResNet face recognition model (``dlib_face_recognition_resnet_model_v1.dat``
  from ``face-recognition-models``; public domain, same README; 99.38 % on LFW per that README), a
  128-d vector per face whose Euclidean distance is small (< 0.6 on LFW) for the same person.

Thread safety: dlib's detector and models keep per-call scratch state, so each thread loads its own
copies (:class:`_ThreadModels`; a few tens of MB, ~0.2 s on first use: the detector is built once per
process and unpickled per thread, :func:`_detector_copy`); :func:`load_detector` loads them ahead of the
first call. The detector releases the GIL while it runs; the descriptor does **not**
(~150 ms a face holding the GIL, measured with dlib 20.0.1), so an asyncio service must run
:func:`face_descriptor` in another process, not a thread.
"""

from __future__ import annotations

import importlib.util
import math
import pickle
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import dlib
import numpy as np
import numpy.typing as npt

__all__ = [
    "DESCRIPTOR_ID",
    "DETECTOR_ID",
    "DETECT_SIDES_PX",
    "FaceBox",
    "descriptor_distance",
    "detect_faces",
    "face_descriptor",
    "largest_face",
    "load_descriptor",
    "load_detector",
    "model_path",
]

#: Longest side (px) of the grey copies the detector runs on, in order; the second only when the first
#: finds nothing (a no-face photo pays for both: ~15 + ~65 ms). Chosen by ``make face-eval``
#: (BENCHMARKS.md "Face check"): the fastest pair tried with no frontal face refused and no no-face photo
#: accepted; 1000 px refuses a group of ~20 px faces, 1200 px costs ~25 % more CPU.
DETECT_SIDES_PX = (400, 1100)
#: The SVM margin a detection must reach (dlib's ``adjust_threshold``; 0.0 is dlib's own default).
DETECT_THRESHOLD = 0.0
#: Names recorded with a stored face and a likeness score, so a model change is visible in the data.
DETECTOR_ID = f"dlib-hog-{dlib.__version__}"
DESCRIPTOR_ID = f"dlib-resnet-v1-{dlib.__version__}"
_MODELS_PACKAGE = "face_recognition_models"
_LANDMARKS_MODEL = "shape_predictor_5_face_landmarks.dat"
_DESCRIPTOR_MODEL = "dlib_face_recognition_resnet_model_v1.dat"

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class FaceBox:
    """One face in the pixel coordinates of the image given to :func:`detect_faces`.

    Attributes:
        x, y: top-left corner (px).
        w, h: size (px).
        score: the detector's SVM margin (higher is surer; ≥ :data:`DETECT_THRESHOLD`).
        landmarks: the 5 landmarks (px, same grid): 0–1 the subject's left eye corners, 2–3 the right
            eye corners, 4 under the nose. Empty only for a box built by hand (tests, old rows).
    """

    x: int
    y: int
    w: int
    h: int
    score: float
    landmarks: tuple[Point, ...] = field(default=())

    @property
    def area(self) -> int:
        """Box area in px²."""
        return self.w * self.h

    @property
    def center(self) -> tuple[float, float]:
        """Box centre (x, y) in px."""
        return (self.x + self.w / 2.0, self.y + self.h / 2.0)

    @property
    def eyes(self) -> tuple[Point, Point] | None:
        """Centres (px) of the eye on the image's left, then the eye on the image's right; None without
        landmarks."""
        if len(self.landmarks) != 5:
            return None
        (ax, ay), (bx, by), (cx, cy), (dx, dy) = self.landmarks[:4]
        one, two = ((ax + bx) / 2.0, (ay + by) / 2.0), ((cx + dx) / 2.0, (cy + dy) / 2.0)
        return (one, two) if one[0] <= two[0] else (two, one)

    def to_meta(self) -> dict[str, Any]:
        """A JSON-ready dict (the selfie blob's ``meta["face"]``), read back by :meth:`from_meta`."""
        return {
            "box": [self.x, self.y, self.w, self.h],
            "score": round(self.score, 4),
            "landmarks": [[round(px, 2), round(py, 2)] for px, py in self.landmarks],
            "detector": DETECTOR_ID,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> FaceBox:
        """The face :meth:`to_meta` wrote.

        Raises:
            ValueError: ``meta`` is not such a dict (a missing key, a box of other than 4 numbers).
        """
        try:
            x, y, w, h = (int(v) for v in meta["box"])
            landmarks = tuple((float(px), float(py)) for px, py in meta.get("landmarks", ()))
            return cls(x, y, w, h, float(meta.get("score", 0.0)), landmarks)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored face: {meta!r}") from exc

    def scaled(self, factor: float) -> FaceBox:
        """The same face in an image resized by ``factor`` (new px / old px)."""
        return FaceBox(
            round(self.x * factor),
            round(self.y * factor),
            max(1, round(self.w * factor)),
            max(1, round(self.h * factor)),
            self.score,
            tuple((px * factor, py * factor) for px, py in self.landmarks),
        )


def model_path(name: str) -> str:
    """Path of one model file shipped by ``face-recognition-models`` (``face_recognition_models/models/``).

    The package is located, never imported: its ``__init__`` imports ``pkg_resources``, which only an
    installed setuptools provides (and newer setuptools releases drop), and nothing of it but its data
    files is used.

    Raises:
        RuntimeError: the package or the file is missing (the installation is broken).
    """
    spec = importlib.util.find_spec(_MODELS_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{_MODELS_PACKAGE} is not installed: pip install face-recognition-models")
    path = Path(spec.origin).parent / "models" / name
    if not path.is_file():
        raise RuntimeError(f"model file {path} is missing from {_MODELS_PACKAGE}")
    return str(path)


class _ThreadModels(threading.local):
    """The dlib models one thread has loaded (None until first use)."""

    def __init__(self) -> None:
        self.detector: Any = None
        self.landmarks: Any = None
        self.descriptor: Any = None


_MODELS = _ThreadModels()
_DETECTOR_LOCK = threading.Lock()
_detector_pickle: bytes | None = None


def _detector_copy() -> Any:
    """A detector of the calling thread's own: dlib builds its HOG detector from weights compiled into the
    wheel in ~0.65 CPU-s, but unpickles a built one in ~2 ms (measured 2026-12-03 on this 2-core machine),
    so the process builds it once and every thread (the event loop's executor threads, a new set per test
    or per pool) gets an unpickled copy of the same ~150 KB."""
    global _detector_pickle
    with _DETECTOR_LOCK:
        if _detector_pickle is None:
            _detector_pickle = pickle.dumps(dlib.get_frontal_face_detector())
        built = _detector_pickle
    return pickle.loads(built)  # bytes this process pickled itself, never input


def load_detector() -> None:
    """Load the detector and the landmark model in the calling thread now, so its first detection does
    not pay for it (ingest's photo-check processes call it once in their pool initializer).

    Raises:
        RuntimeError: a model file is missing (:func:`model_path`).
    """
    if _MODELS.detector is None:
        _MODELS.detector = _detector_copy()
    if _MODELS.landmarks is None:
        _MODELS.landmarks = dlib.shape_predictor(model_path(_LANDMARKS_MODEL))


def load_descriptor() -> None:
    """Load the descriptor model (and the landmark model) in the calling thread now.

    Raises:
        RuntimeError: a model file is missing (:func:`model_path`).
    """
    load_detector()
    if _MODELS.descriptor is None:
        _MODELS.descriptor = dlib.face_recognition_model_v1(model_path(_DESCRIPTOR_MODEL))


def _check_rgb(rgb: npt.NDArray[np.uint8]) -> None:
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected H×W×3 uint8 RGB, got shape {rgb.shape} dtype {rgb.dtype}")


def _grey_at(grey: npt.NDArray[np.uint8], side: int) -> tuple[npt.NDArray[np.uint8], float]:
    """``grey`` scaled so that its longest side is ``side`` px, and the factor (copy px / image px)."""
    height, width = grey.shape[:2]
    scale = side / max(height, width)
    if abs(scale - 1.0) <= 0.02:
        return grey, 1.0
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return np.ascontiguousarray(cv2.resize(grey, size, interpolation=interpolation)), scale


def detect_faces(rgb: npt.NDArray[np.uint8]) -> list[FaceBox]:
    """Find human faces (frontal, up to about ±40° of turn) in a photo.

    Args:
        rgb: H×W×3 uint8 RGB image (EXIF orientation already applied), any size.

    Returns:
        Face boxes with their 5 landmarks in the pixel coordinates of ``rgb``, largest first; empty when
        there is none (animals, a covered face, a face under ~7 % of the longest side).

    Raises:
        ValueError: ``rgb`` is not H×W×3 uint8.
        RuntimeError: a model file is missing (:func:`model_path`).
    """
    _check_rgb(rgb)
    load_detector()
    grey_full = np.ascontiguousarray(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), dtype=np.uint8)
    height, width = rgb.shape[:2]
    faces: list[FaceBox] = []
    for side in DETECT_SIDES_PX:
        grey, scale = _grey_at(grey_full, side)
        rects, scores, _kinds = _MODELS.detector.run(grey, 0, DETECT_THRESHOLD)
        for rect, score in zip(rects, scores, strict=True):
            x0 = max(0, math.floor(rect.left() / scale))
            y0 = max(0, math.floor(rect.top() / scale))
            x1 = min(width, math.ceil((rect.right() + 1) / scale))
            y1 = min(height, math.ceil((rect.bottom() + 1) / scale))
            if x1 - x0 < 8 or y1 - y0 < 8:
                continue
            shape = _MODELS.landmarks(rgb, dlib.rectangle(x0, y0, x1 - 1, y1 - 1))
            points = tuple((float(shape.part(i).x), float(shape.part(i).y)) for i in range(shape.num_parts))
            faces.append(FaceBox(x0, y0, x1 - x0, y1 - y0, float(score), points))
        if faces:
            break
    return sorted(faces, key=lambda f: f.area, reverse=True)


#: A face whose detector margin is under this share of the surest face's is never taken as "the" face:
#: weak boxes (margin 0.00–0.05) fire on patterns the size of a face, e.g. the astronaut's chest patch
#: beside her face (1.5) in skimage's ``astronaut`` upscaled to 1536 px (tests/shared/imaging/test_faces.py).
WEAK_FACE_SHARE = 0.5


def largest_face(faces: list[FaceBox]) -> FaceBox | None:
    """The face with the largest area (the guest in front of the kiosk) among those whose score is at
    least :data:`WEAK_FACE_SHARE` of the best score, or None if ``faces`` is empty."""
    if not faces:
        return None
    best = max(f.score for f in faces)
    return max((f for f in faces if f.score >= best * WEAK_FACE_SHARE), key=lambda f: f.area)


def face_descriptor(rgb: npt.NDArray[np.uint8], face: FaceBox) -> npt.NDArray[np.float32]:
    """The 128-d descriptor of ``face`` in ``rgb`` (dlib's ResNet model on the face aligned by its 5
    landmarks, a 150×150 px chip). CPU-bound, ~150 ms holding the GIL: run it in another process.

    Raises:
        ValueError: ``rgb`` is not H×W×3 uint8, or ``face`` has no 5 landmarks.
        RuntimeError: a model file is missing (:func:`model_path`).
    """
    _check_rgb(rgb)
    if len(face.landmarks) != 5:
        raise ValueError("a descriptor needs the face's 5 landmarks (FaceBox from detect_faces)")
    load_descriptor()
    rect = dlib.rectangle(face.x, face.y, face.x + face.w - 1, face.y + face.h - 1)
    shape = dlib.full_object_detection(rect, [dlib.point(round(px), round(py)) for px, py in face.landmarks])
    return np.asarray(_MODELS.descriptor.compute_face_descriptor(rgb, shape), dtype=np.float32)


def descriptor_distance(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    """Euclidean distance of two descriptors (0 = identical; dlib's same-person threshold on LFW: 0.6)."""
    return float(np.linalg.norm(np.asarray(a, np.float64) - np.asarray(b, np.float64)))
