"""The provider registry (:data:`shared.ai_providers.PROVIDERS`, issue 21 item 3): one entry per provider
name the settings admit, each with a guest-facing title in every kiosk language and priced models for both
roles; an unknown name is a :class:`shared.errors.ConfigError`."""

from __future__ import annotations

from typing import get_args

import pytest

from ingest.consent import KIOSK_LANGUAGES
from shared.ai_models import Provider
from shared.ai_providers import PROVIDERS, provider_chain, provider_info
from shared.errors import ConfigError


def test_every_provider_name_has_one_entry() -> None:
    assert sorted(PROVIDERS) == sorted(get_args(Provider))
    assert all(info.name == name for name, info in PROVIDERS.items())


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_each_provider_has_titles_and_priced_models(name: str) -> None:
    info = PROVIDERS[name]
    assert all(info.titles.get(language, "").strip() for language in KIOSK_LANGUAGES)
    priced = {m.role for m in info.models if m.price is not None and m.shutdown is None}
    assert priced == {"image", "vision"}


def test_an_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown AI provider 'anthropic'; known: gemini, openai, local"):
        provider_info("anthropic")
    with pytest.raises(ConfigError, match="'claude'"):
        provider_chain("gemini", "claude")


@pytest.mark.parametrize(
    ("primary", "fallback", "chain"),
    [
        ("gemini", "openai", ["gemini", "openai"]),
        ("gemini", "", ["gemini"]),
        ("openai", "openai", ["openai"]),
        ("local", "gemini", ["local", "gemini"]),
    ],
)
def test_the_chain_is_primary_then_a_different_fallback(
    primary: str, fallback: str, chain: list[str]
) -> None:
    assert [p.name for p in provider_chain(primary, fallback)] == chain
