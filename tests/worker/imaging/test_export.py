"""Telegram sticker files: one side exactly 512 px, the other ≤ 512, ≤ 512 KB, transparent PNG
(https://core.telegram.org/stickers#static-stickers-and-emoji)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from worker.imaging.export import MAX_STICKER_BYTES, export_sticker

pytestmark = pytest.mark.unit


def figure(width: int, height: int) -> np.ndarray:
    rgba = np.zeros((height, width, 4), np.uint8)
    rgba[height // 4 : 3 * height // 4, width // 4 : 3 * width // 4] = (220, 60, 40, 255)
    return rgba


def opened(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((300, 200), (512, 341)),
        ((200, 300), (341, 512)),
        ((512, 512), (512, 512)),
        ((900, 30), (512, 17)),
        ((10, 3), (512, 154)),
    ],
)
def test_one_side_is_exactly_512_px(size: tuple[int, int], expected: tuple[int, int]) -> None:
    image = opened(export_sticker(figure(*size)))
    assert image.size == expected
    assert max(image.size) == 512 and min(image.size) <= 512


def test_the_background_is_transparent() -> None:
    image = opened(export_sticker(figure(400, 400))).convert("RGBA")
    pixels = np.asarray(image)
    assert pixels[0, 0, 3] == 0 and pixels[-1, -1, 3] == 0
    assert pixels[256, 256, 3] == 255
    assert tuple(pixels[256, 256, :3]) == (220, 60, 40)


def test_a_noisy_sticker_is_squeezed_under_512_kb() -> None:
    noise = np.random.default_rng(5).integers(0, 256, (512, 512, 4), dtype=np.uint8)
    noise[..., 3] = 255
    plain = io.BytesIO()
    Image.fromarray(noise).save(plain, format="PNG")
    assert len(plain.getvalue()) > MAX_STICKER_BYTES  # the plain encoding would be refused
    png = export_sticker(noise)
    assert len(png) <= MAX_STICKER_BYTES
    assert opened(png).size == (512, 512)


def test_an_empty_image_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        export_sticker(np.zeros((0, 10, 4), np.uint8))
