"""What the simulator answers: images drawn by the :mod:`cartoon` engine from the request's selfie (read
from the prompt with :mod:`cartoon.grammar`, the way a model reads it), with imperfections on demand, and
vision answers measured from pixels (:mod:`cartoon.offline`) unless a test scripted them. A prompt the
grammar cannot read, or naming an outfit or pose the engine does not know, is a
:class:`simulators.ai.handling.RejectedRequest` (the provider's 400)."""

from __future__ import annotations

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


def draw_image(
    prompt: str,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    imperfections: Sequence[str] = (),
) -> tuple[bytes, ParsedImagePrompt]:
    """A PNG for an image prompt, and what the prompt asked for.

    Raises:
        RejectedRequest: the prompt is not one the grammar reads, or names an unknown outfit or pose.
    """
    parsed = read_image_prompt(prompt)
    roles = parsed.roles or tuple(role for role, _data in images)
    labelled = [(roles[k] if k < len(roles) else role, data) for k, (role, data) in enumerate(images)]
    spec = parsed.spec
    try:
        if not imperfections or spec.cols * spec.rows < 2:
            return encode_png(draw_request(parsed.kind, spec, labelled, catalog, faceless_ok=True)), parsed
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
    return encode_png(sheet), parsed


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
