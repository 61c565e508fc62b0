"""Requests a real provider refuses get that provider's 400 from the simulator, never a silent success:
a prompt that drifted from :mod:`cartoon.grammar`, a missing field, a value outside the documented ones."""

from __future__ import annotations

from typing import Any

import pytest

from tests.simulators.ai.helpers import KEY, RunningAiSim

pytestmark = pytest.mark.integration

GEMINI = "/v1beta/models/gemini-3.1-flash-image:generateContent"


async def gemini(aisim: RunningAiSim, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aisim.http.post(aisim.url + GEMINI, json=body, headers={"x-goog-api-key": KEY}) as response:
        return response.status, await response.json()


def image_call(prompt: str, **image_config: str) -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        "generationConfig": {"responseModalities": ["IMAGE"], "imageConfig": image_config},
    }


async def test_a_drifted_image_prompt_is_gemini_invalid_argument(aisim: RunningAiSim) -> None:
    status, body = await gemini(aisim, image_call("Draw twelve stickers of the guest, please."))
    assert status == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT" and body["error"]["code"] == 400
    [call] = await aisim.calls()
    assert call["outcome"] == "invalid_argument"


async def test_gemini_refuses_an_undocumented_aspect_ratio_and_no_contents(aisim: RunningAiSim) -> None:
    status, body = await gemini(aisim, image_call("STICKER SHEET: …", aspectRatio="7:5"))
    assert status == 400 and "7:5" in body["error"]["message"]
    status, body = await gemini(aisim, {"contents": []})
    assert status == 400 and "contents is not specified" in body["error"]["message"]


async def test_openai_names_the_missing_parameter(aisim: RunningAiSim) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with aisim.http.post(
        aisim.url + "/v1/images/generations", json={"model": "gpt-image-2"}, headers=headers
    ) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert (error["param"], error["code"]) == ("prompt", "missing_required_parameter")
    body = {"model": "gpt-image-2", "prompt": "STICKER SHEET", "quality": "ultra"}
    async with aisim.http.post(aisim.url + "/v1/images/generations", json=body, headers=headers) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert (error["param"], error["code"]) == ("quality", "invalid_value")
    body = {"model": "gpt-image-2", "prompt": "STICKER SHEET", "size": "2048x1536"}  # not a gpt-image size
    async with aisim.http.post(aisim.url + "/v1/images/generations", json=body, headers=headers) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert (error["param"], error["code"]) == ("size", "invalid_value")


async def test_openai_answers_an_unreadable_prompt_in_its_own_shape(aisim: RunningAiSim) -> None:
    body = {"model": "gpt-image-2", "prompt": "a cat"}
    headers = {"Authorization": f"Bearer {KEY}"}
    async with aisim.http.post(aisim.url + "/v1/images/generations", json=body, headers=headers) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "prompt"
    assert "status" not in error
