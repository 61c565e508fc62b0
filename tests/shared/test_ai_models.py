"""The model catalogue (``shared/ai_models.py``): every usable model priced per token with a source and a
date, the defaults current today with no announced shutdown within 30 days, and a configured model that is
unknown, unpriced or past its shutdown refused with a message naming the setting."""

from __future__ import annotations

from datetime import date

import pytest

from shared.ai_models import (
    CATALOGUE,
    SHUTDOWN_WARNING,
    TokenUsage,
    check_model,
    lookup,
    price_known,
    shutdown_notice,
)
from shared.errors import ConfigError
from worker.settings import PipelineSettings

pytestmark = pytest.mark.unit

TODAY = date(2026, 12, 2)


def test_every_priced_model_names_its_source_and_the_day_it_was_read() -> None:
    for info in CATALOGUE.values():
        if info.price is None or info.provider == "local":
            continue
        assert info.price.source.startswith("https://"), info.name
        assert info.price.read <= TODAY
        assert info.source
        if info.role == "image":
            assert set(info.image_tokens) == {"1K", "2K"} and info.tokens_source, info.name


def test_the_default_models_are_known_priced_and_current() -> None:
    """No default shuts down within 30 days of 2026-12-02 (the issue's rule for defaults)."""
    configured = PipelineSettings().configured_models()
    assert len(configured) == 4
    for env, provider, name, role in configured:
        info = check_model(env, provider, name, role, today=TODAY)
        assert info.shutdown is None or info.shutdown > TODAY + SHUTDOWN_WARNING, (env, name)


def test_the_default_openai_vision_model_is_gpt_5_minis_named_replacement() -> None:
    """gpt-5-mini shuts down on 2026-12-11 (openai SDK ``chat_model.py``); OpenAI's deprecations page names
    gpt-6.1-terra its replacement."""
    default = PipelineSettings().openai_vision_model
    retired = lookup("openai", "gpt-5-mini", "vision")
    assert retired is not None and retired.shutdown == date(2026, 12, 11)
    assert default == retired.replacement == "gpt-6.1-terra"


@pytest.mark.parametrize(
    ("provider", "name", "role", "reason"),
    [
        ("openai", "gpt-5-mini-typo", "vision", "is not a known openai vision model"),
        ("gemini", "gemini-3.1-flash-image", "vision", "is not a known gemini vision model"),  # wrong role
        ("gemini", "gemini-3-pro-image", "image", "has no sourced price"),
        ("openai", "gpt-image-1", "image", "was shut down on 2026-10-23; use gpt-image-2.5-sunburst"),
        ("gemini", "gemini-3.1-flash-image-preview", "image", "was shut down on 2026-06-25"),
    ],
)
def test_a_model_that_cannot_be_used_is_a_config_error_naming_the_setting(
    provider: str, name: str, role: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        check_model("THE_SETTING", provider, name, role, today=TODAY)
    assert str(raised.value).startswith(f"THE_SETTING: {name!r} ") and reason in str(raised.value)


def test_a_model_is_refused_from_its_shutdown_day_not_before() -> None:
    assert check_model("S", "openai", "gpt-5-mini", "vision", today=date(2026, 12, 10)).name == "gpt-5-mini"
    with pytest.raises(ConfigError, match=r"shut down on 2026-12-11; use gpt-6\.1-terra"):
        check_model("S", "openai", "gpt-5-mini", "vision", today=date(2026, 12, 11))


def test_price_known_is_the_preflights_check() -> None:
    assert price_known("gemini", "gemini-3.1-flash-image", "image")
    assert price_known("openai", "gpt-6.1-terra", "vision")
    assert not price_known("gemini", "gemini-3-pro-image", "image")  # in the catalogue, unpriced
    assert not price_known("openai", "no-such-model", "image")


def test_the_shutdown_notice_starts_30_days_before_and_names_the_replacement() -> None:
    info = lookup("openai", "gpt-5-mini", "vision")
    assert info is not None
    assert shutdown_notice("OPENAI_VISION_MODEL", info, today=date(2026, 11, 10)) is None  # 31 days before
    text = shutdown_notice("OPENAI_VISION_MODEL", info, today=date(2026, 11, 11))
    assert text is not None and "2026-12-11 (in 30 days)" in text and "gpt-6.1-terra" in text
    assert "OPENAI_VISION_MODEL" in text
    current = lookup("gemini", "gemini-3.5-flash-lite", "vision")
    assert current is not None and shutdown_notice("GEMINI_VISION_MODEL", current, today=TODAY) is None


def test_a_price_charges_each_kind_of_token_at_its_rate() -> None:
    price = CATALOGUE[("gemini", "gemini-3.1-flash-image", "image")].price
    assert price is not None
    usage = TokenUsage(
        input_text_tokens=1000,
        input_image_tokens=2000,
        output_text_tokens=100,
        output_image_tokens=1680,
        reasoning_tokens=400,
    )
    # $0.50 per 1M input (text and image), $3.00 per 1M text and thinking output, $60 per 1M image output
    assert price.cost(usage) == pytest.approx((3000 * 0.50 + 500 * 3.00 + 1680 * 60.0) / 1e6)
    one_2k_image = price.cost(TokenUsage(output_image_tokens=1680))
    assert one_2k_image == pytest.approx(0.1008)  # not 0.067, the older Gemini 2.5 Flash Image price
