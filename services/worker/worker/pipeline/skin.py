"""Skin and hair colour of a sticker, and moving them toward a target in CIELAB (spec/002 "Skin
normalisation", "Anchor", hybrid's "Skin and hair moved to targets").

Distances are CIEDE2000 (scikit-image ``deltaE_ciede2000``) on CIELAB (D65). A shift is the Lab vector
``strength · (target − current)``, shortened until the ΔE2000 it causes is at most ``max_de``
(``SKIN_NORM_MAX_DE``): normalisation nudges, it never repaints. It is applied to the skin (or hair)
pixels with a feathered mask, so no edge appears where it stops.

Skin pixels of a cartoon are found in YCrCb (the classic skin cluster, Cr 133–180 and Cb 77–135, which
holds light and dark skin alike) and kept only near the reference colour (ΔE76 ≤ 30), so an orange
vest or a wooden prop of skin-like hue does not vote.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt
from skimage import color

__all__ = [
    "Lab",
    "ShiftReport",
    "capped_shift",
    "colour_lab",
    "delta_e",
    "delta_e_many",
    "hair_mask",
    "hex_to_lab",
    "lab_to_hex",
    "mean_lab",
    "normalise_skin",
    "remove_green_spill",
    "shift_region",
    "skin_mask",
]

Lab = npt.NDArray[np.float64]  # shape (3,): L*, a*, b*
_CR = (133, 180)
_CB = (77, 135)
_MIN_Y = 28
_NEAR_REFERENCE_DE76 = 30.0
_MIN_PIXELS_FRACTION = 0.002  # of the sticker: fewer skin pixels than this is "no skin seen"
_FEATHER_PX = 1.5


def _to_lab(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    """N×3 uint8 RGB → N×3 Lab."""
    return np.asarray(color.rgb2lab(rgb.reshape(-1, 1, 3).astype(np.float64) / 255.0).reshape(-1, 3))


def _to_rgb(lab: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
    """N×3 Lab → N×3 uint8 RGB (out-of-gamut values clipped)."""
    rgb = color.lab2rgb(lab.reshape(-1, 1, 3)).reshape(-1, 3)
    return np.asarray(np.clip(rgb * 255.0 + 0.5, 0, 255), np.uint8)


def colour_lab(rgb: tuple[int, int, int]) -> Lab:
    """One sRGB colour (0..255) in Lab."""
    return _to_lab(np.array([rgb], np.uint8))[0]


def hex_to_lab(value: str) -> Lab:
    """``#RRGGBB`` in Lab."""
    text = value.lstrip("#")
    return colour_lab((int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)))


def lab_to_hex(lab: Lab) -> str:
    """A Lab colour as ``#RRGGBB``."""
    r, g, b = (int(v) for v in _to_rgb(np.asarray(lab, np.float64)[None, :])[0])
    return f"#{r:02X}{g:02X}{b:02X}"


def delta_e(a: Lab, b: Lab) -> float:
    """CIEDE2000 distance between two Lab colours."""
    return float(color.deltaE_ciede2000(np.asarray(a, np.float64), np.asarray(b, np.float64)))


def delta_e_many(rgb: npt.NDArray[np.uint8], reference: Lab) -> npt.NDArray[np.float64]:
    """CIEDE2000 distance of each of N×3 uint8 RGB pixels to ``reference``."""
    lab = _to_lab(rgb)
    return np.asarray(color.deltaE_ciede2000(lab, np.broadcast_to(np.asarray(reference), lab.shape)))


def _skin(
    rgba: npt.NDArray[np.uint8], reference: Lab | None
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64] | None]:
    """The skin mask and, when ``reference`` is given, the Lab colours of the masked pixels."""
    y, cr, cb = cv2.split(cv2.cvtColor(np.ascontiguousarray(rgba[..., :3]), cv2.COLOR_RGB2YCrCb))
    mask = (rgba[..., 3] >= 200) & (y >= _MIN_Y)
    mask &= (cr >= _CR[0]) & (cr <= _CR[1]) & (cb >= _CB[0]) & (cb <= _CB[1])
    if reference is None or not mask.any():
        return mask, None
    where = np.flatnonzero(mask)
    lab = _to_lab(rgba[..., :3].reshape(-1, 3)[where])
    near = np.linalg.norm(lab - np.asarray(reference)[None, :], axis=1) <= _NEAR_REFERENCE_DE76
    mask.ravel()[where[~near]] = False
    return mask, lab[near]


def skin_mask(rgba: npt.NDArray[np.uint8], reference: Lab | None = None) -> npt.NDArray[np.bool_]:
    """Opaque skin-coloured pixels of an H×W×4 RGBA sticker (near ``reference`` when given)."""
    return _skin(rgba, reference)[0]


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
        lab = _to_lab(rgba[..., :3][mask])
        mask[mask] = np.linalg.norm(lab - np.asarray(hair)[None, :], axis=1) <= radius_de76
    return mask


def mean_lab(rgba: npt.NDArray[np.uint8], mask: npt.NDArray[np.bool_]) -> Lab | None:
    """Mean Lab of the masked pixels, or ``None`` when too few are masked to say."""
    if mask.sum() < max(24, _MIN_PIXELS_FRACTION * mask.size):
        return None
    return np.asarray(_to_lab(rgba[..., :3][mask]).mean(axis=0))


def capped_shift(current: Lab, target: Lab, *, strength: float, max_de: float) -> Lab:
    """The Lab shift ``strength · (target − current)``, shortened so that it moves ``current`` by at
    most ``max_de`` (ΔE2000)."""
    shift = (np.asarray(target) - np.asarray(current)) * strength
    if max_de <= 0:
        return np.zeros(3)
    for _ in range(4):
        moved = delta_e(current, current + shift)
        if moved <= max_de + 1e-6:
            break
        shift = shift * (max_de / moved) * 0.999
    return np.asarray(shift)


def shift_region(
    rgba: npt.NDArray[np.uint8], mask: npt.NDArray[np.bool_], shift: Lab
) -> npt.NDArray[np.uint8]:
    """``rgba`` with ``shift`` (Lab) added to the masked pixels, feathered over ~1.5 px; alpha kept."""
    if not mask.any() or not np.any(shift):
        return rgba
    weight = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), _FEATHER_PX)
    weight = np.maximum(weight, mask.astype(np.float32)) * (rgba[..., 3] > 0)
    touched = weight > 0.02
    out = rgba.copy()
    lab = _to_lab(rgba[..., :3][touched])
    lab += shift[None, :] * weight[touched][:, None]
    out[..., :3][touched] = _to_rgb(lab)
    return out


@dataclass(frozen=True, slots=True)
class ShiftReport:
    """What a normalisation did to one figure: its skin's ΔE2000 from the reference before, and the
    ΔE2000 of the shift applied (0 when it was within the threshold)."""

    before_de: float
    applied_de: float


def normalise_skin(
    figure: npt.NDArray[np.uint8], reference: Lab, *, threshold_de: float, strength: float, max_de: float
) -> tuple[npt.NDArray[np.uint8], ShiftReport | None]:
    """Shift a figure's skin toward ``reference`` when it is further than ``threshold_de`` (ΔE2000) from
    it, by ``strength`` of the way and at most ``max_de`` (spec/002 "Skin normalisation": 6, 0.85, 4).

    Args:
        figure: h×w×4 uint8 RGBA.
        reference: the target skin colour (Lab).

    Returns:
        The figure (a new array when shifted) and what was done (``None``: no skin visible).
    """
    mask, lab = _skin(figure, reference)
    if lab is None or lab.shape[0] < max(24, _MIN_PIXELS_FRACTION * mask.size):
        return figure, None
    current = lab.mean(axis=0)
    before = delta_e(current, reference)
    if before <= threshold_de:
        return figure, ShiftReport(before_de=before, applied_de=0.0)
    shift = capped_shift(current, reference, strength=strength, max_de=max_de)
    return shift_region(figure, mask, shift), ShiftReport(
        before_de=before, applied_de=delta_e(current, current + shift)
    )


def remove_green_spill(rgba: npt.NDArray[np.uint8], *, edge_px: int = 3) -> npt.NDArray[np.uint8]:
    """Green spill off a figure: along its edge (within ``edge_px`` of transparency) green is limited to
    max(red, blue); green clothing inside the figure keeps its colour."""
    out = rgba.copy()
    opaque = (rgba[..., 3] > 0).astype(np.uint8)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * edge_px + 1, 2 * edge_px + 1))
    edge = (opaque > 0) & (cv2.erode(opaque, kernel) == 0)
    rgb = out[..., :3]
    limit = np.maximum(rgb[..., 0], rgb[..., 2])
    spill = edge & (rgb[..., 1] > limit)
    rgb[..., 1] = np.where(spill, limit, rgb[..., 1])
    return out
