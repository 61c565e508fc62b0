"""The worker's provider builders (:data:`worker.providers.factory.BUILDERS`): one per entry of
:data:`shared.ai_providers.PROVIDERS`; an unknown provider name stops the worker at start (a settings error,
and :func:`build_providers` refuses it too), never a silent OpenAI."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from shared.ai_providers import PROVIDERS
from shared.errors import ConfigError
from shared.outfits import load_catalog
from shared.settings import load_settings
from worker.providers.factory import BUILDERS, build_providers
from worker.settings import PipelineSettings


def test_every_provider_has_a_builder() -> None:
    assert sorted(BUILDERS) == sorted(PROVIDERS)


def test_an_unknown_provider_name_is_a_settings_error_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIMARY_AI_PROVIDER", "anthropic")
    with pytest.raises(ConfigError, match="PRIMARY_AI_PROVIDER"):
        load_settings(PipelineSettings)


async def test_an_unknown_provider_name_is_never_built_as_another() -> None:
    """Settings that skipped validation (``model_copy``) still cannot build an unknown provider, even with
    every key set (the old bare ``else:`` built OpenAI here)."""
    settings = PipelineSettings().model_copy(
        update={
            "primary_ai_provider": "anthropic",
            "fallback_ai_provider": "",
            "openai_api_key": SecretStr("sk-test"),
            "gemini_api_key": SecretStr("test"),
        }
    )
    with pytest.raises(ConfigError, match="unknown AI provider 'anthropic'"):
        build_providers(settings, load_catalog())


async def test_a_provider_without_its_key_is_skipped_with_its_key_named() -> None:
    settings = PipelineSettings().model_copy(
        update={
            "primary_ai_provider": "gemini",
            "fallback_ai_provider": "openai",
            "gemini_api_key": None,
            "openai_api_key": None,
        }
    )
    providers, warnings = build_providers(settings, load_catalog())
    assert [p.name for p in providers] == ["local"]
    assert warnings == [
        "gemini skipped: GEMINI_API_KEY is not set",
        "openai skipped: OPENAI_API_KEY is not set",
        "no AI provider has a key: the local renderer serves every call",
    ]
