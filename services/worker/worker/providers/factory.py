"""The provider chain from settings (spec/002 "Provider chain"): ``PRIMARY_AI_PROVIDER`` then
``FALLBACK_AI_PROVIDER``; a provider without an API key is skipped with a start-up warning; with no
usable provider at all the ``local`` renderer serves (the demo's default, DESIGN.md §5).

Each provider of :data:`shared.ai_providers.PROVIDERS` (title, key setting, priced models) has its builder
in :data:`BUILDERS`; a name without one is a start-up error (:class:`shared.errors.ConfigError`), never
another provider."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

import redis.asyncio as aioredis

from shared.ai_providers import provider_chain
from shared.errors import ConfigError
from shared.outfits import Outfit
from worker.cost import Alerter
from worker.providers.base import Provider
from worker.providers.budget import BudgetLimits, FleetBudget
from worker.providers.chain import ChainPolicy, ProviderChain
from worker.providers.gemini import GeminiProvider
from worker.providers.local import LocalProvider
from worker.providers.openai_api import OpenAIProvider
from worker.settings import PipelineSettings

__all__ = ["BUILDERS", "Builder", "build_chain", "build_providers", "chain_policy", "fleet_budget"]


#: Builds one provider from the settings (its key, base URL, models) and the outfit catalogue, or
#: ``None`` when its key (:attr:`shared.ai_providers.ProviderInfo.key_setting`) is not set.
Builder = Callable[[PipelineSettings, Mapping[str, Outfit]], Provider | None]


def _gemini(settings: PipelineSettings, catalog: Mapping[str, Outfit]) -> Provider | None:
    if settings.gemini_api_key is None:
        return None
    return GeminiProvider(
        settings.gemini_api_key.get_secret_value(),
        base_url=settings.ai_base_url_gemini,
        image_model=settings.gemini_image_model,
        vision_model=settings.gemini_vision_model,
    )


def _openai(settings: PipelineSettings, catalog: Mapping[str, Outfit]) -> Provider | None:
    if settings.openai_api_key is None:
        return None
    return OpenAIProvider(
        settings.openai_api_key.get_secret_value(),
        base_url=settings.ai_base_url_openai,
        image_model=settings.openai_image_model,
        vision_model=settings.openai_vision_model,
        timeout_s=settings.ai_timeout_sec,
    )


def _local(settings: PipelineSettings, catalog: Mapping[str, Outfit]) -> Provider:
    return LocalProvider(catalog)


#: Provider name → its builder: one per entry of :data:`shared.ai_providers.PROVIDERS`.
BUILDERS: dict[str, Builder] = {"gemini": _gemini, "openai": _openai, "local": _local}


def build_providers(
    settings: PipelineSettings, catalog: Mapping[str, Outfit]
) -> tuple[list[Provider], list[str]]:
    """The providers of the chain, in order, and the start-up warnings (skipped providers, no fallback).

    Keys are read from the settings here and handed to the SDK clients; they appear nowhere else.

    Raises:
        ConfigError: a provider name of the chain is not in :data:`shared.ai_providers.PROVIDERS` or has
            no builder in :data:`BUILDERS`.
    """
    providers: list[Provider] = []
    warnings: list[str] = []
    for info in provider_chain(settings.primary_ai_provider, settings.fallback_ai_provider):
        builder = BUILDERS.get(info.name)
        if builder is None:
            raise ConfigError(f"AI provider {info.name!r} has no builder in worker.providers.factory")
        provider = builder(settings, catalog)
        if provider is None:
            warnings.append(f"{info.name} skipped: {info.key_setting} is not set")
            continue
        providers.append(provider)
    if not providers:
        warnings.append("no AI provider has a key: the local renderer serves every call")
        providers.append(_local(settings, catalog))
    elif len(providers) == 1 and providers[0].name != "local":
        warnings.append(f"{providers[0].name} has no fallback provider")
    return providers, warnings


def chain_policy(settings: PipelineSettings) -> ChainPolicy:
    """The chain's numbers from the settings."""
    return ChainPolicy(
        rate_limit_delays=settings.rate_limit_delays,
        max_hint_s=settings.rate_limit_max_hint_sec,
        jitter=settings.rate_limit_jitter,
        image_timeout_s=settings.ai_timeout_sec,
        image_guard_s=settings.ai_timeout_guard_sec,
        vision_timeout_s=settings.vision_timeout_sec,
        vision_guard_s=settings.vision_timeout_guard_sec,
        fallback_alert_cooldown_s=settings.fallback_alert_cooldown_sec,
    )


def fleet_budget(settings: PipelineSettings, redis: aioredis.Redis) -> FleetBudget:
    """The fleet-wide provider budget from the ``AI_FLEET_*`` settings, on the replica's Redis client."""
    return FleetBudget(
        redis,
        {
            "image": BudgetLimits(settings.ai_fleet_max_images_in_flight, settings.ai_fleet_images_per_min),
            "vision": BudgetLimits(settings.ai_fleet_max_vision_in_flight, settings.ai_fleet_vision_per_min),
        },
        lease_s=settings.ai_fleet_lease_sec,
        wait_max_s=settings.ai_fleet_wait_max_sec,
    )


def build_chain(
    settings: PipelineSettings,
    providers: list[Provider],
    *,
    alert: Alerter | None,
    redis: aioredis.Redis | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ProviderChain:
    """The process's chain, with its ``AI_MAX_PARALLEL_IMAGES`` semaphore (shared by every slot) and, given
    ``redis``, the fleet budget shared with every replica (:func:`fleet_budget`)."""
    return ProviderChain(
        providers,
        chain_policy(settings),
        image_slots=asyncio.Semaphore(settings.ai_max_parallel_images),
        budget=None if redis is None else fleet_budget(settings, redis),
        alert=alert,
        sleep=sleep,
    )
