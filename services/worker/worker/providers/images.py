"""Images on the wire: what we send is downscaled and typed as each API takes it; what we get back is
decoded, never trusted.

Both APIs take JPEG and PNG (Gemini inline data is capped at about 20 MB per request, OpenAI image edits
at 50 MB per file, REFERENCE.md): photos go as JPEG (quality 90, at most 1536 px on the long side),
drawings (anchor, face crop, contact sheets) as PNG (at most 1024 px), which keeps a request with four
references near 1 MB.
"""

from __future__ import annotations

import io

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from shared.errors import ErrorClass
from worker.providers.base import ImageRole, InputImage, ProviderCallError

__all__ = ["DRAWING_MAX_SIDE_PX", "PHOTO_MAX_SIDE_PX", "decode_output", "encode_drawing", "encode_photo"]

PHOTO_MAX_SIDE_PX = 1536
DRAWING_MAX_SIDE_PX = 1024
MAX_OUTPUT_PIXELS = 40_000_000  # a provider image larger than this is refused (a decompression bomb)
MIN_OUTPUT_SIDE_PX = 64  # the image APIs draw 1024 px and more; a smaller "image" is not an answer


def _downscale(image: npt.NDArray[np.uint8], max_side: int) -> npt.NDArray[np.uint8]:
    height, width = image.shape[:2]
    scale = max_side / max(height, width)
    if scale >= 1:
        return image
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return np.asarray(cv2.resize(image, size, interpolation=cv2.INTER_AREA), np.uint8)


def encode_photo(rgb: npt.NDArray[np.uint8], role: ImageRole = "selfie") -> InputImage:
    """An H×W×3 uint8 RGB photo as JPEG (quality 90), at most 1536 px on the long side."""
    out = io.BytesIO()
    Image.fromarray(_downscale(rgb, PHOTO_MAX_SIDE_PX)).save(out, format="JPEG", quality=90)
    return InputImage(data=out.getvalue(), mime="image/jpeg", role=role)


def encode_drawing(
    image: npt.NDArray[np.uint8], role: ImageRole, *, max_side: int = DRAWING_MAX_SIDE_PX
) -> InputImage:
    """An H×W×3 RGB or H×W×4 RGBA drawing as PNG, at most ``max_side`` px on the long side; transparency
    is flattened onto white (image APIs read references as opaque pictures)."""
    small = _downscale(image, max_side)
    if small.shape[2] == 4:
        alpha = small[..., 3:4].astype(np.float32) / 255.0
        small = np.clip(small[..., :3] * alpha + 255.0 * (1.0 - alpha) + 0.5, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(small).save(out, format="PNG", compress_level=3)
    return InputImage(data=out.getvalue(), mime="image/png", role=role)


def decode_output(data: bytes) -> npt.NDArray[np.uint8]:
    """A provider's image as H×W×3 uint8 RGB, or H×W×4 RGBA when it has real transparency.

    Raises:
        ProviderCallError: (``invalid``) the bytes are not an image (not decodable, truncated), or an
            absurdly large or tiny one.
    """
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_OUTPUT_PIXELS or min(image.size) < MIN_OUTPUT_SIDE_PX:
                raise ProviderCallError(ErrorClass.INVALID, f"image of {image.width}×{image.height} px")
            has_alpha = image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info)
            converted = image.convert("RGBA" if has_alpha else "RGB")
            array = np.asarray(converted, dtype=np.uint8).copy()
    except ProviderCallError:
        raise
    except Exception as exc:  # untrusted bytes: Pillow raises OSError, SyntaxError, EOFError, struct.error …
        raise ProviderCallError(
            ErrorClass.INVALID, f"the answer is not a readable image: {type(exc).__name__}: {exc}"
        ) from exc
    if array.ndim == 3 and array.shape[2] == 4 and int(array[..., 3].min()) == 255:
        array = np.ascontiguousarray(array[..., :3])
    return array
