"""Face detection with OpenCV's Haar cascades (offline, no model download).

The cascades ship inside ``opencv-python`` (``cv2.data.haarcascades``). Detection runs on a grey,
histogram-equalised copy scaled so that its longest side is about 640 px, which keeps one pass near
50 ms on one core. The passes, stopping at the first that finds a face:

1. ``frontalface_alt2`` on the equalised image: precise, almost no false positives on the fixtures.
2. ``frontalface_alt2`` on a CLAHE-enhanced image and on copies rotated by ±15° (tilted heads,
   low light), with a lower neighbour threshold.
3. ``frontalface_default`` and ``profileface`` (and the mirror image, for the other profile).

Every candidate after pass 1 is accepted only when the eye cascade also finds an eye in its upper part:
these passes fire on tree bark, dark noise amplified by CLAHE and folds of cloth, and an eye check
removes that (measured on the fixtures: the welder photo, whose face is behind a welding mask).

:func:`detect_faces` is safe to call from several threads at once: each thread uses its own classifiers
(:func:`load_cascade`); :func:`load_detector` loads them ahead of the first call.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["CASCADES", "FaceBox", "detect_faces", "largest_face", "load_cascade", "load_detector"]

DETECT_MAX_SIDE_PX = 640
MIN_FACE_FRACTION = 0.07  # of the shorter image side; kiosk selfies are close-ups
_TILT_DEG = (15.0, -15.0)
#: Every cascade :func:`detect_faces` may use.
CASCADES = ("frontalface_alt2", "frontalface_default", "profileface", "eye")


@dataclass(frozen=True, slots=True)
class FaceBox:
    """One face in the pixel coordinates of the image given to :func:`detect_faces`.

    Attributes:
        x, y: top-left corner (px).
        w, h: size (px).
        score: how many raw detections were merged into this box (higher is surer; >= 2).
    """

    x: int
    y: int
    w: int
    h: int
    score: float

    @property
    def area(self) -> int:
        """Box area in px²."""
        return self.w * self.h

    @property
    def center(self) -> tuple[float, float]:
        """Box centre (x, y) in px."""
        return (self.x + self.w / 2.0, self.y + self.h / 2.0)


class _ThreadCascades(threading.local):
    """The cascades one thread has loaded, by name."""

    def __init__(self) -> None:
        self.by_name: dict[str, cv2.CascadeClassifier] = {}


_CASCADES = _ThreadCascades()


def load_cascade(name: str) -> cv2.CascadeClassifier:
    """One of the Haar cascades bundled with opencv-python (``cv2/data/haarcascade_<name>.xml``),
    loaded once per thread.

    A classifier must never be shared by threads: ``CascadeClassifier.detectMultiScale`` keeps per-call
    scratch state in the object, and two threads detecting at once fail its assertions, return each
    other's boxes or crash the process with SIGSEGV (issue 8). Each thread therefore gets its own copy
    (a few MB, loaded in tens of ms on first use). Ingest checks photos in single-threaded pool
    processes (:mod:`ingest.photo_pool`), each loading its copies once; the worker's render threads are a
    small, reused pool, so this loads a handful of copies per process.

    Raises:
        RuntimeError: the file is missing from the OpenCV installation.
    """
    classifier = _CASCADES.by_name.get(name)
    if classifier is None:
        path = os.path.join(os.path.dirname(cv2.__file__), "data", f"haarcascade_{name}.xml")
        classifier = cv2.CascadeClassifier(path)
        if classifier.empty():
            raise RuntimeError(f"OpenCV cascade {path} could not be loaded")
        _CASCADES.by_name[name] = classifier
    return classifier


def load_detector() -> None:
    """Load every cascade of :data:`CASCADES` in the calling thread now, so its first detection does not
    pay for it (ingest's photo-check processes call it once in their pool initializer).

    Raises:
        RuntimeError: a cascade file is missing from the OpenCV installation.
    """
    for name in CASCADES:
        load_cascade(name)


def _grey_for_detection(rgb: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], float]:
    """Grey copy scaled to about DETECT_MAX_SIDE_PX, and the scale factor (detection px / image px)."""
    height, width = rgb.shape[:2]
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    scale = DETECT_MAX_SIDE_PX / max(height, width)
    if abs(scale - 1.0) > 0.05:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        grey = cv2.resize(grey, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)
    else:
        scale = 1.0
    return np.ascontiguousarray(grey), scale


def _run(
    cascade: str, grey: npt.NDArray[np.uint8], min_neighbors: int
) -> list[tuple[int, int, int, int, float]]:
    min_side = max(24, round(min(grey.shape[:2]) * MIN_FACE_FRACTION))
    boxes, counts = load_cascade(cascade).detectMultiScale2(
        grey, scaleFactor=1.1, minNeighbors=min_neighbors, minSize=(min_side, min_side)
    )
    return [(int(x), int(y), int(w), int(h), float(n)) for (x, y, w, h), n in zip(boxes, counts, strict=True)]


def _rotated_pass(grey: npt.NDArray[np.uint8], angle: float) -> list[tuple[int, int, int, int, float]]:
    """Run the frontal cascade on a rotated copy; boxes are mapped back to the unrotated grid."""
    height, width = grey.shape[:2]
    centre = (width / 2.0, height / 2.0)
    matrix = cv2.getRotationMatrix2D(centre, angle, 1.0)
    rotated = np.asarray(
        cv2.warpAffine(grey, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE), np.uint8
    )
    inverse = cv2.invertAffineTransform(matrix)
    found = []
    for x, y, w, h, score in _run("frontalface_alt2", rotated, 3):
        cx, cy = inverse @ np.array([x + w / 2.0, y + h / 2.0, 1.0])
        found.append((round(cx - w / 2.0), round(cy - h / 2.0), w, h, score))
    return found


def _has_eye(grey: npt.NDArray[np.uint8], box: tuple[int, int, int, int, float]) -> bool:
    x, y, w, h, _ = box
    x0, y0 = max(0, x), max(0, y)
    upper = grey[y0 : y0 + max(1, int(h * 0.6)), x0 : x0 + w]
    if upper.size == 0:
        return False
    min_eye = max(8, w // 8)
    eyes = load_cascade("eye").detectMultiScale(
        upper, scaleFactor=1.1, minNeighbors=4, minSize=(min_eye, min_eye)
    )
    return len(eyes) > 0


def _fallback_candidates(grey: npt.NDArray[np.uint8]) -> list[tuple[int, int, int, int, float]]:
    candidates = _run("frontalface_default", grey, 5)
    candidates += _run("profileface", grey, 4)
    width = grey.shape[1]
    mirrored = np.ascontiguousarray(grey[:, ::-1])
    candidates += [(width - x - w, y, w, h, s) for x, y, w, h, s in _run("profileface", mirrored, 4)]
    return [box for box in candidates if _has_eye(grey, box)]


def _suppress_overlaps(
    boxes: list[tuple[int, int, int, int, float]], max_iou: float = 0.3
) -> list[tuple[int, int, int, int, float]]:
    """Greedy non-maximum suppression: keep the larger box of any overlapping pair."""
    kept: list[tuple[int, int, int, int, float]] = []
    for box in sorted(boxes, key=lambda b: b[2] * b[3], reverse=True):
        if all(_iou(box, other) <= max_iou for other in kept):
            kept.append(box)
    return kept


def _iou(a: tuple[int, int, int, int, float], b: tuple[int, int, int, int, float]) -> float:
    ax1, ay1, ax2, ay2 = a[0], a[1], a[0] + a[2], a[1] + a[3]
    bx1, by1, bx2, by2 = b[0], b[1], b[0] + b[2], b[1] + b[3]
    iw = max(0, min(ax2, bx2) - max(ax1, bx1))
    ih = max(0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union else 0.0


def detect_faces(rgb: npt.NDArray[np.uint8]) -> list[FaceBox]:
    """Find human faces in a photo.

    Args:
        rgb: H×W×3 uint8 RGB image (EXIF orientation already applied), any size.

    Returns:
        Face boxes in the pixel coordinates of ``rgb``, largest first; empty when there is none
        (animals, a covered face, a face smaller than ~7 % of the shorter side).
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected H×W×3 uint8 RGB, got shape {rgb.shape} dtype {rgb.dtype}")
    grey, scale = _grey_for_detection(rgb)
    equalised = np.asarray(cv2.equalizeHist(grey), np.uint8)

    found = _run("frontalface_alt2", equalised, 4)
    if not found:
        clahe = np.asarray(cv2.createCLAHE(clipLimit=3.0, tileGridSize=(8, 8)).apply(grey), np.uint8)
        found = [box for box in _run("frontalface_alt2", clahe, 3) if _has_eye(clahe, box)]
        for angle in _TILT_DEG:
            if found:
                break
            found = [box for box in _rotated_pass(equalised, angle) if _has_eye(equalised, box)]
    if not found:
        found = _fallback_candidates(equalised)

    height, width = rgb.shape[:2]
    faces = []
    for x, y, w, h, score in _suppress_overlaps(found):
        x0 = max(0, math.floor(x / scale))
        y0 = max(0, math.floor(y / scale))
        x1 = min(width, math.ceil((x + w) / scale))
        y1 = min(height, math.ceil((y + h) / scale))
        if x1 > x0 and y1 > y0:
            faces.append(FaceBox(x0, y0, x1 - x0, y1 - y0, score))
    return sorted(faces, key=lambda f: f.area, reverse=True)


def largest_face(faces: list[FaceBox]) -> FaceBox | None:
    """The face with the largest area (the guest in front of the kiosk), or None if ``faces`` is empty."""
    return max(faces, key=lambda f: f.area, default=None)
