"""The AI simulator's GET-model endpoints, asked through the real SDKs on the paths they request
(openai ``models.retrieve`` → ``GET /v1/models/{model}``; google-genai ``aio.models.get`` →
``GET /v1/models/{model}`` by default, ``/v1beta/…`` with ``GOOGLE_GENAI_API_VERSION=beta``)."""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from shared.ai_models import CATALOGUE
from tests.simulators.ai.helpers import KEY, RunningAiSim, retiring_model

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


async def openai_retrieve(aisim: RunningAiSim, model: str, key: str = KEY) -> openai.types.Model:
    client = openai.AsyncOpenAI(api_key=key, base_url=f"{aisim.url}/v1", max_retries=0)
    try:
        return await client.models.retrieve(model)
    finally:
        await client.close()


async def gemini_get(
    aisim: RunningAiSim, model: str, key: str = KEY, version: str | None = None
) -> types.Model:
    async with aiohttp.ClientSession() as session:
        client = genai.Client(
            api_key=key,
            http_options=types.HttpOptions(
                base_url=aisim.url,
                api_version=version,
                retry_options=types.HttpRetryOptions(attempts=1),
                aiohttp_client=session,
            ),
        )
        return await client.aio.models.get(model=model)


async def test_openai_answers_a_catalogued_model_with_its_shutdown_date(
    aisim: RunningAiSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    retiring = retiring_model(monkeypatch)
    model = await openai_retrieve(aisim, retiring.name)
    assert retiring.shutdown is not None
    assert (model.id, model.object, model.shutdown_date) == (
        retiring.name,
        "model",
        retiring.shutdown.isoformat(),
    )
    assert (await openai_retrieve(aisim, "gpt-image-2")).shutdown_date is None


async def test_openai_unknown_model_is_404_model_not_found(aisim: RunningAiSim) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        await openai_retrieve(aisim, "gpt-nope")
    assert raised.value.status_code == 404
    assert raised.value.body == {
        "message": "The model 'gpt-nope' does not exist",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }


async def test_openai_wrong_key_is_401(aisim: RunningAiSim) -> None:
    with pytest.raises(openai.AuthenticationError):
        await openai_retrieve(aisim, "gpt-image-2", key="wrong")


@pytest.mark.parametrize("version", [None, "v1beta"])
async def test_gemini_answers_every_catalogued_model_not_shut_down(
    aisim: RunningAiSim, version: str | None
) -> None:
    today = datetime.now(UTC).date()
    for entry in CATALOGUE.values():
        if entry.provider == "gemini" and (entry.shutdown is None or entry.shutdown > today):
            model = await gemini_get(aisim, entry.name, version=version)
            assert model.name == f"models/{entry.name}"
            assert "generateContent" in (model.supported_actions or [])


async def test_gemini_unknown_model_is_404_not_found(aisim: RunningAiSim) -> None:
    with pytest.raises(genai_errors.ClientError) as raised:
        await gemini_get(aisim, "gemini-nope")
    assert (raised.value.code, raised.value.status) == (404, "NOT_FOUND")


async def test_gemini_wrong_key_is_400_api_key_invalid(aisim: RunningAiSim) -> None:
    with pytest.raises(genai_errors.ClientError) as raised:
        await gemini_get(aisim, "gemini-3.1-flash-image", key="wrong")
    assert raised.value.code == 400 and "API_KEY_INVALID" in str(raised.value.details)
