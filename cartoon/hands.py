"""Cartoon hands: one mitten-like shape per gesture (fingers, thumb and palm painted as one part)."""

from __future__ import annotations

import math
from typing import Literal

from cartoon.canvas import INK, Canvas, Mask
from cartoon.colors import RGB

__all__ = ["Gesture", "draw_hand"]

Gesture = Literal["fist", "open", "thumbs_up", "peace", "ok", "point"]
Point = tuple[float, float]


class _Frame:
    """Hand-local coordinates: x to the thumb-less side, y up (fingers), in units of the hand radius."""

    def __init__(self, centre: Point, radius: float, angle: float, mirror: bool) -> None:
        self.centre = centre
        self.radius = radius
        self.cos = math.cos(math.radians(angle))
        self.sin = math.sin(math.radians(angle))
        self.flip = -1.0 if mirror else 1.0

    def __call__(self, x: float, y: float) -> Point:
        lx, ly = x * self.radius * self.flip, -y * self.radius
        return (
            self.centre[0] + lx * self.cos - ly * self.sin,
            self.centre[1] + lx * self.sin + ly * self.cos,
        )


def _finger(
    mask: Mask, f: _Frame, start: tuple[float, float], end: tuple[float, float], width: float
) -> None:
    mask.capsule(f(*start), f(*end), width * f.radius)


def draw_hand(
    canvas: Canvas,
    centre: Point,
    gesture: Gesture,
    colour: RGB,
    *,
    radius: float = 20.0,
    angle: float = 0.0,
    mirror: bool = False,
) -> None:
    """Paint one hand.

    Args:
        canvas: where to paint.
        centre: palm centre (design px).
        gesture: the hand shape.
        colour: glove or skin colour.
        radius: palm radius (design px).
        angle: rotation in degrees, clockwise; 0 points the fingers up.
        mirror: True puts the thumb on the other side (the figure's other hand).
    """
    f = _Frame(centre, radius, angle, mirror)
    m = canvas.mask()
    details: list[tuple[Point, Point]] = []
    if gesture == "open":
        m.circle(f(0, 0), 0.9 * radius)
        for x, top in ((-0.55, 1.2), (-0.18, 1.42), (0.2, 1.42), (0.56, 1.22)):
            _finger(m, f, (x, 0.2), (x * 1.2, top), 0.24)
        _finger(m, f, (-0.55, -0.2), (-1.25, 0.35), 0.26)
    elif gesture == "thumbs_up":
        m.ellipse(f(0, 0), (1.0 * radius, 0.82 * radius), angle=0)
        _finger(m, f, (-0.35, 0.3), (-0.35, 1.45), 0.3)
        details = [(f(0.05, 0.35 - i * 0.35), f(0.85, 0.35 - i * 0.35)) for i in range(3)]
    elif gesture == "peace":
        m.circle(f(0, 0), 0.95 * radius)
        _finger(m, f, (-0.28, 0.3), (-0.62, 1.65), 0.24)
        _finger(m, f, (0.22, 0.3), (0.55, 1.65), 0.24)
        details = [(f(-0.55, -0.15), f(0.5, -0.15))]
    elif gesture == "ok":
        m.circle(f(0.2, -0.1), 0.85 * radius)
        _finger(m, f, (0.0, 0.2), (0.1, 1.45), 0.22)
        _finger(m, f, (0.38, 0.15), (0.6, 1.35), 0.22)
        _finger(m, f, (0.72, 0.0), (1.0, 1.05), 0.21)
        m.circle(f(-0.75, 0.55), 0.62 * radius)
        hole = canvas.mask().circle(f(-0.75, 0.55), 0.3 * radius)
        m.cut(hole)
    elif gesture == "point":
        m.circle(f(0, 0), 0.95 * radius)
        _finger(m, f, (0.05, 0.4), (0.05, 1.7), 0.24)
        details = [(f(-0.6, -0.2), f(0.55, -0.2))]
    else:
        m.circle(f(0, 0), radius)
        details = [(f(-0.5, 0.25), f(0.3, 0.45))]
    canvas.paint(m, colour, shade=0.12)
    for start, end in details:
        line = canvas.mask().capsule(start, end, 1.3)
        canvas.paint(line, INK, outline=0, shade=0)
