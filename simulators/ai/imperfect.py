"""Sheets the way image models really return them: figures composed onto a green backdrop with the
imperfections seen in production (issue 3 "Chroma key that survives real model output").

- ``off_green``: the backdrop is a green near, but not, ``#00FF00``.
- ``shaded``: the backdrop darkens across the sheet (a lighting gradient and a vignette), with sensor
  noise and a soft cast shadow under each figure.
- ``touching``: the figures of the first two cells are moved toward each other until their bodies
  overlap.
- ``missing``: the last cell stays empty.
- ``missing_row``: the cells of the last row stay empty (a model that ran out of sheet: 4 of a 4 × 3
  grid, 2 of a 2 × 2).
- ``edge_cut``: the figure of the first cell is pushed across the sheet's left border.

Pure functions (arrays in, arrays out): also used by the chroma-key tests to generate imperfect sheets.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["OFF_GREEN", "compose_sheet"]

OFF_GREEN = (46, 212, 78)
PURE_GREEN = (0, 255, 0)
CELL = 512
_OVERLAP_PX = 14
_EDGE_OVERHANG_PX = 24


def _body(figure: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """The largest opaque part of a figure: its body, without the sparkles and hearts around it."""
    opaque = (figure[..., 3] > 0).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(opaque, connectivity=8)
    if count <= 1:
        return opaque > 0
    return np.asarray(labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA])), bool)


def _extent(figure: npt.NDArray[np.uint8]) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) of the opaque part of a cell-sized RGBA figure."""
    ys, xs = np.nonzero(figure[..., 3] > 0)
    if xs.size == 0:
        return (0, 0, 0, 0)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def _closest_gap(left: npt.NDArray[np.uint8], right: npt.NDArray[np.uint8]) -> int:
    """The narrowest horizontal gap (px) between the bodies of two side-by-side cells' figures, over the
    rows both occupy: moving them together by more than this makes them touch."""
    a, b = _body(left), _body(right)
    rows = a.any(axis=1) & b.any(axis=1)
    if not rows.any():
        return CELL
    right_edge = CELL - 1 - np.argmax(a[rows, ::-1], axis=1)
    left_edge = np.argmax(b[rows], axis=1) + CELL
    return int((left_edge - right_edge).min())


def _backdrop(height: int, width: int, kinds: Sequence[str], seed: int) -> npt.NDArray[np.float32]:
    base = np.array(OFF_GREEN if "off_green" in kinds or "shaded" in kinds else PURE_GREEN, np.float32)
    backdrop = np.empty((height, width, 3), np.float32)
    backdrop[:] = base
    if "shaded" in kinds:
        ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
        gradient = 1.0 - 0.28 * (0.7 * xs / width + 0.3 * ys / height)
        vignette = 1.0 - 0.18 * (((xs / width - 0.5) ** 2 + (ys / height - 0.5) ** 2) * 2)
        backdrop *= (gradient * vignette)[..., None]
        backdrop += np.random.default_rng(seed).normal(0, 3.0, backdrop.shape).astype(np.float32)
    return backdrop


def compose_sheet(
    figures: Sequence[npt.NDArray[np.uint8] | None],
    cols: int,
    rows: int,
    *,
    kinds: Sequence[str] = (),
    seed: int = 0,
) -> npt.NDArray[np.uint8]:
    """Compose cell-sized (512×512×4 RGBA) figures in reading order onto a backdrop with ``kinds``.

    Returns:
        (rows·512)×(cols·512)×3 uint8 RGB.
    """
    height, width = rows * CELL, cols * CELL
    placed: list[tuple[npt.NDArray[np.uint8], int, int]] = []
    cells = list(figures[: cols * rows])
    if "missing" in kinds and cells:
        cells[-1] = None
    if "missing_row" in kinds and rows >= 2:
        cells[(rows - 1) * cols :] = [None] * len(cells[(rows - 1) * cols :])
    offsets = [[0, 0] for _ in cells]
    if (
        "touching" in kinds
        and cols >= 2
        and len(cells) >= 2
        and cells[0] is not None
        and cells[1] is not None
    ):
        move = (_closest_gap(cells[0], cells[1]) + _OVERLAP_PX) / 2
        offsets[0][0] += int(np.ceil(move))
        offsets[1][0] -= int(np.ceil(move))
    if "edge_cut" in kinds and cells and cells[0] is not None:
        offsets[0][0] = -(_extent(cells[0])[0] + _EDGE_OVERHANG_PX)
    for k, figure in enumerate(cells):
        if figure is None:
            continue
        row, col = divmod(k, cols)
        placed.append((figure, col * CELL + offsets[k][0], row * CELL + offsets[k][1]))
    sheet = _backdrop(height, width, kinds, seed)
    if "shaded" in kinds:
        shadow = np.zeros((height, width), np.float32)
        for figure, x, y in placed:
            x0, _y0, x1, y1 = _extent(figure)
            centre = (x + (x0 + x1) // 2, min(height - 1, y + y1 - 4))
            cv2.ellipse(shadow, centre, (max(8, (x1 - x0) // 2), 18), 0, 0, 360, 0.35, -1)
        soft = np.asarray(cv2.GaussianBlur(shadow, (0, 0), 9), np.float32)
        sheet *= (1.0 - soft)[..., None]
    for figure, x, y in placed:
        sx0, sy0 = max(0, -x), max(0, -y)
        dx0, dy0 = max(0, x), max(0, y)
        w = min(CELL - sx0, width - dx0)
        h = min(CELL - sy0, height - dy0)
        if w <= 0 or h <= 0:
            continue
        part = figure[sy0 : sy0 + h, sx0 : sx0 + w].astype(np.float32)
        alpha = part[..., 3:4] / 255.0
        region = sheet[dy0 : dy0 + h, dx0 : dx0 + w]
        sheet[dy0 : dy0 + h, dx0 : dx0 + w] = part[..., :3] * alpha + region * (1.0 - alpha)
    return np.clip(sheet + 0.5, 0, 255).astype(np.uint8)
