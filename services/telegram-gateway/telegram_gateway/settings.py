"""Telegram gateway settings. The bot token lives here and nowhere else (DESIGN.md §12)."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from shared.settings import AdminUsersSettings, BotIdentitySettings, BudgetSettings, ServiceSettings


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

    @field_validator("telegram_bot_token")
    @classmethod
    def _token_shape(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value()
        if ":" not in token or token.lower() in {"changeme", "change-me", "token"}:
            raise ValueError("TELEGRAM_BOT_TOKEN must be a bot token (<id>:<secret>)")
        return value
