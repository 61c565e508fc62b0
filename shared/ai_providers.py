"""The AI providers of the chain (``PRIMARY_AI_PROVIDER``, ``FALLBACK_AI_PROVIDER``; DESIGN.md §5), one
entry each: the guest-facing title the kiosk's consent screen names (issue 11), the setting of its API key,
and its models with their prices (the entries of :data:`shared.ai_models.CATALOGUE`). Read by the worker
(whose :data:`worker.providers.factory.BUILDERS` holds one builder per entry), ingest (the consent text)
and the preflight. Adding a provider is one entry here, its models in the catalogue, and its builder.

A name that is not here is a start-up error: the settings' types admit only these names
(:data:`shared.ai_models.Provider`), and :func:`provider_info` raises :class:`shared.errors.ConfigError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.ai_models import CATALOGUE, ModelInfo, Provider
from shared.errors import ConfigError
from shared.texts import CATALOGUES

__all__ = ["PROVIDERS", "ProviderInfo", "provider_chain", "provider_info"]


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """One AI provider.

    Attributes:
        name: ``gemini``, ``openai``, ``local`` (a value of ``PRIMARY_AI_PROVIDER``, of
            ``api_usage.provider``).
        titles: how the guest reads its name, per language (the consent screen's ``{providers}``): the
            ``provider`` texts of the catalogues (:mod:`shared.texts`).
        key_setting: the env name of its API key (a provider of the chain without one is skipped by the
            worker), or ``None`` when it needs none (``local`` sends the photo nowhere).
    """

    name: Provider
    titles: Mapping[str, str]
    key_setting: str | None

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        """Its models in :data:`shared.ai_models.CATALOGUE`, each with its price (or ``None``: unpriced)."""
        return tuple(m for m in CATALOGUE.values() if m.provider == self.name)


_TITLES = CATALOGUES.table("provider")

#: Provider name → provider.
PROVIDERS: dict[str, ProviderInfo] = {
    p.name: p
    for p in (
        ProviderInfo("gemini", _TITLES["gemini"], "GEMINI_API_KEY"),
        ProviderInfo("openai", _TITLES["openai"], "OPENAI_API_KEY"),
        ProviderInfo("local", _TITLES["local"], None),
    )
}


def provider_info(name: str) -> ProviderInfo:
    """The entry of provider ``name``.

    Raises:
        ConfigError: ``name`` is no provider of :data:`PROVIDERS` (the message lists them).
    """
    info = PROVIDERS.get(name)
    if info is None:
        raise ConfigError(f"unknown AI provider {name!r}; known: {', '.join(PROVIDERS)}")
    return info


def provider_chain(primary: str, fallback: str) -> tuple[ProviderInfo, ...]:
    """The providers of the chain, in order: ``primary``, then ``fallback`` when set (non-empty) and
    different (spec/002 "Provider chain"; the worker's chain, the preflight's checks and the consent
    screen's names all follow it).

    Raises:
        ConfigError: either name is no provider of :data:`PROVIDERS`.
    """
    names = (primary,) if not fallback or fallback == primary else (primary, fallback)
    return tuple(provider_info(name) for name in names)
