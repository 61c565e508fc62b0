"""The job's photo as the providers get it: the selfie downscaled and typed for the wire, and the face
crop (spec/002 "Face crop": cut from the selfie with the passport's face box, else the detector's)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from shared.imaging.decode import decode_rgb
from shared.imaging.faces import detect_faces, largest_face
from worker.providers.answers import Passport
from worker.providers.base import InputImage
from worker.providers.images import encode_photo

__all__ = ["FACE_CROP_MARGIN", "Inputs", "face_crop", "prepare_inputs"]

FACE_CROP_MARGIN = 0.45  # of the face box on every side: hair and ears belong to the likeness
FACE_CROP_MAX_PX = 512


@dataclass(frozen=True, slots=True)
class Inputs:
    """The selfie (H×W×3 uint8 RGB, upright) and its wire encoding."""

    rgb: npt.NDArray[np.uint8]
    selfie: InputImage


def prepare_inputs(selfie_bytes: bytes) -> Inputs:
    """Decode the stored selfie and encode it for the providers (JPEG, ≤ 1536 px).

    Raises:
        PermanentJobError: the selfie cannot be decoded.
    """
    rgb = decode_rgb(selfie_bytes)
    return Inputs(rgb=rgb, selfie=encode_photo(rgb))


def face_crop(rgb: npt.NDArray[np.uint8], passport: Passport | None) -> InputImage | None:
    """The face with hair and ears (the box grown by :data:`FACE_CROP_MARGIN`), JPEG ≤ 512 px, from the
    passport's face box or the detector's; ``None`` when neither finds a face."""
    height, width = rgb.shape[:2]
    if passport is not None and passport.face_box is not None:
        fx, fy, fw, fh = passport.face_box
        box = (fx * width, fy * height, fw * width, fh * height)
    else:
        face = largest_face(detect_faces(rgb))
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
