"""The preflight's AI checks (:mod:`shared.preflight`): ``python -m worker.preflight`` prints them as JSON
lines. Here because only the worker holds the AI keys and SDKs.

For each provider of the chain (``PRIMARY_AI_PROVIDER``, ``FALLBACK_AI_PROVIDER``) that has its key:

- ``ai.<provider>.key``: the key is accepted (the first model lookup is not refused with OpenAI's 401
  ``invalid_api_key`` / Gemini's 400 ``API_KEY_INVALID`` or 403 ``PERMISSION_DENIED``);
- ``ai.<provider>.<role>`` for the image and the vision model: the model exists at the provider (OpenAI
  ``client.models.retrieve``, 404 ``model_not_found`` otherwise; Gemini ``client.aio.models.get``, 404
  ``NOT_FOUND``), is in the catalogue (:func:`shared.ai_models.lookup`; the worker refuses a model it does
  not know), has a price (:func:`priced`), and is not past its shutdown (fail) nor within
  :data:`shared.ai_models.SHUTDOWN_WARNING` of it (warn). The shutdown date is the catalogue's or the
  one OpenAI's ``Model.shutdown_date`` reports, whichever is sooner.

A provider of the chain without its key is skipped by the worker (a warning here); ``local`` needs
nothing. The calls go where the worker's go: ``AI_BASE_URL_*`` (the simulator in dev), else the vendor.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, date, datetime
from typing import Any

import aiohttp
import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from shared.ai_models import SHUTDOWN_WARNING, Role, lookup, price_known
from shared.ai_providers import provider_chain
from shared.errors import ConfigError, StickerBoothError
from shared.preflight import CheckResult, emit, fail, ok, warn
from shared.settings import load_settings
from worker.settings import PipelineSettings

#: Seconds one model lookup may take.
CALL_TIMEOUT_S = 20.0
ROLES: tuple[Role, ...] = ("image", "vision")


class ModelMissing(StickerBoothError):
    """The provider answered that the model does not exist (404)."""


class KeyRefused(StickerBoothError):
    """The provider refused the key (401, or Gemini's 400 ``API_KEY_INVALID`` / 403)."""


async def openai_model(settings: PipelineSettings, model: str) -> date | None:
    """``models.retrieve(model)``; its announced ``shutdown_date``, if any.

    Raises:
        ModelMissing, KeyRefused: as the provider answered; openai.APIError: anything else.
    """
    assert settings.openai_api_key is not None
    client = openai.AsyncOpenAI(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.ai_base_url_openai,
        max_retries=0,
        timeout=CALL_TIMEOUT_S,
    )
    try:
        found = await client.models.retrieve(model)
    except openai.NotFoundError as exc:
        raise ModelMissing(_openai_message(exc)) from exc
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise KeyRefused(_openai_message(exc)) from exc
    finally:
        await client.close()
    return date.fromisoformat(found.shutdown_date[:10]) if found.shutdown_date else None


def _openai_message(exc: openai.APIStatusError) -> str:
    body: Any = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    return f"{exc.status_code} {message or exc.message}"


async def gemini_model(settings: PipelineSettings, model: str) -> date | None:
    """``aio.models.get(model)`` (the Gemini API announces no shutdown date on the model: ``None``).

    Raises:
        ModelMissing, KeyRefused: as the provider answered; genai_errors.APIError: anything else.
    """
    assert settings.gemini_api_key is not None
    async with aiohttp.ClientSession() as session:
        client = genai.Client(
            api_key=settings.gemini_api_key.get_secret_value(),
            http_options=genai_types.HttpOptions(
                base_url=settings.ai_base_url_gemini,
                retry_options=genai_types.HttpRetryOptions(attempts=1),
                aiohttp_client=session,
                timeout=int(CALL_TIMEOUT_S * 1000),
            ),
        )
        try:
            await client.aio.models.get(model=model)
        except genai_errors.ClientError as exc:
            why = f"{exc.code} {exc.status}: {exc.message}"
            if exc.code == 404:
                raise ModelMissing(why) from exc
            if exc.code in (401, 403) or "API_KEY_INVALID" in str(exc.details):
                raise KeyRefused(why) from exc
            raise
    return None


async def model_check(
    settings: PipelineSettings, provider: str, role: Role, model: str, today: date
) -> CheckResult:
    """``ai.<provider>.<role>``: exists (the call), catalogued, priced, not shut down (see module)."""
    name = f"ai.{provider}.{role}"
    setting = f"{provider.upper()}_{role.upper()}_MODEL"
    catalogued = lookup(provider, model, role)
    try:
        announced = await (openai_model if provider == "openai" else gemini_model)(settings, model)
    except ModelMissing as exc:
        return fail(
            name,
            f"{setting}={model}: {provider} has no such model ({exc})",
            f"set {setting} to a current model of the catalogue (shared/ai_models.py)",
        )
    if catalogued is None:
        return fail(
            name,
            f"{setting}={model} is not in the catalogue (shared/ai_models.py): the worker will not call it",
            f"set {setting} to a model of the catalogue, or add it there with its source",
        )
    if not price_known(provider, model, role):
        return fail(
            name,
            f"{setting}={model} has no sourced price (shared/ai_models.py): its cost is unknown",
            "add the model's price with its source",
        )
    shutdowns = [d for d in (catalogued.shutdown, announced) if d is not None]
    shutdown = min(shutdowns) if shutdowns else None
    if shutdown is not None and shutdown <= today:
        return fail(
            name,
            f"{setting}={model} was shut down on {shutdown}: every call is a 404",
            f"set {setting} to a current model of the catalogue",
        )
    if shutdown is not None and shutdown - today <= SHUTDOWN_WARNING:
        return warn(
            name,
            f"{setting}={model} shuts down on {shutdown}, in {(shutdown - today).days} days",
            f"move {setting} to its successor before then",
        )
    return ok(name, f"{model}: exists, catalogued, priced" + (f", shutdown {shutdown}" if shutdown else ""))


async def provider_checks(settings: PipelineSettings, provider: str, today: date) -> list[CheckResult]:
    """The key line and one line per role for ``provider`` (which has its key)."""
    results: list[CheckResult] = []
    models = {
        "image": getattr(settings, f"{provider}_image_model"),
        "vision": getattr(settings, f"{provider}_vision_model"),
    }
    key = f"{provider.upper()}_API_KEY"
    for role in ROLES:
        try:
            results.append(
                await asyncio.wait_for(model_check(settings, provider, role, models[role], today), 60)
            )
        except KeyRefused as exc:
            return [
                fail(
                    f"ai.{provider}.key",
                    f"{provider} refuses {key}: {exc}",
                    f"create a new key in the {provider} console and set {key}",
                )
            ]
        except (openai.APIError, genai_errors.APIError, aiohttp.ClientError, TimeoutError) as exc:
            results.append(
                fail(
                    f"ai.{provider}.{role}",
                    f"{provider} did not answer the model lookup: {type(exc).__name__}: {exc}"[:300],
                    f"check that this host reaches {provider} (AI_BASE_URL_{provider.upper()})",
                )
            )
    return [ok(f"ai.{provider}.key", f"{key} accepted"), *results]


async def run_checks(today: date | None = None) -> list[CheckResult]:
    try:
        settings = load_settings(PipelineSettings)
    except ConfigError as exc:
        return [fail("settings.ai", f"invalid settings: {exc}", "correct the named variables")]
    day = today or datetime.now(UTC).date()
    chain = provider_chain(settings.primary_ai_provider, settings.fallback_ai_provider)
    results: list[CheckResult] = []
    keyed = 0
    for info in chain:
        provider, key = info.name, info.key_setting
        if key is None:
            results.append(ok(f"ai.{provider}", f"{provider} needs no key (it sends nothing out)"))
            continue
        if getattr(settings, key.lower()) is None:
            results.append(
                warn(
                    f"ai.{provider}.key",
                    f"{provider} is in the chain but {key} is not set: the worker skips it",
                    f"set {key}, or take {provider} out of PRIMARY/FALLBACK_AI_PROVIDER",
                )
            )
            continue
        keyed += 1
        results += await provider_checks(settings, provider, day)
    if not keyed and "local" not in {info.name for info in chain}:
        results.append(
            warn(
                "ai.local",
                "no provider of the chain has a key: the offline local renderer draws every pack",
                "set GEMINI_API_KEY and/or OPENAI_API_KEY for AI likenesses",
            )
        )
    return results


def main() -> int:
    return emit(asyncio.run(run_checks()))


if __name__ == "__main__":
    sys.exit(main())
