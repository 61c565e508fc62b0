"""The ``openai`` provider: the openai SDK's ``AsyncOpenAI``, ``images.edit`` (with reference images) or
``images.generate`` for images and the Responses API for structured (JSON) vision answers.

SDK retries are off (``max_retries=0``; its default of 2 would repeat 408/409/429/5xx and connection
errors, REFERENCE.md "OpenAI") and every call carries its own timeout in seconds, the SDK's unit.
``base_url`` points the SDK at the provider simulator in dev and tests.

Images: the API takes ``png``/``webp``/``jpg`` files as multipart uploads, several per edit; sizes are
``1024x1024``, ``1536x1024`` and ``1024x1536`` (the aspect asked for; the one-sheet layout's 4:3 grid
is asked for at ``1536x1024``, the nearest, so its cells are 384 × 341 px and its figures are enlarged
to the 512 px sticker), quality ``high`` for 2K sheets and
``medium`` for 1K images, ``input_fidelity=high`` (faces stay closer to the references) only to the
models that take it (:data:`HIGH_FIDELITY_MODELS`: the SDK's ``image_edit_params.py`` "Supports `high`
and `low` on `gpt-image-1.5`; `gpt-image-1-mini` supports only `low`. For `gpt-image-2`, omit this
parameter", and the API answers 400 ``invalid_input_fidelity_model`` to a model that does not). An answer
without ``b64_json`` (or whose ``b64_json`` is not base64) is ``invalid``; a moderation block comes back
as a 400 (``moderation_blocked``, or ``content_policy_violation`` from the DALL·E models: ``content``,
classified in :mod:`worker.providers.classify`). A ``refusal`` part in a vision answer (the model declines
to judge the images) is ``invalid``: an unusable answer, never a content refusal of the selfie, so it
only costs that vision step its answer (QA accepts, the passport is skipped).

Every answer's ``usage`` is returned with it (:func:`images_usage`, :func:`responses_usage`), for its cost.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

import openai
from openai.types import ImagesResponse
from openai.types.responses import ResponseUsage

from shared.errors import ErrorClass
from worker.providers.base import (
    CallUsage,
    ImageRequest,
    InputImage,
    ProviderCallError,
    VisionRequest,
    json_object,
)

__all__ = ["HIGH_FIDELITY_MODELS", "OpenAIProvider", "images_usage", "responses_usage"]

#: The image models that take ``input_fidelity="high"`` on an edit (openai 3.51.0
#: ``types/image_edit_params.py``); every other model is sent no ``input_fidelity`` at all.
HIGH_FIDELITY_MODELS = frozenset({"gpt-image-1.5"})

_SIZES: dict[str, Literal["1024x1024", "1536x1024", "1024x1536"]] = {
    "1:1": "1024x1024",
    "3:2": "1536x1024",
    "2:3": "1024x1536",
    "4:3": "1536x1024",  # the one-sheet 4 × 3 grid: gpt-image has no 4:3 size, 3:2 is the nearest
}
_EXTENSION = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}


def _file(index: int, image: InputImage) -> tuple[str, bytes, str]:
    return (f"{image.role}-{index}.{_EXTENSION.get(image.mime, 'png')}", image.data, image.mime)


def _data_url(image: InputImage) -> str:
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode()}"


def images_usage(response: ImagesResponse) -> CallUsage | None:
    """The billed tokens of an image answer's ``usage`` (openai ``types/images_response.py``: text and
    image input tokens in ``input_tokens_details``; ``output_tokens`` split in ``output_tokens_details``
    when given, else all image tokens), or ``None`` when it reported none."""
    usage = response.usage
    if usage is None:
        return None
    details = usage.output_tokens_details
    image_out = usage.output_tokens if details is None else details.image_tokens
    return CallUsage(
        input_text_tokens=usage.input_tokens_details.text_tokens,
        input_image_tokens=usage.input_tokens_details.image_tokens,
        output_text_tokens=usage.output_tokens - image_out,
        output_image_tokens=image_out,
    )


def responses_usage(usage: ResponseUsage | None) -> CallUsage | None:
    """The billed tokens of a Responses answer's ``usage`` (openai ``types/responses/response_usage.py``):
    ``input_tokens`` (text and images, one input rate), ``output_tokens`` of which
    ``output_tokens_details.reasoning_tokens`` are reasoning (billed as output); ``None`` when it
    reported none."""
    if usage is None:
        return None
    reasoning = usage.output_tokens_details.reasoning_tokens if usage.output_tokens_details else 0
    return CallUsage(
        input_text_tokens=usage.input_tokens,
        output_text_tokens=usage.output_tokens - reasoning,
        reasoning_tokens=reasoning,
    )


class OpenAIProvider:
    """OpenAI through the openai SDK.

    Args:
        api_key: ``OPENAI_API_KEY``.
        base_url: ``AI_BASE_URL_OPENAI`` (e.g. ``http://127.0.0.1:8082/v1``), or ``None`` for OpenAI's.
        image_model, vision_model: ``OPENAI_IMAGE_MODEL``, ``OPENAI_VISION_MODEL``.
        timeout_s: the client's default timeout (s); each call passes its own.
    """

    name = "openai"

    def __init__(
        self, api_key: str, *, base_url: str | None, image_model: str, vision_model: str, timeout_s: float
    ) -> None:
        self.image_model = image_model
        self.vision_model = vision_model
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s
        )

    async def generate_image(
        self, request: ImageRequest, *, timeout_s: float
    ) -> tuple[bytes, CallUsage | None]:
        """One PNG from ``images.edit`` (references given) or ``images.generate``, and the answer's usage
        (:func:`images_usage`).

        Raises:
            openai.OpenAIError: the SDK's errors (classified by the chain).
            ProviderCallError: ``invalid`` when the answer holds no image.
        """
        size = _SIZES[request.aspect]
        quality: Literal["high", "medium"] = "high" if request.size == "2K" else "medium"
        if request.images:
            response = await self._client.images.edit(
                model=self.image_model,
                image=[_file(k, image) for k, image in enumerate(request.images, start=1)],
                prompt=request.prompt,
                size=size,
                quality=quality,
                input_fidelity="high" if self.image_model in HIGH_FIDELITY_MODELS else openai.omit,
                background="opaque",
                output_format="png",
                n=1,
                timeout=timeout_s,
            )
        else:
            response = await self._client.images.generate(
                model=self.image_model,
                prompt=request.prompt,
                size=size,
                quality=quality,
                background="opaque",
                output_format="png",
                moderation="low",
                n=1,
                timeout=timeout_s,
            )
        for item in response.data or []:
            if item.b64_json:
                try:
                    return base64.b64decode(item.b64_json, validate=True), images_usage(response)
                except binascii.Error as exc:
                    raise ProviderCallError(ErrorClass.INVALID, f"b64_json is not base64: {exc}") from exc
        raise ProviderCallError(ErrorClass.INVALID, "no image in the answer")

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage | None]:
        """A JSON object from the Responses API with a JSON-schema text format, and the answer's usage
        (:func:`responses_usage`).

        Raises:
            openai.OpenAIError: the SDK's errors (classified by the chain).
            ProviderCallError: ``invalid`` for a refusal or an answer that is not a JSON object.
        """
        content: list[Any] = [{"type": "input_text", "text": request.prompt}]
        content += [
            {"type": "input_image", "image_url": _data_url(i), "detail": "auto"} for i in request.images
        ]
        response = await self._client.responses.create(
            model=self.vision_model,
            input=[{"role": "user", "content": content}],
            text={"format": {"type": "json_schema", "name": request.kind, "schema": request.schema}},
            timeout=timeout_s,
        )
        for item in response.output or []:
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", "") == "refusal":
                    raise ProviderCallError(ErrorClass.INVALID, f"refused: {getattr(part, 'refusal', '')}")
        return json_object(response.output_text), responses_usage(response.usage)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._client.close()
