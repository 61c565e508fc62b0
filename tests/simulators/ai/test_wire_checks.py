"""Requests a real provider refuses get that provider's 400 from the simulator, never a silent success:
a prompt that drifted from :mod:`cartoon.grammar`, a missing field, a value outside the documented ones."""

from __future__ import annotations

from datetime import date
from typing import Any

import aiohttp
import pytest

from shared.ai_models import ModelInfo
from simulators.ai import state
from simulators.ai.state import ModelBook
from tests.simulators.ai.helpers import KEY, RunningAiSim

pytestmark = pytest.mark.integration

GEMINI = "/v1beta/models/gemini-3.1-flash-image:generateContent"


async def gemini(aisim: RunningAiSim, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aisim.http.post(aisim.url + GEMINI, json=body, headers={"x-goog-api-key": KEY}) as response:
        return response.status, await response.json()


async def gemini_model(aisim: RunningAiSim, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    url = f"{aisim.url}/v1beta/models/{model}:generateContent"
    async with aisim.http.post(url, json=body, headers={"x-goog-api-key": KEY}) as response:
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
    body = {"model": "gpt-image-2", "prompt": "STICKER SHEET", "size": "2048x1530"}  # 1530 % 16 != 0
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


async def openai(aisim: RunningAiSim, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with aisim.http.post(aisim.url + path, json=body, headers=headers) as response:
        return response.status, await response.json()


async def test_a_model_the_provider_does_not_serve_is_its_real_404(aisim: RunningAiSim) -> None:
    status, body = await gemini_model(aisim, "gemini-9-nonexistent", image_call("STICKER SHEET: …"))
    assert (status, body["error"]["status"], body["error"]["code"]) == (404, "NOT_FOUND", 404)
    assert "models/gemini-9-nonexistent is not found for API version v1beta" in body["error"]["message"]
    status, body = await openai(aisim, "/v1/images/generations", {"model": "gpt-x", "prompt": "STICKER"})
    assert status == 404
    assert body["error"] == {
        "message": "The model `gpt-x` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
    # role aware: an image model is not a vision model at OpenAI
    status, body = await openai(aisim, "/v1/responses", {"model": "gpt-image-2", "input": []})
    assert (status, body["error"]["code"]) == (404, "model_not_found")
    assert [c["outcome"] for c in await aisim.calls()] == ["model_not_found"] * 3


async def test_a_retired_model_is_gone_and_tests_can_add_one(aisim: RunningAiSim) -> None:
    await aisim.post(
        "/sim/models", {"provider": "openai", "name": "gpt-5-mini", "role": "vision", "exists": False}
    )
    status, body = await openai(aisim, "/v1/responses", {"model": "gpt-5-mini", "input": []})
    assert (status, body["error"]["code"]) == (404, "model_not_found")
    await aisim.post("/sim/models", {"provider": "openai", "name": "gpt-image-1.5", "role": "image"})
    listing = await (await aisim.http.get(aisim.url + "/sim/models")).json()
    assert {"provider": "openai", "name": "gpt-image-1.5", "role": "image"} in listing
    assert {"provider": "openai", "name": "gpt-5-mini", "role": "vision"} not in listing


def test_a_model_past_its_announced_shutdown_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    retiring = ModelInfo("openai", "gpt-old", "vision", date(2026, 12, 11), "a test")
    monkeypatch.setattr(state, "CATALOGUE", {("openai", "gpt-old", "vision"): retiring})
    book = ModelBook()
    assert book.exists("openai", "gpt-old", "vision", today=date(2026, 12, 10))
    assert not book.exists("openai", "gpt-old", "vision", today=date(2026, 12, 11))
    assert not book.exists("openai", "gpt-old", "image", today=date(2026, 12, 10))  # role aware


async def test_input_fidelity_to_a_model_that_does_not_take_it_is_its_real_400(aisim: RunningAiSim) -> None:
    form = aiohttp.FormData()
    for name, value in {"model": "gpt-image-2", "prompt": "STICKER SHEET", "input_fidelity": "high"}.items():
        form.add_field(name, value)
    form.add_field("image", b"\x89PNG", filename="selfie-1.png", content_type="image/png")
    headers = {"Authorization": f"Bearer {KEY}"}
    async with aisim.http.post(aisim.url + "/v1/images/edits", data=form, headers=headers) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert error == {
        "message": "The model 'gpt-image-2' does not support the 'input_fidelity' parameter.",
        "type": "image_generation_user_error",
        "param": "input_fidelity",
        "code": "invalid_input_fidelity_model",
    }


async def test_gpt_image_2_takes_any_size_within_its_rules(aisim: RunningAiSim) -> None:
    for size, ok in (("1536x1152", True), ("3840x2160", True), ("4096x2304", False), ("3200x1024", False)):
        _status, body = await openai(
            aisim, "/v1/images/generations", {"model": "gpt-image-2", "prompt": "a cat", "size": size}
        )
        # a readable size reaches the prompt check (the simulated model cannot read "a cat")
        assert (body["error"]["param"] == "size") is not ok, (size, body)


async def test_a_strict_json_schema_must_follow_the_strict_rules(aisim: RunningAiSim) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    text_format = {"type": "json_schema", "name": "x"}
    request = {"model": "gpt-6.1-terra", "input": [], "text": {"format": text_format}}
    request["text"]["format"].update(schema=schema, strict=True)
    status, body = await openai(aisim, "/v1/responses", request)
    assert status == 400
    assert "'additionalProperties' is required to be supplied and to be false" in body["error"]["message"]
    del request["text"]["format"]["name"]
    status, body = await openai(aisim, "/v1/responses", request)
    assert (status, body["error"]["code"], body["error"]["param"]) == (
        400,
        "missing_required_parameter",
        "text.format.name",
    )


async def test_gemini_refuses_images_from_a_text_model(aisim: RunningAiSim) -> None:
    status, body = await gemini_model(aisim, "gemini-3.5-flash-lite", image_call("STICKER SHEET: …"))
    assert (status, body["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert "response modalities" in body["error"]["message"]
