"""Domain objects the repositories return (never rows). Timestamps are timezone-aware UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID


@dataclass(frozen=True, slots=True)
class KioskSession:
    """A kiosk session: one guest at one station, linked to Telegram by the deep-link ``token``."""

    id: UUID
    token: str
    station: str
    outfit_id: str | None
    tg_user_id: int | None
    tg_chat_id: int | None
    guest_name: str | None
    language: str | None
    captures: int
    created_at: datetime
    bound_at: datetime | None

    @property
    def telegram_linked(self) -> bool:
        return self.tg_chat_id is not None


@dataclass(frozen=True, slots=True)
class Job:
    """One sticker-pack generation (DESIGN.md §3 state machine)."""

    id: UUID
    session_id: UUID
    capture_id: str
    outfit_id: str
    status: str
    attempts: int
    free_requeues: int
    owner: str | None
    heartbeat_at: datetime | None
    not_before: datetime | None
    error_class: str | None
    error: str | None
    sticker_set_name: str | None
    set_created_at: datetime | None
    next_poll_at: datetime | None
    polls: int
    link_sent_at: datetime | None
    failure_notice_sent_at: datetime | None
    selfie_deleted_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class JobContext:
    """A job with what delivery and notifications need from its session."""

    job: Job
    tg_user_id: int | None
    tg_chat_id: int | None
    language: str | None


@dataclass(frozen=True, slots=True)
class Blob:
    """Stored bytes: a selfie (``kind='selfie'``) or a sticker (``kind='sticker'``, ``position`` 0–11)."""

    id: UUID
    kind: str
    job_id: UUID | None
    position: int | None
    content_type: str
    meta: dict[str, Any]
    data: bytes


@dataclass(frozen=True, slots=True)
class TelegramCommandRecord:
    """A row of ``tg_commands``: one Telegram call asked for by a service, executed at most once."""

    command_id: str
    reply_to: str | None
    method: str
    params: dict[str, Any]
    status: str
    result: Any
    error: dict[str, Any] | None
    tries: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Lead:
    """A landing-page lead; ``id`` is the lead number shown to staff and visitor."""

    id: int
    request_id: str
    name: str
    contact: str
    message: str
    source_page: str | None
    utm: dict[str, Any]
    status: str
    published_at: datetime | None
    card_message_id: int | None
    failures: int
    next_attempt_at: datetime | None
    created_at: datetime
