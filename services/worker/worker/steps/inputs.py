"""The job's photo as the providers get it: the selfie downscaled and typed for the wire, the guest's face
as ingest found it (stored with the selfie, issue 20), and the face crop (spec/002 "Face crop": cut from
the selfie with the passport's face box, else the stored face's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import structlog

from shared.imaging.decode import decode_rgb
from shared.imaging.faces import FaceBox, detect_faces, largest_face
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.providers.images import encode_photo

__all__ = ["FACE_CROP_MARGIN", "Inputs", "face_crop", "prepare_inputs"]

FACE_CROP_MARGIN = 0.45  # of the face box on every side: hair and ears belong to the likeness
FACE_CROP_MAX_PX = 512

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Inputs:
    """The selfie (H×W×3 uint8 RGB, upright), its wire encoding and the guest's face in it (px of
    ``rgb``, with landmarks; ``None`` when ingest found none, e.g. ``REQUIRE_FACE=false``). ``face`` is
    the one face of the selfie the whole render uses (:func:`prepare_inputs`)."""

    rgb: npt.NDArray[np.uint8]
    selfie: InputImage
    face: FaceBox | None


def prepare_inputs(selfie_bytes: bytes, selfie_meta: Mapping[str, Any] | None = None) -> Inputs:
    """Decode the stored selfie, encode it for the providers (JPEG, ≤ 1536 px) and take the guest's face.

    Args:
        selfie_bytes: the stored selfie (ingest's normalised JPEG).
        selfie_meta: the selfie blob's ``meta``. Its ``"face"`` is what ingest found, in the same pixel
            grid (:meth:`FaceBox.to_meta`), or ``None`` when ingest looked and found no face
            (``REQUIRE_FACE=false``): both are taken as they are, nothing is detected here. Only without
            a ``"face"`` key (a selfie stored before issue 20, the CLI, ``selfie_meta`` None) or with an
            unreadable one (logged ``STORED_FACE_UNREADABLE``) is the face detected here, once.

    Raises:
        PermanentJobError: the selfie cannot be decoded.
    """
    rgb = decode_rgb(selfie_bytes)
    return Inputs(rgb=rgb, selfie=encode_photo(rgb), face=_selfie_face(rgb, selfie_meta or {}))


def _selfie_face(rgb: npt.NDArray[np.uint8], selfie_meta: Mapping[str, Any]) -> FaceBox | None:
    """The face of :func:`prepare_inputs`: the stored one when ingest stored one, else detected."""
    if "face" in selfie_meta:
        stored = selfie_meta["face"]
        if stored is None:
            return None  # ingest looked and found none: detecting again could only disagree with it
        try:
            return FaceBox.from_meta(stored)
        except ValueError:
            log.warning("STORED_FACE_UNREADABLE", meta=str(stored)[:200])
    return largest_face(detect_faces(rgb))


def face_crop(
    rgb: npt.NDArray[np.uint8], face: FaceBox | None, passport: Passport | None
) -> InputImage | None:
    """The face with hair and ears (the box grown by :data:`FACE_CROP_MARGIN`), JPEG ≤ 512 px, from the
    passport's face box or ``face`` (:attr:`Inputs.face`); ``None`` when neither has a face."""
    height, width = rgb.shape[:2]
    if passport is not None and passport.face_box is not None:
        fx, fy, fw, fh = passport.face_box
        box = (fx * width, fy * height, fw * width, fh * height)
    else:
        if face is None:
            return None
        box = (float(face.x), float(face.y), float(face.w), float(face.h))
    x, y, w, h = box
    x0, y0 = max(0, int(x - w * FACE_CROP_MARGIN)), max(0, int(y - h * FACE_CROP_MARGIN * 1.3))
    x1, y1 = min(width, int(x + w * (1 + FACE_CROP_MARGIN))), min(height, int(y + h * (1 + FACE_CROP_MARGIN)))
    if x1 - x0 < 16 or y1 - y0 < 16:
        return None
    crop = np.ascontiguousarray(rgb[y0:y1, x0:x1])
    side = max(crop.shape[:2])
    if side > FACE_CROP_MAX_PX:
        scale = FACE_CROP_MAX_PX / side
        size = (max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale)))
        crop = np.asarray(cv2.resize(crop, size, interpolation=cv2.INTER_AREA), np.uint8)
    return encode_photo(crop, role="face")
