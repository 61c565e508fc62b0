"""The usage a successful answer reports, from the AI simulator's wire bodies through the real SDKs to the
adapters' :class:`shared.ai_models.TokenUsage`: Gemini ``usageMetadata`` per modality, OpenAI's images
``usage`` and Responses ``usage`` (reasoning included), at the vendors' documented token counts
(:mod:`simulators.ai.usage`). And the adapters' mapping of the SDKs' own usage types where the simulator
does not go (thinking tokens, an answer without the per-modality split)."""

from __future__ import annotations

import io

import pytest
from google.genai import types
from openai.types import ImagesResponse
from openai.types.responses import ResponseUsage
from PIL import Image

from shared.ai_models import TokenUsage
from simulators.ai.usage import openai_image_tokens, text_tokens
from tests.simulators.ai.test_sdks_against_sim import passport_request, sheet_request
from worker.providers.gemini import gemini_usage
from worker.providers.openai_api import images_usage, responses_usage

from .helpers import RunningAiSim

pytestmark = pytest.mark.integration


def _size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


async def test_a_gemini_2k_image_reports_1680_image_tokens_and_1120_per_input_image(
    aisim: RunningAiSim,
) -> None:
    request = sheet_request()  # 2K, one selfie
    client = aisim.gemini()
    try:
        _data, usage = await client.generate_image(request, timeout_s=30)
    finally:
        await client.aclose()
    assert usage == TokenUsage(
        input_text_tokens=text_tokens(request.prompt),
        input_image_tokens=1120,  # Gemini 3 default media resolution
        output_image_tokens=1680,  # 2K (4MP), Google Cloud's Gemini 3.1 Flash Image page
    )


async def test_a_gemini_vision_answer_reports_its_text_tokens(aisim: RunningAiSim) -> None:
    client = aisim.gemini()
    try:
        answer, usage = await client.vision_json(passport_request(), timeout_s=30)
    finally:
        await client.aclose()
    assert answer and usage is not None
    assert usage.input_image_tokens == 1120 and usage.input_text_tokens > 0
    assert usage.output_text_tokens > 0 and usage.output_image_tokens == 0


async def test_an_openai_2k_sheet_reports_high_quality_image_tokens_and_tiled_input(
    aisim: RunningAiSim,
) -> None:
    request = sheet_request()  # 2K → quality high; aspect 1:1 → 1024x1024
    client = aisim.openai()
    try:
        _data, usage = await client.generate_image(request, timeout_s=30)
    finally:
        await client.aclose()
    assert usage == TokenUsage(
        input_text_tokens=text_tokens(request.prompt),
        input_image_tokens=openai_image_tokens(request.images[0].data),
        output_image_tokens=7033,  # $0.211 per 1024x1024 high image / $30 per 1M image tokens
    )
    width, height = _size(request.images[0].data)
    assert max(width, height) <= 512  # the test photo: one 512 px tile, 85 + 170 tokens
    assert usage.input_image_tokens == 85 + 170


async def test_an_openai_vision_answer_reports_reasoning_as_part_of_its_output(aisim: RunningAiSim) -> None:
    client = aisim.openai()
    try:
        _answer, usage = await client.vision_json(passport_request(), timeout_s=30)
    finally:
        await client.aclose()
    assert usage is not None and usage.reasoning_tokens == 64 and usage.output_text_tokens > 0
    [call] = await aisim.calls()
    assert call["model"] == "gpt-6.1-terra"


def test_gemini_thinking_is_reasoning_and_an_image_answer_without_details_is_image_output() -> None:
    meta = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1300,
        candidates_token_count=1690,
        thoughts_token_count=250,
        total_token_count=3240,
        prompt_tokens_details=[
            types.ModalityTokenCount(modality=types.MediaModality.TEXT, token_count=180),
            types.ModalityTokenCount(modality=types.MediaModality.IMAGE, token_count=1120),
        ],
        candidates_tokens_details=[
            types.ModalityTokenCount(modality=types.MediaModality.IMAGE, token_count=1680),
            types.ModalityTokenCount(modality=types.MediaModality.TEXT, token_count=10),
        ],
    )
    assert gemini_usage(meta, image_answer=True) == TokenUsage(180, 1120, 10, 1680, 250)
    bare = types.GenerateContentResponseUsageMetadata(prompt_token_count=100, candidates_token_count=1120)
    assert gemini_usage(bare, image_answer=True) == TokenUsage(100, 0, 0, 1120, 0)  # errs high
    assert gemini_usage(bare, image_answer=False) == TokenUsage(100, 0, 1120, 0, 0)
    assert gemini_usage(None, image_answer=True) is None


def test_openai_image_and_responses_usage_split_as_billed() -> None:
    images = ImagesResponse.model_validate(
        {
            "created": 1,
            "data": [],
            "usage": {
                "input_tokens": 1300,
                "input_tokens_details": {"text_tokens": 195, "image_tokens": 1105},
                "output_tokens": 10506,
                "output_tokens_details": {"image_tokens": 10496, "text_tokens": 10},
                "total_tokens": 11806,
            },
        }
    )
    assert images_usage(images) == TokenUsage(195, 1105, 10, 10496, 0)
    no_details = ImagesResponse.model_validate(
        {
            "created": 1,
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"text_tokens": 10, "image_tokens": 0},
                "output_tokens": 1767,
                "total_tokens": 1777,
            },
        }
    )
    assert images_usage(no_details) == TokenUsage(10, 0, 0, 1767, 0)
    responses = ResponseUsage.model_validate(
        {
            "input_tokens": 2000,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 700,
            "output_tokens_details": {"reasoning_tokens": 600},
            "total_tokens": 2700,
        }
    )
    assert responses_usage(responses) == TokenUsage(2000, 0, 100, 0, 600)
    assert responses_usage(None) is None
