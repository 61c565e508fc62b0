"""What the simulator answers: images drawn by the :mod:`cartoon` engine from the request's selfie (read
from the prompt with :mod:`cartoon.grammar`, the way a model reads it), with imperfections on demand, and
vision answers measured from pixels (:mod:`cartoon.offline`) unless a test scripted them. A prompt the
grammar cannot read, or naming an outfit or pose the engine does not know, is a
:class:`simulators.ai.handling.RejectedRequest` (the provider's 400)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from cartoon.figure import draw_figure
from cartoon.grammar import ImageRole, ParsedImagePrompt, parse_image_prompt, parse_vision_prompt
from cartoon.offline import (
    UnanswerableRequest,
    answer_vision,
    cartoon_face,
    draw_request,
    encode_png,
    source_photo,
)
from cartoon.poses import pose_named
from shared.errors import NoFaceError
from shared.outfits import Outfit
from simulators.ai.handling import RejectedRequest
from simulators.ai.imperfect import compose_sheet

__all__ = ["draw_image", "read_image_prompt", "vision_answer"]


def read_image_prompt(prompt: str) -> ParsedImagePrompt:
    """The image prompt read with :func:`cartoon.grammar.parse_image_prompt`.

    Raises:
        RejectedRequest: the prompt is not one the grammar reads.
    """
    try:
        return parse_image_prompt(prompt)
    except ValueError as exc:
        raise RejectedRequest(f"cannot read the image prompt: {exc}", param="prompt") from exc


#: How many drawn PNGs :func:`draw_image` keeps (2K sheets are ~1-3 MB each).
DRAWN_CACHE_SIZE = 16
_drawn: OrderedDict[bytes, bytes] = OrderedDict()
_drawn_lock = threading.Lock()


def _request_key(
    parsed: ParsedImagePrompt,
    prompt: str,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    imperfections: Sequence[str],
) -> bytes:
    """SHA-256 over everything a drawing depends on: the prompt, each image's role and bytes, the
    imperfections and the named outfit's definition (drawing is deterministic: figures are seeded by
    their place in the grid)."""
    outfit = catalog.get(parsed.spec.outfit_id)
    digest = hashlib.sha256()
    for part in (prompt, "\0".join(imperfections), outfit.model_dump_json() if outfit is not None else "-"):
        digest.update(part.encode())
        digest.update(b"\xff")
    for role, data in images:
        digest.update(f"{role}:{len(data)}:".encode())
        digest.update(data)
    return digest.digest()


def draw_image(
    prompt: str,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    imperfections: Sequence[str] = (),
) -> tuple[bytes, ParsedImagePrompt]:
    """A PNG for an image prompt, and what the prompt asked for. The same request gets the same bytes,
    drawn once: the last :data:`DRAWN_CACHE_SIZE` drawings are kept (a test suite asks for the same
    sheets of the same selfie again and again; drawing a 2K sheet costs ~1 CPU-s).

    Raises:
        RejectedRequest: the prompt is not one the grammar reads, or names an unknown outfit or pose.
    """
    parsed = read_image_prompt(prompt)
    key = _request_key(parsed, prompt, images, catalog, imperfections)
    with _drawn_lock:
        png = _drawn.get(key)
        if png is not None:
            _drawn.move_to_end(key)
            return png, parsed
    png = _draw(parsed, images, catalog, imperfections)
    with _drawn_lock:
        _drawn[key] = png
        while len(_drawn) > DRAWN_CACHE_SIZE:
            _drawn.popitem(last=False)
    return png, parsed


def _draw(
    parsed: ParsedImagePrompt,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    imperfections: Sequence[str],
) -> bytes:
    roles = parsed.roles or tuple(role for role, _data in images)
    labelled = [(roles[k] if k < len(roles) else role, data) for k, (role, data) in enumerate(images)]
    spec = parsed.spec
    try:
        if not imperfections or spec.cols * spec.rows < 2:
            return encode_png(draw_request(parsed.kind, spec, labelled, catalog, faceless_ok=True))
        poses = [pose_named(name) if name else None for name in spec.poses]
    except (UnanswerableRequest, KeyError) as exc:
        raise RejectedRequest(f"cannot draw the request: {exc}", param="prompt") from exc
    outfit = catalog.get(spec.outfit_id)
    if outfit is None:
        raise RejectedRequest(f"unknown outfit {spec.outfit_id!r}", param="prompt")
    photo = source_photo(labelled)
    face = None
    if photo is not None:
        try:
            face = cartoon_face(photo)
        except NoFaceError:
            face = None
    figures = [
        draw_figure(face, outfit, pose, seed=k, parts="head" if spec.heads_only else "all")
        if pose is not None
        else None
        for k, pose in enumerate(poses)
    ]
    sheet = compose_sheet(figures, spec.cols, spec.rows, kinds=imperfections)
    return encode_png(sheet)


def vision_answer(prompt: str, images: Sequence[tuple[ImageRole, bytes]]) -> tuple[str, dict[str, Any]]:
    """(kind, JSON answer) for a vision prompt, measured from the images.

    Raises:
        RejectedRequest: the prompt is not one the grammar reads, or there is nothing to measure (a
            passport of a faceless photo).
    """
    try:
        kind, grid, count = parse_vision_prompt(prompt)
        return kind, answer_vision(kind, images, grid, count)
    except ValueError as exc:  # UnanswerableRequest is a ValueError
        raise RejectedRequest(str(exc), param="input") from exc
