"""The ``local`` provider: answers every call kind offline (DESIGN.md §5) with the :mod:`cartoon` engine,
so every variant runs without keys; the default when no key is set. Drawing and measuring run in a
thread (CPU-bound)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from cartoon.grammar import parse_vision_prompt
from cartoon.offline import UnanswerableRequest, answer_vision, draw_request, encode_png
from shared.errors import ErrorClass
from shared.outfits import Outfit
from worker.providers.base import CallUsage, ImageRequest, ProviderCallError, VisionRequest

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

    async def generate_image(self, request: ImageRequest, *, timeout_s: float) -> tuple[bytes, CallUsage]:
        """A PNG of what ``request.spec`` describes (no tokens: the offline renderer bills nothing).

        Raises:
            NoFaceError: the guest's photo has no face (permanent).
            ProviderCallError: (``invalid``) an unknown outfit or pose in the spec.
        """
        images = [(image.role, image.data) for image in request.images]

        def draw() -> bytes:
            return encode_png(draw_request(request.kind, request.spec, images, self._catalog))

        try:
            return await asyncio.to_thread(draw), CallUsage()
        except UnanswerableRequest as exc:
            raise ProviderCallError(ErrorClass.INVALID, str(exc)) from exc

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage]:
        """What :func:`cartoon.offline.answer_vision` measures.

        Raises:
            ProviderCallError: (``invalid``) a passport of a photo without a face.
        """
        images = [(image.role, image.data) for image in request.images]
        _kind, _grid, count = parse_vision_prompt(request.prompt)
        try:
            answer = await asyncio.to_thread(answer_vision, request.kind, images, request.contact_grid, count)
        except UnanswerableRequest as exc:
            raise ProviderCallError(ErrorClass.INVALID, str(exc)) from exc
        return answer, CallUsage()

    async def aclose(self) -> None:
        """Nothing to release."""
