"""Synthetic green-screen sheets that behave like an AI provider's: an off-green, shaded, noisy backdrop
and figures with anti-aliased edges (drawn at 4× and averaged down, so edge pixels mix with the green)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

SS = 4
INK = (30, 25, 35)
# draw(canvas, alpha, cell_rect) with cell_rect = (x0, y0, w, h) in 4× px; drawing may leave the cell
Drawer = Callable[[np.ndarray, np.ndarray, tuple[int, int, int, int]], None]


@dataclass
class Sheet:
    """A synthetic sheet and the truth about it."""

    rgb: np.ndarray  # H×W×3 uint8
    coverage: np.ndarray  # H×W float32, 0..1: how much of each pixel is figure
    backdrop: np.ndarray  # H×W×3 float32, the backdrop colour under each pixel


def shaded_backdrop(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Off-green (not #00FF00), brighter top-left to darker bottom-right, a vignette, sensor noise."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    gradient = 1.0 - 0.22 * (xs / width + ys / height) / 2
    vignette = 1.0 - 0.12 * (((xs / width - 0.5) ** 2 + (ys / height - 0.5) ** 2) * 2)
    base = np.array([28.0, 226.0, 62.0], np.float32)
    backdrop = base[None, None, :] * (gradient * vignette)[..., None]
    noise = np.random.default_rng(seed).normal(0, 2.5, (height, width, 3)).astype(np.float32)
    return np.clip(backdrop + noise, 0, 255)


def person(
    colour: tuple[int, int, int], *, shirt: tuple[int, int, int] | None = None, ring: bool = False
) -> Drawer:
    """A drawer for a simple ink-outlined figure in a cell (coordinates in cell fractions)."""

    def draw(canvas: np.ndarray, alpha: np.ndarray, rect: tuple[int, int, int, int]) -> None:
        ox, oy, w, h = rect
        u = min(h, w)

        def ellipse(
            c: tuple[float, float], ax: tuple[float, float], col: tuple[int, int, int], grow: int
        ) -> None:
            centre = (ox + round(c[0] * w), oy + round(c[1] * h))
            axes = (round(ax[0] * u) + grow, round(ax[1] * u) + grow)
            cv2.ellipse(canvas, centre, axes, 0, 0, 360, col, -1)
            cv2.ellipse(alpha, centre, axes, 0, 0, 360, 255, -1)

        def box(x0: float, y0: float, x1: float, y1: float, col: tuple[int, int, int], grow: int) -> None:
            p0 = (ox + round(x0 * w) - grow, oy + round(y0 * h) - grow)
            p1 = (ox + round(x1 * w) + grow, oy + round(y1 * h) + grow)
            cv2.rectangle(canvas, p0, p1, col, -1)
            cv2.rectangle(alpha, p0, p1, 255, -1)

        ink = 3 * SS
        box(0.34, 0.42, 0.66, 0.86, INK, ink)
        ellipse((0.5, 0.3), (0.15, 0.15), INK, ink)
        box(0.34, 0.42, 0.66, 0.86, colour, 0)
        ellipse((0.5, 0.3), (0.15, 0.15), (235, 190, 160), 0)
        if shirt is not None:
            inner = (ox + round(0.40 * w), oy + round(0.50 * h)), (ox + round(0.60 * w), oy + round(0.78 * h))
            cv2.rectangle(canvas, inner[0], inner[1], INK, -1)
            cv2.rectangle(
                canvas,
                (inner[0][0] + ink, inner[0][1] + ink),
                (inner[1][0] - ink, inner[1][1] - ink),
                shirt,
                -1,
            )
        if ring:
            centre = (ox + round(0.5 * w), oy + round(0.64 * h))
            cv2.circle(canvas, centre, round(0.1 * u) + ink, INK, -1)
            cv2.circle(canvas, centre, round(0.1 * u), (0, 0, 0), -1)
            cv2.circle(alpha, centre, round(0.1 * u), 0, -1)

    return draw


def bar(colour: tuple[int, int, int], x0: float, y0: float, x1: float, y1: float) -> Drawer:
    """A drawer for an ink-outlined rectangle (cell fractions; may exceed the cell)."""

    def draw(canvas: np.ndarray, alpha: np.ndarray, rect: tuple[int, int, int, int]) -> None:
        ox, oy, w, h = rect
        p0 = (ox + round(x0 * w), oy + round(y0 * h))
        p1 = (ox + round(x1 * w), oy + round(y1 * h))
        cv2.rectangle(canvas, (p0[0] - 3 * SS, p0[1] - 3 * SS), (p1[0] + 3 * SS, p1[1] + 3 * SS), INK, -1)
        cv2.rectangle(alpha, (p0[0] - 3 * SS, p0[1] - 3 * SS), (p1[0] + 3 * SS, p1[1] + 3 * SS), 255, -1)
        cv2.rectangle(canvas, p0, p1, colour, -1)

    return draw


def build_sheet(
    cols: int, rows: int, drawers: dict[int, list[Drawer]], *, cell: int = 256, seed: int = 0
) -> Sheet:
    """Compose a sheet: ``drawers[cell_index]`` draw relative to that cell (and may spill over)."""
    height, width = rows * cell, cols * cell
    canvas = np.zeros((height * SS, width * SS, 3), np.uint8)
    alpha = np.zeros((height * SS, width * SS), np.uint8)
    for index, cell_drawers in drawers.items():
        row, col = divmod(index, cols)
        rect = (col * cell * SS, row * cell * SS, cell * SS, cell * SS)
        for draw in cell_drawers:
            draw(canvas, alpha, rect)
    coverage = cv2.resize(alpha.astype(np.float32) / 255.0, (width, height), interpolation=cv2.INTER_AREA)
    premultiplied = cv2.resize(
        canvas.astype(np.float32) * (alpha[..., None] / 255.0), (width, height), interpolation=cv2.INTER_AREA
    )
    backdrop = shaded_backdrop(height, width, seed)
    mixed = premultiplied + backdrop * (1.0 - coverage[..., None])
    return Sheet(rgb=np.clip(mixed + 0.5, 0, 255).astype(np.uint8), coverage=coverage, backdrop=backdrop)


def dot(colour: tuple[int, int, int], x: float, y: float, radius_px: float) -> Drawer:
    """A drawer for a small round speck of ``radius_px`` (final px) at cell fractions (x, y)."""

    def draw(canvas: np.ndarray, alpha: np.ndarray, rect: tuple[int, int, int, int]) -> None:
        ox, oy, w, h = rect
        centre = (ox + round(x * w), oy + round(y * h))
        cv2.circle(canvas, centre, round(radius_px * SS), colour, -1)
        cv2.circle(alpha, centre, round(radius_px * SS), 255, -1)

    return draw
