"""The preflight's AI checks (``worker.preflight``) through the real SDKs against the AI provider
simulator: configured keys and models pass; an unknown model, a refused key, a model past or near its
shutdown each fail (or warn), naming the cause."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from shared.preflight import CheckResult
from tests.simulators.ai.helpers import KEY, RunningAiSim, retiring_model
from worker import preflight

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TODAY = date(2026, 12, 2)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, aisim: RunningAiSim) -> pytest.MonkeyPatch:
    """Both providers keyed and pointed at the simulator, with catalogued models without a shutdown."""
    for name, value in {
        "PRIMARY_AI_PROVIDER": "gemini",
        "FALLBACK_AI_PROVIDER": "openai",
        "GEMINI_API_KEY": KEY,
        "OPENAI_API_KEY": KEY,
        "AI_BASE_URL_GEMINI": aisim.url,
        "AI_BASE_URL_OPENAI": f"{aisim.url}/v1",
        "GEMINI_IMAGE_MODEL": "gemini-3.1-flash-image",
        "GEMINI_VISION_MODEL": "gemini-3.5-flash-lite",
        "OPENAI_IMAGE_MODEL": "gpt-image-2",
        "OPENAI_VISION_MODEL": "gpt-6.1-terra",
    }.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def statuses(results: list[CheckResult]) -> dict[str, str]:
    return {r.name: r.status for r in results}


def named(results: list[CheckResult], name: str) -> CheckResult:
    return next(r for r in results if r.name == name)


async def test_configured_keys_and_models_pass(env: pytest.MonkeyPatch) -> None:
    results = await preflight.run_checks(today=TODAY)
    assert statuses(results) == {
        "ai.gemini.key": "ok",
        "ai.gemini.image": "ok",
        "ai.gemini.vision": "ok",
        "ai.openai.key": "ok",
        "ai.openai.image": "ok",
        "ai.openai.vision": "ok",
    }


@pytest.mark.parametrize(
    ("provider", "setting"), [("gemini", "GEMINI_IMAGE_MODEL"), ("openai", "OPENAI_VISION_MODEL")]
)
async def test_an_unknown_model_fails_naming_it(env: pytest.MonkeyPatch, provider: str, setting: str) -> None:
    """A model the catalogue does not know is refused by the settings (the worker would not start)."""
    env.setenv(setting, "no-such-model-7")
    [check] = await preflight.run_checks(today=TODAY)
    assert (check.name, check.status) == ("settings.ai", "fail")
    assert setting in check.detail and "no-such-model-7" in check.detail


@pytest.mark.parametrize(
    ("provider", "setting", "model"),
    [
        ("gemini", "GEMINI_IMAGE_MODEL", "gemini-3.1-flash-image"),
        ("openai", "OPENAI_VISION_MODEL", "gpt-6.1-terra"),
    ],
)
async def test_a_model_the_provider_no_longer_serves_fails_naming_it(
    env: pytest.MonkeyPatch, aisim: RunningAiSim, provider: str, setting: str, model: str
) -> None:
    """Catalogued, but the provider answers 404 (withdrawn earlier than announced, or from this account)."""
    role = "image" if "IMAGE" in setting else "vision"
    await aisim.post("/sim/models", {"provider": provider, "name": model, "role": role, "exists": False})
    check = named(await preflight.run_checks(today=TODAY), f"ai.{provider}.{role}")
    assert check.status == "fail"
    assert f"{setting}={model}" in check.detail and "404" in check.detail


@pytest.mark.parametrize("provider", ["gemini", "openai"])
async def test_a_refused_key_fails(env: pytest.MonkeyPatch, provider: str) -> None:
    env.setenv(f"{provider.upper()}_API_KEY", "not-the-key")
    check = named(await preflight.run_checks(today=TODAY), f"ai.{provider}.key")
    assert check.status == "fail"
    assert f"{provider.upper()}_API_KEY" in check.detail


async def test_a_model_within_30_days_of_its_shutdown_warns(env: pytest.MonkeyPatch) -> None:
    retiring = retiring_model(env, days=9)
    env.setenv("OPENAI_VISION_MODEL", retiring.name)
    check = named(await preflight.run_checks(today=datetime.now(UTC).date()), "ai.openai.vision")
    assert check.status == "warn"
    assert f"{retiring.shutdown}" in check.detail and "in 9 days" in check.detail


async def test_a_model_past_its_shutdown_fails(env: pytest.MonkeyPatch) -> None:
    retiring = retiring_model(env, days=9)
    env.setenv("OPENAI_VISION_MODEL", retiring.name)
    check = named(await preflight.run_checks(today=retiring.shutdown), "ai.openai.vision")
    assert check.status == "fail"
    assert f"shut down on {retiring.shutdown}" in check.detail


async def test_a_provider_without_its_key_is_a_warning(env: pytest.MonkeyPatch) -> None:
    env.delenv("OPENAI_API_KEY")
    results = await preflight.run_checks(today=TODAY)
    assert named(results, "ai.openai.key").status == "warn"
    assert not [r for r in results if r.status == "fail"]


async def test_the_local_renderer_needs_nothing(env: pytest.MonkeyPatch) -> None:
    env.setenv("PRIMARY_AI_PROVIDER", "local")
    env.setenv("FALLBACK_AI_PROVIDER", "")
    assert statuses(await preflight.run_checks(today=TODAY)) == {"ai.local": "ok"}


async def test_a_settings_error_is_a_failed_check(env: pytest.MonkeyPatch) -> None:
    env.setenv("PRIMARY_AI_PROVIDER", "claude")
    results = await preflight.run_checks(today=TODAY)
    assert statuses(results) == {"settings.ai": "fail"}
    assert "PRIMARY_AI_PROVIDER" in results[0].detail
