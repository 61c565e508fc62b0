"""Every provider failure mapped to an error class of DESIGN.md §5, from the providers' real wire shapes
(REFERENCE.md "Gemini", "OpenAI"; spec/002 "Provider chain"; spec/004).

Gemini (google-genai ``errors.APIError``: ``code``, ``status``, ``details`` = the JSON body):

- 429 ``RESOURCE_EXHAUSTED``: a ``google.rpc.QuotaFailure`` whose ``quotaId`` contains ``PerDay`` is
  ``quota_day``; "prepayment credits are depleted" is ``credit`` (account-wide); otherwise ``rate_limit``
  with ``google.rpc.RetryInfo.retryDelay`` (``"26s"``) as the hint.
- 400 ``INVALID_ARGUMENT`` with ``API_KEY_INVALID`` / "API key not valid", 401, 403: ``auth``.
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

__all__ = ["BILLING_MARKERS", "classify_exception", "classify_gemini", "classify_openai", "is_billing_text"]

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
    if code in (408, 504):
        return ProviderCallError(ErrorClass.TIMEOUT, message, status=code)
    if code >= 500:
        return ProviderCallError(ErrorClass.OUTAGE, message, status=code, retry_after_s=hint)
    if any(marker in lowered for marker in _CONTENT_MARKERS):
        return ProviderCallError(ErrorClass.CONTENT, message, status=code)
    return ProviderCallError(ErrorClass.INTERNAL, message, status=code)


def _openai_hint(exc: openai.APIStatusError) -> float | None:
    header = _retry_after_header(exc.response.headers)
    if header is not None:
        return header
    match = _TRY_AGAIN.search(exc.message or "")
    if match:
        value = float(match.group(1))
        return value / 1000 if match.group(2).lower() == "ms" else value
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
