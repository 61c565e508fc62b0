"""Worker settings: slots, attempts and the pipeline's mode (names and defaults of spec/002)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.settings import ServiceSettings


class WorkerSettings(ServiceSettings):
    """Env of the worker.

    ``WORKER_SLOTS``: jobs rendered at once per replica. ``MAX_ATTEMPTS`` (2) and ``RETRY_DELAY_SEC`` (10 s)
    from spec/002 "Retries, timeouts and limits". ``HEARTBEAT_SEC``: how often a running job refreshes
    ``jobs.heartbeat_at``; ``HEARTBEAT_TIMEOUT_SEC``: a ``processing`` job silent that long has a dead owner
    and is recovered as ``crashed`` (DESIGN.md §5). ``SHEET_LAYOUT``: ``3x4`` (3 sheets of 4) or ``2x6``.
    ``NOTIFY_URL``: POSTed a fixed, secret-free text on the first queue pause of an episode (e.g. ntfy).
    """

    worker_slots: int = Field(2, ge=1, validation_alias="WORKER_SLOTS")
    max_attempts: int = Field(2, ge=1, validation_alias="MAX_ATTEMPTS")
    retry_delay_sec: float = Field(10.0, ge=0, validation_alias="RETRY_DELAY_SEC")
    heartbeat_sec: float = Field(5.0, gt=0, validation_alias="HEARTBEAT_SEC")
    heartbeat_timeout_sec: float = Field(30.0, gt=0, validation_alias="HEARTBEAT_TIMEOUT_SEC")
    sheet_layout: Literal["3x4", "2x6"] = Field("3x4", validation_alias="SHEET_LAYOUT")
    notify_url: str | None = Field(None, validation_alias="NOTIFY_URL")
    sticker_render_mode: Literal["figure", "composite"] = Field(
        "figure", validation_alias="STICKER_RENDER_MODE"
    )
