"""Kiosk photo normalisation: untrusted upload bytes in, one bounded 8-bit RGB JPEG out.

The format is decided by the bytes (Pillow's format sniffing, limited to the four formats the kiosk
accepts), never by the file name or the declared content type. Rejections raise
:class:`shared.errors.UploadRejected`; the order of the checks is the order below, so a huge file is
refused before anything is parsed and a decompression bomb before any pixel is decoded.

======================  ======  ==========================================================
code                    status  when
======================  ======  ==========================================================
``file_too_large``      413     more than ``max_bytes`` bytes
``empty_file``          422     zero bytes
``unsupported_format``  415     not JPEG, PNG, WebP or HEIC/HEIF by content
``too_many_pixels``     413     header width × height above ``max_pixels`` (or above Pillow's own
                                decompression-bomb limit), checked before decoding
``corrupt_image``       422     a known format whose data is truncated or broken
======================  ======  ==========================================================

DESIGN.md §4: "JPEG, PNG, HEIC/HEIF, WebP; EXIF orientation applied; max size and max pixels enforced;
decompression bombs rejected".
"""

from __future__ import annotations

import functools
import io
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

from shared.errors import UploadRejected
from shared.imaging.faces import FaceBox, detect_faces, largest_face

__all__ = [
    "ACCEPTED_FORMATS",
    "CheckedPhoto",
    "NormalizedPhoto",
    "check_photo",
    "load_decoders",
    "normalize_photo",
]

ACCEPTED_FORMATS = ("JPEG", "PNG", "WEBP", "HEIF")
MAX_OUTPUT_SIDE_PX = 2048
JPEG_QUALITY = 92
_WHITE = (255, 255, 255)

# Leading bytes of the accepted formats: a file that starts like one of them but that Pillow cannot
# open is damaged (422), anything else is a format we do not take (415).
_SIGNATURES: tuple[tuple[int, bytes], ...] = (
    (0, b"\xff\xd8\xff"),  # JPEG SOI + first marker
    (0, b"\x89PNG\r\n\x1a\n"),
    (8, b"WEBP"),  # RIFF....WEBP
)
# ISO BMFF major brands of HEIC/HEIF stills and sequences (ISO/IEC 23008-12); AVIF ("avif") is not taken.
_HEIF_BRANDS = frozenset(
    {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs", b"mif1", b"msf1", b"mif2"}
)


@dataclass(frozen=True, slots=True)
class NormalizedPhoto:
    """A decoded, upright, 8-bit RGB photo re-encoded as JPEG.

    Attributes:
        jpeg: baseline JPEG bytes, RGB, quality 92, longest side ≤ 2048 px.
        width, height: size of ``jpeg`` in px (after EXIF rotation and downscaling).
        source_format: Pillow's name of the uploaded format: ``JPEG``, ``PNG``, ``WEBP`` or ``HEIF``.
    """

    jpeg: bytes
    width: int
    height: int
    source_format: str


@dataclass(frozen=True, slots=True)
class CheckedPhoto:
    """An upload that passed :func:`check_photo` (picklable: it crosses the photo-check pool's process
    boundary).

    Attributes:
        jpeg: the normalised JPEG bytes (:attr:`NormalizedPhoto.jpeg`), stored as the selfie.
        face: the largest face found in it (:func:`shared.imaging.faces.detect_faces`), in the px grid of
            ``jpeg`` (the JPEG is the very pixels the detector saw, so the same size); ``None`` when none
            was found (only possible with ``require_face`` false). Ingest stores it with the selfie
            (blob ``meta["face"]``, :meth:`FaceBox.to_meta`) and the worker uses it instead of detecting
            again (issue 20).
    """

    jpeg: bytes
    face: FaceBox | None


@functools.cache
def _register_heif() -> None:
    """Teach Pillow HEIC/HEIF (pillow-heif); done once, on first use rather than at import."""
    import pillow_heif

    pillow_heif.register_heif_opener()


def load_decoders() -> None:
    """Register HEIC/HEIF with Pillow now rather than on the first upload (pillow-heif)."""
    _register_heif()


def _is_heif(data: bytes) -> bool:
    return data[4:8] == b"ftyp" and data[8:12] in _HEIF_BRANDS


def _looks_like_accepted_format(data: bytes) -> bool:
    signed = any(data[offset : offset + len(magic)] == magic for offset, magic in _SIGNATURES)
    return signed or _is_heif(data)


def _bmff_is_complete(data: bytes) -> bool:
    """Every top-level ISO BMFF box (ftyp, meta, mdat, …) fits in the file.

    libheif decodes a cut HEIC without complaint and fills the missing tiles with a flat colour, so a
    half-uploaded iPhone photo would become a half-green sticker; the box sizes show the cut.
    """
    offset = 0
    while offset + 8 <= len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        header = 8
        if size == 1:
            if offset + 16 > len(data):
                return False
            size = int.from_bytes(data[offset + 8 : offset + 16], "big")
            header = 16
        elif size == 0:  # the last box runs to the end of the file
            return True
        if size < header or offset + size > len(data):
            return False
        offset += size
    return not any(data[offset:])  # nothing left, or only zero padding


def _open_header(data: bytes, max_pixels: int) -> ImageFile.ImageFile:
    """Parse only the header and check the pixel count; no pixel data is decoded here."""
    _register_heif()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise UploadRejected(
            "too_many_pixels", f"The photo has too many pixels ({exc}).", status=413
        ) from exc
    except UnidentifiedImageError as exc:
        if _looks_like_accepted_format(data):
            raise UploadRejected("corrupt_image", "The photo file is damaged.", status=422) from exc
        raise UploadRejected(
            "unsupported_format", "Only JPEG, PNG, WebP and HEIC photos are accepted.", status=415
        ) from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise UploadRejected("corrupt_image", "The photo file is damaged.", status=422) from exc
    if image.format == "HEIF" and not _bmff_is_complete(data):
        image.close()
        raise UploadRejected("corrupt_image", "The photo file is incomplete.", status=422)
    width, height = image.size
    if width <= 0 or height <= 0:
        raise UploadRejected("corrupt_image", "The photo has no pixels.", status=422)
    if width * height > max_pixels:
        raise UploadRejected(
            "too_many_pixels",
            f"The photo is {width}×{height} px; at most {max_pixels} pixels are accepted.",
            status=413,
        )
    return image


def _decode(image: ImageFile.ImageFile) -> Image.Image:
    """Decode the pixels (JPEG at a reduced DCT scale when that still covers the output size)."""
    if image.format == "JPEG":
        image.draft(image.mode, (MAX_OUTPUT_SIDE_PX, MAX_OUTPUT_SIDE_PX))
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise RuntimeError("PIL.ImageFile.LOAD_TRUNCATED_IMAGES must stay False: cut uploads would pass")
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, EOFError, KeyError, IndexError) as exc:
        raise UploadRejected("corrupt_image", f"The photo file is damaged ({exc}).", status=422) from exc
    try:
        return ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError, KeyError, IndexError, TypeError):
        return image  # unreadable EXIF: the pixels are fine, keep them as stored


def _scale_to_uint8(values: npt.NDArray[np.floating], *, sixteen_bit: bool) -> npt.NDArray[np.uint8]:
    """Map one channel of high-bit-depth or float samples to 0..255 without clipping its range.

    ``sixteen_bit`` samples (modes ``I;16*``) always span 0..65535, however dark the photo; for
    ``I`` and ``F`` the range is guessed from the largest value (0..1, 0..255, 0..65535, or its max).
    """
    finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    top = 65535.0 if sixteen_bit else (float(finite.max()) if finite.size else 0.0)
    if top <= 1.0:
        scale = 255.0  # float images in 0..1
    elif top <= 255.0:
        scale = 1.0
    elif top <= 65535.0:
        scale = 255.0 / 65535.0  # 16-bit samples
    else:
        scale = 255.0 / top
    return np.clip(np.rint(finite * scale), 0, 255).astype(np.uint8)


def _to_rgb(image: Image.Image) -> Image.Image:
    """Any Pillow mode → 8-bit RGB; transparent pixels are composited on white."""
    if image.mode in ("I", "I;16", "I;16L", "I;16B", "I;16N", "F"):
        grey = _scale_to_uint8(np.asarray(image, dtype=np.float64), sixteen_bit=image.mode.startswith("I;16"))
        return Image.fromarray(grey).convert("RGB")
    has_alpha = image.mode in ("RGBA", "RGBa", "LA", "La", "PA") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (*_WHITE, 255))
        canvas.alpha_composite(rgba)
        return canvas.convert("RGB")
    if image.mode == "RGB":
        return image
    return image.convert("RGB")


def _cap_size(image: Image.Image) -> Image.Image:
    if max(image.size) <= MAX_OUTPUT_SIDE_PX:
        return image
    ratio = MAX_OUTPUT_SIDE_PX / max(image.size)
    size = (max(1, round(image.width * ratio)), max(1, round(image.height * ratio)))
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def _normalised(data: bytes, *, max_bytes: int, max_pixels: int) -> tuple[Image.Image, str]:
    if len(data) > max_bytes:
        raise UploadRejected(
            "file_too_large", f"The photo is {len(data)} bytes; at most {max_bytes} are accepted.", status=413
        )
    if not data:
        raise UploadRejected("empty_file", "The uploaded file is empty.", status=422)
    header = _open_header(data, max_pixels)
    source_format = str(header.format)
    with header:
        return _cap_size(_to_rgb(_decode(header))), source_format


def _jpeg(rgb: Image.Image) -> bytes:
    out = io.BytesIO()
    rgb.save(out, format="JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def normalize_photo(data: bytes, *, max_bytes: int, max_pixels: int) -> NormalizedPhoto:
    """Validate and normalise an uploaded photo.

    Args:
        data: the uploaded bytes, untrusted.
        max_bytes: largest accepted upload (bytes).
        max_pixels: largest accepted width × height (px) as declared by the file header.

    Returns:
        The photo upright (EXIF orientation applied), 8-bit RGB, longest side ≤ 2048 px, as JPEG.

    Raises:
        UploadRejected: with the codes and statuses of the module docstring.
    """
    rgb, source_format = _normalised(data, max_bytes=max_bytes, max_pixels=max_pixels)
    return NormalizedPhoto(jpeg=_jpeg(rgb), width=rgb.width, height=rgb.height, source_format=source_format)


def check_photo(data: bytes, *, max_bytes: int, max_pixels: int, require_face: bool) -> CheckedPhoto:
    """The whole photo check of an upload: :func:`normalize_photo`, then face detection on the normalised
    pixels (:func:`shared.imaging.faces.detect_faces`), always, so that the face is found once, here, and
    stored with the photo (issue 20). CPU-bound, ~0.4 CPU-s for a 4 MB photo (issue 12); ingest runs it in
    its photo-check processes (:mod:`ingest.photo_pool`).

    Returns:
        The normalised JPEG and the largest face in it (:class:`CheckedPhoto`; ``face`` is ``None`` only
        when ``require_face`` is false and no face was found).

    Raises:
        UploadRejected: the codes of the module docstring, or 422 ``no_face`` when ``require_face`` and no
            face was found.
    """
    rgb, _source_format = _normalised(data, max_bytes=max_bytes, max_pixels=max_pixels)
    face = largest_face(detect_faces(np.asarray(rgb, dtype=np.uint8)))
    if require_face and face is None:
        raise UploadRejected("no_face", "No face was found in the photo; please take another selfie.")
    return CheckedPhoto(jpeg=_jpeg(rgb), face=face)
