"""``TELEGRAM_UPDATES`` and the webhook settings are checked at start (pydantic-settings): polling needs
nothing more; webhook mode needs an https:// URL on a port Telegram calls and a secret Telegram accepts,
and never the dev stacks' published secret with the real Telegram."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from telegram_gateway.settings import GatewaySettings

BASE = {
    "DATABASE_URL": "postgresql://booth@db/booth",
    "REDIS_URL": "redis://redis:6379/0",
    "TELEGRAM_BOT_TOKEN": "123:abc",
    "BOT_USERNAME": "stickerbooth_bot",
}
WEBHOOK = {
    **BASE,
    "TELEGRAM_UPDATES": "webhook",
    "TELEGRAM_WEBHOOK_URL": "https://booth.example/telegram/webhook",
    "TELEGRAM_WEBHOOK_SECRET": "a-real_Secret-0123",
}


def settings(**env: Any) -> GatewaySettings:
    return GatewaySettings(**env)


def test_polling_is_the_default_and_needs_no_webhook_settings() -> None:
    assert settings(**BASE).telegram_updates == "polling"


def test_webhook_mode_with_url_and_secret_loads_and_routes_the_urls_path() -> None:
    loaded = settings(**WEBHOOK)
    assert (loaded.telegram_updates, loaded.webhook_path) == ("webhook", "/telegram/webhook")
    assert (
        settings(**{**WEBHOOK, "TELEGRAM_WEBHOOK_URL": "https://booth.example:8443/hook"}).webhook_port
        == 8443
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"TELEGRAM_WEBHOOK_URL": ""}, "needs TELEGRAM_WEBHOOK_URL"),
        ({"TELEGRAM_WEBHOOK_SECRET": ""}, "needs TELEGRAM_WEBHOOK_SECRET"),
        ({"TELEGRAM_WEBHOOK_URL": "http://booth.example/hook"}, "https://"),
        ({"TELEGRAM_WEBHOOK_URL": "https://booth.example:9000/hook"}, "443, 80, 88 or 8443"),
        ({"TELEGRAM_WEBHOOK_SECRET": "has space"}, "A-Z a-z 0-9 _ -"),
        ({"TELEGRAM_WEBHOOK_SECRET": "x" * 257}, "1-256"),
        ({"TELEGRAM_WEBHOOK_SECRET": "sim-only-webhook-secret-not-valid-at-telegram"}, "dev default"),
        ({"TELEGRAM_UPDATES": "push"}, "TELEGRAM_UPDATES"),
        ({"TELEGRAM_WEBHOOK_MAX_CONNECTIONS": "101"}, "TELEGRAM_WEBHOOK_MAX_CONNECTIONS"),
    ],
)
def test_a_bad_webhook_setting_is_refused_naming_it(change: dict[str, str], named: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(named)):
        settings(**{**WEBHOOK, **change})


def test_the_dev_secret_is_fine_with_the_simulator() -> None:
    dev = {
        **WEBHOOK,
        "TELEGRAM_WEBHOOK_SECRET": "sim-only-x",
        "TELEGRAM_API_BASE_URL": "http://telegram-sim:8081",
    }
    assert settings(**dev).webhook_secret is not None
