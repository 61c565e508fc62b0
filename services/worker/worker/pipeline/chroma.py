"""Green-screen keying of sticker sheets (spec/002 "Cut and chroma key").

AI providers draw no transparency, so every sheet comes on a green backdrop, and none of them paints
exactly ``#00FF00``: the green is off by a few levels, shaded, sometimes a gradient. So the backdrop is
*measured*, never assumed:

1. The sheet border (figures are asked to stay clear of it) gives a first backdrop colour: the median of
   its greenish pixels.
2. Pixels that are "backdrop-like" and connected to the border are the backdrop; on them a smooth
   quadratic colour model ``B(x, y)`` is fitted, so shading and gradients are followed. Soft shadows
   that figures cast on the backdrop keep its chromaticity ``rgb / (r + g + b)`` and count as backdrop.
3. With that model each pixel gets a distance to the local backdrop and a green-excess ratio
   ``(G − max(R, B)) / (G_B − max(R_B, B_B))``. Backdrop-like regions enclosed by a figure are removed
   only when they really are backdrop (the gap between an arm and the body); green clothing enclosed
   by the figure is kept.
4. Alpha is hard (0 or 255) except in a thin band along the figure/backdrop boundary, where the green
   excess gives a soft alpha (a mixed pixel ``C = αF + (1−α)B`` has green excess ``≈ (1−α)·excess(B)``
   when the figure colour ``F`` is not green itself), the Vlahos idea behind every chroma keyer.
5. Despill: edge pixels are un-mixed, ``F = (C − (1−α)B) / α``, and their green is limited to
   ``max(R, B)``, so no green fringe survives on the anti-aliased edge; thin green structures inside a
   figure (backdrop glimpsed through a 1–2 px gap) get the same green limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

__all__ = ["Backdrop", "estimate_backdrop", "key_green"]

_MIN_GREEN_EXCESS = 40.0  # a border pixel must be at least this much greener than red/blue (0..255)
_LOOSE_RATIO = 0.75
_SOFT_LO, _SOFT_HI = 0.06, 0.94
_SHADOW_CHROMA = 0.05  # max distance of r,g,b / (r+g+b) from the backdrop's for a cast shadow
_SHADOW_MIN_LEVEL = 0.25  # a shadow keeps at least this fraction of the backdrop's green
_SPILL_RATIO = 0.08  # figure pixels at least this green (relative to the backdrop) may be spill


@dataclass(frozen=True, slots=True)
class Backdrop:
    """The measured backdrop of one sheet.

    Attributes:
        colour: median RGB of the greenish border pixels (floats, 0..255).
        coefficients: 6×3 quadratic colour model over normalised (x, y) ∈ [-1, 1]², terms
            1, x, y, x², xy, y².
        noise: 90th percentile of the RGB distance between backdrop pixels and the model (0..441).
        is_green: False when the border is not green at all (the provider ignored the brief).
    """

    colour: tuple[float, float, float]
    coefficients: npt.NDArray[np.float64]
    noise: float
    is_green: bool

    def render(self, height: int, width: int) -> npt.NDArray[np.float32]:
        """The model evaluated on the whole sheet: H×W×3 float32 RGB."""
        # the model is smooth: evaluate on a coarse grid and interpolate
        small_h, small_w = max(2, height // 8), max(2, width // 8)
        basis = _basis(small_h, small_w)
        small = np.zeros((small_h, small_w, 3), np.float32)
        for k, term in enumerate(basis):
            small += term[..., None] * self.coefficients[k].astype(np.float32)
        return np.asarray(cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR), np.float32)


def _basis(height: int, width: int) -> list[npt.NDArray[np.float32]]:
    ys = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    xs = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    ones = np.ones((height, width), np.float32)
    x = np.broadcast_to(xs, (height, width))
    y = np.broadcast_to(ys, (height, width))
    return [ones, x, y, x * x, x * y, y * y]


def _green_excess(rgb: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return rgb[..., 1] - np.maximum(rgb[..., 0], rgb[..., 2])


def _border_mask(height: int, width: int) -> npt.NDArray[np.bool_]:
    frame = max(2, round(min(height, width) * 0.012))
    mask = np.zeros((height, width), bool)
    mask[:frame, :] = mask[-frame:, :] = True
    mask[:, :frame] = mask[:, -frame:] = True
    return mask


def _border_connected(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    count, labels = cv2.connectedComponents(mask.astype(np.uint8), connectivity=4)
    if count <= 1:
        return np.zeros_like(mask)
    edge = np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]])
    touching = np.zeros(count, bool)
    touching[np.unique(edge)] = True
    touching[0] = False
    return touching[labels]


def _fit_model(
    rgb: npt.NDArray[np.float32], region: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float64], float]:
    height, width = region.shape
    ys, xs = np.nonzero(region)
    step = max(1, ys.size // 40000)
    ys, xs = ys[::step], xs[::step]
    nx = xs / max(1, width - 1) * 2.0 - 1.0
    ny = ys / max(1, height - 1) * 2.0 - 1.0
    design = np.stack([np.ones_like(nx), nx, ny, nx * nx, nx * ny, ny * ny], axis=1)
    target = rgb[ys, xs].astype(np.float64)
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    residual = np.linalg.norm(design @ coefficients - target, axis=1)
    keep = residual <= np.percentile(residual, 90)
    if keep.sum() >= 12:
        coefficients, *_ = np.linalg.lstsq(design[keep], target[keep], rcond=None)
        residual = np.linalg.norm(design @ coefficients - target, axis=1)
    return coefficients, float(np.percentile(residual, 90))


def estimate_backdrop(rgb: npt.NDArray[np.uint8]) -> Backdrop:
    """Measure the green backdrop of a sheet from its border.

    Args:
        rgb: H×W×3 uint8 RGB sheet.
    """
    height, width = rgb.shape[:2]
    data = rgb.astype(np.float32)
    excess = _green_excess(data)
    border = _border_mask(height, width)
    greenish = border & (excess >= _MIN_GREEN_EXCESS)
    is_green = greenish.sum() >= 0.3 * border.sum()
    sample = data[greenish] if is_green else data[border]
    colour = np.median(sample, axis=0)
    colour_excess = max(1.0, float(colour[1] - max(colour[0], colour[2])))
    distance = np.linalg.norm(data - colour, axis=2)
    loose = (excess >= _LOOSE_RATIO * colour_excess) | (distance <= 40.0)
    region = _border_connected(loose) if is_green else border
    if region.sum() < 12:
        region = border
    coefficients, noise = _fit_model(data, region)
    return Backdrop(
        colour=(float(colour[0]), float(colour[1]), float(colour[2])),
        coefficients=coefficients,
        noise=max(4.0, noise),
        is_green=bool(is_green),
    )


def _same_chromaticity(
    data: npt.NDArray[np.float32], model: npt.NDArray[np.float32]
) -> npt.NDArray[np.bool_]:
    """Pixels with the backdrop's chromaticity ``rgb / (r + g + b)``: the backdrop in a cast shadow
    or a highlight, whatever its brightness."""
    total = np.maximum(data.sum(axis=2, keepdims=True), 1.0)
    model_total = np.maximum(model.sum(axis=2, keepdims=True), 1.0)
    delta = data / total - model / model_total
    return np.einsum("ijk,ijk->ij", delta, delta) <= _SHADOW_CHROMA**2


def key_green(
    rgb: npt.NDArray[np.uint8], *, backdrop: Backdrop | None = None, edge_band_px: int | None = None
) -> npt.NDArray[np.uint8]:
    """Remove the green backdrop of a sheet.

    Args:
        rgb: H×W×3 uint8 RGB sheet.
        backdrop: a measured backdrop (default: :func:`estimate_backdrop` of ``rgb``).
        edge_band_px: width (px) of the soft-alpha band on each side of a figure's edge; default
            scales with the sheet (3 px at 1024 px, 6 px at 2048 px).

    Returns:
        H×W×4 uint8 RGBA: backdrop transparent (RGB 0), figures opaque, anti-aliased and despilled
        edges. A sheet whose border is not green comes back fully transparent (nothing can be keyed
        safely; the cut reports every figure missing).
    """
    height, width = rgb.shape[:2]
    backdrop = backdrop or estimate_backdrop(rgb)
    if edge_band_px is None:
        edge_band_px = max(2, round(min(height, width) / 340))
    out = np.zeros((height, width, 4), np.uint8)
    if not backdrop.is_green:
        return out
    data = rgb.astype(np.float32)
    model = backdrop.render(height, width)
    diff = data - model
    distance = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    model_excess = np.maximum(_green_excess(model), 1.0)
    ratio = _green_excess(data) / model_excess
    tolerance = max(24.0, 3.0 * backdrop.noise)

    strict = distance <= tolerance
    shadow = _same_chromaticity(data, model) & (data[..., 1] >= _SHADOW_MIN_LEVEL * model[..., 1])
    like = strict | shadow | ((ratio >= _LOOSE_RATIO) & (distance <= 3.0 * tolerance))
    outer = _border_connected(like)
    enclosed = like & ~outer
    background = outer.copy()
    if enclosed.any():
        count, labels, stats, _ = cv2.connectedComponentsWithStats(enclosed.astype(np.uint8), connectivity=4)
        strict_count = np.bincount(labels[strict & enclosed], minlength=count)
        areas = stats[:, cv2.CC_STAT_AREA]
        # a hole shows the backdrop itself; a sliver (a few px between two outlines) is too small to
        # be green clothing, whatever its mixed colour
        sliver = max(16, (3 * edge_band_px) ** 2)
        is_hole = ((strict_count >= 0.6 * np.maximum(areas, 1)) & (areas >= 6)) | (areas <= sliver)
        is_hole[0] = False
        background |= is_hole[labels]

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * edge_band_px + 1, 2 * edge_band_px + 1))
    near_bg = cv2.dilate(background.astype(np.uint8), kernel) > 0
    near_fg = cv2.dilate((~background).astype(np.uint8), kernel) > 0
    band = near_bg & near_fg

    alpha = np.where(background, 0.0, 1.0).astype(np.float32)
    soft = np.clip((1.0 - ratio - _SOFT_LO) / (_SOFT_HI - _SOFT_LO), 0.0, 1.0)
    alpha[band] = soft[band]
    alpha[band & shadow] = 0.0

    colour = data
    # thin green structures inside a figure (a 1–2 px gap between two outlines) are spill, not
    # clothing: clothing survives an opening, a sliver does not
    greenish = ((ratio >= _SPILL_RATIO) & ~background).astype(np.uint8)
    thin = (greenish > 0) & (cv2.morphologyEx(greenish, cv2.MORPH_OPEN, kernel) == 0)
    if thin.any():
        colour = data.copy()
        colour[thin, 1] = np.minimum(colour[thin, 1], np.maximum(colour[thin, 0], colour[thin, 2]))
    edge = band & (alpha > 0)
    if edge.any():
        a = np.maximum(alpha[edge], 0.15)[:, None]
        unmixed = (data[edge] - (1.0 - a) * model[edge]) / a
        unmixed = np.clip(unmixed, 0.0, 255.0)
        unmixed[:, 1] = np.minimum(unmixed[:, 1], np.maximum(unmixed[:, 0], unmixed[:, 2]))
        colour = colour.copy() if colour is data else colour
        colour[edge] = unmixed
    out[..., :3] = np.clip(colour + 0.5, 0, 255).astype(np.uint8)
    out[..., 3] = np.clip(alpha * 255.0 + 0.5, 0, 255).astype(np.uint8)
    out[out[..., 3] == 0, :3] = 0
    return out
