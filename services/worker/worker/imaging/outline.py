"""The white die-cut border of a sticker (spec/002 "Export": ``finish_figure`` adds the white outline).

Like a printed die-cut sticker (and the Telegram sticker packs guests know), the figure sits on a white
backing that follows its silhouette at a fixed distance: the figure's alpha is grown by ``radius_px``
with an exact Euclidean distance transform (so the border is anti-aliased and equally thick
everywhere), small notches are rounded off by a closing, holes are filled, and an optional soft drop
shadow goes underneath.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["OUTLINE_PX", "SHADOW_PX", "add_die_cut_outline", "outline_margin"]

OUTLINE_PX = 10.0  # at 512 px sticker scale
SHADOW_PX = 6.0  # blur radius of the drop shadow
_SHADOW_OFFSET = (0.0, 3.0)
_SHADOW_OPACITY = 0.28


def outline_margin(radius_px: float = OUTLINE_PX, shadow: bool = True) -> int:
    """Pixels the outline (and shadow) add on each side of the figure."""
    return int(np.ceil(radius_px + (2 * SHADOW_PX + abs(_SHADOW_OFFSET[1]) if shadow else 1)))


def _fill_holes(mask: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    filled = np.zeros_like(mask)
    cv2.drawContours(filled, contours, -1, 255, -1)
    return filled


def add_die_cut_outline(
    rgba: npt.NDArray[np.uint8], *, radius_px: float = OUTLINE_PX, shadow: bool = True
) -> npt.NDArray[np.uint8]:
    """Put a figure on a white die-cut backing.

    Args:
        rgba: h×w×4 uint8 RGBA figure on transparency.
        radius_px: border width (px) around the figure; 8–12 px suits a 512 px sticker.
        shadow: add a soft grey drop shadow below the backing.

    Returns:
        (h + 2m)×(w + 2m)×4 uint8 RGBA with m = :func:`outline_margin`; straight alpha.
    """
    margin = outline_margin(radius_px, shadow)
    padded = cv2.copyMakeBorder(rgba, margin, margin, margin, margin, cv2.BORDER_CONSTANT, value=(0, 0, 0, 0))
    red, green, blue, alpha_u8 = cv2.split(padded)
    # float32 throughout, written in place (out=): a figure's planes are ~1 MB each, and a fresh one per
    # step costs more than the arithmetic; the values are those of the plain expressions in the comments
    alpha = alpha_u8.astype(np.float32)
    alpha *= np.float32(1.0 / 255.0)
    solid = ((alpha_u8 >= 128).astype(np.uint8)) * 255
    closing = max(3, int(radius_px * 0.8) | 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (closing, closing))
    solid = _fill_holes(np.asarray(cv2.morphologyEx(solid, cv2.MORPH_CLOSE, kernel), np.uint8))
    distance = cv2.distanceTransform(255 - solid, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    # backing = max(clip(radius + 0.5 − distance, 0, 1), alpha)
    backing = np.subtract(np.float32(radius_px + 0.5), distance, out=distance)
    np.clip(backing, 0.0, 1.0, out=backing)
    np.maximum(backing, alpha, out=backing)

    behind = np.subtract(1.0, alpha, dtype=np.float32)  # 1 − alpha
    if shadow:
        dy = round(_SHADOW_OFFSET[1])
        moved = np.zeros_like(backing)
        moved[dy:] = backing[: backing.shape[0] - dy]
        soft = np.asarray(cv2.GaussianBlur(moved, (0, 0), SHADOW_PX / 2), np.float32)
        soft *= np.float32(_SHADOW_OPACITY)
        # white backing over the dark shadow: out_alpha = backing + soft · (1 − backing)
        out_alpha = np.subtract(1.0, backing, out=moved)
        out_alpha *= soft
        out_alpha += backing
    else:
        out_alpha = backing.copy()
    # the figure over the backing (white, premultiplied: 255·backing) and the shadow (black)
    composite_alpha = np.multiply(out_alpha, behind, out=out_alpha)  # alpha + out_alpha · behind
    composite_alpha += alpha
    inverse = np.maximum(composite_alpha, np.float32(1e-6))  # 1 / max(composite_alpha, 1e-6)
    np.divide(1.0, inverse, out=inverse)
    white = np.multiply(backing, behind, out=behind)  # backing · behind · 255
    white *= np.float32(255.0)
    planes = []
    scratch = np.empty_like(alpha)
    for plane in (red, green, blue):
        # clip((plane · alpha + white) · inverse + 0.5, 0, 255) as uint8
        np.multiply(plane, alpha, out=scratch)
        scratch += white
        scratch *= inverse
        scratch += np.float32(0.5)
        np.clip(scratch, 0, 255, out=scratch)
        planes.append(scratch.astype(np.uint8))
    np.multiply(composite_alpha, np.float32(255.0), out=scratch)
    scratch += np.float32(0.5)
    np.clip(scratch, 0, 255, out=scratch)
    out_a = scratch.astype(np.uint8)
    visible = (out_a > 0).astype(np.uint8)
    return np.asarray(cv2.merge([cv2.bitwise_and(p, p, mask=visible) for p in planes] + [out_a]), np.uint8)
