"""The providers' error answers in their real wire shapes (REFERENCE.md "Gemini", "OpenAI").

Gemini: ``{"error": {"code", "message", "status", "details": [...]}}`` (google.rpc.Status), with
``google.rpc.QuotaFailure`` (``quotaId`` ``…PerMinute…`` / ``…PerDay…``), ``google.rpc.RetryInfo``
(``retryDelay`` ``"26s"``) and ``google.rpc.ErrorInfo`` (``reason`` ``API_KEY_INVALID``).
OpenAI: ``{"error": {"message", "type", "param", "code"}}`` with ``retry-after`` / ``x-ratelimit-*`` headers.
A refused request is Gemini's 400 ``INVALID_ARGUMENT`` and OpenAI's 400 ``invalid_request_error``.
"""

from __future__ import annotations

from typing import Any

from simulators.ai.handling import RejectedRequest
from simulators.ai.state import CONTENT_KINDS

__all__ = ["gemini_error", "gemini_invalid", "openai_error", "openai_invalid"]

_QUOTA_METRIC = "generativelanguage.googleapis.com/generate_content_requests"
_HELP = {
    "@type": "type.googleapis.com/google.rpc.Help",
    "links": [
        {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
        }
    ],
}


def _gemini(
    code: int, status: str, message: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


def _quota_failure(quota_id: str, model: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": _QUOTA_METRIC,
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": model},
                "quotaValue": "10",
            }
        ],
    }


def gemini_error(
    kind: str, model: str, retry_after_s: float | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(HTTP status, JSON body, headers) of a Gemini error of ``kind`` (see :mod:`simulators.ai.state`)."""
    if kind == "rate_limit":
        details = [_quota_failure("GenerateRequestsPerMinutePerProjectPerModel", model), _HELP]
        if retry_after_s is not None:
            details.append(
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after_s:g}s"}
            )
        message = (
            "You exceeded your current quota, please check your plan and billing details. For more "
            f"information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. * Quota "
            f"exceeded for metric: {_QUOTA_METRIC}, limit: 10, model: {model}"
        )
        return 429, _gemini(429, "RESOURCE_EXHAUSTED", message, details), {}
    if kind == "quota_day":
        details = [_quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier", model), _HELP]
        message = (
            f"You exceeded your current quota. * Quota exceeded for metric: {_QUOTA_METRIC}, model: {model}"
        )
        return 429, _gemini(429, "RESOURCE_EXHAUSTED", message, details), {}
    if kind in ("credit", "billing_hard_limit"):
        message = (
            "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to "
            "manage your project and billing."
        )
        return 429, _gemini(429, "RESOURCE_EXHAUSTED", message), {}
    if kind == "payment_required":
        return 402, _gemini(402, "PAYMENT_REQUIRED", "Payment required."), {}
    if kind == "auth":
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
        return (
            400,
            _gemini(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", details),
            {},
        )
    if kind == "forbidden":
        message = "Permission denied: Consumer 'api_key:…' has been suspended."
        return 403, _gemini(403, "PERMISSION_DENIED", message), {}
    if kind == "model_not_found":  # google-gemini/gemini-api-quickstart#20, the API's body quoted there
        message = (
            f"models/{model} is not found for API version v1beta, or is not supported for generateContent. "
            "Call ListModels to see the list of available models and their supported methods."
        )
        return 404, _gemini(404, "NOT_FOUND", message), {}
    if kind == "unsupported_parameter":  # gera2ld/ai.nvim#13, MinLL/SkyrimNet-GamePlugin#77 (bodies quoted)
        message = (
            "Invalid JSON payload received. Unknown name \"thinking_level\" at 'generation_config': Cannot "
            "find field."
        )
        violation = {"field": "generation_config", "description": message}
        details = [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}]
        return 400, _gemini(400, "INVALID_ARGUMENT", message, details), {}
    if kind == "account_not_set_up":  # u14app/neo-chat#45 (the API's text quoted there)
        message = (
            "Gemini API free tier is not available in your country. Please enable billing on your project "
            "in Google AI Studio."
        )
        return 400, _gemini(400, "FAILED_PRECONDITION", message), {}
    if kind == "location_unsupported":  # poenl/gemini-api#4, google-gemini/gemini-cli#24641 (bodies)
        message = "User location is not supported for the API use."
        return 400, _gemini(400, "FAILED_PRECONDITION", message), {}
    if kind == "overloaded":
        return (
            503,
            _gemini(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
            _retry_header(retry_after_s),
        )
    return (
        500,
        _gemini(
            500,
            "INTERNAL",
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
        ),
        _retry_header(retry_after_s),
    )


def _retry_header(retry_after_s: float | None) -> dict[str, str]:
    return {"retry-after": f"{retry_after_s:g}"} if retry_after_s is not None else {}


def _openai(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def openai_error(
    kind: str, model: str, retry_after_s: float | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(HTTP status, JSON body, headers) of an OpenAI error of ``kind`` (see :mod:`simulators.ai.state`)."""
    if kind == "rate_limit":
        wait = f" Please try again in {retry_after_s:g}s." if retry_after_s is not None else ""
        message = (
            f"Rate limit reached for {model} in organization org-sim on images per minute (IPM): Limit 5, "
            f"Used 5, Requested 1.{wait} Visit https://platform.openai.com/account/rate-limits to learn more."
        )
        headers = {"x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0"}
        headers.update(_retry_header(retry_after_s))
        return 429, _openai(message, "requests", "rate_limit_exceeded"), headers
    if kind == "quota_day":
        message = (
            f"Rate limit reached for {model} in organization org-sim on requests per day (RPD): Limit 100, "
            "Used 100, Requested 1. Visit https://platform.openai.com/account/rate-limits to learn more."
        )
        return 429, _openai(message, "requests", "rate_limit_exceeded"), {}
    if kind == "credit":
        message = (
            "You exceeded your current quota, please check your plan and billing details. For more "
            "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
        )
        return 429, _openai(message, "insufficient_quota", "insufficient_quota"), {}
    if kind == "billing_hard_limit":
        return (
            400,
            _openai(
                "Billing hard limit has been reached", "invalid_request_error", "billing_hard_limit_reached"
            ),
            {},
        )
    if kind == "payment_required":
        return 402, _openai("Payment required", "invalid_request_error", None), {}
    if kind == "auth":
        message = "Incorrect API key provided: sk-sim***. You can find your API key at https://platform.openai.com/account/api-keys."
        return 401, _openai(message, "invalid_request_error", "invalid_api_key"), {}
    if kind == "forbidden":  # a restricted key without the scope: 401 missing_scope (Wei-Shaw/sub2api#1566)
        message = (
            "You have insufficient permissions for this operation. Missing scopes: api.model.images.request. "
            "Check that you have the correct role in your organization (Reader, Writer, Owner) and project "
            "(Member, Owner), and if you're using a restricted API key, that it has the necessary scopes."
        )
        return 401, _openai(message, "invalid_request_error", "missing_scope"), {}
    if kind == "location_unsupported":
        return (
            403,
            _openai(
                "Country, region, or territory not supported",
                "request_forbidden",
                "unsupported_country_region_territory",
            ),
            {},
        )
    if kind == "model_not_found":  # firecrawl/firecrawl#1052, openai/openai-agents-python#458 (bodies)
        message = f"The model `{model}` does not exist or you do not have access to it."
        return 404, _openai(message, "invalid_request_error", "model_not_found"), {}
    if kind == "unsupported_parameter":  # appatalks/eva-agent#83, npiv/chatblade#100 (bodies quoted)
        message = "Unsupported parameter: 'temperature' is not supported with this model."
        return 400, _openai(message, "invalid_request_error", "unsupported_parameter", "temperature"), {}
    if kind == "account_not_set_up":  # openai-php/client#565, openai/openai-go#565 (the API's text)
        message = (
            f"Your organization must be verified to use the model `{model}`. Please go to: "
            "https://platform.openai.com/settings/organization/general and click on Verify Organization. "
            "If you just verified, it can take up to 15 minutes for access to propagate."
        )
        return 403, _openai(message, "invalid_request_error", None), {}
    if kind == "content_policy":  # the DALL·E models' shape
        message = (
            "Your request was rejected as a result of our safety system. Your prompt may contain text "
            "that is not allowed by our safety system."
        )
        return 400, _openai(message, "invalid_request_error", "content_policy_violation"), {}
    if kind in CONTENT_KINDS:  # the GPT image models' shape
        message = (
            "Your request was rejected by the safety system. If you believe this is an error, contact us "
            "at help.openai.com and include the request ID req_sim. safety_violations=[sexual]."
        )
        body = _openai(message, "image_generation_user_error", "moderation_blocked")
        body["error"]["moderation_details"] = {"moderation_stage": "input", "categories": ["sexual"]}
        return 400, body, {}
    if kind == "overloaded":
        return (
            503,
            _openai("The engine is currently overloaded, please try again later", "server_error", None),
            _retry_header(retry_after_s),
        )
    return (
        500,
        _openai(
            "The server had an error while processing your request. Sorry about that!", "server_error", None
        ),
        _retry_header(retry_after_s),
    )


def gemini_invalid(rejection: RejectedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Gemini's answer to a refused request: 400 ``INVALID_ARGUMENT`` (google.rpc.Status)."""
    return 400, _gemini(400, "INVALID_ARGUMENT", rejection.message), {}


def openai_invalid(rejection: RejectedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
    """OpenAI's answer to a refused request: 400 ``invalid_request_error`` naming the ``param``."""
    return 400, _openai(rejection.message, rejection.error_type, rejection.code, rejection.param), {}
