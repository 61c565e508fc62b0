"""The ``gemini`` provider: google-genai's async client, ``models.generate_content`` for images and for
structured (JSON) vision answers.

SDK-internal retries are off: ``HttpRetryOptions(attempts=1)`` means one attempt, and (unlike leaving
``retry_options`` unset) also stops the SDK's implicit repeat of a request whose aiohttp connection failed
(google-genai ``_api_client.py``). The aiohttp session is ours (``HttpOptions.aiohttp_client``), created in
the running loop on first use and closed by :meth:`GeminiProvider.aclose` (the SDK's own session class
subclasses ``aiohttp.ClientSession``, which aiohttp deprecates). Timeouts are ours in seconds and the
SDK's ``HttpOptions.timeout`` in milliseconds, set per call (REFERENCE.md: it has no default).
``base_url`` points the SDK at the provider simulator in dev and tests.

A response without an image part is never an empty success (REFERENCE.md "Gemini"): a blocked prompt
(``promptFeedback.blockReason``) or a safety finish reason (``SAFETY``, ``IMAGE_SAFETY``, ``PROHIBITED_*``,
``IMAGE_PROHIBITED_CONTENT``, ``BLOCKLIST``, ``SPII``) is ``content``; any other answer without an image
(``NO_IMAGE``, ``RECITATION``, text only) is ``invalid``. The same holds for vision answers; only
an image call's ``content`` stops a job (:mod:`worker.providers.chain`).

Every answer's ``usageMetadata`` is returned with it (:func:`gemini_usage`), for its cost.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from google import genai
from google.genai import types

from shared.errors import ErrorClass
from worker.providers.base import CallUsage, ImageRequest, ProviderCallError, VisionRequest, json_object

__all__ = ["CONTENT_FINISH_REASONS", "GeminiProvider", "gemini_usage"]

#: ``Candidate.finishReason`` values that are a content refusal (the model's or the image filter's policy
#: blocked this request, its selfie included): ``content``. ``RECITATION`` / ``IMAGE_RECITATION`` (the
#: output resembled protected material), ``NO_IMAGE``, ``IMAGE_OTHER``, ``OTHER`` are not about the
#: selfie: ``invalid`` (an answer without an image), retried like any other unusable answer.
CONTENT_FINISH_REASONS = frozenset(
    {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "IMAGE_PROHIBITED_CONTENT", "BLOCKLIST", "SPII"}
)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _image_tokens(details: list[types.ModalityTokenCount] | None) -> int | None:
    """The ``IMAGE`` tokens of a per-modality breakdown, or ``None`` when the answer gave none."""
    if not details:
        return None
    return sum(int(d.token_count or 0) for d in details if d.modality == types.MediaModality.IMAGE)


def gemini_usage(
    meta: types.GenerateContentResponseUsageMetadata | None, *, image_answer: bool
) -> CallUsage | None:
    """The billed tokens of an answer's ``usageMetadata`` (google-genai ``types.py``; Gemini's pricing
    page bills input per token whatever its modality, image output at the image rate, text and
    "thinking" output at the text rate):

    - ``promptTokenCount`` (plus ``toolUsePromptTokenCount``) is input; its ``IMAGE`` share in
      ``promptTokensDetails`` is image input;
    - ``candidatesTokenCount`` is output; its ``IMAGE`` share in ``candidatesTokensDetails`` is image
      output, the rest text; an image answer without that breakdown is counted as image output (errs
      high);
    - ``thoughtsTokenCount`` (not part of ``candidatesTokenCount``: ``totalTokenCount`` adds both) is
      reasoning, billed as output text.

    ``None`` when the answer reported no usage.
    """
    if meta is None or (meta.prompt_token_count is None and meta.candidates_token_count is None):
        return None
    prompt = int(meta.prompt_token_count or 0) + int(meta.tool_use_prompt_token_count or 0)
    candidates = int(meta.candidates_token_count or 0)
    prompt_images = _image_tokens(meta.prompt_tokens_details) or 0
    output_images = _image_tokens(meta.candidates_tokens_details)
    if output_images is None:
        output_images = candidates if image_answer else 0
    return CallUsage(
        input_text_tokens=prompt - prompt_images,
        input_image_tokens=prompt_images,
        output_text_tokens=candidates - output_images,
        output_image_tokens=output_images,
        reasoning_tokens=int(meta.thoughts_token_count or 0),
    )


class GeminiProvider:
    """Gemini through google-genai.

    Args:
        api_key: the Gemini API key (``GEMINI_API_KEY``).
        base_url: ``AI_BASE_URL_GEMINI``, or ``None`` for Google's endpoint.
        image_model, vision_model: ``GEMINI_IMAGE_MODEL``, ``GEMINI_VISION_MODEL``.
    """

    name = "gemini"

    def __init__(self, api_key: str, *, base_url: str | None, image_model: str, vision_model: str) -> None:
        self.image_model = image_model
        self.vision_model = vision_model
        self._api_key = api_key
        self._base_url = base_url
        self._session: aiohttp.ClientSession | None = None
        self._sdk: genai.Client | None = None

    @property
    def _client(self) -> genai.Client:
        if self._sdk is None:
            self._session = aiohttp.ClientSession()
            self._sdk = genai.Client(
                api_key=self._api_key,
                http_options=types.HttpOptions(
                    base_url=self._base_url,
                    retry_options=types.HttpRetryOptions(attempts=1),
                    aiohttp_client=self._session,
                ),
            )
        return self._sdk

    @staticmethod
    def _parts(prompt: str, images: tuple[Any, ...]) -> list[Any]:
        parts: list[Any] = [types.Part.from_bytes(data=image.data, mime_type=image.mime) for image in images]
        parts.append(prompt)
        return parts

    async def generate_image(
        self, request: ImageRequest, *, timeout_s: float
    ) -> tuple[bytes, CallUsage | None]:
        """One image from ``generate_content`` with ``responseModalities=[IMAGE]`` and the image config
        (aspect ratio, ``1K``/``2K``), and the answer's usage (:func:`gemini_usage`).

        Raises:
            ProviderCallError: classified by the caller from the SDK error, or ``content``/``invalid``
                for an answer without an image.
        """
        config = types.GenerateContentConfig(
            response_modalities=["IMAGE"],
            image_config=types.ImageConfig(aspect_ratio=request.aspect, image_size=request.size),
            http_options=types.HttpOptions(timeout=_ms(timeout_s)),
        )
        response = await self._client.aio.models.generate_content(
            model=self.image_model, contents=self._parts(request.prompt, request.images), config=config
        )
        for candidate in response.candidates or []:
            for part in (candidate.content.parts if candidate.content else None) or []:
                blob = part.inline_data
                if blob is not None and blob.data and (blob.mime_type or "").startswith("image/"):
                    return bytes(blob.data), gemini_usage(response.usage_metadata, image_answer=True)
        raise self._no_image(response)

    @staticmethod
    def _no_image(response: types.GenerateContentResponse) -> ProviderCallError:
        """Why an answer holds no image (or no text): ``promptFeedback.blockReason`` (any value: the
        prompt, selfie included, was blocked before the model ran) and the content ``finishReason``
        values are ``content``; anything else is ``invalid``."""
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            return ProviderCallError(ErrorClass.CONTENT, f"prompt blocked: {feedback.block_reason}")
        reasons = [str(getattr(c.finish_reason, "value", c.finish_reason)) for c in response.candidates or []]
        if any(reason in CONTENT_FINISH_REASONS for reason in reasons):
            return ProviderCallError(ErrorClass.CONTENT, f"refused: finishReason {', '.join(reasons)}")
        return ProviderCallError(
            ErrorClass.INVALID, f"no image in the answer (finishReason {reasons or '-'})"
        )

    async def vision_json(
        self, request: VisionRequest, *, timeout_s: float
    ) -> tuple[dict[str, Any], CallUsage | None]:
        """A JSON object from ``generate_content`` with ``responseMimeType=application/json`` and the
        request's schema, and the answer's usage (:func:`gemini_usage`).

        Raises:
            ProviderCallError: ``content`` for a blocked answer, ``invalid`` for one that is not a JSON
                object.
        """
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            response_json_schema=request.schema,
            http_options=types.HttpOptions(timeout=_ms(timeout_s)),
        )
        response = await self._client.aio.models.generate_content(
            model=self.vision_model, contents=self._parts(request.prompt, request.images), config=config
        )
        text = "".join(
            part.text or ""
            for candidate in (response.candidates or [])[:1]
            for part in ((candidate.content.parts if candidate.content else None) or [])
            if not part.thought
        )
        if not text:
            raise self._no_image(response)
        return json_object(text), gemini_usage(response.usage_metadata, image_answer=False)

    async def aclose(self) -> None:
        """Close the SDK client and our HTTP session."""
        if self._sdk is not None:
            await self._sdk.aio.aclose()
        if self._session is not None:
            await self._session.close()
        self._sdk = self._session = None
