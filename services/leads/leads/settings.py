"""Leads service settings (DESIGN.md §8). Names and defaults of the publishing rules follow spec/000
"Lead card publishing" (``BACKOFF_SEC``, ``LATER_SEC``, ``ALERT_AFTER`` of the original ``leads_bot.py``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from shared.settings import AdminUsersSettings, ServiceSettings


class LeadsSettings(ServiceSettings, AdminUsersSettings):
    """Env of the leads service.

    - ``LEADS_CHAT_ID``: the staff group the cards go to (a negative chat id; a supergroup, ``-100…``,
      keeps message ids per chat, which the search for a card of unknown outcome relies on).
    - ``LEADS_ENABLED``: ``0`` removes the publisher and the button handlers (the service idles).
    - ``BACKOFF_SEC`` (``5,15,60,300``): seconds before the next attempt after 1, 2, 3, 4 consecutive
      failures; ``LATER_SEC`` (900): after 5 or more.
    - ``ALERT_AFTER`` (5): consecutive failures of a card that raise an admin alert, repeated at most every
      ``LEADS_ALERT_EVERY_SEC`` (1800 s).
    - ``REPEAT_MAX_FAILURES`` (5): a repeat notice is dropped after this many failures.
    - ``LEADS_GROUP_PER_MINUTE`` (20): messages per minute the publisher sends into the chat
      (REFERENCE.md: at most 20 messages per minute to one group).
    - ``LEADS_PUBLISH_INTERVAL_SEC`` (2): how often the publisher looks for due posts without a hint.
    - ``LEADS_RESULT_TIMEOUT_SEC`` (30): a send with no result after this long is looked up in
      ``tg_commands`` (a lost result message).
    - ``LEADS_PROBE_MAX`` (30): Bot API calls one search for a card of unknown outcome may use.
    - ``ADMIN_USER_IDS`` (:class:`shared.settings.AdminUsersSettings`): may finish or reopen any lead,
      whoever holds it (:mod:`leads.cards` "Lead status").
    """

    leads_chat_id: int = Field(validation_alias="LEADS_CHAT_ID")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
    leads_slots: int = Field(4, ge=1, validation_alias="LEADS_SLOTS")
    backoff_sec: Annotated[tuple[float, ...], NoDecode] = Field(
        (5.0, 15.0, 60.0, 300.0), validation_alias="BACKOFF_SEC"
    )
    later_sec: float = Field(900.0, gt=0, validation_alias="LATER_SEC")
    alert_after: int = Field(5, ge=1, validation_alias="ALERT_AFTER")
    alert_every_sec: float = Field(1800.0, gt=0, validation_alias="LEADS_ALERT_EVERY_SEC")
    repeat_max_failures: int = Field(5, ge=1, validation_alias="REPEAT_MAX_FAILURES")
    group_per_minute: float = Field(20.0, gt=0, validation_alias="LEADS_GROUP_PER_MINUTE")
    publish_interval_sec: float = Field(2.0, gt=0, validation_alias="LEADS_PUBLISH_INTERVAL_SEC")
    result_timeout_sec: float = Field(30.0, gt=0, validation_alias="LEADS_RESULT_TIMEOUT_SEC")
    probe_max: int = Field(30, ge=1, validation_alias="LEADS_PROBE_MAX")

    @field_validator("backoff_sec", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(float(part) for part in value.split(",") if part.strip())
        return value

    @field_validator("backoff_sec")
    @classmethod
    def _positive(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if not value or any(step <= 0 for step in value):
            raise ValueError("BACKOFF_SEC must list positive seconds, e.g. 5,15,60,300")
        return value
