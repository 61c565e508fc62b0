"""Contact sheets: stickers side by side on a white card, numbered in reading order (for pack QA by a
vision model, spec/002 "Pack QA", and for operators looking at a rendered pack)."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from shared.imaging.resample import resize_rgba

__all__ = ["contact_sheet"]


def contact_sheet(
    stickers: Sequence[npt.NDArray[np.uint8]],
    cols: int,
    rows: int,
    *,
    cell_px: int = 256,
    first_number: int = 1,
    numbered: bool = True,
) -> npt.NDArray[np.uint8]:
    """Lay stickers out in a ``cols`` × ``rows`` grid.

    Args:
        stickers: h×w×4 uint8 RGBA images (any size; each is fitted into its cell).
        cols, rows: the grid; cells beyond ``len(stickers)`` stay blank.
        cell_px: side of a cell (px).
        first_number: the number written on the first cell.
        numbered: write each sticker's number in the top-left corner of its cell.

    Returns:
        (rows·cell_px)×(cols·cell_px)×3 uint8 RGB on white.
    """
    sheet = np.full((rows * cell_px, cols * cell_px, 3), 255, np.uint8)
    inner = cell_px - 8
    for k, rgba in enumerate(stickers[: cols * rows]):
        height, width = rgba.shape[:2]
        scale = inner / max(height, width)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        small = resize_rgba(rgba, size)
        row, col = divmod(k, cols)
        x0 = col * cell_px + (cell_px - size[0]) // 2
        y0 = row * cell_px + (cell_px - size[1]) // 2
        region = sheet[y0 : y0 + size[1], x0 : x0 + size[0]].astype(np.float32)
        alpha = small[..., 3:4].astype(np.float32) / 255.0
        region = small[..., :3].astype(np.float32) * alpha + region * (1.0 - alpha)
        sheet[y0 : y0 + size[1], x0 : x0 + size[0]] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
        if numbered:
            origin = (col * cell_px + 4, row * cell_px + 18)
            cv2.putText(sheet, str(first_number + k), origin, cv2.FONT_HERSHEY_SIMPLEX, 0.5, (90, 90, 90), 1)
    return sheet
