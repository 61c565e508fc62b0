"""Telegram gateway settings. The bot token lives here and nowhere else (DESIGN.md §12)."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from shared.settings import AdminUsersSettings, BotIdentitySettings, BudgetSettings, ServiceSettings

#: The ports Telegram delivers webhooks to (core.telegram.org/bots/api#setwebhook: "Ports currently
#: supported for webhooks: 443, 80, 88, 8443").
WEBHOOK_PORTS = frozenset({443, 80, 88, 8443})
#: ``secret_token`` of ``setWebhook``: "1-256 characters. Only characters A-Z, a-z, 0-9, _ and - are allowed".
WEBHOOK_SECRET_PATTERN = r"^[A-Za-z0-9_-]{1,256}$"
#: The dev stacks' published webhook secrets (compose, devstack) start so; refused with the real Telegram.
DEV_SECRET_PREFIXES = ("sim-only", "simulator-")


class GatewaySettings(ServiceSettings, AdminUsersSettings, BudgetSettings, BotIdentitySettings):
    """Env of the gateway.

    ``TELEGRAM_BOT_TOKEN`` (secret, required), ``TELEGRAM_API_BASE_URL`` (default Telegram; the simulator
    in dev), ``ADMIN_USER_IDS`` (:class:`shared.settings.AdminUsersSettings`), ``ADMIN_CHAT_ID`` (where
    admin alerts go; unset: alerts are only logged), ``OUTBOX_SLOTS`` (commands executed at once),
    ``POLL_TIMEOUT_SEC`` (long-polling timeout, s), ``RATE_LIMIT_MAX_RETRIES`` (how often a 429 is waited
    out with its ``retry_after`` before the command is deferred to the end of the wait),
    ``TELEGRAM_FLOOD_WAIT_MAX_SEC`` (30 s: the longest 429 wait slept for one chat or method; after a
    longer one the command's row waits in the outbox until ``retry_after`` has passed, :mod:`.executor`),
    ``LEADS_ENABLED`` / ``LEADS_CHAT_ID`` (route the staff group and ``stickers_`` buttons to the leads
    service; :mod:`.leads_updates`).
    ``DAILY_BUDGET_USD`` (:class:`shared.settings.BudgetSettings`): the worker's daily budget, read here
    for ``/status`` (spend today against it).
    ``BOT_USERNAME`` (:class:`shared.settings.BotIdentitySettings`): the gateway refuses to start when the
    token's bot (``getMe``) is another one (:mod:`telegram_gateway.identity`).
    ``TELEGRAM_MEDIA_TIMEOUT_SEC`` (60 s): the read and write timeout of the calls that carry or make
    stickers (``createNewStickerSet`` with up to 12 uploads, ``addStickerToSet``, ``sendSticker``), instead
    of python-telegram-bot's 5 s read timeout (``HTTPXRequest(read_timeout=5.0)``; its own bound for
    uploads is ``media_write_timeout=20.0``, telegram/request/_httpxrequest.py). Telegram documents no
    processing bound for these calls (its Bot API server, tdlib/telegram-bot-api Client.cpp, sets none);
    60 s is the response timeout other Bot API clients default to (telegram-bot-sdk.com/docs/advanced/
    timeouts: "a 60 second timeout for waiting response from Telegram Bot API servers"), and three times
    PTB's upload bound. A call still timing out is reconciled (:mod:`.sticker_sets`), not repeated blindly.
    ``GATEWAY_LEASE_TTL_SEC`` (6 s): the leadership lease's time to live (:mod:`.lease`): the leader renews
    every third of it, and a standby replaces a dead leader within about 7/6 of it.

    ``TELEGRAM_UPDATES`` (``polling``, the default; or ``webhook``): how updates arrive (:mod:`.webhook`).
    Webhook mode needs ``TELEGRAM_WEBHOOK_URL`` (the public ``https://`` URL Telegram POSTs to, on port 443,
    80, 88 or 8443: Telegram's only ones; its path is the gateway's route) and ``TELEGRAM_WEBHOOK_SECRET``
    (the ``secret_token``, 1-256 of ``A-Z a-z 0-9 _ -``; checked on every POST).
    ``WEBHOOK_HOST`` / ``WEBHOOK_PORT`` (``0.0.0.0:8443``) is where the gateway listens (plain HTTP behind
    the TLS-terminating ingress), ``TELEGRAM_WEBHOOK_MAX_CONNECTIONS`` (1-100, Telegram's default 40: POSTs
    at once), ``WEBHOOK_MAX_BODY_BYTES`` (1 MiB: a larger POST is refused 413; an Update is a few KB).
    """

    telegram_bot_token: SecretStr = Field(validation_alias="TELEGRAM_BOT_TOKEN")
    telegram_api_base_url: str = Field("https://api.telegram.org", validation_alias="TELEGRAM_API_BASE_URL")
    admin_chat_id: int | None = Field(None, validation_alias="ADMIN_CHAT_ID")
    outbox_slots: int = Field(8, ge=1, validation_alias="OUTBOX_SLOTS")
    poll_timeout_sec: int = Field(10, ge=0, validation_alias="POLL_TIMEOUT_SEC")
    rate_limit_max_retries: int = Field(3, ge=0, validation_alias="RATE_LIMIT_MAX_RETRIES")
    flood_wait_max_sec: float = Field(30.0, ge=0, validation_alias="TELEGRAM_FLOOD_WAIT_MAX_SEC")
    sending_stale_sec: float = Field(60.0, gt=0, validation_alias="SENDING_STALE_SEC")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
    leads_chat_id: int | None = Field(None, validation_alias="LEADS_CHAT_ID")
    media_timeout_sec: float = Field(60.0, gt=0, validation_alias="TELEGRAM_MEDIA_TIMEOUT_SEC")
    lease_ttl_sec: float = Field(6.0, ge=1.0, le=60.0, validation_alias="GATEWAY_LEASE_TTL_SEC")

    telegram_updates: Literal["polling", "webhook"] = Field("polling", validation_alias="TELEGRAM_UPDATES")
    webhook_url: str = Field("", validation_alias="TELEGRAM_WEBHOOK_URL")
    webhook_secret: SecretStr | None = Field(None, validation_alias="TELEGRAM_WEBHOOK_SECRET")
    webhook_host: str = Field("0.0.0.0", validation_alias="WEBHOOK_HOST")
    webhook_port: int = Field(8443, ge=0, le=65535, validation_alias="WEBHOOK_PORT")
    webhook_max_connections: int = Field(
        40, ge=1, le=100, validation_alias="TELEGRAM_WEBHOOK_MAX_CONNECTIONS"
    )
    webhook_max_body_bytes: int = Field(1024 * 1024, ge=1024, validation_alias="WEBHOOK_MAX_BODY_BYTES")

    @property
    def webhook_path(self) -> str:
        """The gateway's route: the path of ``TELEGRAM_WEBHOOK_URL`` (``/`` when it has none)."""
        return urlsplit(self.webhook_url).path or "/"

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url_shape(cls, value: str) -> str:
        """An HTTPS URL on a port Telegram delivers to (it refuses any other in ``setWebhook``)."""
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("TELEGRAM_WEBHOOK_URL must be an https:// URL (Telegram posts only over HTTPS)")
        if (parts.port or 443) not in WEBHOOK_PORTS:
            raise ValueError("TELEGRAM_WEBHOOK_URL's port must be 443, 80, 88 or 8443 (Telegram's only ones)")
        return value

    @field_validator("webhook_secret")
    @classmethod
    def _webhook_secret_shape(cls, value: SecretStr | None) -> SecretStr | None:
        """What ``setWebhook`` accepts as ``secret_token``; an empty value means none."""
        if value is None or not value.get_secret_value():
            return None
        if re.fullmatch(WEBHOOK_SECRET_PATTERN, value.get_secret_value()) is None:
            raise ValueError("TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z a-z 0-9 _ -")
        return value

    @model_validator(mode="after")
    def _webhook_mode_complete(self) -> GatewaySettings:
        """Webhook mode needs the URL and the secret (an unchecked route would take forged updates)."""
        if self.telegram_updates == "webhook":
            if not self.webhook_url:
                raise ValueError("TELEGRAM_UPDATES=webhook needs TELEGRAM_WEBHOOK_URL")
            if self.webhook_secret is None:
                raise ValueError("TELEGRAM_UPDATES=webhook needs TELEGRAM_WEBHOOK_SECRET")
            real = urlsplit(self.telegram_api_base_url).hostname == "api.telegram.org"
            if real and self.webhook_secret.get_secret_value().lower().startswith(DEV_SECRET_PREFIXES):
                raise ValueError(
                    "TELEGRAM_WEBHOOK_SECRET is the simulator's dev default: set a real one for Telegram "
                    "(e.g. openssl rand -hex 32)"
                )
        return self

    @field_validator("telegram_bot_token")
    @classmethod
    def _token_shape(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value()
        if ":" not in token or token.lower() in {"changeme", "change-me", "token"}:
            raise ValueError("TELEGRAM_BOT_TOKEN must be a bot token (<id>:<secret>)")
        return value
