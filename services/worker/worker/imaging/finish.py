"""A cut figure made into a Telegram sticker, with the per-sticker QA numbers that are logged and used
(issue 3 "Chroma key that survives real model output"; spec/002 "Export").

- **Green fringe**: the share of the figure's edge pixels (alpha partly transparent, or opaque next to
  transparency) still greener than red and blue by more than 24 levels. Above 2 % the figure's edge is
  despilled again before the outline goes on.
- **Alpha coverage**: the share of the 512 px sticker box the finished sticker covers. Below 8 % the
  figure is a speck, not a sticker: the caller regenerates it as if it were missing.
- **512 fit** and **bytes**: one side exactly 512 px, the other at most 512, at most 512 KB (Telegram;
  :func:`worker.imaging.export.export_sticker` guarantees both, and they are checked, not assumed).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from shared.imaging.resample import resize_rgba
from worker.imaging.export import MAX_STICKER_BYTES, STICKER_SIDE_PX, export_sticker
from worker.imaging.outline import OUTLINE_PX, add_die_cut_outline, outline_margin
from worker.imaging.skin import remove_green_spill

__all__ = [
    "FRINGE_MAX",
    "MIN_COVERAGE",
    "Sticker",
    "StickerQA",
    "finish_figure",
    "finish_sticker",
    "green_fringe",
]

FRINGE_MAX = 0.02
MIN_COVERAGE = 0.08
_FRINGE_EXCESS = 24


@dataclass(frozen=True, slots=True)
class Sticker:
    """One finished sticker: PNG bytes (see :mod:`worker.imaging.export`), its emoji and size in px, and
    its likeness to the guest (issue 20): the face descriptor distance to the selfie's face (0 = same
    descriptor; ``None`` when no face was judged, ``likeness_reason`` says why)."""

    png: bytes
    emoji: str
    width: int
    height: int
    likeness: float | None = None
    likeness_reason: str | None = None


@dataclass(frozen=True, slots=True)
class StickerQA:
    """Per-sticker QA numbers.

    Attributes:
        coverage: share (0..1) of the 512 × 512 box covered by the sticker (alpha > 0).
        fringe: share (0..1) of the figure's edge pixels with residual green, after despill.
        fits: one side is 512 px and the other at most 512 px.
        bytes: PNG size.
        despilled: the edge was despilled again because the fringe was above :data:`FRINGE_MAX`.
    """

    coverage: float
    fringe: float
    fits: bool
    bytes: int
    despilled: bool

    @property
    def ok(self) -> bool:
        """Usable as is: covers enough, fits, small enough."""
        return self.coverage >= MIN_COVERAGE and self.fits and self.bytes <= MAX_STICKER_BYTES


def finish_figure(rgba: npt.NDArray[np.uint8], *, radius_px: float = OUTLINE_PX) -> npt.NDArray[np.uint8]:
    """Scale a cut figure so that, with its white outline and shadow, its longer side is 512 px, and
    add the outline. Returns h×w×4 uint8 RGBA with max(h, w) ≈ 512."""
    margin = outline_margin(radius_px)
    inner = STICKER_SIDE_PX - 2 * margin
    height, width = rgba.shape[:2]
    scale = inner / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return add_die_cut_outline(resize_rgba(rgba, size), radius_px=radius_px)


def green_fringe(rgba: npt.NDArray[np.uint8]) -> float:
    """Share of an RGBA figure's edge pixels that are still green (see the module docstring)."""
    alpha = rgba[..., 3]
    opaque = (alpha == 255).astype(np.uint8)
    partial = (alpha > 0) & (alpha < 255)
    eroded = cv2.erode(opaque, np.ones((3, 3), np.uint8))
    edge = partial | ((opaque > 0) & (eroded == 0))
    edges = int(np.count_nonzero(edge))
    if not edges:
        return 0.0
    red, green, blue, _ = cv2.split(rgba)
    excess = cv2.subtract(green, cv2.max(red, blue))  # saturates at 0: only a positive excess counts
    return float(np.count_nonzero(edge & (excess > _FRINGE_EXCESS)) / edges)


def finish_sticker(
    figure: npt.NDArray[np.uint8], emoji: str
) -> tuple[Sticker, npt.NDArray[np.uint8], StickerQA]:
    """Despill if needed, add the die-cut outline, export.

    Args:
        figure: h×w×4 uint8 RGBA cut figure.
        emoji: the sticker's emoji.

    Returns:
        The sticker, its outlined RGBA (for contact sheets) and its QA numbers.

    Raises:
        ValueError: the figure is empty or cannot be exported under the size limit.
    """
    fringe = green_fringe(figure)
    despilled = fringe > FRINGE_MAX
    if despilled:
        figure = remove_green_spill(figure)
        fringe = green_fringe(figure)
    outlined = finish_figure(figure)
    png = export_sticker(outlined)
    height, width = outlined.shape[:2]
    scale = STICKER_SIDE_PX / max(height, width)
    size = (
        (STICKER_SIDE_PX, round(height * scale))
        if width >= height
        else (round(width * scale), STICKER_SIDE_PX)
    )
    covered = float(cv2.countNonZero(cv2.extractChannel(outlined, 3))) * scale * scale
    qa = StickerQA(
        coverage=min(1.0, covered / (STICKER_SIDE_PX * STICKER_SIDE_PX)),
        fringe=fringe,
        fits=max(size) == STICKER_SIDE_PX and min(size) <= STICKER_SIDE_PX,
        bytes=len(png),
        despilled=despilled,
    )
    return Sticker(png=png, emoji=emoji, width=size[0], height=size[1]), outlined, qa
