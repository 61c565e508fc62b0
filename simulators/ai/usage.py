"""The token usage the simulated providers report on a successful answer, in their wire shapes and by the
vendors' documented token counts (each rule cites its source beside it).

- Gemini ``usageMetadata`` (google-genai ``types.GenerateContentResponseUsageMetadata``):
  ``promptTokenCount`` with ``promptTokensDetails`` per modality (``TEXT``, ``IMAGE``),
  ``candidatesTokenCount`` with ``candidatesTokensDetails``, ``totalTokenCount``.
- OpenAI images ``usage`` (openai ``types/images_response.py``): ``input_tokens`` with
  ``input_tokens_details`` (``text_tokens``, ``image_tokens``), ``output_tokens`` with
  ``output_tokens_details`` (``image_tokens``, ``text_tokens``), ``total_tokens``.
- OpenAI Responses ``usage`` (openai ``types/responses/response_usage.py``): ``input_tokens`` with
  ``input_tokens_details`` (``cached_tokens``, ``cache_write_tokens``), ``output_tokens`` with
  ``output_tokens_details.reasoning_tokens``, ``total_tokens``.
"""

from __future__ import annotations

import io
import math
from typing import Any

from PIL import Image

__all__ = [
    "gemini_usage_metadata",
    "openai_image_tokens",
    "openai_images_usage",
    "openai_responses_usage",
    "text_tokens",
]

#: Text: "a token is equivalent to about 4 characters" (ai.google.dev/gemini-api/docs/tokens); OpenAI's
#: rule of thumb is the same ("one token is roughly 4 characters", help.openai.com "What are tokens").
CHARS_PER_TOKEN = 4

#: Gemini 3 image output: "747 tokens for 512p (0.25MP), 1120 tokens for 1K (1MP), 1680 tokens for 2K
#: (4MP), and 2520 tokens for 4K (16MP)" (docs.cloud.google.com/gemini-enterprise-agent-platform/models/
#: gemini/3-1-flash-image-preview, "Image generation specifications"), whatever the aspect ratio.
GEMINI_IMAGE_OUTPUT_TOKENS = {"512": 747, "1K": 1120, "2K": 1680, "4K": 2520}
#: Gemini 3 image input: 1120 tokens per image at the default media resolution (``MEDIA_RESOLUTION_HIGH``
#: for images; ai.google.dev/gemini-api/docs/media-resolution, "Token counts").
GEMINI_INPUT_IMAGE_TOKENS = 1120

#: gpt-image-2 image output for 1024x1024: OpenAI's per-image prices (low $0.006, medium $0.053, high
#: $0.211; developers.openai.com/api/docs/models/gpt-image-2) divided by its $30 per 1M image output
#: tokens. ``auto`` is answered as ``high`` (the dearest).
GPT_IMAGE_SQUARE_TOKENS = {"low": 200, "medium": 1767, "high": 7033}
#: The 3:2 and 2:3 sizes are not quoted for gpt-image-2; OpenAI's GPT image cost table gives the ratio of
#: 1536x1024 to 1024x1024 (6208 / 4160 tokens at high quality, gpt-image-1), applied here.
GPT_IMAGE_WIDE_RATIO = 6208 / 4160

#: Reasoning tokens of a Responses answer: the amount is the model's own (``reasoning.effort`` defaults to
#: ``medium``, developers.openai.com/api/docs/models/gpt-6.1-terra); documented is only that they are part
#: of ``output_tokens`` and billed as output. This number is illustrative.
RESPONSES_REASONING_TOKENS = 64


def text_tokens(text: str) -> int:
    """Tokens of ``text`` by the 4-characters rule."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _size(data: bytes) -> tuple[int, int]:
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except Exception:  # not an image: the smallest tile count
        return (512, 512)


def openai_image_tokens(data: bytes) -> int:
    """Input tokens of one image on OpenAI, by its vision tile rule (developers.openai.com/api/docs/guides/
    images-vision, "Calculating costs", ``detail: high``): scaled down to fit in 2048 × 2048, then down
    to 768 px on the shortest side, then 85 tokens plus 170 per 512 px tile."""
    side_w, side_h = _size(data)
    fit = min(1.0, 2048 / max(side_w, side_h))
    width, height = side_w * fit, side_h * fit
    short = min(1.0, 768 / min(width, height))
    return 85 + 170 * math.ceil(width * short / 512) * math.ceil(height * short / 512)


def gemini_usage_metadata(
    prompt: str, images: list[bytes], *, image_size: str | None = None, output_text: str = ""
) -> dict[str, Any]:
    """``usageMetadata`` of a successful answer: an image of ``image_size`` (image calls) or
    ``output_text`` (vision calls)."""
    prompt_text = text_tokens(prompt)
    prompt_images = GEMINI_INPUT_IMAGE_TOKENS * len(images)
    prompt_details = [{"modality": "TEXT", "tokenCount": prompt_text}]
    if images:
        prompt_details.append({"modality": "IMAGE", "tokenCount": prompt_images})
    if image_size is not None:
        output = GEMINI_IMAGE_OUTPUT_TOKENS.get(image_size, GEMINI_IMAGE_OUTPUT_TOKENS["1K"])
        output_details = [{"modality": "IMAGE", "tokenCount": output}]
    else:
        output = text_tokens(output_text)
        output_details = [{"modality": "TEXT", "tokenCount": output}]
    return {
        "promptTokenCount": prompt_text + prompt_images,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt_text + prompt_images + output,
        "promptTokensDetails": prompt_details,
        "candidatesTokensDetails": output_details,
    }


def openai_images_usage(prompt: str, images: list[bytes], *, size: str, quality: str) -> dict[str, Any]:
    """``usage`` of a successful image answer at ``size`` (``1024x1024``, ``1536x1024``, ``1024x1536``) and
    ``quality``."""
    square = GPT_IMAGE_SQUARE_TOKENS.get(quality, GPT_IMAGE_SQUARE_TOKENS["high"])
    output = square if size in ("1024x1024", "auto") else math.ceil(square * GPT_IMAGE_WIDE_RATIO)
    text_in = text_tokens(prompt)
    image_in = sum(openai_image_tokens(data) for data in images)
    return {
        "input_tokens": text_in + image_in,
        "input_tokens_details": {"text_tokens": text_in, "image_tokens": image_in},
        "output_tokens": output,
        "output_tokens_details": {"image_tokens": output, "text_tokens": 0},
        "total_tokens": text_in + image_in + output,
    }


def openai_responses_usage(prompt: str, images: list[bytes], *, output_text: str) -> dict[str, Any]:
    """``usage`` of a successful Responses answer whose text is ``output_text``."""
    input_tokens = text_tokens(prompt) + sum(openai_image_tokens(data) for data in images)
    output_tokens = text_tokens(output_text) + RESPONSES_REASONING_TOKENS
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": RESPONSES_REASONING_TOKENS},
        "total_tokens": input_tokens + output_tokens,
    }
