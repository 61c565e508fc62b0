"""What a provider is asked and what it answers: the request types, the provider protocol and the one
exception every provider adapter raises.

Each request carries both the prompt an AI model reads and a :class:`DrawSpec`, the same content in a
structured form, which the offline ``local`` provider draws directly (the AI provider simulator rebuilds
it from the prompt, as a model would read it: :func:`cartoon.grammar.parse_image_prompt`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cartoon.grammar import DrawSpec, ImageKind, ImageRole
from shared.ai_models import TokenUsage
from shared.errors import ErrorClass, StickerBoothError
from shared.logging import redact

__all__ = [
    "CallUsage",
    "DrawSpec",
    "ImageKind",
    "ImageRequest",
    "ImageRole",
    "InputImage",
    "Provider",
    "ProviderCallError",
    "VisionKind",
    "VisionRequest",
    "json_object",
]

VisionKind = Literal["passport", "verify", "sheet_qa", "pack_qa"]
ImageSize = Literal["1K", "2K"]
Aspect = Literal["1:1", "3:2", "2:3", "4:3"]


@dataclass(frozen=True, slots=True)
class InputImage:
    """An image sent with a request, already downscaled and encoded for the wire
    (:mod:`worker.providers.images`).

    Attributes:
        data: encoded bytes (JPEG for photos, PNG for drawings).
        mime: ``image/jpeg`` or ``image/png``.
        role: what the prompt calls it (``Image 1 is the anchor …``).
    """

    data: bytes
    mime: str
    role: ImageRole


@dataclass(frozen=True, slots=True)
class ImageRequest:
    """One image to generate.

    Attributes:
        kind: ``anchor`` (portrait), ``sheet`` (figures on green), ``heads`` (composite heads on green),
            ``figure`` (one figure on green, a single-figure regeneration).
        prompt: the text a model reads.
        images: reference images, in the order the prompt names them.
        size: ``1K`` or ``2K`` (spec/002: anchor and single figures 1K, sheets 2K).
        aspect: ``1:1``, ``3:2``, ``2:3`` or ``4:3`` (the one-sheet layout ``1x12``).
        spec: the same request, structured (for the offline renderer).
    """

    kind: ImageKind
    prompt: str
    images: tuple[InputImage, ...]
    size: ImageSize
    aspect: Aspect
    spec: DrawSpec


@dataclass(frozen=True, slots=True)
class VisionRequest:
    """One structured (JSON) answer about images.

    Attributes:
        kind: ``passport``, ``verify`` (anchor vs selfie), ``sheet_qa`` or ``pack_qa``.
        prompt: the text a model reads.
        images: the images, in the order the prompt names them.
        schema: JSON schema of the answer (an object).
        contact_grid: (cols, rows) of the contact sheets among ``images``, for QA requests.
    """

    kind: VisionKind
    prompt: str
    images: tuple[InputImage, ...]
    schema: dict[str, Any]
    contact_grid: tuple[int, int] = (4, 3)


#: The tokens a call used, as the provider's answer reported them, by how they are billed
#: (:class:`shared.ai_models.TokenUsage`); ``None`` where an answer reported none.
CallUsage = TokenUsage


class ProviderCallError(StickerBoothError):
    """A provider call failed; ``error_class`` is one of DESIGN.md §5 (the adapters classify the
    provider's wire shape, :mod:`worker.providers.classify`).

    Attributes:
        error_class: ``rate_limit``, ``quota_day``, ``credit``, ``auth``, ``config``, ``outage``,
            ``timeout``, ``invalid``, ``content`` or ``internal``.
        message: redacted text for logs and ``api_usage.error`` (at most 500 characters).
        status: the HTTP status, when there was one.
        retry_after_s: the provider's own hint (``retryDelay``, ``retry-after``), seconds.
        billed: the provider answered and charged for it (an image that is not an image): the call is
            recorded at its price.
        cause: for ``config``, what is wrong: ``model`` (no such model), ``parameter`` (the model rejects
            one we send), ``billing``, ``verification`` or ``location`` (the account is not set up for
            the call) (:mod:`worker.providers.classify`).
        param: for ``config``, the field the provider named, when it named one (``input_fidelity``).
        alert: for ``config``, the admins' alert naming the setting to fix (set by the chain, which knows
            the model and its role; secret-free).
        usage: what the billed answer reported it used (the call is recorded at that, not at the
            estimate), when it reported it.
    """

    def __init__(
        self,
        error_class: ErrorClass,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        billed: bool = False,
        cause: str | None = None,
        param: str | None = None,
        usage: CallUsage | None = None,
    ) -> None:
        self.error_class = error_class
        self.billed = billed
        self.cause = cause
        self.param = param
        self.alert: str | None = None
        self.usage = usage
        self.message = redact(message)[:500]
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(f"{error_class}: {self.message}")


def json_object(text: str) -> dict[str, Any]:
    """A model's text answer as a JSON object.

    Raises:
        ProviderCallError: (``invalid``) the text is not JSON, or not an object.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProviderCallError(ErrorClass.INVALID, f"answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ProviderCallError(ErrorClass.INVALID, "answer is not a JSON object")
    return data


class Provider(Protocol):
    """An image and vision provider (``gemini``, ``openai``, ``local``).

    Adapters translate their SDK's exceptions into :class:`ProviderCallError` and never retry on
    their own: the chain (:class:`worker.providers.chain.ProviderChain`) is the only retry policy.
    """

    name: str
    image_model: str
    vision_model: str

    async def generate_image(
        self, request: ImageRequest, *, timeout_s: float
    ) -> tuple[bytes, CallUsage | None]:
        """The generated image's bytes (PNG or JPEG) and the tokens the answer reported it used (``None``
        when it reported none: the call is then charged at the estimate).

        Raises:
            ProviderCallError: classified failure, including a response without an image.
        """
        ...

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage | None]:
        """The model's JSON answer (an object) and the tokens the answer reported it used (``None`` when
        it reported none).

        Raises:
            ProviderCallError: classified failure, including an answer that is not a JSON object.
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
