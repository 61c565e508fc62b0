"""Colour helpers: hex parsing and simple shade arithmetic in 8-bit sRGB."""

from __future__ import annotations

__all__ = ["RGB", "darken", "hex_to_rgb", "lighten", "mix"]

RGB = tuple[int, int, int]


def hex_to_rgb(value: str) -> RGB:
    """``#RRGGBB`` → (r, g, b) with 0..255 ints."""
    text = value.lstrip("#")
    if len(text) != 6:
        raise ValueError(f"not a #RRGGBB colour: {value!r}")
    return (int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16))


def darken(colour: RGB, amount: float) -> RGB:
    """Move ``colour`` towards black by ``amount`` (0..1)."""
    return mix(colour, (0, 0, 0), amount)


def lighten(colour: RGB, amount: float) -> RGB:
    """Move ``colour`` towards white by ``amount`` (0..1)."""
    return mix(colour, (255, 255, 255), amount)


def mix(a: RGB, b: RGB, t: float) -> RGB:
    """Linear blend ``a·(1-t) + b·t`` per channel."""
    return (
        round(a[0] + (b[0] - a[0]) * t),
        round(a[1] + (b[1] - a[1]) * t),
        round(a[2] + (b[2] - a[2]) * t),
    )
