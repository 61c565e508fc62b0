"""Answering every call kind from pixels, without a model: the drawing and the vision answers shared by
the worker's ``local`` provider and the AI provider simulator (``simulators.ai``).

Images are drawn by the engine (:mod:`cartoon.sheets`) from the guest's photo among the request's images
(the selfie, else the face crop, else the anchor), so they look like the person. Vision answers come
from :mod:`cartoon.appearance`. A request the engine cannot answer raises :class:`UnanswerableRequest`;
each caller turns it into its own failure (the ``local`` provider's ``invalid`` class, the simulator's
400).
"""

from __future__ import annotations

import functools
import hashlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from cartoon.appearance import contact_cells, measure_appearance, skin_outliers
from cartoon.face_cartoon import CartoonFace
from cartoon.grammar import DrawSpec, ImageKind, ImageRole
from cartoon.poses import pose_named
from cartoon.sheets import draw_grid, prepare_face
from shared.errors import NoFaceError
from shared.imaging.decode import decode_rgb
from shared.imaging.lab import Lab, hex_to_lab, mean_lab, skin_mask
from shared.outfits import Outfit

__all__ = [
    "UnanswerableRequest",
    "answer_vision",
    "cartoon_face",
    "draw_request",
    "encode_png",
    "source_photo",
]


class UnanswerableRequest(ValueError):
    """The request names an outfit or a pose the engine does not know, or asks for a passport of a photo
    without a face."""


_PHOTO_ORDER: tuple[ImageRole, ...] = ("selfie", "face", "anchor", "reference")


def encode_png(rgb: npt.NDArray[np.uint8]) -> bytes:
    """H×W×3 (or ×4) uint8 as PNG, fast compression (a wire format, not a file to keep)."""
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="PNG", compress_level=1)
    return out.getvalue()


def source_photo(images: Sequence[tuple[ImageRole, bytes]]) -> bytes | None:
    """The image to draw the guest from: the selfie, else the face crop, else the anchor."""
    for wanted in _PHOTO_ORDER:
        for role, data in images:
            if role == wanted:
                return data
    return images[0][1] if images else None


@functools.lru_cache(maxsize=8)
def _cartoon_face(photo_sha1: str, photo: bytes) -> CartoonFace:
    return prepare_face(decode_rgb(photo))


def cartoon_face(photo: bytes) -> CartoonFace:
    """The cartoon head of ``photo`` (cached: a job asks for it a dozen times).

    Raises:
        NoFaceError: no face in the photo.
    """
    return _cartoon_face(hashlib.sha1(photo).hexdigest(), photo)


def draw_request(
    kind: ImageKind,
    spec: DrawSpec,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    *,
    faceless_ok: bool = False,
) -> npt.NDArray[np.uint8]:
    """Draw what an image request asks for, on pure green.

    Args:
        kind: ``sheet``, ``heads``, ``anchor`` or ``figure``.
        spec: outfit, grid and poses.
        images: the request's (role, bytes) images.
        catalog: outfits by id.
        faceless_ok: draw a faceless figure when the photo has no face (the simulator: a model draws
            something anyway) instead of raising.

    Returns:
        (rows·512)×(cols·512)×3 uint8 RGB.

    Raises:
        NoFaceError: no face in the photo (unless ``faceless_ok``).
        UnanswerableRequest: an unknown outfit or pose in the request.
    """
    outfit = catalog.get(spec.outfit_id)
    if outfit is None:
        raise UnanswerableRequest(f"unknown outfit {spec.outfit_id!r}")
    try:
        poses = [pose_named(name) if name else None for name in spec.poses]
    except KeyError as exc:
        raise UnanswerableRequest(f"unknown pose {exc}") from exc
    photo = source_photo(images)
    face: CartoonFace | None = None
    if photo is not None:
        try:
            face = cartoon_face(photo)
        except NoFaceError:
            if not faceless_ok:
                raise
    elif not faceless_ok:
        raise NoFaceError("no photo of the guest in the request")
    heads = kind == "heads" or spec.heads_only
    return draw_grid(face, outfit, poses, spec.cols, spec.rows, parts="head" if heads else "all")


def _rgba(data: bytes) -> npt.NDArray[np.uint8]:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGBA"), np.uint8).copy()


def _reference_skin(data: bytes) -> Lab | None:
    """The skin of a QA reference: the passport's of a photo, else the skin pixels of a drawing."""
    rgb = _rgba(data)[..., :3]
    passport = measure_appearance(rgb)
    if passport is not None:
        return hex_to_lab(str(passport["skin_tone_hex"]))
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
    return mean_lab(rgba, skin_mask(rgba))


def answer_vision(
    kind: str, images: Sequence[tuple[ImageRole, bytes]], contact_grid: tuple[int, int], count: int
) -> dict[str, Any]:
    """The JSON a vision model would answer to a request of ``kind``.

    Args:
        kind: ``passport``, ``verify``, ``sheet_qa`` or ``pack_qa``.
        images: the request's (role, bytes) images, in order.
        contact_grid: (cols, rows) of the QA contact sheets.
        count: stickers on the contact sheets (QA).

    Raises:
        UnanswerableRequest: a passport asked for a photo without a face.
    """
    if kind == "passport":
        passport = measure_appearance(_rgba(images[0][1])[..., :3])
        if passport is None:
            raise UnanswerableRequest("no face in the photo")
        return passport
    if kind == "verify":
        return {"match": True, "mismatches": []}
    reference = _reference_skin(images[0][1])
    cells: list[npt.NDArray[np.uint8]] = []
    for _role, data in images[1:]:
        cells += contact_cells(_rgba(data)[..., :3], *contact_grid)
    cells = cells[: count or len(cells)]
    if reference is None:
        return {"outliers": []}
    return {"outliers": skin_outliers(reference, cells)}
