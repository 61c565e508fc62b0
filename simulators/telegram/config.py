"""Simulator settings: one pydantic-settings class read from ``TGSIM_*`` env, overridden by CLI flags.

Env names: ``TGSIM_TOKEN`` (required, no default: it is what a bot presents), ``TGSIM_BOT_USERNAME``,
``TGSIM_BOT_FIRST_NAME``, ``TGSIM_HOST``, ``TGSIM_PORT``, ``TGSIM_DATA_DIR``, ``TGSIM_MAX_REQUEST_BYTES``,
``TGSIM_GROUPS`` (JSON object ``{"<chat id>": "<title>"}``: group chats the bot is a member of from the
start) and the flood-control limits ``TGSIM_PRIVATE_PER_SECOND``, ``TGSIM_PRIVATE_BURST``,
``TGSIM_GROUP_PER_MINUTE``, ``TGSIM_GLOBAL_PER_SECOND``, ``TGSIM_CALLBACK_ANSWER_TIMEOUT``
(see :class:`Limits`), and webhook delivery (:mod:`simulators.telegram.webhook`): ``TGSIM_WEBHOOK_TARGET``
(``http://host:port`` standing in for the TLS-terminating ingress in front of a bot: a registered
``https://`` webhook's path is POSTed there) and ``TGSIM_WEBHOOK_MAX_RETRY_S`` (the cap of the retry
backoff, 60 s as on Telegram's server).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Largest request body accepted by default (bytes): Telegram takes uploads of up to 50 MB (Bot API
#: "Sending files").
MAX_REQUEST_BYTES = 50 * 1024 * 1024
#: Bot id used when the token does not start with ``<digits>:`` (real tokens always do).
FALLBACK_BOT_ID = 7_000_000_001


class Limits(BaseModel):
    """Flood-control and timing limits; all can be changed at runtime (``POST /sim/limits``).

    ``0`` disables a limit. Telegram publishes only approximate numbers (core.telegram.org/bots/faq, "My bot
    is hitting limits"): about 1 message per second in one chat with short bursts tolerated, about 30
    messages per second across all chats, at most 20 messages per minute in one group.

    - ``private_per_second``: messages/s refilled per private chat (chat id > 0); ``private_burst`` is the
      bucket size (messages sent back to back before the rate applies).
    - ``group_per_minute``: messages/min per group chat (chat id < 0); the bucket holds as many.
    - ``global_per_second``: messages/s across every chat; the bucket holds as many.
    - ``callback_answer_timeout``: seconds after which ``answerCallbackQuery`` fails with "query is too old";
      Telegram does not publish the number, 15 s is what bots observe in practice.
    """

    model_config = ConfigDict(extra="forbid")

    private_per_second: float = Field(1.0, ge=0)
    private_burst: int = Field(3, ge=1)
    group_per_minute: float = Field(20.0, ge=0)
    global_per_second: float = Field(30.0, ge=0)
    callback_answer_timeout: float = Field(15.0, ge=0)


class SimConfig(BaseSettings):
    """Everything the simulator needs to start; built once (CLI or tests) and handed to ``create_app``.

    ``token`` is the one bot token accepted on ``/bot<token>/...``; its digits before ``:`` are the bot's
    user id (``FALLBACK_BOT_ID`` otherwise). ``data_dir`` (optional) keeps state and files across restarts.
    ``max_request_bytes`` is the largest request body accepted; a larger one is answered with 413
    ``Request Entity Too Large`` before anything is applied. Telegram takes uploads of up to 50 MB
    (core.telegram.org/bots/api#sending-files); a proxy or a local Bot API server in front of it may take
    less, which is what a smaller value plays.
    ``groups`` maps negative chat ids to titles: the group chats the bot is already a member of at start
    (a staff group for lead cards, an admin group), created when missing and kept when they exist.
    """

    model_config = SettingsConfigDict(
        env_prefix="TGSIM_", env_file=None, extra="ignore", case_sensitive=False
    )

    token: str = Field(min_length=1)
    bot_username: str = Field("stickerbooth_bot", pattern=r"^[A-Za-z][A-Za-z0-9_]{3,31}$")
    bot_first_name: str = "Sticker Booth"
    host: str = "127.0.0.1"
    port: int = Field(8081, ge=0, le=65535)
    data_dir: Path | None = None
    max_request_bytes: int = Field(MAX_REQUEST_BYTES, ge=1)
    groups: dict[int, str] = Field(default_factory=dict)
    private_per_second: float = Field(1.0, ge=0)
    private_burst: int = Field(3, ge=1)
    group_per_minute: float = Field(20.0, ge=0)
    global_per_second: float = Field(30.0, ge=0)
    callback_answer_timeout: float = Field(15.0, ge=0)
    webhook_target: str | None = Field(None, pattern=r"^https?://")
    webhook_max_retry_s: float = Field(60.0, gt=0)

    @field_validator("groups")
    @classmethod
    def _groups_are_groups(cls, groups: dict[int, str]) -> dict[int, str]:
        """Group chat ids are negative (core.telegram.org/bots/api#chat); a title is required."""
        for chat_id, title in groups.items():
            if chat_id >= 0:
                raise ValueError(f"group chat id {chat_id} must be negative")
            if not title.strip():
                raise ValueError(f"group chat {chat_id} needs a title")
        return groups

    @property
    def bot_id(self) -> int:
        """The bot's user id: the digits before ``:`` in the token
        (core.telegram.org/bots/api#authorizing-your-bot)."""
        prefix = self.token.split(":", 1)[0]
        return int(prefix) if prefix.isdigit() and int(prefix) > 0 else FALLBACK_BOT_ID

    def limits(self) -> Limits:
        """The start-up limits (``POST /sim/reset`` returns to these)."""
        return Limits(
            private_per_second=self.private_per_second,
            private_burst=self.private_burst,
            group_per_minute=self.group_per_minute,
            global_per_second=self.global_per_second,
            callback_answer_timeout=self.callback_answer_timeout,
        )
