"""Proportions of the cartoon figure, in design px of a 512 × 512 cell (a big-head "chibi" body:
the head is about 40 % of the height, because the face carries the likeness)."""

from __future__ import annotations

__all__ = [
    "ARM_RADIUS",
    "CELL",
    "HAND_RADIUS",
    "HEAD_CENTRE",
    "HEAD_RADII",
    "HIP_Y",
    "NECK",
    "SHOULDERS",
]

Point = tuple[float, float]

CELL = 512
HEAD_CENTRE: Point = (256.0, 170.0)
HEAD_RADII = (86.0, 102.0)
NECK: Point = (256.0, 262.0)
SHOULDERS: tuple[Point, Point] = ((200.0, 286.0), (312.0, 286.0))
HIP_Y = 384.0
ARM_RADIUS = 16.0
HAND_RADIUS = 20.0
