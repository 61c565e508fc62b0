"""Decoding a stored photo to pixels."""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps

from shared.errors import PermanentJobError

__all__ = ["decode_rgb"]


def decode_rgb(image_bytes: bytes) -> npt.NDArray[np.uint8]:
    """Decode a stored selfie (JPEG from ingest, or any format Pillow reads) to H×W×3 uint8 RGB, upright.

    Raises:
        PermanentJobError: the bytes are not a readable image.
    """
    try:
        with Image.open(io.BytesIO(image_bytes)) as image:
            upright = ImageOps.exif_transpose(image)
            return np.asarray(upright.convert("RGB"), dtype=np.uint8).copy()
    except (OSError, SyntaxError, ValueError) as exc:
        raise PermanentJobError(f"selfie cannot be decoded: {exc}") from exc
