"""The ``local`` provider: answers every call kind offline (DESIGN.md §5), so every variant runs without
keys; the default when no key is set. Drawing and measuring run in a thread (CPU-bound)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from shared.outfits import Outfit
from worker.providers.base import CallUsage, ImageRequest, VisionRequest
from worker.providers.offline import answer_vision, draw_request, encode_png
from worker.providers.prompts import parse_vision_prompt

__all__ = ["LocalProvider"]


class LocalProvider:
    """Draws with the ``local`` renderer and answers vision calls from pixels; costs nothing.

    Args:
        catalog: the outfits by id.
    """

    name = "local"
    image_model = "local"
    vision_model = "local"

    def __init__(self, catalog: Mapping[str, Outfit]) -> None:
        self._catalog = catalog

    async def generate_image(self, request: ImageRequest, *, timeout_s: float) -> bytes:
        """A PNG of what ``request.spec`` describes.

        Raises:
            NoFaceError: the guest's photo has no face (permanent).
        """
        images = [(image.role, image.data) for image in request.images]

        def draw() -> bytes:
            return encode_png(draw_request(request.kind, request.spec, images, self._catalog))

        return await asyncio.to_thread(draw)

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage]:
        """What :func:`worker.providers.offline.answer_vision` measures."""
        images = [(image.role, image.data) for image in request.images]
        _kind, _grid, count = parse_vision_prompt(request.prompt)
        answer = await asyncio.to_thread(answer_vision, request.kind, images, request.contact_grid, count)
        return answer, CallUsage()

    async def aclose(self) -> None:
        """Nothing to release."""
