"""Every provider failure mapped to an error class of DESIGN.md §5, from the providers' real wire shapes
(REFERENCE.md "Gemini", "OpenAI"; spec/002 "Provider chain"; spec/004).

Gemini (google-genai ``errors.APIError``: ``code``, ``status``, ``details`` = the JSON body):

- 429 ``RESOURCE_EXHAUSTED``: a ``google.rpc.QuotaFailure`` whose ``quotaId`` contains ``PerDay`` is
  ``quota_day``; "prepayment credits are depleted" is ``credit`` (account-wide); otherwise ``rate_limit``
  with ``google.rpc.RetryInfo.retryDelay`` (``"26s"``) as the hint.
- 400 ``INVALID_ARGUMENT`` with ``API_KEY_INVALID`` / "API key not valid", 401, 403: ``auth``.
- ``config`` (DESIGN.md §5), the provider says our settings are wrong: 404 ``NOT_FOUND`` ("models/x is
  not found for API version v1beta, or is not supported for generateContent": no such model); 400
  ``FAILED_PRECONDITION`` ("Gemini API free tier is not available in your country. Please enable billing
  …", "User location is not supported for the API use."); 400 ``INVALID_ARGUMENT`` about a field (a
  ``google.rpc.BadRequest`` ``fieldViolations`` detail, "Invalid JSON payload received. Unknown name",
  "Invalid value at", an unsupported aspect ratio, image size, modality or schema). Other 400s (an image
  it cannot read, a payload over 20 MB) are about one job: ``internal``.
- 5xx (``INTERNAL``, ``UNAVAILABLE`` "The model is overloaded"): ``outage``; 504 ``DEADLINE_EXCEEDED``
  is a ``timeout``.
- Content refusals come back as a 200 without an image, read by the adapter
  (:meth:`worker.providers.gemini.GeminiProvider._no_image`): ``promptFeedback.blockReason`` (``SAFETY``,
  ``OTHER``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``IMAGE_SAFETY``) or a candidate's ``finishReason``
  ``SAFETY``, ``IMAGE_SAFETY``, ``PROHIBITED_CONTENT``, ``IMAGE_PROHIBITED_CONTENT``, ``BLOCKLIST``,
  ``SPII`` is ``content``; ``NO_IMAGE``, ``RECITATION``, ``IMAGE_OTHER`` and text-only answers are
  ``invalid``.

OpenAI (``openai.APIStatusError``: ``status_code``, ``code``, ``type``, ``message``):

- 429 ``insufficient_quota``: ``credit`` (never retried); 429 ``rate_limit_exceeded`` on a per-day limit
  ("requests per day (RPD)"): ``quota_day``; other 429: ``rate_limit``, hint from ``retry-after`` /
  ``retry-after-ms`` or "Please try again in 12s".
- 400 ``billing_hard_limit_reached``: ``credit``; 400 ``moderation_blocked`` (type
  ``image_generation_user_error``, GPT image models) / ``content_policy_violation`` (type
  ``invalid_request_error``, DALL·E) / "safety system": ``content``; 401/403: ``auth``; 5xx and
  "overloaded": ``outage``. A vision answer's ``refusal`` part is ``invalid`` (the adapter).
- ``APITimeoutError``: ``timeout``; ``APIConnectionError`` (refused, reset, DNS): ``outage``.
- ``config``: 404 ``model_not_found`` ("The model `x` does not exist or you do not have access to it.")
  and any other 404 (no such route: ``AI_BASE_URL_OPENAI``); 400 ``unsupported_parameter``,
  ``unsupported_value``, ``unknown_parameter``, ``invalid_value`` with a ``param``,
  ``invalid_input_fidelity_model`` (type ``image_generation_user_error``), "Invalid schema for
  response_format" (a JSON schema strict mode refuses); 403 "Your organization must be verified to use
  the model" and 403 ``unsupported_country_region_territory``.

Any provider: HTTP 402 and the billing texts (``payment required``, ``insufficient_quota``,
``billing_hard_limit_reached``, ``prepayment credits are depleted``) are ``credit``; a timeout of ours
(:class:`TimeoutError`) is ``timeout``; a dropped or refused connection is ``outage``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx2
import openai
from google.genai import errors as genai_errors

from shared.errors import ErrorClass
from worker.providers.base import ProviderCallError

__all__ = [
    "BILLING_MARKERS",
    "classify_exception",
    "classify_gemini",
    "classify_openai",
    "config_alert",
    "is_billing_text",
]

BILLING_MARKERS = (
    "prepayment credits are depleted",
    "payment required",
    "insufficient_quota",
    "billing_hard_limit_reached",
)
_AUTH_MARKERS = ("api_key_invalid", "api key not valid", "api key expired", "invalid_api_key")
_CONTENT_MARKERS = (
    "moderation_blocked",
    "content_policy_violation",
    "safety system",
    "image_safety",
    "prohibited_content",
)
#: OpenAI 400 codes of a parameter (or value) the model rejects: ``config``. Sources: the API's error
#: bodies quoted in openai-python and user issue threads (``unsupported_parameter`` "Unsupported parameter:
#: 'temperature' is not supported with this model."; ``unsupported_value``; ``invalid_input_fidelity_model``
#: "The model 'gpt-image-2' does not support the 'input_fidelity' parameter." pydantic/pydantic-ai#5413;
#: ``invalid_value`` "Invalid value: 'x'. Supported values are: …", param ``size``/``quality``).
_OPENAI_PARAMETER_CODES = frozenset(
    {
        "unsupported_parameter",
        "unsupported_value",
        "unknown_parameter",
        "invalid_value",
        "invalid_input_fidelity_model",
    }
)
#: Gemini 400 ``INVALID_ARGUMENT`` texts about a field of the request (not about one job's image):
#: ``config``. "Invalid JSON payload received. Unknown name \"x\" at 'generation_config': Cannot find
#: field." and "Invalid value at 'generation_config.image_config.aspect_ratio'" (google.rpc.BadRequest);
#: "Model does not support the requested response modalities: image"; "Unsupported …" / "… is not
#: supported …" for an aspect ratio, image size or schema.
_GEMINI_FIELD = re.compile(
    r"unknown name|invalid value at|cannot find field|is not supported|unsupported|response modalit"
    r"|generation_?config|image_?config|response_?json_?schema|response_?mime_?type",
    re.IGNORECASE,
)
_PARAM = re.compile(r"^[\w.\[\]-]{1,64}$")
_TRY_AGAIN = re.compile(r"try again in (\d+(?:\.\d+)?)(ms|s)\b", re.IGNORECASE)
_PER_DAY = re.compile(r"perday|per day|\(rpd\)", re.IGNORECASE)


def is_billing_text(text: str) -> bool:
    """Whether an error text carries one of spec/002's billing markers (case-insensitive)."""
    lowered = text.lower()
    return any(marker in lowered for marker in BILLING_MARKERS)


def _duration_s(text: str) -> float | None:
    """``"26s"`` / ``"1.5s"`` (protobuf Duration JSON) → seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", text)
    return float(match.group(1)) if match else None


def _retry_after_header(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return float(lower["retry-after-ms"]) / 1000
        if "retry-after" in lower:
            return float(lower["retry-after"])
    except ValueError:
        return None
    return None


def _gemini_retry_delay(body: Any) -> float | None:
    error = body.get("error", body) if isinstance(body, dict) else {}
    for detail in error.get("details", []) if isinstance(error, dict) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            return _duration_s(str(detail.get("retryDelay", "")))
    return None


def classify_gemini(exc: genai_errors.APIError) -> ProviderCallError:
    """A google-genai ``APIError`` as a classified :class:`ProviderCallError`."""
    code = int(exc.code or 0)
    body = exc.details if isinstance(exc.details, dict | list) else {}
    text = json.dumps(body) if body else str(exc)
    lowered = text.lower()
    headers = getattr(getattr(exc, "response", None), "headers", None)
    hint = _gemini_retry_delay(body) or _retry_after_header(headers)
    message = f"{code} {exc.status or ''} {exc.message or ''}".strip()
    if code == 402 or is_billing_text(text):
        return ProviderCallError(ErrorClass.CREDIT, message, status=code)
    if code == 429:
        if "PerDay" in text:
            return ProviderCallError(ErrorClass.QUOTA_DAY, message, status=code)
        return ProviderCallError(ErrorClass.RATE_LIMIT, message, status=code, retry_after_s=hint)
    if code in (401, 403) or any(marker in lowered for marker in _AUTH_MARKERS):
        return ProviderCallError(ErrorClass.AUTH, message, status=code)
    config = _gemini_config(code, str(exc.status or ""), exc.message or "", body)
    if config is not None:
        cause, param = config
        return ProviderCallError(ErrorClass.CONFIG, message, status=code, cause=cause, param=param)
    if code in (408, 504):
        return ProviderCallError(ErrorClass.TIMEOUT, message, status=code)
    if code >= 500:
        return ProviderCallError(ErrorClass.OUTAGE, message, status=code, retry_after_s=hint)
    if any(marker in lowered for marker in _CONTENT_MARKERS):
        return ProviderCallError(ErrorClass.CONTENT, message, status=code)
    return ProviderCallError(ErrorClass.INTERNAL, message, status=code)


def _param(value: object) -> str | None:
    """A field name the provider gave, if it looks like one (never free text into an alert)."""
    text = str(value or "")
    return text if _PARAM.match(text) else None


def _gemini_field(body: Any) -> str | None:
    """The first ``google.rpc.BadRequest.fieldViolations[].field`` of a Gemini error body."""
    error = body.get("error", body) if isinstance(body, dict) else {}
    for detail in error.get("details", []) if isinstance(error, dict) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.BadRequest"):
            for violation in detail.get("fieldViolations", []):
                if isinstance(violation, dict) and violation.get("field"):
                    return _param(violation["field"])
    return None


def _gemini_config(code: int, status: str, message: str, body: Any) -> tuple[str, str | None] | None:
    """(cause, field) when a Gemini error says our settings are wrong, else ``None``."""
    if code == 404:
        return "model", None
    if code == 400 and status == "FAILED_PRECONDITION":
        return ("location" if "location" in message.lower() else "billing"), None
    if code == 400 and status == "INVALID_ARGUMENT":
        field = _gemini_field(body)
        if field is not None or _GEMINI_FIELD.search(message):
            return "parameter", field
    return None


def _openai_hint(exc: openai.APIStatusError) -> float | None:
    header = _retry_after_header(exc.response.headers)
    if header is not None:
        return header
    match = _TRY_AGAIN.search(exc.message or "")
    if match:
        value = float(match.group(1))
        return value / 1000 if match.group(2).lower() == "ms" else value
    return None


def _openai_config(status: int, code: str, message: str, param: object) -> tuple[str, str | None] | None:
    """(cause, param) when an OpenAI error says our settings are wrong, else ``None``."""
    if status == 404:
        return "model", None
    if status == 403 and "must be verified" in message:
        return "verification", None
    if status == 403 and code == "unsupported_country_region_territory":
        return "location", None
    if status == 400 and (
        code in _OPENAI_PARAMETER_CODES or message.startswith("Invalid schema for response_format")
    ):
        return "parameter", _param(param)
    return None


def classify_openai(exc: openai.OpenAIError) -> ProviderCallError:
    """An openai SDK exception as a classified :class:`ProviderCallError`."""
    if isinstance(exc, openai.APITimeoutError):
        return ProviderCallError(ErrorClass.TIMEOUT, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderCallError(ErrorClass.OUTAGE, f"connection error: {exc.__cause__ or exc}")
    if not isinstance(exc, openai.APIStatusError):
        return ProviderCallError(ErrorClass.INTERNAL, f"{type(exc).__name__}: {exc}")
    status = exc.status_code
    code = str(exc.code or "")
    kind = str(exc.type or "")
    text = f"{code} {kind} {exc.message}"
    lowered = text.lower()
    message = f"{status} {code or kind}: {exc.message}"
    if status == 402 or is_billing_text(text):
        return ProviderCallError(ErrorClass.CREDIT, message, status=status)
    if status == 429:
        if _PER_DAY.search(exc.message or ""):
            return ProviderCallError(ErrorClass.QUOTA_DAY, message, status=status)
        return ProviderCallError(
            ErrorClass.RATE_LIMIT, message, status=status, retry_after_s=_openai_hint(exc)
        )
    config = _openai_config(status, code, exc.message or "", exc.param)
    if config is not None:
        cause, param = config
        return ProviderCallError(ErrorClass.CONFIG, message, status=status, cause=cause, param=param)
    if status in (401, 403) or code in ("invalid_api_key",):
        return ProviderCallError(ErrorClass.AUTH, message, status=status)
    if status in (408, 504):
        return ProviderCallError(ErrorClass.TIMEOUT, message, status=status)
    if status >= 500 or "overloaded" in lowered:
        return ProviderCallError(ErrorClass.OUTAGE, message, status=status, retry_after_s=_openai_hint(exc))
    if any(marker in lowered for marker in _CONTENT_MARKERS):
        return ProviderCallError(ErrorClass.CONTENT, message, status=status)
    return ProviderCallError(ErrorClass.INTERNAL, message, status=status)


def classify_exception(exc: BaseException) -> ProviderCallError:
    """Any exception out of a provider SDK call, classified.

    Timeouts (ours, aiohttp's, httpx2's) are ``timeout``; refused, reset or dropped connections and DNS
    failures are ``outage``; SDK errors go to :func:`classify_gemini` / :func:`classify_openai`;
    anything else is ``internal`` (a bug of ours).
    """
    if isinstance(exc, ProviderCallError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        return classify_gemini(exc)
    if isinstance(exc, openai.OpenAIError):
        return classify_openai(exc)
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return ProviderCallError(ErrorClass.TIMEOUT, f"timed out: {type(exc).__name__}")
    if isinstance(exc, aiohttp.ClientError | httpx2.TransportError | ConnectionError):
        return ProviderCallError(ErrorClass.OUTAGE, f"connection failed: {type(exc).__name__}: {exc}")
    return ProviderCallError(ErrorClass.INTERNAL, f"{type(exc).__name__}: {exc}")


#: The setting that names the model of each provider and role.
_MODEL_SETTING = {
    ("gemini", "image"): "GEMINI_IMAGE_MODEL",
    ("gemini", "vision"): "GEMINI_VISION_MODEL",
    ("openai", "image"): "OPENAI_IMAGE_MODEL",
    ("openai", "vision"): "OPENAI_VISION_MODEL",
}
_KEY_SETTING = {"gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
#: What to do about an account that is not set up for the call, by cause.
_ACCOUNT_FIX = {
    "billing": "enable billing on the project of {key} (the free tier is not available there)",
    "verification": "verify the organization of {key} in the provider's settings (it can take 15 minutes)",
    "location": "the provider does not serve the worker's location: run the worker in a supported region",
}


def config_alert(provider: str, role: str, model: str, error: ProviderCallError) -> str:
    """The admins' alert for a ``config`` failure: the cause and the setting to fix, from our own words,
    the model name and the field the provider named (never the provider's text, never a key)."""
    setting = f"{_MODEL_SETTING.get((provider, role), 'the model setting')}={model}"
    if error.cause == "model":
        return f"{setting} does not exist at {provider}: set it to a model in shared/ai_models.py."
    if error.cause == "parameter":
        field = f" ({error.param})" if error.param else ""
        return (
            f"{provider} rejects a parameter{field} the worker sends to {setting}: set it to a model in "
            "shared/ai_models.py that takes it, or report this as a bug."
        )
    fix = _ACCOUNT_FIX.get(error.cause or "", "check the account of {key}").format(
        key=_KEY_SETTING.get(provider, "the API key")
    )
    return f"The {provider} account is not set up for {setting}: {fix}."
