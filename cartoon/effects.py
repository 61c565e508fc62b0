"""Decorations around a figure (hearts, confetti, text bubbles, Zzz) and on its face (sunglasses, heart
eyes, closed eyes, blush, tears), in design px."""

from __future__ import annotations

import math

import numpy as np

from cartoon.canvas import INK, Canvas
from cartoon.colors import RGB, darken, lighten

__all__ = [
    "draw_blush",
    "draw_bubble_text",
    "draw_closed_eyes",
    "draw_confetti",
    "draw_heart_eyes",
    "draw_hearts",
    "draw_motion_lines",
    "draw_o_mouth",
    "draw_sparkles",
    "draw_sunglasses",
    "draw_tears",
    "draw_text",
]

Point = tuple[float, float]
HEART_RED: RGB = (235, 52, 82)
GOLD: RGB = (255, 204, 40)
CONFETTI: tuple[RGB, ...] = (
    (255, 87, 87),
    (255, 196, 0),
    (66, 135, 245),
    (255, 105, 200),
    (160, 90, 255),
    (255, 140, 0),
)


def draw_hearts(
    canvas: Canvas, hearts: list[tuple[float, float, float, float]], colour: RGB = HEART_RED
) -> None:
    """Hearts given as (x, y, size, angle°)."""
    for x, y, size, angle in hearts:
        canvas.paint(canvas.mask().heart((x, y), size, angle), colour, outline=3.5, shade=0.15)
        shine = canvas.mask().ellipse(
            (x - size * 0.2, y - size * 0.12), (size * 0.08, size * 0.05), angle=-40
        )
        canvas.paint(shine, lighten(colour, 0.7), outline=0, shade=0)


def draw_sparkles(canvas: Canvas, sparkles: list[tuple[float, float, float]], colour: RGB = GOLD) -> None:
    """Four-pointed sparkles given as (x, y, radius)."""
    for x, y, r in sparkles:
        canvas.paint(canvas.mask().star((x, y), r, r * 0.32, points=4), colour, outline=3.0, shade=0)


def draw_confetti(
    canvas: Canvas,
    box: tuple[float, float, float, float],
    count: int,
    seed: int,
    *,
    avoid: tuple[Point, tuple[float, float]] | None = None,
) -> None:
    """``count`` confetti pieces scattered in ``box`` (x0, y0, x1, y1), none inside the ellipse
    ``avoid`` = (centre, half-axes) (the face), reproducible by ``seed``."""
    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = box
    placed = 0
    for _ in range(count * 20):
        if placed == count:
            break
        x, y = float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1))
        if avoid is not None:
            (cx, cy), (rx, ry) = avoid
            if ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 < 1.0:
                continue
        placed += 1
        colour = CONFETTI[placed % len(CONFETTI)]
        angle = float(rng.uniform(0, 180))
        if placed % 3 == 0:
            piece = canvas.mask().circle((x, y), 6)
        else:
            dx, dy = 10 * math.cos(math.radians(angle)), 10 * math.sin(math.radians(angle))
            piece = canvas.mask().capsule((x - dx, y - dy), (x + dx, y + dy), 4.5)
        canvas.paint(piece, colour, outline=2.5, shade=0)


def draw_text(
    canvas: Canvas, text: str, origin: Point, height: float, colour: RGB, *, weight: float = 0.2
) -> None:
    """Bold cartoon lettering: ``colour`` with an ink outline; ``origin`` is the bottom-left."""
    canvas.paint(canvas.mask().text(text, origin, height, weight=weight), colour, outline=3.5, shade=0)


def draw_bubble_text(
    canvas: Canvas, centre: Point, radii: tuple[float, float], tail: Point, text: str, colour: RGB
) -> None:
    """A white speech bubble with a tail pointing at ``tail`` and ``text`` inside."""
    bubble = canvas.mask().ellipse(centre, radii)
    dx, dy = tail[0] - centre[0], tail[1] - centre[1]
    norm = math.hypot(dx, dy) or 1.0
    px, py = -dy / norm * radii[1] * 0.35, dx / norm * radii[1] * 0.35
    base = (centre[0] + dx * 0.5, centre[1] + dy * 0.5)
    bubble.polygon([(base[0] + px, base[1] + py), (base[0] - px, base[1] - py), tail])
    canvas.paint(bubble, (255, 255, 255), outline=4.0, shade=0.06)
    height = radii[1] * 0.62
    width = len(text) * height * 0.95
    draw_text(canvas, text, (centre[0] - width / 2, centre[1] + height / 2), height, colour, weight=0.16)


def draw_motion_lines(canvas: Canvas, centre: Point, radius: float, start: float, end: float) -> None:
    """Two ink arcs around ``centre`` from ``start`` to ``end`` degrees (0 = right, clockwise): a wave."""
    for k in range(2):
        r = radius + k * 13
        canvas.paint(canvas.mask().arc(centre, (r, r), start, end, 4.5), INK, outline=0, shade=0)


def draw_sunglasses(canvas: Canvas, eyes: tuple[Point, Point], eye_width: float) -> None:
    """Black cartoon shades over both eyes with a bridge and a white glint."""
    (lx, ly), (rx, ry) = eyes
    w = max(eye_width * 1.25, abs(rx - lx) * 0.46)
    h = w * 0.72
    frame = canvas.mask()
    for x, y in eyes:
        frame.rounded_rect((x - w, y - h * 0.75, x + w, y + h), h * 0.6)
    frame.capsule((lx + w * 0.8, (ly + ry) / 2 - h * 0.4), (rx - w * 0.8, (ly + ry) / 2 - h * 0.4), 3.5)
    canvas.paint(frame, (28, 26, 34), outline=2.5, shade=0)
    for x, y in eyes:
        glint = canvas.mask().capsule((x - w * 0.55, y - h * 0.2), (x - w * 0.2, y - h * 0.5), 2.8)
        canvas.paint(glint, (235, 240, 255), outline=0, shade=0)


def draw_heart_eyes(canvas: Canvas, eyes: tuple[Point, Point], eye_width: float) -> None:
    """Red hearts over both eyes."""
    size = max(eye_width * 2.2, 30.0)
    draw_hearts(canvas, [(x, y, size, (-12 if i == 0 else 12)) for i, (x, y) in enumerate(eyes)])


def draw_closed_eyes(canvas: Canvas, eyes: tuple[Point, Point], eye_width: float, skin: RGB) -> None:
    """Cover the open eyes with skin and draw sleepy closed-eye arcs."""
    for x, y in eyes:
        patch = canvas.mask().ellipse((x, y), (eye_width * 0.95, eye_width * 0.55))
        canvas.tint(patch, skin, 1.0, blur=1.2)
        canvas.paint(
            canvas.mask().arc((x, y - 2), (eye_width * 0.6, eye_width * 0.4), 20, 160, 3.2),
            INK,
            outline=0,
            shade=0,
        )


def draw_blush(canvas: Canvas, eyes: tuple[Point, Point], eye_width: float) -> None:
    """Soft pink cheeks below the eyes."""
    for i, (x, y) in enumerate(eyes):
        side = -1 if i == 0 else 1
        cheek = canvas.mask().ellipse(
            (x + side * eye_width * 0.4, y + eye_width * 1.15), (eye_width * 0.75, eye_width * 0.42)
        )
        canvas.tint(cheek, (255, 110, 140), 0.55, blur=3.0)


def draw_tears(canvas: Canvas, eyes: tuple[Point, Point], eye_width: float) -> None:
    """Tears of joy at the outer corners of the eyes."""
    for i, (x, y) in enumerate(eyes):
        side = -1 if i == 0 else 1
        cx, cy = x + side * eye_width * 1.05, y + eye_width * 0.55
        r = max(6.0, eye_width * 0.32)
        drop = (
            canvas.mask()
            .circle((cx, cy + r), r)
            .polygon([(cx - r * 0.9, cy + r * 0.6), (cx + r * 0.9, cy + r * 0.6), (cx, cy - r * 1.2)])
        )
        canvas.paint(drop, (110, 190, 255), outline=2.5, shade=0)


def draw_o_mouth(canvas: Canvas, mouth: Point, eye_width: float, skin: RGB) -> None:
    """A small round "oh!" mouth over the real one."""
    x, y = mouth
    cover = canvas.mask().ellipse((x, y), (eye_width * 1.3, eye_width * 0.6))
    canvas.tint(cover, skin, 1.0, blur=2.0)
    canvas.paint(
        canvas.mask().ellipse((x, y), (eye_width * 0.42, eye_width * 0.55)),
        darken((150, 40, 60), 0.2),
        outline=3.0,
        shade=0,
    )
