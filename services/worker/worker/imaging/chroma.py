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
_HOLE_OFFSET = 6.0  # a hole's mean colour is at most this far (RGB) from the model's, or the noise
_HOLE_SHADOW_CHROMA = 0.01  # ... or it is the backdrop in shadow: same chromaticity, darker
_FIT_SAMPLES = 8000  # backdrop pixels the quadratic model is fitted on (it has 6 terms per channel)
_SPILL_RATIO = 0.08  # figure pixels at least this green (relative to the backdrop) may be spill
_BAND_ROWS = 64  # rows of a sheet whose per-pixel tests are computed together (about 64 K pixels)


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
        return np.dstack(self.render_planes(height, width))

    def render_planes(self, height: int, width: int) -> tuple[npt.NDArray[np.float32], ...]:
        """The model evaluated on the whole sheet: three H×W float32 planes (R, G, B)."""
        # the model is smooth: evaluate on a coarse grid and interpolate
        small_h, small_w = max(2, height // 8), max(2, width // 8)
        basis = _basis(small_h, small_w)
        planes = []
        for channel in range(3):
            small = np.zeros((small_h, small_w), np.float32)
            for k, term in enumerate(basis):
                small += term * np.float32(self.coefficients[k, channel])
            planes.append(
                np.asarray(cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR), np.float32)
            )
        return tuple(planes)


def _basis(height: int, width: int) -> list[npt.NDArray[np.float32]]:
    ys = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    xs = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    ones = np.ones((height, width), np.float32)
    x = np.broadcast_to(xs, (height, width))
    y = np.broadcast_to(ys, (height, width))
    return [ones, x, y, x * x, x * y, y * y]


def _border_mask(height: int, width: int) -> npt.NDArray[np.bool_]:
    frame = max(2, round(min(height, width) * 0.012))
    mask = np.zeros((height, width), bool)
    mask[:frame, :] = mask[-frame:, :] = True
    mask[:, :frame] = mask[:, -frame:] = True
    return mask


def _border_pixels(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """The N×3 pixels under :func:`_border_mask`, each once (by slices, not a full-size mask; in another
    order than the mask's, which the order-free statistics read from them do not see)."""
    height, width = rgb.shape[:2]
    frame = max(2, round(min(height, width) * 0.012))
    if 2 * frame >= height or 2 * frame >= width:
        return rgb[_border_mask(height, width)]
    parts = (rgb[:frame], rgb[-frame:], rgb[frame:-frame, :frame], rgb[frame:-frame, -frame:])
    return np.concatenate([part.reshape(-1, 3) for part in parts])


def _border_connected(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """The pixels of ``mask`` 4-connected to the image border: framed in a 1 px ring of set pixels, every
    component touching the border joins the ring's, so one flood fill from a corner marks them all (no
    full-size label map)."""
    framed = cv2.copyMakeBorder(mask.view(np.uint8), 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=1)
    cv2.floodFill(framed, None, (0, 0), 2, flags=4)
    return np.asarray(framed[1:-1, 1:-1] == 2)


def _solve(design: npt.NDArray[np.float64], target: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Least squares by the normal equations (6 unknowns per channel: a 6×6 solve, not an SVD)."""
    gram = design.T @ design + np.eye(design.shape[1]) * 1e-9
    return np.asarray(np.linalg.solve(gram, design.T @ target))


def _fit_model(
    rgb: npt.NDArray[np.float32], region: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.float64], float]:
    height, width = region.shape
    ys, xs = np.nonzero(region)
    step = max(1, ys.size // _FIT_SAMPLES)
    ys, xs = ys[::step], xs[::step]
    nx = xs / max(1, width - 1) * 2.0 - 1.0
    ny = ys / max(1, height - 1) * 2.0 - 1.0
    design = np.stack([np.ones_like(nx), nx, ny, nx * nx, nx * ny, ny * ny], axis=1)
    target = rgb[ys, xs].astype(np.float64)
    coefficients = _solve(design, target)
    residual = np.linalg.norm(design @ coefficients - target, axis=1)
    keep = residual <= np.percentile(residual, 90)
    if keep.sum() >= 12:
        coefficients = _solve(design[keep], target[keep])
        residual = np.linalg.norm(design @ coefficients - target, axis=1)
    return coefficients, float(np.percentile(residual, 90))


def _planes(image: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.float32], ...]:
    """The three colour planes of an H×W×3 uint8 image as contiguous float32 arrays (element-wise work on
    planes is several times faster than reductions over a trailing axis of 3)."""
    return tuple(plane.astype(np.float32) for plane in cv2.split(image))


@dataclass(slots=True)
class _PixelTests:
    """Per-pixel backdrop tests of a sheet (H×W each).

    Attributes:
        strict: within the tolerance of the model colour.
        like: backdrop-like (strict, the backdrop in shadow, or green enough and not too far).
        ratio: green excess relative to the model's (see the module docstring); float32.
        shadow: the model's chromaticity, not much darker: a cast shadow or a highlight.
    """

    strict: npt.NDArray[np.bool_]
    like: npt.NDArray[np.bool_]
    ratio: npt.NDArray[np.float32]
    shadow: npt.NDArray[np.bool_]

    @staticmethod
    def measure(
        rgb: npt.NDArray[np.uint8], model: tuple[npt.NDArray[np.float32], ...], tolerance: float
    ) -> _PixelTests:
        """The tests of ``rgb`` (…×3 uint8) against ``model`` (three float32 arrays of its shape)."""
        r, g, b = (rgb[..., channel].astype(np.float32) for channel in range(3))
        mr, mg, mb = model
        distance2 = (r - mr) ** 2 + (g - mg) ** 2 + (b - mb) ** 2
        model_excess = np.maximum(mg - np.maximum(mr, mb), 1.0)
        ratio = (g - np.maximum(r, b)) / model_excess
        strict = distance2 <= tolerance**2
        # same chromaticity rgb / (r + g + b) as the backdrop: the backdrop in a cast shadow or a highlight
        inv_total = 1.0 / np.maximum(r + g + b, 1.0)
        inv_model = 1.0 / np.maximum(mr + mg + mb, 1.0)
        chroma2 = (r * inv_total - mr * inv_model) ** 2 + (g * inv_total - mg * inv_model) ** 2
        chroma2 += (b * inv_total - mb * inv_model) ** 2
        shadow = (chroma2 <= _SHADOW_CHROMA**2) & (g >= _SHADOW_MIN_LEVEL * mg)
        like = strict | shadow | ((ratio >= _LOOSE_RATIO) & (distance2 <= 9.0 * tolerance**2))
        return _PixelTests(strict=strict, like=like, ratio=np.asarray(ratio, np.float32), shadow=shadow)

    @staticmethod
    def of_sheet(
        rgb: npt.NDArray[np.uint8], model: tuple[npt.NDArray[np.float32], ...], tolerance: float
    ) -> _PixelTests:
        """:meth:`measure` of a whole H×W×3 sheet, done in bands of :data:`_BAND_ROWS` rows: the dozen
        temporaries of a band stay in the CPU cache and reuse the same memory, where a whole sheet's
        (4 MB each at 1024 px) are fresh pages every time (the tests alone: 24 ms a 1024 px sheet at
        once, 6.5 ms in bands, measured on the 2-core dev machine); the same values."""
        height, width = rgb.shape[:2]
        tests = _PixelTests(
            strict=np.empty((height, width), bool),
            like=np.empty((height, width), bool),
            ratio=np.empty((height, width), np.float32),
            shadow=np.empty((height, width), bool),
        )
        for top in range(0, height, _BAND_ROWS):
            rows = slice(top, top + _BAND_ROWS)
            band = _PixelTests.measure(rgb[rows], tuple(plane[rows] for plane in model), tolerance)
            tests.strict[rows] = band.strict
            tests.like[rows] = band.like
            tests.ratio[rows] = band.ratio
            tests.shadow[rows] = band.shadow
        return tests


def _column_medians(pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """``np.median(pixels.astype(np.float32), axis=0)`` of N×3 uint8 pixels (N ≥ 1), read off each
    column's 256-level histogram: the same float32 values (the middle one, or the mean of the middle two:
    exact for integers), without sorting a strided column (10× slower on a sheet's border, measured)."""
    count = pixels.shape[0]
    medians = np.empty(3, np.float32)
    for channel in range(3):
        cumulative = np.cumsum(np.bincount(pixels[:, channel], minlength=256))
        # the value at sorted position k is the first level whose cumulative count exceeds k
        low = np.float32(np.searchsorted(cumulative, (count - 1) // 2, side="right"))
        high = np.float32(np.searchsorted(cumulative, count // 2, side="right"))
        medians[channel] = (low + high) / np.float32(2.0)
    return medians


def estimate_backdrop(rgb: npt.NDArray[np.uint8]) -> Backdrop:
    """Measure the green backdrop of a sheet from its border.

    The backdrop region (greenish pixels connected to the border) is found and the colour model fitted on a
    quarter-size copy (the model is smooth); the noise is measured on full-size pixels.

    Args:
        rgb: H×W×3 uint8 RGB sheet.
    """
    height, width = rgb.shape[:2]
    border = _border_pixels(rgb)
    frame = border.astype(np.float32)
    greenish = frame[:, 1] - np.maximum(frame[:, 0], frame[:, 2]) >= _MIN_GREEN_EXCESS
    is_green = greenish.sum() >= 0.3 * frame.shape[0]
    colour = _column_medians(border[greenish] if is_green else border)
    if not is_green:
        coefficients, noise = _fit_model(rgb.astype(np.float32), _border_mask(height, width))
        return Backdrop(
            colour=(float(colour[0]), float(colour[1]), float(colour[2])),
            coefficients=coefficients,
            noise=max(4.0, noise),
            is_green=False,
        )
    scale = max(1, min(height, width) // 256)
    small_size = (max(8, width // scale), max(8, height // scale))
    small = np.asarray(cv2.resize(rgb, small_size, interpolation=cv2.INTER_AREA), np.uint8)
    sr, sg, sb = _planes(small)
    colour_excess = max(1.0, float(colour[1] - max(colour[0], colour[2])))
    distance2 = (sr - colour[0]) ** 2 + (sg - colour[1]) ** 2 + (sb - colour[2]) ** 2
    loose = (sg - np.maximum(sr, sb) >= _LOOSE_RATIO * colour_excess) | (distance2 <= 40.0**2)
    small_border = _border_mask(small_size[1], small_size[0])
    region = _border_connected(loose)
    if region.sum() < 12:
        region = small_border
    coefficients, _ = _fit_model(small.astype(np.float32), region)
    # the noise of full-size backdrop pixels (a quarter-size copy averages it away)
    interior = cv2.erode(region.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    small_ys, small_xs = np.nonzero(interior)
    if small_ys.size >= 12:
        step = max(1, small_ys.size // _FIT_SAMPLES)
        ys = np.minimum(((small_ys[::step] + 0.5) * height / small_size[1]).astype(np.intp), height - 1)
        xs = np.minimum(((small_xs[::step] + 0.5) * width / small_size[0]).astype(np.intp), width - 1)
        nx = xs / max(1, width - 1) * 2.0 - 1.0
        ny = ys / max(1, height - 1) * 2.0 - 1.0
        design = np.stack([np.ones_like(nx), nx, ny, nx * nx, nx * ny, ny * ny], axis=1)
        residual = np.linalg.norm(design @ coefficients - rgb[ys, xs].astype(np.float64), axis=1)
        noise = float(np.percentile(residual, 90))
    else:
        noise = 4.0
    return Backdrop(
        colour=(float(colour[0]), float(colour[1]), float(colour[2])),
        coefficients=coefficients,
        noise=max(4.0, noise),
        is_green=True,
    )


def _hole_components(
    enclosed: npt.NDArray[np.bool_],
    strict: npt.NDArray[np.bool_],
    data: tuple[npt.NDArray[np.uint8], ...],
    model: tuple[npt.NDArray[np.float32], ...],
    noise: float,
    edge_band_px: int,
) -> npt.NDArray[np.bool_]:
    """Which enclosed backdrop-like regions are holes (backdrop seen through the figure).

    A hole's pixels are near the model and, on average, on it (or on its shadow); green clothing painted
    near the backdrop's colour is off by a steady amount (a shade), which averaging over the region
    reveals even where single pixels are within the noise. A sliver (a few px between two outlines) is
    too small to be clothing.
    """
    # labels only (OpenCV's stats cost five times the labelling); the areas are counted here
    count, labels = cv2.connectedComponents(enclosed.astype(np.uint8), connectivity=4)
    where = np.flatnonzero(enclosed)
    inside = labels.ravel().take(where)
    strict_count = np.bincount(inside, strict.ravel().take(where), count)
    areas = np.bincount(inside, minlength=count)
    size = np.maximum(areas, 1).astype(np.float64)
    mean_data = np.stack([np.bincount(inside, p.ravel().take(where), count) for p in data], 1) / size[:, None]
    mean_model = (
        np.stack([np.bincount(inside, p.ravel().take(where), count) for p in model], 1) / size[:, None]
    )
    offset = np.linalg.norm(mean_data - mean_model, axis=1)
    chroma = mean_data / np.maximum(mean_data.sum(1, keepdims=True), 1.0)
    model_chroma = mean_model / np.maximum(mean_model.sum(1, keepdims=True), 1.0)
    shadowed = (np.linalg.norm(chroma - model_chroma, axis=1) <= _HOLE_SHADOW_CHROMA) & (
        mean_data[:, 1] <= mean_model[:, 1]
    )
    on_backdrop = (offset <= max(_HOLE_OFFSET, noise)) | shadowed
    sliver = max(16, (3 * edge_band_px) ** 2)
    is_hole = ((strict_count >= 0.6 * size) & (areas >= 6) & on_backdrop) | (areas <= sliver)
    is_hole[0] = False
    holes = np.zeros(enclosed.shape, bool)  # set on enclosed pixels only (label 0 is never a hole)
    holes.ravel()[where] = is_hole[inside]
    return holes


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
    if not backdrop.is_green:
        return np.zeros((height, width, 4), np.uint8)
    # uint8 planes (fresh copies, written at the end): the holes' sums and the edge's float32
    # arithmetic promote them to the same values
    data = tuple(np.asarray(plane, np.uint8) for plane in cv2.split(rgb))
    model = backdrop.render_planes(height, width)
    tolerance = max(24.0, 3.0 * backdrop.noise)
    tests = _PixelTests.of_sheet(rgb, model, tolerance)
    strict, like, ratio, shadow = tests.strict, tests.like, tests.ratio, tests.shadow
    outer = _border_connected(like)
    enclosed = like & ~outer
    background = outer
    if enclosed.any():
        background = outer | _hole_components(enclosed, strict, data, model, backdrop.noise, edge_band_px)

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * edge_band_px + 1, 2 * edge_band_px + 1))
    background_u8 = background.view(np.uint8)
    near_bg = cv2.dilate(background_u8, kernel) > 0
    near_fg = cv2.erode(background_u8, kernel) == 0
    band = near_bg & near_fg

    alpha = (~background).view(np.uint8) * np.uint8(255)  # 0 on the backdrop, 255 elsewhere
    band_at = np.flatnonzero(band)
    soft = np.clip((1.0 - ratio.ravel().take(band_at) - _SOFT_LO) / (_SOFT_HI - _SOFT_LO), 0.0, 1.0)
    soft[shadow.ravel().take(band_at)] = 0.0
    alpha.ravel()[band_at] = (soft * 255.0 + 0.5).astype(np.uint8)

    visible_band = soft > 0
    edge = band_at[visible_band]
    unmixed = []
    if edge.size:
        # un-mix the edge: C = a·F + (1 − a)·B, so F = (C − (1 − a)·B) / a, and no green above max(R, B)
        a = np.maximum(soft[visible_band], 0.15)
        unmixed = [
            np.clip((plane.ravel().take(edge) - (1.0 - a) * back.ravel().take(edge)) / a, 0.0, 255.0)
            for plane, back in zip(data, model, strict=True)
        ]
        unmixed[1] = np.minimum(unmixed[1], np.maximum(unmixed[0], unmixed[2]))
    # the sheet's own planes become the output from here on (all reads of the original colours are done)
    red, green, blue = data
    # thin green structures inside a figure (a 1–2 px gap between two outlines) are spill, not
    # clothing: clothing survives an opening, a sliver does not
    greenish = ((ratio >= _SPILL_RATIO) & ~background).astype(np.uint8)
    thin = np.flatnonzero((greenish > 0) & (cv2.morphologyEx(greenish, cv2.MORPH_OPEN, kernel) == 0))
    if thin.size:
        flat_green = green.ravel()
        flat_green[thin] = np.minimum(flat_green[thin], np.maximum(red.ravel()[thin], blue.ravel()[thin]))
    for plane, values in zip((red, green, blue), unmixed, strict=False):
        plane.ravel()[edge] = (values + 0.5).astype(np.uint8)
    # RGB 0 where alpha is 0 (a masked operation leaves the pixels outside its mask at 0)
    keyed = cv2.merge([red, green, blue, alpha])
    return np.asarray(cv2.bitwise_and(keyed, keyed, mask=alpha), np.uint8)
