"""Resizing RGBA images without dark or green halos (premultiplied alpha)."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["resize_rgba"]


def resize_rgba(rgba: npt.NDArray[np.uint8], size: tuple[int, int]) -> npt.NDArray[np.uint8]:
    """Resize an H×W×4 uint8 straight-alpha RGBA image to ``size`` = (width, height) px.

    Colours are premultiplied by alpha before filtering and divided after, so fully transparent pixels
    (whatever colour they hold) never bleed into the edge of the figure. Shrinking uses pixel-area
    averaging, enlarging bicubic interpolation.
    """
    width, height = size
    if rgba.shape[1] == width and rgba.shape[0] == height:
        return rgba.copy()
    shrinking = width < rgba.shape[1] or height < rgba.shape[0]
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_CUBIC
    alpha = cv2.extractChannel(rgba, 3)
    alpha3 = cv2.merge([alpha, alpha, alpha])
    premultiplied = cv2.multiply(
        cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB), alpha3, scale=1.0 / 255.0, dtype=cv2.CV_32F
    )
    small = cv2.resize(premultiplied, (width, height), interpolation=interpolation)
    small_alpha = cv2.resize(alpha.astype(np.float32), (width, height), interpolation=interpolation)
    small_alpha = np.clip(small_alpha, 0.0, 255.0)
    divisor = np.maximum(small_alpha, 1e-3)
    rgb = cv2.divide(small, cv2.merge([divisor, divisor, divisor]), scale=255.0)
    out = cv2.merge([*cv2.split(np.clip(rgb, 0.0, 255.0)), small_alpha])
    return np.rint(out).astype(np.uint8)
