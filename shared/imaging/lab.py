"""Skin and hair colour measured in CIELAB (D65): colour conversions, CIEDE2000 distances and the skin and
hair masks of a sticker (spec/002 "Skin normalisation", "Appearance passport"). Shared by the worker's
post-processing (:mod:`worker.imaging.skin`) and the offline drawing engine's vision answers
(:mod:`cartoon.appearance`).

Distances are CIEDE2000 (scikit-image ``deltaE_ciede2000``), in ΔE units. Skin pixels of a cartoon are
found in YCrCb (the classic skin cluster, Cr 133–180 and Cb 77–135, which holds light and dark skin
alike) and kept only near the reference colour (ΔE76 ≤ 30), so an orange vest or a wooden prop of
skin-like hue does not vote.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt
from skimage import color

__all__ = [
    "MIN_SKIN_FRACTION",
    "Lab",
    "colour_lab",
    "delta_e",
    "delta_e_many",
    "hair_mask",
    "hex_to_lab",
    "lab_to_rgb",
    "mean_lab",
    "rgb_to_lab",
    "skin_mask",
    "skin_pixels",
]

Lab = npt.NDArray[np.float64]  # shape (3,): L*, a*, b*
_CR = (133, 180)
_CB = (77, 135)
_MIN_Y = 28
_NEAR_REFERENCE_DE76 = 30.0
MIN_SKIN_FRACTION = 0.002  # of the sticker: fewer skin pixels than this is "no skin seen"


def _linear_srgb() -> npt.NDArray[np.float64]:
    """sRGB's linearisation of the 256 levels, as scikit-image's ``rgb2xyz`` computes it per pixel."""
    v = np.arange(256, dtype=np.float64) / 255.0
    return np.where(v > 0.04045, np.power((v + 0.055) / 1.055, 2.4), v / 12.92)


_LINEAR = _linear_srgb()
#: sRGB (D65) → XYZ, transposed for ``rgb @ matrix``: scikit-image's ``xyz_from_rgb`` (colorconv.py)
_XYZ_FROM_RGB = np.array(
    [[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]]
).T


def rgb_to_lab(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    """N×3 uint8 RGB → N×3 Lab: scikit-image's ``rgb2lab`` (D65, 2°) to the last bit, with the per-pixel
    power of its linearisation looked up from a 256-entry table."""
    xyz = _LINEAR[rgb.reshape(-1, 1, 3)] @ _XYZ_FROM_RGB
    return np.asarray(color.xyz2lab(xyz).reshape(-1, 3))


def _within(lab: npt.NDArray[np.float64], centre: Lab, radius: float) -> npt.NDArray[np.bool_]:
    """Which of N×3 Lab colours are within ΔE76 ``radius`` of ``centre`` (the sum of squares written
    out: ``np.linalg.norm(…, axis=1)`` reduces the short axis several times slower, same values)."""
    d = lab - np.asarray(centre)[None, :]
    return np.asarray(np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= radius)


def lab_to_rgb(lab: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
    """N×3 Lab → N×3 uint8 RGB (out-of-gamut values clipped)."""
    rgb = color.lab2rgb(lab.reshape(-1, 1, 3)).reshape(-1, 3)
    return np.asarray(np.clip(rgb * 255.0 + 0.5, 0, 255), np.uint8)


def colour_lab(rgb: tuple[int, int, int]) -> Lab:
    """One sRGB colour (0..255) in Lab."""
    return rgb_to_lab(np.array([rgb], np.uint8))[0]


def hex_to_lab(value: str) -> Lab:
    """``#RRGGBB`` in Lab."""
    text = value.lstrip("#")
    return colour_lab((int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)))


def delta_e(a: Lab, b: Lab) -> float:
    """CIEDE2000 distance between two Lab colours."""
    return float(color.deltaE_ciede2000(np.asarray(a, np.float64), np.asarray(b, np.float64)))


def delta_e_many(rgb: npt.NDArray[np.uint8], reference: Lab) -> npt.NDArray[np.float64]:
    """CIEDE2000 distance of each of N×3 uint8 RGB pixels to ``reference``."""
    lab = rgb_to_lab(rgb)
    return np.asarray(color.deltaE_ciede2000(lab, np.broadcast_to(np.asarray(reference), lab.shape)))


def skin_pixels(
    rgba: npt.NDArray[np.uint8], reference: Lab | None
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64] | None]:
    """The skin mask of an H×W×4 RGBA sticker and, when ``reference`` is given, the Lab colours of the
    masked pixels (pixels further than ΔE76 30 from it are dropped from the mask)."""
    y, cr, cb = cv2.split(cv2.cvtColor(cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB), cv2.COLOR_RGB2YCrCb))
    mask = (rgba[..., 3] >= 200) & (y >= _MIN_Y)
    mask &= (cr >= _CR[0]) & (cr <= _CR[1]) & (cb >= _CB[0]) & (cb <= _CB[1])
    if reference is None or not mask.any():
        return mask, None
    where = np.flatnonzero(mask)
    lab = rgb_to_lab(rgba[..., :3].reshape(-1, 3)[where])
    near = _within(lab, reference, _NEAR_REFERENCE_DE76)
    mask.ravel()[where[~near]] = False
    return mask, lab[near]


def skin_mask(rgba: npt.NDArray[np.uint8], reference: Lab | None = None) -> npt.NDArray[np.bool_]:
    """Opaque skin-coloured pixels of an H×W×4 RGBA sticker (near ``reference`` when given)."""
    return skin_pixels(rgba, reference)[0]


def hair_mask(rgba: npt.NDArray[np.uint8], hair: Lab, radius_de76: float = 22.0) -> npt.NDArray[np.bool_]:
    """Opaque pixels near the ``hair`` colour in the upper half of the figure (where the head is)."""
    opaque = rgba[..., 3] >= 200
    rows = np.nonzero(opaque.any(axis=1))[0]
    if rows.size == 0:
        return opaque
    top, bottom = int(rows[0]), int(rows[-1])
    upper = np.zeros_like(opaque)
    upper[top : top + max(1, (bottom - top) // 2)] = True
    mask = opaque & upper
    if mask.any():
        lab = rgb_to_lab(rgba[..., :3][mask])
        mask[mask] = _within(lab, hair, radius_de76)
    return mask


def mean_lab(rgba: npt.NDArray[np.uint8], mask: npt.NDArray[np.bool_]) -> Lab | None:
    """Mean Lab of the masked pixels, or ``None`` when too few are masked to say."""
    if mask.sum() < max(24, MIN_SKIN_FRACTION * mask.size):
        return None
    return np.asarray(rgb_to_lab(rgba[..., :3][mask]).mean(axis=0))
