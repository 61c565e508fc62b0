"""Moving a sticker's skin and hair colour toward a target in CIELAB, and green spill off its edge
(spec/002 "Skin normalisation", "Anchor", hybrid's "Skin and hair moved to targets").

A shift is the Lab vector ``strength · (target − current)``, shortened until the ΔE2000 it causes is at
most ``max_de`` (``SKIN_NORM_MAX_DE``): normalisation nudges, it never repaints. It is applied to the skin
(or hair) pixels with a feathered mask (~1.5 px), so no edge appears where it stops. The measurements
(Lab, ΔE, skin and hair masks) are :mod:`shared.imaging.lab`.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from shared.imaging.lab import MIN_SKIN_FRACTION, Lab, delta_e, lab_to_rgb, rgb_to_lab, skin_pixels

__all__ = ["ShiftReport", "capped_shift", "normalise_skin", "remove_green_spill", "shift_region"]

_FEATHER_PX = 1.5


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
    lab = rgb_to_lab(rgba[..., :3][touched])
    lab += shift[None, :] * weight[touched][:, None]
    out[..., :3][touched] = lab_to_rgb(lab)
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
    mask, lab = skin_pixels(figure, reference)
    if lab is None or lab.shape[0] < max(24, MIN_SKIN_FRACTION * mask.size):
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
