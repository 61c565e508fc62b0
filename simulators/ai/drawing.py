"""What the simulator answers: images drawn by the ``local`` renderer from the request's selfie (read from
the prompt the way a model reads it), with imperfections on demand, and vision answers measured from
pixels (:mod:`worker.providers.offline`) unless a test scripted them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.errors import NoFaceError
from shared.outfits import Outfit
from simulators.ai.imperfect import compose_sheet
from worker.pipeline.figure import draw_figure
from worker.pipeline.poses import pose_named
from worker.providers.base import ImageRole
from worker.providers.offline import answer_vision, cartoon_face, draw_request, encode_png, source_photo
from worker.providers.prompts import ParsedImagePrompt, parse_image_prompt, parse_vision_prompt

__all__ = ["draw_image", "parse_image_prompt", "vision_answer"]


def draw_image(
    prompt: str,
    images: Sequence[tuple[ImageRole, bytes]],
    catalog: Mapping[str, Outfit],
    imperfections: Sequence[str] = (),
) -> tuple[bytes, ParsedImagePrompt]:
    """A PNG for an image prompt, and what the prompt asked for.

    Raises:
        ValueError: the prompt is not one of ours (answered 400 ``INVALID_ARGUMENT``).
    """
    parsed = parse_image_prompt(prompt)
    roles = parsed.roles or tuple(role for role, _data in images)
    labelled = [(roles[k] if k < len(roles) else role, data) for k, (role, data) in enumerate(images)]
    spec = parsed.spec
    if not imperfections or spec.cols * spec.rows < 2:
        return encode_png(draw_request(parsed.kind, spec, labelled, catalog, faceless_ok=True)), parsed
    outfit = catalog.get(spec.outfit_id)
    if outfit is None:
        raise ValueError(f"unknown outfit {spec.outfit_id}")
    photo = source_photo(labelled)
    face = None
    if photo is not None:
        try:
            face = cartoon_face(photo)
        except NoFaceError:
            face = None
    figures = [
        draw_figure(face, outfit, pose_named(name), seed=k, parts="head" if spec.heads_only else "all")
        if name
        else None
        for k, name in enumerate(spec.poses)
    ]
    sheet = compose_sheet(figures, spec.cols, spec.rows, kinds=imperfections)
    return encode_png(sheet), parsed


def vision_answer(prompt: str, images: Sequence[tuple[ImageRole, bytes]]) -> tuple[str, dict[str, Any]]:
    """(kind, JSON answer) for a vision prompt, measured from the images.

    Raises:
        ValueError: the prompt is not one of ours.
        worker.providers.base.ProviderCallError: nothing to measure (a passport of a faceless photo).
    """
    kind, grid, count = parse_vision_prompt(prompt)
    return kind, answer_vision(kind, images, grid, count)
