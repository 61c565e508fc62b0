"""Bodies in costume: cape, legs, torso with its garment details, sleeves (design px, 512 cell)."""

from __future__ import annotations

from dataclasses import dataclass

from cartoon.body import ARM_RADIUS, HIP_Y, NECK, SHOULDERS
from cartoon.canvas import INK, Canvas, Mask
from cartoon.colors import RGB, darken, hex_to_rgb, lighten
from shared.outfits import Outfit

__all__ = ["Colours", "colours_for", "draw_cape", "draw_legs", "draw_sleeve", "draw_torso"]

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Colours:
    """An outfit's palette as RGB tuples, with the hand colour resolved (gloves or the guest's skin)."""

    suit: RGB
    trim: RGB
    accent: RGB
    pants: RGB
    shoes: RGB
    headwear: RGB
    headwear_trim: RGB
    hands: RGB
    vest: RGB | None
    cape: RGB | None


def colours_for(outfit: Outfit, skin: RGB) -> Colours:
    """Resolve the outfit palette; bare hands take the guest's ``skin`` colour."""
    p = outfit.art.palette
    return Colours(
        suit=hex_to_rgb(p.suit),
        trim=hex_to_rgb(p.trim),
        accent=hex_to_rgb(p.accent),
        pants=hex_to_rgb(p.pants),
        shoes=hex_to_rgb(p.shoes),
        headwear=hex_to_rgb(p.headwear),
        headwear_trim=hex_to_rgb(p.headwear_trim),
        hands=hex_to_rgb(p.gloves) if p.gloves else skin,
        vest=hex_to_rgb(p.vest) if p.vest else None,
        cape=hex_to_rgb(p.cape) if p.cape else None,
    )


def _torso_mask(canvas: Canvas, garment: str) -> Mask:
    m = canvas.mask()
    (lx, ly), (rx, ry) = SHOULDERS
    if garment == "robe":
        m.polygon([(lx - 4, ly - 22), (rx + 4, ry - 22), (rx + 50, 452), (lx - 50, 452)])
        m.rounded_rect((lx - 50, 420, rx + 50, 456), 16)
    else:
        m.polygon([(lx - 6, ly - 12), (rx + 6, ry - 12), (rx + 4, HIP_Y), (lx - 4, HIP_Y)])
    m.circle((lx + 6, ly + 2), 24)
    m.circle((rx - 6, ry + 2), 24)
    m.rounded_rect((lx - 2, NECK[1] - 4, rx + 2, ly + 30), 24)
    return m


def draw_cape(canvas: Canvas, colours: Colours) -> None:
    """A cape behind the body (only for outfits that have one)."""
    if colours.cape is None:
        return
    (lx, ly), (rx, ry) = SHOULDERS
    m = canvas.mask().polygon(
        [
            (lx + 4, ly - 18),
            (rx - 4, ry - 18),
            (rx + 62, 432),
            (300, 446),
            (256, 436),
            (212, 446),
            (lx - 62, 432),
        ]
    )
    canvas.paint(m, colours.cape, shade=0.25, shade_offset=(8, -4))


def draw_legs(canvas: Canvas, colours: Colours, *, stance: str = "stand") -> None:
    """Two legs with shoes; ``stance`` is ``stand`` or ``apart`` (a little jump)."""
    spread = 22.0 if stance == "apart" else 0.0
    feet = [(256 + side * (26 + spread), 444.0) for side in (-1, 1)]
    # one shape for both legs and the crotch, so no sliver of backdrop shows between them
    pants = canvas.mask().polygon(
        [(226, HIP_Y - 24), (286, HIP_Y - 24), (274, HIP_Y + 18), (238, HIP_Y + 18)]
    )
    for side, foot in zip((-1, 1), feet, strict=True):
        pants.capsule((256 + side * 24, HIP_Y - 16), foot, 21)
    canvas.paint(pants, colours.pants, shade=0.18)
    seam = canvas.mask().capsule((256, HIP_Y + 4), (256, HIP_Y + 14), 1.4)
    canvas.paint(seam, INK, outline=0, shade=0)
    for side, foot in zip((-1, 1), feet, strict=True):
        shoe = canvas.mask().ellipse((foot[0] + side * 7, foot[1] + 10), (31, 17))
        canvas.paint(shoe, colours.shoes, shade=0.2)


def draw_sleeve(
    canvas: Canvas, colours: Colours, garment: str, shoulder: Point, elbow: Point, hand: Point
) -> None:
    """An arm from ``shoulder`` through ``elbow`` to the wrist near ``hand``, with a cuff."""
    radius = ARM_RADIUS + (4 if garment == "robe" else 0)
    sleeve = colours.suit
    canvas.paint(canvas.mask().polyline([shoulder, elbow, hand], radius), sleeve, shade=0.16)
    ex, ey = elbow
    hx, hy = hand
    a = (ex + (hx - ex) * 0.62, ey + (hy - ey) * 0.62)
    b = (ex + (hx - ex) * 0.8, ey + (hy - ey) * 0.8)
    if garment == "robe":
        canvas.paint(canvas.mask().capsule(a, b, radius + 5), colours.trim, outline=3.5, shade=0.1)
    elif garment in ("spacesuit", "hero", "chef", "western"):
        cuff = colours.trim if garment != "chef" else colours.suit
        canvas.paint(canvas.mask().capsule(a, b, radius + 1.5), cuff, outline=3.5, shade=0.1)


def _stars(canvas: Canvas, clip: Mask, colour: RGB, points: list[tuple[float, float, float]]) -> None:
    for x, y, r in points:
        star = canvas.mask().star((x, y), r, r * 0.45).clip(clip)
        canvas.paint(star, colour, outline=2.5, shade=0)


def draw_torso(canvas: Canvas, outfit: Outfit, colours: Colours) -> None:
    """The torso (and for robes the long skirt) with the details of ``outfit.art.garment``."""
    garment = outfit.art.garment
    torso = _torso_mask(canvas, garment)
    canvas.paint(torso, colours.suit, shade=0.14)
    (lx, ly), (rx, _) = SHOULDERS
    thin = 3.0
    if garment == "spacesuit":
        for side in (-1, 1):
            x = 256 + side * 50
            stripe = canvas.mask().capsule((x, ly - 10), (x + side * 4, ly + 16), 8).clip(torso)
            canvas.paint(stripe, colours.trim, outline=thin, shade=0)
        canvas.paint(
            canvas.mask().rounded_rect((218, 300, 294, 346), 10), lighten(colours.accent, 0.8), outline=thin
        )
        for i, colour in enumerate(((230, 60, 60), (250, 200, 40), colours.accent)):
            canvas.paint(canvas.mask().circle((234 + i * 22, 316), 7), colour, outline=2.5, shade=0)
        canvas.paint(
            canvas.mask().rounded_rect((226, 330, 286, 338), 3), darken(colours.suit, 0.35), outline=0
        )
        canvas.paint(
            canvas.mask().rounded_rect((lx - 4, 358, rx + 4, 376), 6).clip(torso), colours.trim, outline=thin
        )
        canvas.paint(canvas.mask().circle((300, 300), 10), colours.accent, outline=2.5, shade=0)
    elif garment == "hero":
        canvas.paint(
            canvas.mask().polygon([(256, 288), (292, 316), (256, 350), (220, 316)]),
            colours.accent,
            outline=thin,
        )
        bolt = [(262, 294), (240, 320), (255, 320), (247, 344), (272, 312), (257, 312), (266, 294)]
        canvas.paint(canvas.mask().polygon(bolt), colours.suit, outline=2.0, shade=0)
        canvas.paint(
            canvas.mask().rounded_rect((lx - 6, 356, rx + 6, 374), 6).clip(torso), colours.trim, outline=thin
        )
        canvas.paint(
            canvas.mask().rounded_rect((242, 352, 270, 378), 5), darken(colours.trim, 0.15), outline=thin
        )
        trunks = canvas.mask().rounded_rect((lx - 4, 372, rx + 4, HIP_Y + 6), 10)
        canvas.paint(trunks, colours.pants, outline=thin)
    elif garment == "pirate":
        for y in range(286, 384, 18):
            stripe = canvas.mask().rounded_rect((lx - 30, y, rx + 30, y + 8), 2).clip(torso)
            canvas.paint(stripe, colours.trim, outline=0, shade=0)
        vest_colour = colours.vest or darken(colours.suit, 0.6)
        for side in (-1, 1):
            inner = 256 + side * 16
            outer = 256 + side * 80
            panel = canvas.mask().polygon(
                [(inner, 268), (outer, 262), (outer, 392), (inner + side * 10, 392)]
            )
            canvas.paint(panel.clip(torso), vest_colour, outline=thin, shade=0.12)
            for y in (300, 330):
                canvas.paint(
                    canvas.mask().circle((256 + side * 30, y), 4.5), colours.accent, outline=2, shade=0
                )
        sash = canvas.mask().rounded_rect((lx - 4, 352, rx + 4, 372), 6).clip(torso)
        canvas.paint(sash, colours.trim, outline=thin)
        canvas.paint(
            canvas.mask().polygon([(290, 366), (306, 366), (314, 398), (296, 400)]),
            colours.trim,
            outline=thin,
        )
    elif garment == "chef":
        canvas.paint(canvas.mask().polygon([(214, 262), (298, 262), (256, 304)]), colours.trim, outline=thin)
        canvas.paint(
            canvas.mask().polygon([(240, 298), (272, 298), (264, 318), (248, 318)]),
            colours.trim,
            outline=thin,
        )
        line = canvas.mask().capsule((280, 300), (280, 378), 1.2)
        canvas.paint(line, darken(colours.suit, 0.25), outline=0, shade=0)
        for y in (312, 338, 364):
            for x in (238, 296):
                canvas.paint(canvas.mask().circle((x, y), 5), colours.accent, outline=0, shade=0)
        pocket = canvas.mask().rounded_rect((lx + 12, 300, lx + 34, 306), 2)
        canvas.paint(pocket, darken(colours.suit, 0.2), outline=0, shade=0)
    elif garment == "robe":
        _stars(
            canvas,
            torso,
            colours.accent,
            [(222, 322, 11), (300, 300, 9), (210, 410, 12), (304, 420, 13), (262, 436, 8)],
        )
        rope = canvas.mask().rounded_rect((lx - 12, 368, rx + 12, 380), 6).clip(torso)
        canvas.paint(rope, colours.trim, outline=thin)
        canvas.paint(canvas.mask().capsule((282, 378), (288, 408), 4), colours.trim, outline=thin, shade=0)
        canvas.paint(canvas.mask().circle((289, 412), 7), colours.trim, outline=thin, shade=0)
        collar = canvas.mask().polygon([(226, 262), (286, 262), (256, 300)])
        canvas.paint(collar, darken(colours.suit, 0.3), outline=thin)
    elif garment == "western":
        vest_colour = colours.vest or darken(colours.suit, 0.6)
        for side in (-1, 1):
            inner = 256 + side * 14
            outer = 256 + side * 80
            panel = canvas.mask().polygon([(inner, 292), (outer, 262), (outer, 392), (inner, 392)])
            canvas.paint(panel.clip(torso), vest_colour, outline=thin, shade=0.12)
        badge = canvas.mask().star((222, 322), 17, 8)
        canvas.paint(badge, colours.accent, outline=2.5, shade=0.1)
        canvas.paint(canvas.mask().polygon([(218, 262), (294, 262), (256, 306)]), colours.trim, outline=thin)
        canvas.paint(canvas.mask().circle((256, 268), 9), darken(colours.trim, 0.15), outline=2.5, shade=0)
        belt = canvas.mask().rounded_rect((lx - 4, 368, rx + 4, 384), 4).clip(torso)
        canvas.paint(belt, darken(colours.shoes, 0.2), outline=thin)
        canvas.paint(canvas.mask().rounded_rect((240, 364, 272, 388), 6), colours.accent, outline=thin)
    if garment != "robe":
        waist = canvas.mask().capsule((lx + 2, HIP_Y), (rx - 2, HIP_Y), 2)
        canvas.paint(waist, INK, outline=0, shade=0)
