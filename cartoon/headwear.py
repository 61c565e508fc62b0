"""Hats and helmets, drawn around the head ellipse of :mod:`cartoon.body` (design px).

The back of a hat or helmet is painted before the face (``draw_headwear_back``), the front after it
(``draw_headwear_front``), so a helmet can frame the face and a brim can cover the hairline.
"""

from __future__ import annotations

from cartoon.body import HEAD_CENTRE, HEAD_RADII
from cartoon.canvas import INK, Canvas
from cartoon.colors import darken, lighten
from cartoon.garments import Colours

__all__ = ["draw_headwear_back", "draw_headwear_front"]

CX, CY = HEAD_CENTRE
RX, RY = HEAD_RADII
TOP = CY - RY


def draw_headwear_back(canvas: Canvas, kind: str, colours: Colours) -> None:
    """Parts that sit behind the face: the helmet shell, the far side of a brim."""
    if kind == "space_helmet":
        shell = canvas.mask().ellipse((CX, CY + 6), (RX + 40, RY + 32))
        canvas.paint(shell, colours.headwear, shade=0.12, shade_offset=(7, 7))
        for side in (-1, 1):
            ear = canvas.mask().rounded_rect(
                (CX + side * (RX + 30) - 12, CY - 22, CX + side * (RX + 30) + 12, CY + 30), 10
            )
            canvas.paint(ear, colours.accent, outline=4, shade=0.15)
        canvas.paint(
            canvas.mask().capsule((CX + 52, TOP - 10), (CX + 66, TOP - 36), 4), darken(colours.headwear, 0.3)
        )
        canvas.paint(canvas.mask().circle((CX + 67, TOP - 40), 9), colours.headwear_trim, shade=0.2)
    elif kind == "cowboy_hat":
        brim = canvas.mask().ellipse((CX, TOP + 36), (RX + 44, 26))
        canvas.paint(brim, darken(colours.headwear, 0.12), shade=0)


def draw_headwear_front(canvas: Canvas, kind: str, colours: Colours) -> None:
    """Parts in front of the face: rims, brims, crowns, emblems."""
    if kind == "space_helmet":
        rim = (
            canvas.mask()
            .ellipse((CX, CY + 2), (RX + 10, RY + 8))
            .cut(canvas.mask().ellipse((CX, CY + 2), (RX + 1, RY - 1)))
        )
        canvas.paint(rim, colours.headwear_trim, outline=3.5, shade=0)
        shine = canvas.mask().ellipse((CX - RX - 10, CY - 44), (7, 22), angle=20)
        canvas.paint(shine, lighten(colours.headwear, 0.9), outline=0, shade=0)
    elif kind == "tricorn":
        hat = canvas.mask().polygon(
            [
                (CX - RX - 40, TOP + 38),
                (CX - RX + 6, TOP - 12),
                (CX, TOP - 30),
                (CX + RX - 6, TOP - 12),
                (CX + RX + 40, TOP + 38),
            ]
        )
        hat.ellipse((CX, TOP + 30), (RX + 28, 22))
        hat.cut(canvas.mask().ellipse((CX, TOP + 74), (RX - 6, 30)))
        canvas.paint(hat, colours.headwear, shade=0.25, shade_offset=(0, -6))
        trim = (
            canvas.mask()
            .ellipse((CX, TOP + 40), (RX + 22, 14))
            .cut(canvas.mask().ellipse((CX, TOP + 52), (RX + 8, 16)))
        )
        canvas.paint(trim.clip(hat), colours.headwear_trim, outline=0, shade=0)
        skull = canvas.mask().circle((CX, TOP + 4), 15).rounded_rect((CX - 9, TOP + 8, CX + 9, TOP + 24), 4)
        bones = canvas.mask().capsule((CX - 22, TOP - 10), (CX + 22, TOP + 26), 3.5)
        bones.capsule((CX + 22, TOP - 10), (CX - 22, TOP + 26), 3.5)
        canvas.paint(bones, (245, 242, 235), outline=2.0, shade=0)
        canvas.paint(skull, (245, 242, 235), outline=2.0, shade=0)
        for side in (-1, 1):
            canvas.paint(canvas.mask().circle((CX + side * 6, TOP + 4), 4), INK, outline=0, shade=0)
    elif kind == "chef_toque":
        puff = canvas.mask()
        for x, y, r in (
            (CX - 46, TOP - 10, 34),
            (CX, TOP - 26, 42),
            (CX + 46, TOP - 10, 34),
            (CX - 22, TOP - 4, 36),
            (CX + 22, TOP - 4, 36),
        ):
            puff.circle((x, y), r)
        puff.rounded_rect((CX - RX + 10, TOP - 30, CX + RX - 10, TOP + 30), 8)
        canvas.paint(puff, colours.headwear, shade=0.1)
        for x in (CX - 30, CX, CX + 30):
            pleat = canvas.mask().capsule((x, TOP - 24), (x, TOP + 4), 1.2)
            canvas.paint(pleat, darken(colours.headwear_trim, 0.1), outline=0, shade=0)
        band = canvas.mask().rounded_rect((CX - RX + 4, TOP + 6, CX + RX - 4, TOP + 42), 12)
        canvas.paint(band, colours.headwear, shade=0.08, outline=4)
    elif kind == "wizard_hat":
        cone = canvas.mask().polygon(
            [
                (CX - 66, TOP + 30),
                (CX - 16, TOP - 40),
                (CX + 42, TOP - 62),
                (CX + 18, TOP - 30),
                (CX + 70, TOP + 30),
            ]
        )
        canvas.paint(cone, colours.headwear, shade=0.2, shade_offset=(8, 0))
        band = canvas.mask().polygon(
            [(CX - 66, TOP + 30), (CX - 56, TOP + 8), (CX + 60, TOP + 8), (CX + 70, TOP + 30)]
        )
        canvas.paint(band, colours.headwear_trim, outline=3)
        brim = canvas.mask().ellipse((CX, TOP + 36), (RX + 40, 18))
        brim.cut(canvas.mask().ellipse((CX, TOP + 62), (RX - 4, 24)))
        canvas.paint(brim, darken(colours.headwear, 0.1), shade=0)
        for x, y, r in ((CX - 14, TOP - 14, 10), (CX + 24, TOP - 40, 7), (CX + 32, TOP - 2, 6)):
            canvas.paint(canvas.mask().star((x, y), r, r * 0.45), colours.headwear_trim, outline=2, shade=0)
    elif kind == "cowboy_hat":
        crown = canvas.mask().polygon(
            [
                (CX - 60, TOP + 30),
                (CX - 54, TOP - 36),
                (CX, TOP - 24),
                (CX + 54, TOP - 36),
                (CX + 60, TOP + 30),
            ]
        )
        canvas.paint(crown, colours.headwear, shade=0.18, shade_offset=(8, 0))
        band = canvas.mask().polygon(
            [(CX - 60, TOP + 30), (CX - 58, TOP + 12), (CX + 58, TOP + 12), (CX + 60, TOP + 30)]
        )
        canvas.paint(band, colours.headwear_trim, outline=3)
        brim = (
            canvas.mask().ellipse((CX, TOP + 34), (RX + 46, 16)).ellipse((CX - RX - 36, TOP + 22), (18, 12))
        )
        brim.ellipse((CX + RX + 36, TOP + 22), (18, 12))
        brim.cut(canvas.mask().ellipse((CX, TOP + 56), (RX - 2, 22)))
        canvas.paint(brim, colours.headwear, shade=0.12)
