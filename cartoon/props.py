"""Things a figure holds: the outfit's signature prop, a party popper, a big heart (design px)."""

from __future__ import annotations

import math

from cartoon.canvas import Canvas
from cartoon.colors import darken
from cartoon.effects import CONFETTI, GOLD, HEART_RED, draw_hearts, draw_sparkles

__all__ = ["draw_big_heart", "draw_popper", "draw_prop"]

Point = tuple[float, float]


def _along(origin: Point, angle: float, distance: float) -> Point:
    """The point ``distance`` px from ``origin`` in direction ``angle`` (degrees clockwise from up)."""
    a = math.radians(angle)
    return (origin[0] + distance * math.sin(a), origin[1] - distance * math.cos(a))


def draw_prop(canvas: Canvas, kind: str, hand: Point, angle: float = 0.0) -> None:
    """Paint an outfit prop held in ``hand``, pointing in ``angle`` (degrees clockwise from up).

    Paint it before the hand, so the fingers close over the handle.
    """
    if kind == "rocket":
        base, tip = _along(hand, angle, -6), _along(hand, angle, 78)
        for side in (-1, 1):
            fin_root = _along(hand, angle + side * 90, 16)
            canvas.paint(
                canvas.mask().polygon(
                    [
                        _along(fin_root, angle, 26),
                        _along(fin_root, angle + side * 60, 22),
                        _along(fin_root, angle, -8),
                    ]
                ),
                (230, 60, 60),
                outline=3,
            )
        body = canvas.mask().capsule(base, _along(hand, angle, 60), 17)
        canvas.paint(body, (245, 246, 250), shade=0.15)
        nose = canvas.mask().polygon(
            [
                _along(_along(hand, angle, 58), angle - 90, 16),
                tip,
                _along(_along(hand, angle, 58), angle + 90, 16),
            ]
        )
        canvas.paint(nose, (230, 60, 60), outline=3.5)
        canvas.paint(canvas.mask().circle(_along(hand, angle, 36), 8), (80, 160, 255), outline=3, shade=0)
        flame = canvas.mask().polygon(
            [_along(base, angle - 90, 9), _along(base, angle + 180, 26), _along(base, angle + 90, 9)]
        )
        canvas.paint(flame, (255, 170, 30), outline=3, shade=0)
    elif kind == "cutlass":
        canvas.paint(
            canvas.mask().capsule(_along(hand, angle, -18), _along(hand, angle, 12), 6),
            (110, 70, 40),
            outline=3,
        )
        tip = _along(_along(hand, angle, 110), angle + 90, 14)
        blade = canvas.mask().polygon(
            [
                _along(_along(hand, angle, 16), angle - 90, 7),
                _along(_along(hand, angle, 70), angle - 90, 4),
                tip,
                _along(_along(hand, angle, 80), angle + 90, 16),
                _along(_along(hand, angle, 16), angle + 90, 8),
            ]
        )
        canvas.paint(blade, (214, 222, 232), shade=0.2, shade_offset=(5, 0))
        guard = canvas.mask().capsule(
            _along(_along(hand, angle, 16), angle - 90, 20),
            _along(_along(hand, angle, 16), angle + 90, 20),
            5,
        )
        canvas.paint(guard, GOLD, outline=3)
    elif kind == "spoon":
        canvas.paint(
            canvas.mask().capsule(_along(hand, angle, -22), _along(hand, angle, 70), 6),
            (196, 140, 80),
            outline=3.5,
        )
        canvas.paint(
            canvas.mask().ellipse(_along(hand, angle, 86), (18, 26), angle=angle), (206, 150, 88), shade=0.22
        )
    elif kind == "wand":
        canvas.paint(
            canvas.mask().capsule(_along(hand, angle, -16), _along(hand, angle, 72), 5),
            (110, 70, 40),
            outline=3.5,
        )
        star = _along(hand, angle, 86)
        canvas.paint(canvas.mask().star(star, 22, 10, angle=angle), GOLD, outline=3.5)
        draw_sparkles(canvas, [(star[0] + 28, star[1] - 12, 9), (star[0] - 24, star[1] - 20, 7)])
    elif kind == "lasso":
        loop_centre = _along(hand, angle, 62)
        loop = canvas.mask().ellipse(loop_centre, (44, 28), angle=angle * 0.3)
        loop.cut(canvas.mask().ellipse(loop_centre, (36, 20), angle=angle * 0.3))
        loop.capsule(hand, _along(hand, angle, 36), 4)
        canvas.paint(loop, (214, 170, 100), outline=3, shade=0)


def draw_popper(canvas: Canvas, hand: Point, angle: float) -> None:
    """A party popper held in ``hand`` with a burst of streamers and confetti in direction ``angle``."""
    mouth = _along(hand, angle, 64)
    streamers = [(angle - 40, CONFETTI[0]), (angle - 5, CONFETTI[2]), (angle + 30, CONFETTI[4])]
    for i, (a, colour) in enumerate(streamers):
        pts = [mouth]
        for k in range(1, 5):
            p = _along(mouth, a, 16 * k)
            pts.append(_along(p, a + 90, 7 if k % 2 else -7))
        canvas.paint(canvas.mask().polyline(pts, 3.2), colour, outline=2.5, shade=0)
        end = pts[-1]
        canvas.paint(
            canvas.mask().circle(_along(end, a, 10), 7),
            CONFETTI[(i + 1) % len(CONFETTI)],
            outline=2.5,
            shade=0,
        )
    cone = canvas.mask().polygon(
        [
            _along(hand, angle - 90, 4),
            _along(mouth, angle - 90, 24),
            _along(mouth, angle + 90, 24),
            _along(hand, angle + 90, 4),
        ]
    )
    cone.circle(hand, 8)
    canvas.paint(cone, (255, 196, 0), shade=0.15)
    for frac in (0.35, 0.7):
        p = _along(hand, angle, 64 * frac)
        stripe = (
            canvas.mask()
            .capsule(_along(p, angle - 90, 22 * frac), _along(p, angle + 90, 22 * frac), 4)
            .clip(cone)
        )
        canvas.paint(stripe, (255, 87, 87), outline=0, shade=0)


def draw_big_heart(canvas: Canvas, centre: Point, size: float) -> None:
    """A big heart held in front of the chest."""
    draw_hearts(canvas, [(centre[0], centre[1], size, 0.0)])
    inner = canvas.mask().heart((centre[0] + size * 0.12, centre[1] + size * 0.1), size * 0.5)
    canvas.tint(inner, darken(HEART_RED, 0.25), 0.35, blur=6.0)
