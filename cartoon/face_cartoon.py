"""The guest's face as a cartoon: crop face and hair, smooth, quantise colours, add ink lines.

The look is a flat-shaded comic style that keeps identity: an edge-preserving bilateral filter removes
skin texture, k-means in CIELAB reduces the colours to a few flat areas (blended back with the smoothed
photo so that skin shading and eye colour survive), and an XDoG line drawing (Winnemöller et al.,
"XDoG: an eXtended difference-of-Gaussians compendium", 2012) adds the ink lines of eyes, brows, nose
and mouth. Small line specks are removed so that skin pores do not become dirt.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from cartoon.colors import RGB
from shared.imaging.faces import FaceBox

__all__ = ["CartoonFace", "cartoonize_face", "head_frame"]

# The head frame (:func:`head_frame`) is the box every proportion below is measured in: the face from
# the forehead to the chin. These proportions were tuned on OpenCV's Haar ``frontalface_alt2`` boxes,
# which are that frame; dlib's HOG box (:func:`shared.imaging.faces.detect_faces`) is tighter and sits
# lower. Measured on the 5 face fixtures (shared/fixtures/photos, 2026-12-02), the HOG box in Haar-box
# units has the same centre x (median offset +0.02), its top 0.16 lower (0.12–0.21) and its width and
# height 0.875 (0.76–0.97) of the Haar box's: the medians map one onto the other.
_HOG_TOP = 0.16
_HOG_SIZE = 0.875
# Head crop around the head frame, in frame units: the frame covers forehead to chin, so hair needs
# room above and the ears at the sides.
CROP_WIDTH = 1.46
CROP_TOP = 0.52
CROP_HEIGHT = 1.74
# Eye and mouth positions inside the head frame: the eyes only for a face without landmarks (a box
# built by hand), the mouth always (the 5-point landmark model has no mouth point).
_EYE_Y = 0.40
_EYE_X = (0.31, 0.69)
_MOUTH = (0.5, 0.80)
COLOURS = 12
_HEAD_TOP_MAX = 0.15  # of the crop's height: a segmented head starting below this lost its crown

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class CartoonFace:
    """A stylised head, ready to be placed into an elliptical head shape.

    Attributes:
        rgb: h×w×3 uint8 RGB, the stylised crop; the head ellipse is inscribed in it.
        head: h×w bool, the guest's head (hair, face, ears) cut from the photo background, inside the
            inscribed ellipse.
        eyes: centres of the (screen-left, screen-right) eye in ``rgb`` px.
        eye_width: approximate eye width in ``rgb`` px.
        mouth: mouth centre in ``rgb`` px.
        skin: median skin colour of the cheeks in the stylised crop.
    """

    rgb: npt.NDArray[np.uint8]
    head: npt.NDArray[np.bool_]
    eyes: tuple[Point, Point]
    eye_width: float
    mouth: Point
    skin: RGB


def head_frame(face: FaceBox) -> tuple[float, float, float, float]:
    """The head frame (x, y, w, h px) of a detected face: the box forehead to chin that the cartoon's
    proportions are measured in, from dlib's HOG box (same centre x, top :data:`_HOG_TOP` frame heights
    higher, :data:`_HOG_SIZE` times smaller; measured, see the module's constants)."""
    w, h = face.w / _HOG_SIZE, face.h / _HOG_SIZE
    return (face.x + face.w / 2 - w / 2, face.y - h * _HOG_TOP, w, h)


def _crop_head(
    rgb: npt.NDArray[np.uint8], frame: tuple[float, float, float, float], size: tuple[int, int]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_], float, float, float]:
    """Crop the head box around ``frame`` (:func:`head_frame`), scaled to ``size`` (w, h) px; returns the
    crop, a mask of pixels that were outside the photo, and the mapping (scale, x0, y0) from photo px to
    crop px."""
    fx, fy, fw, fh = frame
    width = fw * CROP_WIDTH
    height = fh * CROP_HEIGHT
    x0 = fx + fw / 2 - width / 2
    y0 = fy - fh * CROP_TOP
    ix0, iy0 = int(np.floor(x0)), int(np.floor(y0))
    ix1, iy1 = int(np.ceil(x0 + width)), int(np.ceil(y0 + height))
    img_h, img_w = rgb.shape[:2]
    pads = (max(0, -iy0), max(0, iy1 - img_h), max(0, -ix0), max(0, ix1 - img_w))
    region = rgb[max(0, iy0) : min(img_h, iy1), max(0, ix0) : min(img_w, ix1)]
    outside = np.zeros(region.shape[:2], np.uint8)
    if any(pads):
        region = np.asarray(cv2.copyMakeBorder(region, *pads, cv2.BORDER_REPLICATE), np.uint8)
        outside = np.asarray(cv2.copyMakeBorder(outside, *pads, cv2.BORDER_CONSTANT, value=255), np.uint8)
    scale = size[1] / region.shape[0]
    shrink = scale < 1
    crop = np.asarray(
        cv2.resize(region, size, interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC), np.uint8
    )
    outside_mask = np.asarray(cv2.resize(outside, size, interpolation=cv2.INTER_NEAREST)) > 0
    return crop, outside_mask, float(scale), float(ix0), float(iy0)


def _fill_outside(
    crop: npt.NDArray[np.uint8], outside: npt.NDArray[np.bool_], face_top: float
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
    """A head cut off by the top of the photo gets its missing crown painted in the hair colour.

    Returns the filled crop and the mask of filled pixels (probable head). Pixels beyond the left,
    right or bottom edge stay replicated; the caller treats them as background.
    """
    crown = outside.copy()
    crown[int(max(0, face_top)) :, :] = False
    if not crown.any():
        return crop, crown
    height, width = crop.shape[:2]
    rows = slice(0, max(1, int(face_top)))
    cols = slice(int(width * 0.25), int(width * 0.75))
    band = crop[rows, cols][~outside[rows, cols]]
    if band.size == 0:
        return crop, crown
    hair = np.median(band.reshape(-1, 3), axis=0).astype(np.uint8)
    out = crop.copy()
    out[crown] = hair
    soft = cv2.GaussianBlur(out, (0, 0), max(2.0, height / 60))
    edge = cv2.dilate(crown.astype(np.uint8), np.ones((9, 9), np.uint8)) > 0
    out[edge] = soft[edge]
    return out, crown


def _quantise(smooth: npt.NDArray[np.uint8], colours: int) -> npt.NDArray[np.uint8]:
    lab = cv2.cvtColor(smooth, cv2.COLOR_RGB2LAB).reshape(-1, 3).astype(np.float32)
    step = max(1, lab.shape[0] // 6000)
    sample = np.ascontiguousarray(lab[::step])
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 0.5)
    cv2.setRNGSeed(7)
    labels_out = np.zeros((sample.shape[0], 1), np.int32)
    _, _, found = cv2.kmeans(sample, colours, labels_out, criteria, 2, cv2.KMEANS_PP_CENTERS)
    centres = np.asarray(found, np.float32)
    # squared distance to every centre: |x|² - 2x·c + |c|², one matrix product
    dist = (centres**2).sum(1)[None, :] - 2.0 * lab @ centres.T
    labels = dist.argmin(1)
    quantised = centres[labels].reshape(smooth.shape).astype(np.uint8)
    return np.asarray(cv2.cvtColor(quantised, cv2.COLOR_LAB2RGB), np.uint8)


def _ink_lines(grey: npt.NDArray[np.uint8], sigma: float) -> npt.NDArray[np.float32]:
    """XDoG line strength 0..1 (1 = ink), specks smaller than a few px removed."""
    g = grey.astype(np.float32) / 255.0
    fine = cv2.GaussianBlur(g, (0, 0), sigma)
    coarse = cv2.GaussianBlur(g, (0, 0), sigma * 1.6)
    dog = fine - 0.98 * coarse
    eps, phi = -0.01, 200.0
    lines = np.where(dog >= eps, 0.0, -np.tanh(phi * (dog - eps))).astype(np.float32)
    solid = (lines > 0.5).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(solid, connectivity=8)
    min_area = max(12, round(grey.size * 0.00015))
    keep = np.zeros(count, bool)
    keep[1:] = stats[1:, cv2.CC_STAT_AREA] >= min_area
    lines *= keep[labels]
    return np.asarray(cv2.GaussianBlur(lines, (3, 3), 0), np.float32)


def _eyes(
    face: FaceBox, box: tuple[float, float, float, float], scale: float, ox: float, oy: float
) -> tuple[Point, Point]:
    """Both eye centres (screen-left, screen-right) in crop px: from the face's landmarks
    (:attr:`FaceBox.eyes`, mapped by ``scale`` and the crop origin ``ox``, ``oy``), else (a face without
    landmarks) a geometric estimate at :data:`_EYE_X`, :data:`_EYE_Y` of the head frame ``box`` (crop px),
    which is where the eyes of a frontal face sit on average and is off for a turned or tilted one."""
    eyes = face.eyes
    if eyes is not None:
        (lx, ly), (rx, ry) = eyes
        return ((lx - ox) * scale, (ly - oy) * scale), ((rx - ox) * scale, (ry - oy) * scale)
    fx, fy, fw, fh = box
    return (fx + fw * _EYE_X[0], fy + fh * _EYE_Y), (fx + fw * _EYE_X[1], fy + fh * _EYE_Y)


def _ellipse_mask(shape: tuple[int, int], centre: Point, axes: tuple[float, float]) -> npt.NDArray[np.uint8]:
    mask = np.zeros(shape, np.uint8)
    cv2.ellipse(
        mask, (round(centre[0]), round(centre[1])), (round(axes[0]), round(axes[1])), 0, 0, 360, 1, -1
    )
    return mask


def _segment_head(
    smooth: npt.NDArray[np.uint8],
    crown: npt.NDArray[np.bool_],
    face_box: tuple[float, float, float, float],
) -> npt.NDArray[np.bool_]:
    """Separate the head (hair, face, ears) from the photo background with GrabCut.

    GrabCut (Rother et al., 2004; ``cv2.grabCut``) is seeded with the face core as certain foreground,
    the crop's inscribed ellipse (and a crown painted in by :func:`_fill_outside`) as probable
    foreground and everything outside the ellipse as certain background. It runs at half resolution.
    When the result is implausible (a sliver, or missing the face core) the plain ellipse is used.
    """
    height, width = smooth.shape[:2]
    ellipse = _ellipse_mask((height, width), (width / 2, height / 2), (width / 2 - 1, height / 2 - 1))
    fx, fy, fw, fh = face_box
    core = _ellipse_mask((height, width), (fx + fw / 2, fy + fh * 0.55), (fw * 0.36, fh * 0.42))
    small = (max(16, width // 2), max(16, height // 2))
    image = cv2.resize(smooth, small, interpolation=cv2.INTER_AREA)
    # Outside the ellipse is certain background (it is cut away anyway, and it teaches GrabCut the
    # backdrop's colours); a head cut off by the photo frame is probable foreground.
    seeds = np.full((small[1], small[0]), cv2.GC_BGD, np.uint8)
    seeds[cv2.resize(ellipse, small, interpolation=cv2.INTER_NEAREST) > 0] = cv2.GC_PR_FGD
    seeds[cv2.resize(crown.astype(np.uint8), small, interpolation=cv2.INTER_NEAREST) > 0] = cv2.GC_PR_FGD
    seeds[cv2.resize(core, small, interpolation=cv2.INTER_NEAREST) > 0] = cv2.GC_FGD
    bgd = np.zeros((1, 65), np.float64)
    fgd = np.zeros((1, 65), np.float64)
    try:
        cv2.grabCut(image, seeds, (0, 0, 1, 1), bgd, fgd, 5, cv2.GC_INIT_WITH_MASK)
    except cv2.error:
        return ellipse > 0
    fg = np.isin(seeds, (cv2.GC_FGD, cv2.GC_PR_FGD)).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=4)
    if count <= 1:
        return ellipse > 0
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    fg = (labels == largest).astype(np.uint8)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))
    fg = np.asarray(cv2.morphologyEx(fg, cv2.MORPH_CLOSE, kernel), np.uint8)
    fg = np.asarray(cv2.morphologyEx(fg, cv2.MORPH_OPEN, kernel), np.uint8)
    contours, _ = cv2.findContours(fg, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    filled = np.zeros_like(fg)
    cv2.drawContours(filled, contours, -1, 1, -1)
    soft = cv2.resize(filled.astype(np.float32), (width, height), interpolation=cv2.INTER_LINEAR)
    soft = cv2.GaussianBlur(soft, (0, 0), max(1.5, width / 120))
    head = (soft > 0.5) & (ellipse > 0)
    rows = np.nonzero(head.any(axis=1))[0]
    if rows.size and rows[0] > _HEAD_TOP_MAX * height:
        # hair (or a hat, or a bald crown) reaches the top of the crop, which leaves room above the
        # brows; a head that stops well below it lost its crown to the background: give it back
        head |= (ellipse > 0) & (np.arange(height)[:, None] <= rows[0] + height // 20)
    # a head is round: an opening with a disc a fifth of the crop wide rounds off the corners a hat brim
    # or the photo's edge leave, and drops drips of neck and collar
    rounding = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, ((width // 5) | 1, (width // 5) | 1))
    head = cv2.morphologyEx(head.astype(np.uint8), cv2.MORPH_OPEN, rounding) > 0
    covered = head[core > 0].mean() if core.any() else 0.0
    if head.sum() < 0.45 * ellipse.sum() or covered < 0.95:
        return ellipse > 0
    return head


def _skin_colour(toon: npt.NDArray[np.uint8], face_box: tuple[float, float, float, float]) -> RGB:
    """The skin colour as the cartoon face shows it: the median of the lit half of the face core
    (forehead to chin, inside the cheeks), so eyes, brows, mouth and shadows do not darken it."""
    fx, fy, fw, fh = face_box
    y0, y1 = max(0, int(fy + fh * 0.15)), max(0, int(fy + fh * 0.9))
    x0, x1 = max(0, int(fx + fw * 0.22)), max(0, int(fx + fw * 0.78))
    core = toon[y0:y1, x0:x1].reshape(-1, 3)
    if core.shape[0] < 16:
        core = toon.reshape(-1, 3)
    luma = core.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    lit = core[luma >= np.percentile(luma, 50)]
    r, g, b = (int(v) for v in np.median(lit, axis=0))
    return (r, g, b)


def _boost(rgb: npt.NDArray[np.uint8], saturation: float) -> npt.NDArray[np.uint8]:
    """Cartoon colours: more saturation, and the lightness range half-way stretched to full."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV).astype(np.float32)
    hsv[..., 1] = np.clip(hsv[..., 1] * saturation, 0, 255)
    value = hsv[..., 2]
    low, high = np.percentile(value, (2, 98))
    if high - low > 20:
        stretched = (value - low) * (255.0 / (high - low))
        hsv[..., 2] = np.clip(0.5 * value + 0.5 * stretched, 0, 255)
    return np.asarray(cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB), np.uint8)


def cartoonize_face(rgb: npt.NDArray[np.uint8], face: FaceBox, size: tuple[int, int]) -> CartoonFace:
    """Crop the head around ``face`` and draw it as a flat-shaded cartoon.

    Args:
        rgb: H×W×3 uint8 RGB photo (upright).
        face: the face to use, in ``rgb`` px, as :func:`shared.imaging.faces.detect_faces` finds it (its
            box places the head crop, its landmarks the eyes). A box without landmarks (built by hand)
            gets its eyes from a geometric estimate instead (:func:`_eyes`), off for a turned face.
        size: output (width, height) px of the head crop; about 1 : 1.19 fits the crop box.

    Returns:
        The stylised crop with eye, mouth and skin estimates for expression overlays.
    """
    frame = head_frame(face)
    crop, outside, scale, ox, oy = _crop_head(rgb, frame, size)
    crop, crown = _fill_outside(crop, outside, (frame[1] - oy) * scale)
    smooth = crop
    for _ in range(2):
        smooth = np.asarray(cv2.bilateralFilter(smooth, 9, 40, 7), np.uint8)
    flat = _quantise(smooth, COLOURS)
    toon = _boost(np.asarray(cv2.addWeighted(flat, 0.6, smooth, 0.4, 0), np.uint8), 1.25)
    grey = np.asarray(cv2.cvtColor(smooth, cv2.COLOR_RGB2GRAY), np.uint8)
    lines = _ink_lines(grey, sigma=max(1.0, size[1] / 290))
    toon = (toon.astype(np.float32) * (1.0 - 0.85 * lines[..., None])).astype(np.uint8)

    box = ((frame[0] - ox) * scale, (frame[1] - oy) * scale, frame[2] * scale, frame[3] * scale)
    fx, fy, fw, fh = box
    mouth = (fx + fw * _MOUTH[0], fy + fh * _MOUTH[1])
    return CartoonFace(
        rgb=toon,
        head=_segment_head(smooth, crown, box),
        eyes=_eyes(face, box, scale, ox, oy),
        eye_width=fw * 0.2,
        mouth=mouth,
        skin=_skin_colour(toon, box),
    )
