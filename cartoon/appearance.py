"""Appearance measured from pixels: what the offline ``local`` provider (and the AI provider simulator)
answers to the vision calls of spec/002 (appearance passport, anchor check, sheet and pack QA).

It measures only what pixels tell reliably besides the face detector: the face box (dlib's HOG detector,
:func:`shared.imaging.faces.detect_faces`, as the head frame of :func:`cartoon.face_cartoon.head_frame`),
the skin tone (lit half of the face core), the hair colour (above the forehead) and, for QA, each
sticker's skin tone against the reference. Hair length, facial hair, age and glasses are left ``unknown``
/ false, and the anchor check (hair, facial hair, glasses of a cartoon under a hat) is not something
pixels can judge: it answers "match".
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cartoon.face_cartoon import head_frame
from shared.imaging.faces import FaceBox, detect_faces, largest_face
from shared.imaging.lab import Lab, colour_lab, delta_e, delta_e_many, mean_lab, skin_mask

__all__ = [
    "QA_SKIN_DE",
    "contact_cells",
    "measure_appearance",
    "skin_outliers",
    "sticker_skin",
]

QA_SKIN_DE = 14.0  # a sticker whose skin is further than this (ΔE2000) from the reference is an outlier


def _median_rgb(pixels: npt.NDArray[np.uint8]) -> tuple[int, int, int]:
    r, g, b = (int(v) for v in np.median(pixels.reshape(-1, 3), axis=0))
    return (r, g, b)


def measure_appearance(rgb: npt.NDArray[np.uint8], face: FaceBox | None = None) -> dict[str, object] | None:
    """The appearance passport of a photo (the JSON a vision model would answer), or ``None`` when no
    face is found.

    Args:
        rgb: H×W×3 uint8 RGB photo (or a drawn portrait).
        face: the face in ``rgb`` px when the caller has it (e.g. the one ingest stored); ``None``: the
            largest face :func:`shared.imaging.faces.detect_faces` finds.

    Returns:
        ``skin_tone_hex``, ``hair_color_hex`` (``None`` when the hair is out of the frame), ``face_box``
        (the head frame, forehead to chin, :func:`cartoon.face_cartoon.head_frame`, as fractions of the
        photo, clipped to it), and ``unknown`` for what pixels cannot tell.
    """
    if face is None:
        face = largest_face(detect_faces(rgb))
    if face is None:
        return None
    height, width = rgb.shape[:2]
    fx, fy, fw, fh = head_frame(face)
    fx0, fy0 = max(0.0, fx), max(0.0, fy)
    fw, fh = min(width, fx + fw) - fx0, min(height, fy + fh) - fy0
    fx, fy = fx0, fy0
    core = rgb[
        int(fy + fh * 0.2) : int(fy + fh * 0.85),
        int(fx + fw * 0.25) : int(fx + fw * 0.75),
    ].reshape(-1, 3)
    luma = core.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    skin = _median_rgb(core[luma >= np.percentile(luma, 50)])
    top, bottom = max(0, int(fy - fh * 0.5)), int(fy - fh * 0.2)
    hair_hex: str | None = None
    if bottom - top >= 4:
        band = rgb[top:bottom, int(fx + fw * 0.3) : int(fx + fw * 0.7)]
        pixels = band.reshape(-1, 3)
        if pixels.shape[0] >= 16:
            sample = pixels[:: max(1, pixels.shape[0] // 400)]
            far = sample[delta_e_many(sample, colour_lab(skin)) > 12]
            if far.shape[0] >= 8:
                hair_hex = "#{:02X}{:02X}{:02X}".format(*_median_rgb(far))
    return {
        "skin_tone_hex": "#{:02X}{:02X}{:02X}".format(*skin),
        "hair_color_hex": hair_hex,
        "hair_length": "unknown",
        "facial_hair": "unknown",
        "age_band": "unknown",
        "glasses": False,
        "face_box": [fx / width, fy / height, fw / width, fh / height],
    }


def contact_cells(sheet: npt.NDArray[np.uint8], cols: int, rows: int) -> list[npt.NDArray[np.uint8]]:
    """Split a contact sheet (:func:`worker.imaging.contact.contact_sheet`) back into its cells,
    as H×W×4 RGBA with the white card background made transparent."""
    height, width = sheet.shape[:2]
    cells = []
    for r in range(rows):
        for c in range(cols):
            cell = sheet[
                r * height // rows : (r + 1) * height // rows, c * width // cols : (c + 1) * width // cols
            ]
            rgb = cell[..., :3]
            background = rgb.min(axis=2) >= 240
            alpha = np.where(background, 0, 255).astype(np.uint8)
            cells.append(np.dstack([rgb, alpha]))
    return cells


def sticker_skin(rgba: npt.NDArray[np.uint8], reference: Lab | None = None) -> Lab | None:
    """Mean Lab of a sticker's skin, or ``None`` when no skin is visible."""
    return mean_lab(rgba, skin_mask(rgba, reference))


def skin_outliers(reference: Lab, stickers: list[npt.NDArray[np.uint8]]) -> list[dict[str, object]]:
    """QA on skin tone: stickers (RGBA) whose skin is further than :data:`QA_SKIN_DE` from
    ``reference``, as ``{"index": 1-based, "reasons": ["skin_tone"]}``."""
    outliers: list[dict[str, object]] = []
    for index, rgba in enumerate(stickers, start=1):
        lab = sticker_skin(rgba, reference)
        if lab is not None and delta_e(lab, reference) > QA_SKIN_DE:
            outliers.append({"index": index, "reasons": ["skin_tone"]})
    return outliers
