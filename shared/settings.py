"""Settings parts every service composes into its own pydantic-settings class.

Each service builds exactly one settings object in its ``main.py`` and passes it down; nothing else reads
``os.environ``. Secrets have no defaults. Names follow the spec (``MAX_ATTEMPTS``, ``AI_MAX_PARALLEL_IMAGES``,
...) so the env of the single-server system keeps its meaning.
"""

from __future__ import annotations

import re
import sys
from typing import TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.ai_models import Provider
from shared.bot_identity import bot_username_problems
from shared.errors import ConfigError

S = TypeVar("S", bound=BaseSettings)

#: The AI providers of the chain ``PRIMARY_AI_PROVIDER``, ``FALLBACK_AI_PROVIDER`` (DESIGN.md §5;
#: :data:`shared.ai_providers.PROVIDERS`): another name is a settings error at start.
ProviderName = Provider


def load_settings(cls: type[S]) -> S:
    """Build ``cls`` from the environment.

    Raises:
        ConfigError: a setting is missing or invalid; the message names each env variable and why, never
            its value (it may be a secret).
    """
    try:
        return cls()
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(settings)'}: {error['msg']}"
            for error in exc.errors(include_input=False, include_url=False)
        )
        raise ConfigError(problems) from exc


def settings_or_exit(cls: type[S], service: str) -> S:
    """The service's settings, or exit with code 2 and one line on stderr naming what is wrong
    (:class:`shared.errors.ConfigError`): a start-up error the orchestrator shows, not a traceback."""
    try:
        return load_settings(cls)
    except ConfigError as exc:
        print(f"{service}: invalid settings: {exc}", file=sys.stderr)
        sys.exit(2)


class ServiceSettings(BaseSettings):
    """What every service needs: Postgres, Redis, stream consumer limits, logging and the ops port.

    Env: ``DATABASE_URL`` (``postgresql://user:pass@host:5432/db``), ``REDIS_URL``
    (``redis://host:6379/0``), ``LOG_LEVEL``, ``OPS_PORT`` (``/healthz``, ``/readyz``, ``/metrics``),
    ``MAX_DELIVERIES`` (a stream entry delivered more often goes to ``<stream>:dead``, DESIGN.md §3),
    ``STREAM_LEASE_SEC`` (pending entries idle longer are taken over), ``RECONCILE_GRACE_SEC`` (an outbox
    row still pending after this many seconds is re-published), ``REPUBLISH_AFTER_SEC`` (a hint published
    that long ago whose row is still pending is published again: Redis may have lost it),
    ``MAINTENANCE_MODE`` (``1``: the ``env`` maintenance source, cleared only by a restart without it;
    :mod:`shared.maintenance`).
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    database_url: str = Field(validation_alias="DATABASE_URL")
    redis_url: str = Field(validation_alias="REDIS_URL")
    log_level: str = Field("INFO", validation_alias="LOG_LEVEL")
    log_format: str = Field("json", validation_alias="LOG_FORMAT")
    ops_port: int = Field(0, validation_alias="OPS_PORT")
    consumer_name: str = Field("", validation_alias="CONSUMER_NAME")
    max_deliveries: int = Field(5, ge=1, validation_alias="MAX_DELIVERIES")
    stream_lease_sec: float = Field(60.0, gt=0, validation_alias="STREAM_LEASE_SEC")
    stream_block_ms: int = Field(2000, ge=10, validation_alias="STREAM_BLOCK_MS")
    stream_maxlen: int = Field(100_000, ge=100, validation_alias="STREAM_MAXLEN")
    reconcile_grace_sec: float = Field(10.0, ge=0, validation_alias="RECONCILE_GRACE_SEC")
    reconcile_interval_sec: float = Field(2.0, gt=0, validation_alias="RECONCILE_INTERVAL_SEC")
    republish_after_sec: float = Field(120.0, gt=0, validation_alias="REPUBLISH_AFTER_SEC")
    maintenance_mode: bool = Field(False, validation_alias="MAINTENANCE_MODE")

    @field_validator("database_url")
    @classmethod
    def _require_postgres(cls, value: str) -> str:
        if not value.startswith(("postgresql://", "postgres://", "postgresql+asyncpg://")):
            raise ValueError("DATABASE_URL must be a postgresql:// URL")
        return value

    @field_validator("redis_url")
    @classmethod
    def _require_redis(cls, value: str) -> str:
        """The schemes redis-py's ``Redis.from_url`` accepts; anything else failed later with a traceback."""
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("REDIS_URL must be a redis://, rediss:// or unix:// URL")
        return value


class BotIdentitySettings(BaseSettings):
    """The bot's public username, needed for deep links and sticker set names (not a secret).

    ``BOT_USERNAME`` without the ``@``; sticker set names end in ``_by_<BOT_USERNAME>``
    (core.telegram.org/bots/api#createnewstickerset). Refused here when it is no bot username by
    Telegram's rules, or when the longest set name built from it would not fit Telegram's 64 characters
    (:func:`shared.bot_identity.bot_username_problems`): at most 26 characters.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    bot_username: str = Field(validation_alias="BOT_USERNAME")

    @field_validator("bot_username")
    @classmethod
    def _telegram_bot_username(cls, value: str) -> str:
        problems = bot_username_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value


class DownloadSettings(BaseSettings):
    """Where guests' phones reach the download pages (:mod:`shared.downloads`, issue 23 item 3).

    ``PUBLIC_BASE_URL`` (unset by default): the origin of ingest as a phone on the internet reaches it,
    ``https://booth.example.com`` (an ``http://`` URL is taken for a LAN or a demo; no path, query or
    trailing slash). The host must have a dot: Telegram refuses a URL button to a host without one
    (``http://localhost:8080/…``: 400 ``BUTTON_URL_INVALID``, rubenlagus/TelegramBots#302), which would fail
    every link message that carries the download button. Unset, no download link is offered: neither in
    the bot's link message nor as a QR code on the kiosk's done screen, since the kiosk's own address
    (often a venue LAN address) would not open on a guest's phone.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    public_base_url: str | None = Field(None, validation_alias="PUBLIC_BASE_URL")

    @field_validator("public_base_url")
    @classmethod
    def _an_origin(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not re.fullmatch(r"https?://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(:[0-9]{1,5})?", value):
            raise ValueError(
                "PUBLIC_BASE_URL must be an origin: http(s)://host[:port] with a dot in the host, no path or "
                "trailing slash"
            )
        return value


class AdminUsersSettings(BaseSettings):
    """Who the admins are: ``ADMIN_USER_IDS``, comma-separated Telegram user ids (``100000001,100000002``;
    empty: nobody). The gateway accepts admin commands only from them (DESIGN.md §7); the leads service
    lets them finish or reopen any lead (issue 13 item 4)."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    admin_user_ids: str = Field("", validation_alias="ADMIN_USER_IDS", pattern=r"^[\d,\s]*$")

    @property
    def admin_ids(self) -> frozenset[int]:
        return frozenset(int(x) for x in self.admin_user_ids.replace(" ", "").split(",") if x)


class RetentionSettings(BaseSettings):
    """How long a guest's data is kept (issue 11 "Retention"); the kiosk's consent screen states the first
    two, :mod:`shared.housekeeping` enforces them all (README "What is stored, for how long, and where").

    ``SELFIE_RETENTION_HOURS`` (24): the selfie and everything derived from it are deleted at the latest
    this long after upload (an admin Retry is possible only inside it). ``STICKER_RETENTION_DAYS`` (30;
    neither DESIGN.md nor the spec names a number): the sticker files are deleted this long after
    delivery. ``SESSION_RETENTION_DAYS`` (30): sessions, with their jobs and events, this long after the
    session began; as long as the sticker files, so that ``/delete`` can still find the guest's set for as
    long as the booth keeps the stickers. ``TG_COMMAND_RETENTION_DAYS`` (7): Telegram commands and their
    results this long after they ended (``sent``, ``failed``, ``cancelled``; a command deferred by a flood
    wait is pending, not ended); a week outlasts every flow that reads them.
    ``LEAD_RETENTION_DAYS`` (180): leads this long after the last contact; half a year covers a sales
    follow-up season. ``STREAM_RETENTION_HOURS`` (24): Redis stream entries (``stk:*``, ``tg:*`` and their
    ``:dead`` streams) are deleted this long after they were added. Safe, because by then every entry is
    acked or dead-lettered: a running consumer takes over an entry idle longer than ``STREAM_LEASE_SEC``
    (60 s) and dead-letters it after ``MAX_DELIVERIES`` (5), minutes in all (:mod:`shared.streams`); and an
    entry is only a hint, its Postgres outbox row the truth, so a hint trimmed while its row is still
    pending (its consumer down for a day) is published again by the reconcilers (``REPUBLISH_AFTER_SEC``;
    a lost result is announced again from its ``tg_commands`` row). Only a staff button press on
    ``tg:updates:leads`` has no row: one unread for a day (leads down that long) is lost. A dead letter is
    alerted when it is written and kept as long. ``RETENTION_BATCH_SIZE`` (200): rows per transaction.
    ``HOUSEKEEPING_EVERY_MIN`` (15, a divisor of 60): how often the housekeeping runs, so a window is
    overrun by at most that long. ``STREAM_CONSUMER_IDLE_MIN`` (60): a stream consumer idle this long with
    no pending entry is gone (a replica that stopped) and is deleted from its group
    (:func:`shared.streams.remove_gone_consumers`); a live one reads every ``STREAM_BLOCK_MS``.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    selfie_retention_hours: int = Field(24, ge=1, validation_alias="SELFIE_RETENTION_HOURS")
    sticker_retention_days: int = Field(30, ge=1, validation_alias="STICKER_RETENTION_DAYS")
    session_retention_days: int = Field(30, ge=1, validation_alias="SESSION_RETENTION_DAYS")
    tg_command_retention_days: int = Field(7, ge=1, validation_alias="TG_COMMAND_RETENTION_DAYS")
    lead_retention_days: int = Field(180, ge=1, validation_alias="LEAD_RETENTION_DAYS")
    stream_retention_hours: int = Field(24, ge=1, validation_alias="STREAM_RETENTION_HOURS")
    retention_batch_size: int = Field(200, ge=1, le=10_000, validation_alias="RETENTION_BATCH_SIZE")
    housekeeping_every_min: int = Field(15, ge=1, le=60, validation_alias="HOUSEKEEPING_EVERY_MIN")
    stream_consumer_idle_min: float = Field(60, gt=0, validation_alias="STREAM_CONSUMER_IDLE_MIN")

    @field_validator("housekeeping_every_min")
    @classmethod
    def _divides_the_hour(cls, value: int) -> int:
        if 60 % value:
            raise ValueError(
                "HOUSEKEEPING_EVERY_MIN must divide 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)"
            )
        return value


class CaptureSettings(BaseSettings):
    """``MAX_CAPTURES_PER_SESSION`` (2, DESIGN.md §4): photos per kiosk session. Ingest refuses the next
    upload (409 ``capture_limit``); the worker picks the guest's failure text by it, so a guest whose last
    photo failed is not asked for another selfie (:func:`shared.joblife.guest_failure_text`). Give both
    the same value (compose.yaml common env, k8s ConfigMap)."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    max_captures_per_session: int = Field(2, ge=1, validation_alias="MAX_CAPTURES_PER_SESSION")


class BudgetSettings(BaseSettings):
    """The spend limits the worker enforces and the operators' figures show (DESIGN.md §5, spec/002
    "Cost ceiling"): ``DAILY_BUDGET_USD`` (USD per UTC day; unset or empty = no daily budget) and
    ``IMAGE_RPD_LIMIT`` (1000 image requests per provider per Pacific-time day, Gemini's quota day).

    The worker pauses at the budget and warns at ``IMAGE_RPD_WARN_FRAC`` of the limit; ingest (admin page)
    and the gateway (``/status``) read the same two settings to show today's figures against them, so give
    every service the same values (compose.yaml common env, k8s ConfigMap).
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    daily_budget_usd: float | None = Field(None, gt=0, validation_alias="DAILY_BUDGET_USD")
    image_rpd_limit: int = Field(1000, ge=1, validation_alias="IMAGE_RPD_LIMIT")

    @field_validator("daily_budget_usd", mode="before")
    @classmethod
    def _empty_budget_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value
