"""Telegram sticker files.

Static stickers must be PNG or WEBP with one side exactly 512 px and the other 512 px or less, at most
512 KB (https://core.telegram.org/stickers#static-stickers-and-emoji; Bot API ``InputSticker``).
We write PNG with a transparent background; if a sticker is over the size limit (rare: cartoons with
flat colours compress well) it is palette-quantised with alpha, with fewer colours until it fits.
"""

from __future__ import annotations

import io

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from shared.imaging.resample import resize_rgba

__all__ = ["MAX_STICKER_BYTES", "STICKER_SIDE_PX", "export_sticker", "fit_sticker"]

STICKER_SIDE_PX = 512
MAX_STICKER_BYTES = 512 * 1024
_PALETTE_STEPS = (256, 128, 64, 32)


def fit_sticker(rgba: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Scale an H×W×4 uint8 RGBA image so its longer side is exactly 512 px (aspect kept, the other
    side ≤ 512 px and ≥ 1 px)."""
    height, width = rgba.shape[:2]
    if height == 0 or width == 0:
        raise ValueError("cannot export an empty image")
    scale = STICKER_SIDE_PX / max(height, width)
    size = (
        min(STICKER_SIDE_PX, max(1, round(width * scale))),
        min(STICKER_SIDE_PX, max(1, round(height * scale))),
    )
    size = (STICKER_SIDE_PX, size[1]) if width >= height else (size[0], STICKER_SIDE_PX)
    return resize_rgba(rgba, size)


def _encode(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6)
    return out.getvalue()


def export_sticker(rgba: npt.NDArray[np.uint8]) -> bytes:
    """Encode a figure as a Telegram static sticker.

    Args:
        rgba: H×W×4 uint8 RGBA, any size; transparent where there is no sticker.

    Returns:
        PNG bytes: RGBA (or palette with alpha), one side exactly 512 px, the other ≤ 512 px,
        at most 512 KB.

    Raises:
        ValueError: the image is empty, or cannot be brought under the size limit.
    """
    height, width = rgba.shape[:2]
    # a finished figure already has its 512 px side (fit_sticker would only copy it)
    fits = max(height, width) == STICKER_SIDE_PX and min(height, width) >= 1
    fitted = rgba if fits else fit_sticker(rgba)
    # RGB 0 where alpha is 0: a masked operation leaves the pixels outside its mask (alpha) at 0
    alpha = cv2.extractChannel(fitted, 3)
    fitted = np.asarray(cv2.bitwise_and(fitted, fitted, mask=alpha), np.uint8)
    image = Image.fromarray(fitted)
    data = _encode(image)
    for colours in _PALETTE_STEPS:
        if len(data) <= MAX_STICKER_BYTES:
            return data
        data = _encode(
            image.quantize(colors=colours, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        )
    if len(data) <= MAX_STICKER_BYTES:
        return data
    raise ValueError(f"sticker is {len(data)} bytes even with 32 colours; limit {MAX_STICKER_BYTES}")
