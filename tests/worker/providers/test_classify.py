"""The ``config`` class read from the providers' real error bodies (each body as quoted in its source,
docs/contract-audit.md), and the 400s that stay a job's own failure; the admins' alert names the setting
to fix in our words only. The simulator's shapes go through the real SDKs in
tests/simulators/ai/test_sdks_against_sim.py."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest
from google.genai import errors as genai_errors

from shared.errors import ErrorClass
from worker.providers.base import ProviderCallError
from worker.providers.classify import classify_gemini, classify_openai, config_alert

pytestmark = pytest.mark.unit


def gemini(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> Any:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return classify_gemini(genai_errors.APIError(code, {"error": error}))


def openai_error(
    status: int, message: str, kind: str | None, code: str | None, param: str | None = None
) -> Any:
    body = {"message": message, "type": kind, "param": param, "code": code}
    response = httpx2.Response(
        status, request=httpx2.Request("POST", "https://api.openai.com/v1/images/edits")
    )
    cls = {400: openai.BadRequestError, 403: openai.PermissionDeniedError, 404: openai.NotFoundError}
    return classify_openai(cls[status](message, response=response, body=body))


GEMINI = [
    # google-gemini/gemini-api-quickstart#20
    (
        404,
        "NOT_FOUND",
        "models/gemini-2.0-flash-exp-image-generation is not found for API version v1beta, or is not "
        "supported for generateContent. Call ListModels to see the list of available models and their "
        "supported methods.",
        "model",
    ),
    # u14app/neo-chat#45
    (
        400,
        "FAILED_PRECONDITION",
        "Gemini API free tier is not available in your country. Please enable billing on your project in "
        "Google AI Studio.",
        "billing",
    ),
    # poenl/gemini-api#4
    (400, "FAILED_PRECONDITION", "User location is not supported for the API use.", "location"),
    # CherryHQ/cherry-studio#6915
    (
        400,
        "INVALID_ARGUMENT",
        "Parameter response_mime_type is not supported for generating image response.",
        "parameter",
    ),
]


@pytest.mark.parametrize(("code", "status", "message", "cause"), GEMINI)
def test_gemini_says_our_settings_are_wrong(code: int, status: str, message: str, cause: str) -> None:
    error = gemini(code, status, message)
    assert (error.error_class, error.cause) == (ErrorClass.CONFIG, cause)


def test_a_gemini_field_violation_names_the_field() -> None:
    # agentjido/req_llm#517 (the body quoted there)
    message = (
        "Invalid JSON payload received. Unknown name \"outputMimeType\" at 'generation_config.image_config': "
        "Cannot find field."
    )
    violation = {"description": message, "field": "generation_config.image_config"}
    error = gemini(
        400,
        "INVALID_ARGUMENT",
        message,
        [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}],
    )
    assert (error.error_class, error.cause, error.param) == (
        ErrorClass.CONFIG,
        "parameter",
        "generation_config.image_config",
    )


@pytest.mark.parametrize(
    "message",
    [
        "Provided image is not valid",  # AmberSahdev/Open-Interface#64: one job's image
        "Request payload size exceeds the limit: 20971520 bytes.",
        "Request contains an invalid argument.",  # names nothing: not proof of a setting
    ],
)
def test_a_gemini_400_about_one_request_is_not_a_config_fault(message: str) -> None:
    assert gemini(400, "INVALID_ARGUMENT", message).error_class is ErrorClass.INTERNAL


def test_gemini_api_key_invalid_stays_auth() -> None:
    error = gemini(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
    assert error.error_class is ErrorClass.AUTH


OPENAI = [
    # firecrawl/firecrawl#1052
    (404, "The model `gpt-4o` does not exist or you do not have access to it.", "invalid_request_error",
     "model_not_found", None, "model"),
    # vulca-org/vulca-visual-control-sdk#12 (curl against api.openai.com)
    (400, "The model 'gpt-image-2' does not support the 'input_fidelity' parameter.",
     "image_generation_user_error", "invalid_input_fidelity_model", "input_fidelity", "parameter"),
    # appatalks/eva-agent#83
    (400, "Unsupported parameter: 'temperature' is not supported with this model.", "invalid_request_error",
     "unsupported_parameter", "temperature", "parameter"),
    # QwenLM/qwen-code#921
    (400, "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value "
     "is supported.", "invalid_request_error", "unsupported_value", "temperature", "parameter"),
    # moeru-ai/xsai#145
    (400, "Invalid schema for response_format 'json_schema': In context=(), 'additionalProperties' is "
     "required to be supplied and to be false.", "invalid_request_error", None, "response_format",
     "parameter"),
    # openai-php/client#565
    (403, "Your organization must be verified to use the model `gpt-image-1`. Please go to: "
     "https://platform.openai.com/settings/organization/general and click on Verify Organization. If you "
     "just verified, it can take up to 15 minutes for access to propagate.", "invalid_request_error", None,
     None, "verification"),
    (403, "Country, region, or territory not supported", "request_forbidden",
     "unsupported_country_region_territory", None, "location"),
]  # fmt: skip


@pytest.mark.parametrize(("status", "message", "kind", "code", "param", "cause"), OPENAI)
def test_openai_says_our_settings_are_wrong(
    status: int, message: str, kind: str, code: str | None, param: str | None, cause: str
) -> None:
    error = openai_error(status, message, kind, code, param)
    assert (error.error_class, error.cause, error.param) == (ErrorClass.CONFIG, cause, param)


def test_an_openai_moderation_block_stays_content() -> None:
    error = openai_error(
        400, "Your request was rejected by the safety system.", "image_generation_user_error",
        "moderation_blocked",
    )  # fmt: skip
    assert error.error_class is ErrorClass.CONTENT


def test_the_alert_names_the_setting_and_never_the_providers_text() -> None:
    fault = ProviderCallError(
        ErrorClass.CONFIG, "sk-abc secret text", cause="parameter", param="input_fidelity"
    )
    text = config_alert("openai", "image", "gpt-image-2", fault)
    assert "OPENAI_IMAGE_MODEL=gpt-image-2" in text and "input_fidelity" in text
    assert "secret" not in text and "sk-" not in text
    gone = config_alert(
        "gemini", "vision", "gemini-x", ProviderCallError(ErrorClass.CONFIG, "", cause="model")
    )
    assert (
        gone
        == "GEMINI_VISION_MODEL=gemini-x does not exist at gemini: set it to a model in shared/ai_models.py."
    )
