"""Today's face detector, OpenCV's Haar cascades, kept as the reference of ``make face-eval`` only.

A copy of ``shared/imaging/faces.py`` as it was before issue 20 (commit 9359730), so that
:mod:`devstack.bench.faces` can score the old detector beside the product's dlib one on the same photos in
one run. Nothing in the product imports it. Changes from that copy: boxes are plain tuples; the cascades
are read from ``cv2.data.haarcascades``, and when they are missing (the ``opencv-python-headless`` 5.x
wheels ship an empty ``cv2/data/``, issue 20) :func:`unavailable` gives the reason and
:func:`detect_faces` raises :class:`ReferenceUnavailable` instead of failing at import.

The old detector, for the record: a grey, histogram-equalised copy scaled to a longest side of about
640 px; passes, stopping at the first that finds a face: (1) ``frontalface_alt2``; (2) ``frontalface_alt2``
on a CLAHE-enhanced copy and on copies rotated by ±15° with a lower neighbour threshold; (3)
``frontalface_default`` and ``profileface`` (and the mirror image). Every candidate after pass 1 is kept
only when the eye cascade finds an eye in its upper part. Faces under 7 % of the shorter side are ignored.
"""

from __future__ import annotations

import os
import threading

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["CASCADES", "ReferenceUnavailable", "detect_faces", "unavailable"]

DETECT_MAX_SIDE_PX = 640
MIN_FACE_FRACTION = 0.07  # of the shorter image side
_TILT_DEG = (15.0, -15.0)
#: Every cascade the old detector used.
CASCADES = ("frontalface_alt2", "frontalface_default", "profileface", "eye")

Box = tuple[int, int, int, int, float]  # x, y, w, h (px), merged detections


class ReferenceUnavailable(RuntimeError):
    """The Haar cascade files are not in this OpenCV installation."""


def _cascade_dir() -> str:
    data = getattr(cv2, "data", None)
    return str(getattr(data, "haarcascades", "")) or os.path.join(os.path.dirname(cv2.__file__), "data")


def unavailable() -> str | None:
    """Why the reference cannot run here (a cascade file missing), or None when it can."""
    missing = [
        name
        for name in CASCADES
        if not os.path.isfile(os.path.join(_cascade_dir(), f"haarcascade_{name}.xml"))
    ]
    if missing:
        names = ", ".join(missing)
        return f"OpenCV {cv2.__version__} ships no Haar cascades ({names} missing in {_cascade_dir()})"
    return None


class _ThreadCascades(threading.local):
    def __init__(self) -> None:
        self.by_name: dict[str, cv2.CascadeClassifier] = {}


_CASCADES = _ThreadCascades()


def _cascade(name: str) -> cv2.CascadeClassifier:
    """One cascade, loaded once per thread (a classifier keeps per-call scratch state; issue 8)."""
    classifier = _CASCADES.by_name.get(name)
    if classifier is None:
        path = os.path.join(_cascade_dir(), f"haarcascade_{name}.xml")
        classifier = cv2.CascadeClassifier(path) if os.path.isfile(path) else None
        if classifier is None or classifier.empty():
            raise ReferenceUnavailable(unavailable() or f"OpenCV cascade {path} could not be loaded")
        _CASCADES.by_name[name] = classifier
    return classifier


def _grey_for_detection(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    height, width = rgb.shape[:2]
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    scale = DETECT_MAX_SIDE_PX / max(height, width)
    if abs(scale - 1.0) > 0.05:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        grey = cv2.resize(grey, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)
    return np.ascontiguousarray(grey)


def _run(cascade: str, grey: npt.NDArray[np.uint8], min_neighbors: int) -> list[Box]:
    min_side = max(24, round(min(grey.shape[:2]) * MIN_FACE_FRACTION))
    boxes, counts = _cascade(cascade).detectMultiScale2(
        grey, scaleFactor=1.1, minNeighbors=min_neighbors, minSize=(min_side, min_side)
    )
    return [(int(x), int(y), int(w), int(h), float(n)) for (x, y, w, h), n in zip(boxes, counts, strict=True)]


def _rotated_pass(grey: npt.NDArray[np.uint8], angle: float) -> list[Box]:
    height, width = grey.shape[:2]
    matrix = cv2.getRotationMatrix2D((width / 2.0, height / 2.0), angle, 1.0)
    rotated = np.asarray(
        cv2.warpAffine(grey, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE), np.uint8
    )
    inverse = cv2.invertAffineTransform(matrix)
    found = []
    for x, y, w, h, score in _run("frontalface_alt2", rotated, 3):
        cx, cy = inverse @ np.array([x + w / 2.0, y + h / 2.0, 1.0])
        found.append((round(cx - w / 2.0), round(cy - h / 2.0), w, h, score))
    return found


def _has_eye(grey: npt.NDArray[np.uint8], box: Box) -> bool:
    x, y, w, h, _ = box
    x0, y0 = max(0, x), max(0, y)
    upper = grey[y0 : y0 + max(1, int(h * 0.6)), x0 : x0 + w]
    if upper.size == 0:
        return False
    min_eye = max(8, w // 8)
    eyes = _cascade("eye").detectMultiScale(
        upper, scaleFactor=1.1, minNeighbors=4, minSize=(min_eye, min_eye)
    )
    return len(eyes) > 0


def _fallback_candidates(grey: npt.NDArray[np.uint8]) -> list[Box]:
    candidates = _run("frontalface_default", grey, 5)
    candidates += _run("profileface", grey, 4)
    width = grey.shape[1]
    mirrored = np.ascontiguousarray(grey[:, ::-1])
    candidates += [(width - x - w, y, w, h, s) for x, y, w, h, s in _run("profileface", mirrored, 4)]
    return [box for box in candidates if _has_eye(grey, box)]


def _iou(a: Box, b: Box) -> float:
    iw = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union else 0.0


def _suppress_overlaps(boxes: list[Box], max_iou: float = 0.3) -> list[Box]:
    kept: list[Box] = []
    for box in sorted(boxes, key=lambda b: b[2] * b[3], reverse=True):
        if all(_iou(box, other) <= max_iou for other in kept):
            kept.append(box)
    return kept


def detect_faces(rgb: npt.NDArray[np.uint8]) -> list[Box]:
    """The old detector's faces in ``rgb`` (H×W×3 uint8 RGB), as boxes in the detection copy's pixels.

    Raises:
        ValueError: ``rgb`` is not H×W×3 uint8.
        ReferenceUnavailable: the cascade files are missing (:func:`unavailable`).
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected H×W×3 uint8 RGB, got shape {rgb.shape} dtype {rgb.dtype}")
    grey = _grey_for_detection(rgb)
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
    return _suppress_overlaps(found)
