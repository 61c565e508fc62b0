"""A small cartoon painter: shapes become masks, masks are painted with a fill, a bold outline and a cel
shade, on a supersampled RGBA canvas.

Coordinates given to every method are in *design px* (the size of the finished figure); the canvas holds
``supersample`` × as many pixels so that hard-edged masks become anti-aliased when :meth:`Canvas.to_rgba`
scales it down. Painting works on the bounding box of each mask only, which keeps a 40-part figure near
a few tens of milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from cartoon.colors import RGB, darken
from shared.imaging.resample import resize_rgba

__all__ = ["INK", "Canvas", "Mask"]

INK: RGB = (34, 28, 38)  # the outline colour: near-black with a touch of purple, softer than pure black
Point = tuple[float, float]


class Mask:
    """A binary shape on a canvas grid, built from primitives (union by default, ``cut`` to subtract)."""

    def __init__(self, canvas: Canvas) -> None:
        self.canvas = canvas
        self.data = np.zeros(canvas.shape, np.uint8)

    def _p(self, point: Point) -> tuple[int, int]:
        return self.canvas.to_px(point)

    def _v(self, value: float) -> int:
        return max(1, round(value * self.canvas.ss))

    def ellipse(
        self, centre: Point, axes: tuple[float, float], angle: float = 0.0, *, value: int = 255
    ) -> Mask:
        """Add a filled ellipse (``axes`` are half-axes in design px, ``angle`` in degrees)."""
        cv2.ellipse(
            self.data, self._p(centre), (self._v(axes[0]), self._v(axes[1])), angle, 0, 360, value, -1
        )
        return self

    def circle(self, centre: Point, radius: float, *, value: int = 255) -> Mask:
        """Add a filled circle."""
        cv2.circle(self.data, self._p(centre), self._v(radius), value, -1)
        return self

    def capsule(self, start: Point, end: Point, radius: float, *, value: int = 255) -> Mask:
        """Add a thick line with round caps (a limb)."""
        cv2.line(self.data, self._p(start), self._p(end), value, self._v(2 * radius))
        cv2.circle(self.data, self._p(start), self._v(radius), value, -1)
        cv2.circle(self.data, self._p(end), self._v(radius), value, -1)
        return self

    def polyline(
        self, points: Sequence[Point], radius: float, *, closed: bool = False, value: int = 255
    ) -> Mask:
        """Add a thick polyline with round joints."""
        pts = np.array([self._p(p) for p in points], np.int32)
        cv2.polylines(self.data, [pts], closed, value, self._v(2 * radius), cv2.LINE_8)
        for p in pts:
            cv2.circle(self.data, (int(p[0]), int(p[1])), self._v(radius), value, -1)
        return self

    def polygon(self, points: Sequence[Point], *, value: int = 255) -> Mask:
        """Add a filled polygon."""
        pts = np.array([self._p(p) for p in points], np.int32)
        cv2.fillPoly(self.data, [pts], value)
        return self

    def rounded_rect(
        self, box: tuple[float, float, float, float], radius: float, *, value: int = 255
    ) -> Mask:
        """Add a filled rectangle ``(x0, y0, x1, y1)`` with rounded corners."""
        x0, y0, x1, y1 = box
        r = min(radius, (x1 - x0) / 2, (y1 - y0) / 2)
        self.polygon([(x0 + r, y0), (x1 - r, y0), (x1 - r, y1), (x0 + r, y1)], value=value)
        self.polygon([(x0, y0 + r), (x1, y0 + r), (x1, y1 - r), (x0, y1 - r)], value=value)
        for cx, cy in ((x0 + r, y0 + r), (x1 - r, y0 + r), (x0 + r, y1 - r), (x1 - r, y1 - r)):
            self.circle((cx, cy), r, value=value)
        return self

    def heart(self, centre: Point, size: float, angle: float = 0.0, *, value: int = 255) -> Mask:
        """Add a heart ``size`` design px wide, centred on ``centre``, rotated by ``angle`` degrees."""
        t = np.linspace(0, 2 * math.pi, 64)
        x = 16 * np.sin(t) ** 3
        y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
        k = size / 34.0
        a = math.radians(angle)
        xr = (x * math.cos(a) - y * math.sin(a)) * k + centre[0]
        yr = (x * math.sin(a) + y * math.cos(a)) * k + centre[1] + size * 0.05
        return self.polygon(list(zip(xr.tolist(), yr.tolist(), strict=True)), value=value)

    def star(
        self,
        centre: Point,
        outer: float,
        inner: float,
        points: int = 5,
        angle: float = 0.0,
        *,
        value: int = 255,
    ) -> Mask:
        """Add an ``points``-pointed star (radii in design px)."""
        pts = []
        for i in range(points * 2):
            r = outer if i % 2 == 0 else inner
            a = math.radians(angle - 90 + i * 180 / points)
            pts.append((centre[0] + r * math.cos(a), centre[1] + r * math.sin(a)))
        return self.polygon(pts, value=value)

    def text(
        self, text: str, origin: Point, height: float, *, weight: float = 0.18, value: int = 255
    ) -> Mask:
        """Add text in a Hershey font; ``origin`` is the bottom-left, ``height`` the cap height (px)."""
        font = cv2.FONT_HERSHEY_DUPLEX
        scale = height * self.canvas.ss / 22.0
        thickness = max(1, round(height * weight * self.canvas.ss))
        cv2.putText(self.data, text, self._p(origin), font, scale, value, thickness, cv2.LINE_8)
        return self

    def arc(
        self,
        centre: Point,
        axes: tuple[float, float],
        start: float,
        end: float,
        width: float,
        *,
        value: int = 255,
    ) -> Mask:
        """Add an elliptical arc stroke from ``start`` to ``end`` degrees (0 = right, clockwise)."""
        axes_px = (self._v(axes[0]), self._v(axes[1]))
        cv2.ellipse(self.data, self._p(centre), axes_px, 0, start, end, value, self._v(width))
        return self

    def bitmap(self, data: npt.NDArray[np.bool_], origin: Point) -> Mask:
        """Add a shape given as an h×w bool array at canvas resolution, top-left at ``origin`` (design px)."""
        ox, oy = self._p(origin)
        h, w = data.shape
        x0, y0 = max(0, ox), max(0, oy)
        x1, y1 = min(self.data.shape[1], ox + w), min(self.data.shape[0], oy + h)
        if x1 > x0 and y1 > y0:
            region = self.data[y0:y1, x0:x1]
            region[data[y0 - oy : y1 - oy, x0 - ox : x1 - ox]] = 255
        return self

    def cut(self, other: Mask) -> Mask:
        """Remove ``other`` from this shape."""
        self.data[other.data > 0] = 0
        return self

    def clip(self, other: Mask) -> Mask:
        """Keep only the part of this shape inside ``other``."""
        self.data[other.data == 0] = 0
        return self


class Canvas:
    """Supersampled RGBA canvas (H×W×4 uint8 at ``supersample`` × the design size)."""

    def __init__(
        self,
        width: int,
        height: int,
        *,
        supersample: int = 2,
        outline: float = 4.5,
        shift: Point = (0.0, 0.0),
    ) -> None:
        self.width = width
        self.height = height
        self.ss = supersample
        self.shift = shift
        self.outline = outline
        self.shape = (height * supersample, width * supersample)
        self.rgba = np.zeros((*self.shape, 4), np.uint8)
        self._kernels: dict[int, npt.NDArray[np.uint8]] = {}

    def mask(self) -> Mask:
        """A new empty shape on this canvas."""
        return Mask(self)

    def to_px(self, point: Point) -> tuple[int, int]:
        """Design px (moved by ``shift``) → canvas px."""
        return (round((point[0] + self.shift[0]) * self.ss), round((point[1] + self.shift[1]) * self.ss))

    def _kernel(self, radius: int) -> npt.NDArray[np.uint8]:
        if radius not in self._kernels:
            self._kernels[radius] = np.asarray(
                cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1)), np.uint8
            )
        return self._kernels[radius]

    def paint(
        self,
        mask: Mask,
        fill: RGB,
        *,
        outline: float | None = None,
        ink: RGB = INK,
        shade: float = 0.16,
        shade_offset: tuple[float, float] = (-6.0, -6.0),
    ) -> None:
        """Paint ``mask`` with ``fill``, a bold ``ink`` outline ``outline`` design px wide (default: the
        canvas' width, 0 for none) and a cel shade (``fill`` darkened by ``shade``) on the side away
        from the light (top left)."""
        width = self.outline if outline is None else outline
        pad = round(width * self.ss) + 2
        x, y, w, h = cv2.boundingRect(mask.data)
        if w == 0 or h == 0:
            return
        x0, y0 = max(0, x - pad), max(0, y - pad)
        x1, y1 = min(self.shape[1], x + w + pad), min(self.shape[0], y + h + pad)
        roi = mask.data[y0:y1, x0:x1] > 0
        target = self.rgba[y0:y1, x0:x1]
        if width > 0:
            grown = cv2.dilate(roi.astype(np.uint8), self._kernel(round(width * self.ss))) > 0
            target[grown] = (*ink, 255)
        target[roi] = (*fill, 255)
        if shade > 0:
            dx = round(shade_offset[0] * self.ss)
            dy = round(shade_offset[1] * self.ss)
            limit = max(1, round(min(w, h) * 0.2))
            dx = int(math.copysign(min(abs(dx), limit), dx))
            dy = int(math.copysign(min(abs(dy), limit), dy))
            moved = np.zeros_like(roi)
            hh, ww = roi.shape
            moved[max(0, dy) : hh + min(0, dy), max(0, dx) : ww + min(0, dx)] = roi[
                max(0, -dy) : hh - max(0, dy), max(0, -dx) : ww - max(0, dx)
            ]
            shadow = roi & ~moved
            target[shadow] = (*darken(fill, shade), 255)

    def tint(self, mask: Mask, colour: RGB, opacity: float, *, blur: float = 4.0) -> None:
        """Blend ``colour`` over already painted pixels inside ``mask`` with a soft edge (``blur``
        design px); transparent pixels stay transparent (for blush, glints, glow)."""
        x, y, w, h = cv2.boundingRect(mask.data)
        if w == 0 or h == 0:
            return
        pad = round(blur * self.ss * 3) + 1
        x0, y0 = max(0, x - pad), max(0, y - pad)
        x1, y1 = min(self.shape[1], x + w + pad), min(self.shape[0], y + h + pad)
        weight = mask.data[y0:y1, x0:x1].astype(np.float32) / 255.0
        if blur > 0:
            weight = np.asarray(cv2.GaussianBlur(weight, (0, 0), blur * self.ss), np.float32)
        target = self.rgba[y0:y1, x0:x1]
        weight *= opacity * (target[..., 3] > 0)
        mixed = target[..., :3] * (1 - weight[..., None]) + np.array(colour, np.float32) * weight[..., None]
        target[..., :3] = np.clip(mixed + 0.5, 0, 255).astype(np.uint8)

    def paint_image(self, mask: Mask, image: npt.NDArray[np.uint8], origin: Point) -> None:
        """Copy ``image`` (h×w×3 uint8, already at canvas resolution) with its top-left at ``origin``
        (design px), only where ``mask`` is set; adds no outline (paint one underneath first)."""
        ox, oy = self.to_px(origin)
        h, w = image.shape[:2]
        x0, y0 = max(0, ox), max(0, oy)
        x1, y1 = min(self.shape[1], ox + w), min(self.shape[0], oy + h)
        if x1 <= x0 or y1 <= y0:
            return
        sel = mask.data[y0:y1, x0:x1] > 0
        patch = image[y0 - oy : y1 - oy, x0 - ox : x1 - ox]
        target = self.rgba[y0:y1, x0:x1]
        target[sel, :3] = patch[sel]
        target[sel, 3] = 255

    def overlay(self, layer: Canvas, *, rotate: float = 0.0, pivot: Point = (0.0, 0.0)) -> None:
        """Alpha-composite another canvas of the same size on top, rotated by ``rotate`` degrees
        (counter-clockwise) around ``pivot`` (design px)."""
        src = layer.rgba
        if rotate:
            px, py = self.to_px(pivot)
            matrix = cv2.getRotationMatrix2D((float(px), float(py)), rotate, 1.0)
            src = np.asarray(
                cv2.warpAffine(src, matrix, (self.shape[1], self.shape[0]), flags=cv2.INTER_LINEAR), np.uint8
            )
        x, y, w, h = cv2.boundingRect(src[..., 3])
        if w == 0 or h == 0:
            return
        top = src[y : y + h, x : x + w]
        base = self.rgba[y : y + h, x : x + w]
        a_top = top[..., 3].astype(np.float32) / 255.0
        a_base = base[..., 3].astype(np.float32) / 255.0
        w_base = a_base * (1.0 - a_top)
        out_a = a_top + w_base
        # straight-alpha "over": colour = (top·a_top + base·a_base·(1 − a_top)) / out_a
        rgb = cv2.blendLinear(
            np.ascontiguousarray(top[..., :3]),
            np.ascontiguousarray(base[..., :3]),
            a_top + 1e-6,
            w_base + 1e-6,
        )
        base[..., :3] = rgb
        base[..., 3] = np.clip(out_a * 255.0 + 0.5, 0, 255).astype(np.uint8)

    def to_rgba(self) -> npt.NDArray[np.uint8]:
        """The canvas scaled down to its design size: H×W×4 uint8 RGBA, anti-aliased, straight alpha."""
        return resize_rgba(self.rgba, (self.width, self.height))
