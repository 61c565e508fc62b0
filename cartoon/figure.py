"""One cartoon figure: the guest's stylised face on a costumed body in one of the 12 poses."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from cartoon.body import CELL, HEAD_CENTRE, HEAD_RADII, NECK, SHOULDERS
from cartoon.canvas import Canvas
from cartoon.colors import RGB, darken
from cartoon.effects import (
    draw_blush,
    draw_bubble_text,
    draw_closed_eyes,
    draw_confetti,
    draw_heart_eyes,
    draw_hearts,
    draw_motion_lines,
    draw_o_mouth,
    draw_sparkles,
    draw_sunglasses,
    draw_tears,
    draw_text,
)
from cartoon.face_cartoon import CartoonFace
from cartoon.garments import Colours, colours_for, draw_cape, draw_legs, draw_sleeve, draw_torso
from cartoon.hands import draw_hand
from cartoon.headwear import draw_headwear_back, draw_headwear_front
from cartoon.poses import Pose
from cartoon.props import draw_big_heart, draw_popper, draw_prop
from shared.outfits import Outfit

__all__ = ["FACELESS_SKIN", "draw_figure", "face_size_px"]

FACELESS_SKIN: RGB = (236, 214, 196)
HELMET_INSIDE: RGB = (58, 66, 92)
SUPERSAMPLE = 2
FIGURE_SHIFT = (0.0, 12.0)  # design px: tall hats need the room above more than the feet below
NECK_HALF_WIDTH = 24.0  # design px: the neck is a bit over a quarter of the head's width
NECK_OVERLAP = 14.0  # design px the neck reaches under the chin and the collar (covers the head's tilt)
COLLAR_Y = NECK[1] - 4  # design px: the top of every torso (cartoon.garments._torso_mask)
Point = tuple[float, float]


def face_size_px() -> tuple[int, int]:
    """Size (w, h) px at which :func:`cartoon.face_cartoon.cartoonize_face` should draw the
    face so it fills the head ellipse at canvas resolution."""
    return (round(HEAD_RADII[0] * 2 * SUPERSAMPLE), round(HEAD_RADII[1] * 2 * SUPERSAMPLE))


class _FaceGeometry:
    """Face landmarks converted from crop px to design px of the head ellipse."""

    def __init__(self, face: CartoonFace) -> None:
        crop_w = face.rgb.shape[1]
        self.k = HEAD_RADII[0] * 2 / crop_w
        self.ox = HEAD_CENTRE[0] - HEAD_RADII[0]
        self.oy = HEAD_CENTRE[1] - HEAD_RADII[1]
        self.eyes = (self.point(face.eyes[0]), self.point(face.eyes[1]))
        self.eye_width = face.eye_width * self.k
        self.mouth = self.point(face.mouth)
        self.skin = face.skin

    def point(self, p: Point) -> Point:
        return (self.ox + p[0] * self.k, self.oy + p[1] * self.k)


def chin_y(face: CartoonFace) -> float | None:
    """Where the guest's head ends above the neck: the highest of the lowest head pixels of the columns
    within :data:`NECK_HALF_WIDTH` of the head's centre line, in design px (``None`` when no head pixel
    lies in those columns). A head segmented down to its collar ends at the ellipse's bottom
    (``HEAD_CENTRE[1] + HEAD_RADII[1]``); one cut at the chin (a hat or a dark backdrop around a
    tilted face) ends higher, above the torso."""
    k = HEAD_RADII[0] * 2 / face.head.shape[1]
    ox, oy = HEAD_CENTRE[0] - HEAD_RADII[0], HEAD_CENTRE[1] - HEAD_RADII[1]
    c0 = max(0, int(np.floor((HEAD_CENTRE[0] - NECK_HALF_WIDTH - ox) / k)))
    c1 = min(face.head.shape[1], int(np.ceil((HEAD_CENTRE[0] + NECK_HALF_WIDTH - ox) / k)))
    band = face.head[:, c0:c1]
    filled = band.any(axis=0)
    if not filled.any():
        return None
    lowest = band.shape[0] - 1 - np.argmax(band[::-1, filled], axis=0)
    return float(oy + (int(lowest.min()) + 1) * k)


def _draw_neck(canvas: Canvas, face: CartoonFace | None) -> None:
    """A neck from under the chin to under the collar, when the head does not reach the torso itself:
    without it a head cut at the chin floats above the body and the sheet's cut finds two figures.
    Painted behind the torso (and the head), so only the part between chin and collar shows."""
    if face is None:
        return
    chin = chin_y(face)
    if chin is None or chin >= COLLAR_Y + NECK_OVERLAP / 2:
        return
    box = (
        HEAD_CENTRE[0] - NECK_HALF_WIDTH,
        chin - NECK_OVERLAP,
        HEAD_CENTRE[0] + NECK_HALF_WIDTH,
        NECK[1] + NECK_OVERLAP,
    )
    canvas.paint(canvas.mask().rounded_rect(box, 8), darken(face.skin, 0.12), outline=4.5, shade=0)


def _draw_head(layer: Canvas, face: CartoonFace | None, outfit: Outfit, colours: Colours, pose: Pose) -> None:
    kind = outfit.art.headwear
    draw_headwear_back(layer, kind, colours)
    corner = (HEAD_CENTRE[0] - HEAD_RADII[0], HEAD_CENTRE[1] - HEAD_RADII[1])
    if kind == "space_helmet":
        visor = layer.mask().ellipse(HEAD_CENTRE, HEAD_RADII)
        layer.paint(visor, HELMET_INSIDE, outline=0, shade=0)
    if face is None:
        head = layer.mask().ellipse(HEAD_CENTRE, HEAD_RADII)
    else:
        head = layer.mask().bitmap(face.head, corner)
    layer.paint(head, face.skin if face else FACELESS_SKIN, outline=4.5, shade=0)
    if face is not None:
        layer.paint_image(head, face.rgb, corner)
        geo = _FaceGeometry(face)
        if "closed_eyes" in pose.face:
            draw_closed_eyes(layer, geo.eyes, geo.eye_width, geo.skin)
        if "o_mouth" in pose.face:
            draw_o_mouth(layer, geo.mouth, geo.eye_width, geo.skin)
        if "blush" in pose.face or "heart_eyes" in pose.face:
            draw_blush(layer, geo.eyes, geo.eye_width)
        if "tears" in pose.face:
            draw_tears(layer, geo.eyes, geo.eye_width)
        if "sunglasses" in pose.face:
            draw_sunglasses(layer, geo.eyes, geo.eye_width)
        if "heart_eyes" in pose.face:
            draw_heart_eyes(layer, geo.eyes, geo.eye_width)
    draw_headwear_front(layer, kind, colours)


def _draw_arms(canvas: Canvas, outfit: Outfit, colours: Colours, pose: Pose) -> None:
    garment = outfit.art.garment
    for arm, shoulder in ((pose.left, SHOULDERS[0]), (pose.right, SHOULDERS[1])):
        draw_sleeve(canvas, colours, garment, shoulder, arm.elbow, arm.hand)
    if "big_heart" in pose.extras:
        draw_big_heart(canvas, (256, 326), 124)
    if "popper" in pose.extras:
        draw_popper(canvas, pose.right.hand, 28)
    if "prop" in pose.extras and outfit.art.prop != "none":
        draw_prop(canvas, outfit.art.prop, pose.left.hand, -12)
    for arm, mirror in ((pose.left, True), (pose.right, False)):
        draw_hand(canvas, arm.hand, arm.gesture, colours.hands, angle=arm.angle, mirror=mirror)


def _reach_figure(canvas: Canvas, tip: Point, *, search: float = 60.0, overlap: float = 5.0) -> Point:
    """``tip`` moved onto the nearest opaque pixel already painted within ``search`` design px, and
    ``overlap`` px further along the same way, so a speech bubble's tail touches the figure: a bubble
    floating free is a second shape on the sheet, and one as big as the HAHA bubble (about a fifth of a
    small figure) is taken for a second figure by the cut (``worker.imaging.cut``, its 20 % rule).
    Returns ``tip`` unchanged when it already lies on the figure or nothing is within reach."""
    ss, (sx, sy) = canvas.ss, canvas.shift
    cx, cy = canvas.to_px(tip)
    r = round(search * ss)
    x0, y0 = max(0, cx - r), max(0, cy - r)
    x1, y1 = min(canvas.shape[1], cx + r + 1), min(canvas.shape[0], cy + r + 1)
    ys, xs = np.nonzero(canvas.rgba[y0:y1, x0:x1, 3] >= 128)
    if xs.size == 0:
        return tip
    d2 = (xs + x0 - cx) ** 2 + (ys + y0 - cy) ** 2
    k = int(np.argmin(d2))
    dist = float(np.sqrt(d2[k])) / ss
    if dist == 0.0 or dist > search:
        return tip
    nx, ny = (xs[k] + x0) / ss - sx, (ys[k] + y0) / ss - sy
    ux, uy = (nx - tip[0]) / dist, (ny - tip[1]) / dist
    return (nx + ux * overlap, ny + uy * overlap)


def _draw_extras(canvas: Canvas, pose: Pose, colours: Colours) -> None:
    extras = pose.extras
    if "hearts" in extras:
        draw_hearts(canvas, [(392, 92, 40, 14), (424, 150, 26, 24), (116, 110, 30, -16)])
    if "sparkles" in extras:
        draw_sparkles(canvas, [(410, 128, 16), (104, 150, 12), (428, 330, 10)])
    if "wave_lines" in extras:
        draw_motion_lines(canvas, pose.right.hand, 38, -80, 5)
    if "haha" in extras:
        tail = _reach_figure(canvas, (338, 150))
        draw_bubble_text(canvas, (402, 84), (84, 40), tail, "HAHA", colours.trim)
    if "question" in extras:
        draw_text(canvas, "?", (392, 126), 54, colours.trim)
        draw_text(canvas, "?", (438, 90), 34, colours.accent)
    if "exclaim" in extras:
        draw_text(canvas, "!", (408, 120), 62, (255, 80, 80))
        draw_text(canvas, "!", (84, 112), 46, (255, 80, 80))
    if "zzz" in extras:
        draw_text(canvas, "Z", (370, 140), 34, (120, 160, 255))
        draw_text(canvas, "Z", (404, 104), 44, (120, 160, 255))
        draw_text(canvas, "Z", (442, 62), 54, (120, 160, 255))


def draw_figure(
    face: CartoonFace | None,
    outfit: Outfit,
    pose: Pose,
    *,
    seed: int = 0,
    parts: Literal["all", "head", "body"] = "all",
) -> npt.NDArray[np.uint8]:
    """Draw one sticker figure.

    Args:
        face: the guest's cartoon face, or None for a faceless mannequin (catalog thumbnails).
        outfit: what the figure wears.
        pose: arms, face overlays and decorations.
        seed: makes scattered decorations (confetti) reproducible.
        parts: ``all``; ``head`` (the head with its headwear only, upright: a composite head sheet's
            cell); ``body`` (everything but the head: a composite body template).

    Returns:
        512×512×4 uint8 RGBA, transparent around the figure, anti-aliased.
    """
    colours = colours_for(outfit, face.skin if face else FACELESS_SKIN)
    canvas = Canvas(CELL, CELL, supersample=SUPERSAMPLE, shift=FIGURE_SHIFT)
    if parts == "head":
        _draw_head(canvas, face, outfit, colours, pose)
        return canvas.to_rgba()
    draw_cape(canvas, colours)
    draw_legs(canvas, colours, stance=pose.stance)
    if parts == "all":
        _draw_neck(canvas, face)
    draw_torso(canvas, outfit, colours)
    if parts == "all":
        head = Canvas(CELL, CELL, supersample=SUPERSAMPLE, shift=FIGURE_SHIFT)
        _draw_head(head, face, outfit, colours, pose)
        canvas.overlay(head, rotate=-pose.tilt, pivot=NECK)
    if "confetti" in pose.extras:  # behind the arms: no confetti on a palm
        avoid = (HEAD_CENTRE, (HEAD_RADII[0] + 40, HEAD_RADII[1] + 60))
        draw_confetti(canvas, (60, 30, 452, 200), 12, seed, avoid=avoid)
    _draw_arms(canvas, outfit, colours, pose)
    _draw_extras(canvas, pose, colours)
    return canvas.to_rgba()
