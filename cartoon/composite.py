"""Composite stickers (spec/002 "Composite"): a head cut from a head sheet, composed with Pillow onto the
outfit's body template for the pose.

Body templates are the outfit's figure without a head, one per pose, drawn once per process by the
``local`` renderer (:func:`cartoon.figure.draw_figure` with ``parts="body"``; the outfit's
``body_template`` names the outfit's drawing). The head is scaled so the width of its face (measured at
70 % of its height, below any hat) matches the template's head, its bottom set on the template's chin,
then tilted as the pose tilts its head, around the neck.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from PIL import Image

from cartoon.body import CELL, HEAD_CENTRE, HEAD_RADII, NECK
from cartoon.figure import FIGURE_SHIFT, draw_figure
from cartoon.poses import Pose
from shared.outfits import Outfit

__all__ = ["body_template", "compose_head"]

_FACE_ROW = 0.7


@functools.lru_cache(maxsize=128)
def body_template(outfit: Outfit, pose: Pose) -> npt.NDArray[np.uint8]:
    """The outfit's headless figure in ``pose``: 512×512×4 uint8 RGBA (cached; read-only)."""
    template = draw_figure(None, outfit, pose, parts="body")
    template.setflags(write=False)
    return template


def _face_span(alpha: npt.NDArray[np.uint8]) -> tuple[float, float]:
    """(width, centre x) px of the opaque run at :data:`_FACE_ROW` of the head's height."""
    row = alpha[min(alpha.shape[0] - 1, int(alpha.shape[0] * _FACE_ROW))] >= 128
    xs = np.nonzero(row)[0]
    if xs.size == 0:
        xs = np.nonzero((alpha >= 128).any(axis=0))[0]
    if xs.size == 0:
        return float(alpha.shape[1]), alpha.shape[1] / 2.0
    return float(xs[-1] - xs[0] + 1), float(xs[0] + xs[-1]) / 2.0


def compose_head(outfit: Outfit, pose: Pose, head: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Put ``head`` (h×w×4 uint8 RGBA, transparent around it) on the body template of ``pose``.

    Returns:
        (512 + o)×512×4 uint8 RGBA, ``o`` the px by which a tall hat rises above the cell (usually 0).
    """
    body = Image.fromarray(body_template(outfit, pose))
    face_width, face_x = _face_span(head[..., 3])
    scale = float(np.clip(2 * HEAD_RADII[0] / max(face_width, 1.0), 0.2, 4.0))
    size = (max(1, round(head.shape[1] * scale)), max(1, round(head.shape[0] * scale)))
    scaled = Image.fromarray(head).resize(size, Image.Resampling.LANCZOS)
    chin_y = HEAD_CENTRE[1] + FIGURE_SHIFT[1] + HEAD_RADII[1]
    left = round(HEAD_CENTRE[0] - face_x * scale)
    top = round(chin_y - size[1])
    overflow = max(0, -top)  # a tall hat rises above the cell: the canvas grows upward
    canvas = Image.new("RGBA", (CELL, CELL + overflow), (0, 0, 0, 0))
    canvas.paste(body, (0, overflow))
    layer = Image.new("RGBA", canvas.size, (0, 0, 0, 0))
    layer.paste(scaled, (left, top + overflow))  # onto an empty layer: a plain copy keeps straight alpha
    if pose.tilt:
        neck = (NECK[0], NECK[1] + FIGURE_SHIFT[1] + overflow)
        layer = layer.rotate(-pose.tilt, resample=Image.Resampling.BICUBIC, center=neck)
    return np.asarray(Image.alpha_composite(canvas, layer), np.uint8).copy()
