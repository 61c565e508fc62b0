"""normalize_photo: real fixture photos, every rejection code, mode conversions, decompression bombs."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageFile

from ingest.photo import normalize_photo
from shared.errors import UploadRejected

pytestmark = pytest.mark.unit

# the team kit beside the repo (../shared), as in CI
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
MAX_BYTES = 15 * 1024 * 1024
MAX_PIXELS = 40_000_000


def fixture_bytes(name: str) -> bytes:
    path = PHOTOS / name
    assert path.exists(), (
        f"fixture photo {path} is missing: ../shared/fixtures/photos must sit beside the repo"
    )
    return path.read_bytes()


def normalize(data: bytes, **limits: int):  # type: ignore[no-untyped-def]
    return normalize_photo(
        data, max_bytes=limits.get("max_bytes", MAX_BYTES), max_pixels=limits.get("max_pixels", MAX_PIXELS)
    )


def decoded(photo_jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(photo_jpeg)) as image:
        assert image.format == "JPEG"
        assert image.mode == "RGB"
        return np.asarray(image)


def encode(image: Image.Image, fmt: str, **params: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **params)
    return out.getvalue()


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width``×``height`` px (one compressed row of data)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("name", "size", "source_format"),
    [
        ("astronaut-portrait.png", (512, 512), "PNG"),
        ("child-face-paint.png", (768, 512), "PNG"),
        ("exif-orient-6-face.jpg", (128, 128), "JPEG"),
        ("face-older-man-white-hair.jpg", (1200, 1200), "JPEG"),
        ("face-woman-red-hat.png", (512, 768), "PNG"),
        ("heic-iphone-pug.heic", (2048, 1536), "HEIF"),
        ("png-16bit-welder-low-light.png", (1024, 684), "PNG"),
    ],
)
def test_every_real_fixture_becomes_an_rgb_jpeg(name: str, size: tuple[int, int], source_format: str) -> None:
    photo = normalize(fixture_bytes(name))
    pixels = decoded(photo.jpeg)
    assert (photo.width, photo.height) == size
    assert pixels.shape == (size[1], size[0], 3)
    assert photo.source_format == source_format
    assert 10 < pixels.mean() < 245


def test_heic_is_decoded_and_capped_to_2048_px() -> None:
    photo = normalize(fixture_bytes("heic-iphone-pug.heic"))
    assert photo.source_format == "HEIF"
    assert max(photo.width, photo.height) == 2048


def test_exif_orientation_of_the_fixture_is_applied() -> None:
    data = fixture_bytes("exif-orient-6-face.jpg")
    with Image.open(io.BytesIO(data)) as raw_image:
        raw = np.asarray(raw_image.convert("RGB")).astype(np.float32)
    upright = decoded(normalize(data).jpeg).astype(np.float32)
    # Orientation 6 means "rotate 90° clockwise to display".
    assert np.abs(upright - np.rot90(raw, k=-1)).mean() < 6
    assert np.abs(upright - raw).mean() > 20


def test_exif_rotation_swaps_width_and_height() -> None:
    image = Image.new("RGB", (60, 40), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 60, 20))  # red top half
    exif = Image.Exif()
    exif[0x0112] = 6
    photo = normalize(encode(image, "JPEG", exif=exif.tobytes(), quality=95))
    pixels = decoded(photo.jpeg).astype(int)
    assert (photo.width, photo.height) == (40, 60)
    # after a 90° clockwise turn the red (former top) half is on the right
    assert pixels[30, 35, 0] > 200 > pixels[30, 35, 2]
    assert pixels[30, 5, 2] > 200 > pixels[30, 5, 0]


def test_16bit_png_is_scaled_not_clipped() -> None:
    data = fixture_bytes("png-16bit-welder-low-light.png")
    raw16 = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert raw16.dtype == np.uint16
    expected = cv2.cvtColor((raw16.astype(np.float32) / 257.0), cv2.COLOR_BGR2RGB)
    pixels = decoded(normalize(data).jpeg).astype(np.float32)
    assert abs(pixels.mean() - expected.mean()) < 2.0
    assert np.abs(pixels - expected).mean() < 4.0
    # a dark night photo: neither crushed to black nor blown to white
    assert (pixels >= 250).mean() < 0.02
    assert 10 < pixels.mean() < 60


def test_16bit_greyscale_keeps_its_full_range() -> None:
    ramp = np.tile(np.linspace(0, 65535, 256).astype(np.uint16), (8, 1))
    image = Image.fromarray(ramp)
    assert image.mode.startswith("I;16")
    pixels = decoded(normalize(encode(image, "PNG")).jpeg).astype(int)
    row = pixels[4, :, 0]
    assert row[0] < 8
    assert row[-1] > 247
    assert abs(int(row[128]) - 128) < 10


def test_dark_16bit_greyscale_is_not_brightened() -> None:
    dark = np.full((16, 16), 5000, np.uint16)  # 5000/65535 ≈ 19/255
    pixels = decoded(normalize(encode(Image.fromarray(dark), "PNG")).jpeg).astype(int)
    assert abs(int(pixels.mean()) - 19) <= 3


@pytest.mark.parametrize(("mode", "fmt"), [("RGBA", "PNG"), ("LA", "PNG"), ("P", "PNG"), ("RGBA", "WEBP")])
def test_transparency_is_composited_on_white(mode: str, fmt: str) -> None:
    image = Image.new("RGBA", (32, 32), (0, 0, 0, 0))
    image.paste((200, 30, 30, 255), (8, 8, 24, 24))
    if mode == "P":
        converted = image.convert("P", palette=Image.Palette.ADAPTIVE)
        converted.info["transparency"] = converted.getpixel((0, 0))
    else:
        converted = image.convert(mode)
    pixels = decoded(
        normalize(encode(converted, fmt, lossless=True) if fmt == "WEBP" else encode(converted, fmt)).jpeg
    )
    assert pixels[2, 2].min() > 245  # transparent corner → white, not black
    assert pixels[16, 16].max() < 215  # the opaque square keeps its colour


def test_cmyk_jpeg_becomes_rgb() -> None:
    image = Image.new("CMYK", (24, 24), (0, 255, 255, 0))  # pure red ink
    pixels = decoded(normalize(encode(image, "JPEG")).jpeg).astype(int)
    r, g, b = pixels[12, 12]
    assert r > 200 and g < 60 and b < 60


def test_webp_is_accepted() -> None:
    image = Image.new("RGB", (40, 30), (20, 120, 220))
    photo = normalize(encode(image, "WEBP"))
    assert photo.source_format == "WEBP"
    assert (photo.width, photo.height) == (40, 30)


def test_large_photo_is_capped_at_2048_px() -> None:
    image = Image.new("RGB", (3000, 1000), (90, 90, 90))
    photo = normalize(encode(image, "PNG"))
    assert (photo.width, photo.height) == (2048, 683)


def test_truncated_jpeg_is_corrupt_image() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(fixture_bytes("truncated-jpeg.jpg"))
    assert (caught.value.code, caught.value.status) == ("corrupt_image", 422)
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


def test_cut_png_is_corrupt_image() -> None:
    data = encode(Image.new("RGB", (64, 64), (1, 2, 3)), "PNG")
    with pytest.raises(UploadRejected) as caught:
        normalize(data[: len(data) // 2])
    assert caught.value.code == "corrupt_image"


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.999])
def test_cut_heic_is_corrupt_image_not_a_half_green_photo(keep: float) -> None:
    # libheif decodes a cut grid image and fills the missing tiles; the container's box sizes tell
    data = fixture_bytes("heic-iphone-pug.heic")
    with pytest.raises(UploadRejected) as caught:
        normalize(data[: int(len(data) * keep)])
    assert (caught.value.code, caught.value.status) == ("corrupt_image", 422)


def test_avif_is_not_taken_for_heic() -> None:
    avif_header = b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf" + b"\x00" * 64
    with pytest.raises(UploadRejected) as caught:
        normalize(avif_header)
    assert (caught.value.code, caught.value.status) == ("unsupported_format", 415)


def test_damaged_header_of_a_known_format_is_corrupt_image() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    assert (caught.value.code, caught.value.status) == ("corrupt_image", 422)


def test_empty_upload_is_empty_file() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(b"")
    assert (caught.value.code, caught.value.status) == ("empty_file", 422)


def test_random_bytes_are_unsupported_format() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert (caught.value.code, caught.value.status) == ("unsupported_format", 415)


@pytest.mark.parametrize("fmt", ["GIF", "BMP", "TIFF"])
def test_other_real_image_formats_are_unsupported(fmt: str) -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(encode(Image.new("RGB", (16, 16), (9, 9, 9)), fmt))
    assert (caught.value.code, caught.value.status) == ("unsupported_format", 415)


def test_format_is_decided_by_content_not_by_name() -> None:
    # a PNG is a PNG whatever the upload called it: the function never sees a name or content type
    photo = normalize(encode(Image.new("RGB", (16, 16), (9, 9, 9)), "PNG"))
    assert photo.source_format == "PNG"


def test_oversize_upload_is_rejected_before_parsing() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(b"\x00" * 2048, max_bytes=1024)
    assert (caught.value.code, caught.value.status) == ("file_too_large", 413)


@pytest.mark.parametrize("side", [50_000, 10_000])
def test_decompression_bomb_is_too_many_pixels_without_decoding(side: int) -> None:
    bomb = png_claiming(side, side)
    assert len(bomb) < 200
    tracemalloc.start()
    try:
        with pytest.raises(UploadRejected) as caught:
            normalize(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (caught.value.code, caught.value.status) == ("too_many_pixels", 413)
    assert peak < 5 * 1024 * 1024  # the claimed image would need gigabytes


def test_pixel_limit_is_checked_from_the_header() -> None:
    with pytest.raises(UploadRejected) as caught:
        normalize(png_claiming(3000, 2000), max_pixels=5_000_000)
    assert caught.value.code == "too_many_pixels"
