"""Simulator settings: ``AISIM_*`` env, overridden by CLI flags.

``AISIM_HOST`` / ``AISIM_PORT`` (127.0.0.1:8082), ``AISIM_KEYS`` (comma-separated API keys accepted; empty:
any non-empty key), ``AISIM_LATENCY_SEC`` (seconds added to every call, 0), ``AISIM_LATENCY_IMAGE_SEC`` /
``AISIM_LATENCY_VISION_SEC`` (seconds added to image / vision calls instead; unset: ``AISIM_LATENCY_SEC``).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AiSimConfig(BaseSettings):
    """Everything the simulator needs to start."""

    model_config = SettingsConfigDict(
        env_prefix="AISIM_", env_file=None, extra="ignore", case_sensitive=False
    )

    host: str = "127.0.0.1"
    port: int = Field(8082, ge=0, le=65535)
    keys: str = ""
    latency_sec: float = Field(0.0, ge=0, le=600)
    latency_image_sec: float | None = Field(None, ge=0, le=600)
    latency_vision_sec: float | None = Field(None, ge=0, le=600)

    def call_latencies(self) -> dict[str, float]:
        """The per-call-kind latencies that are set: ``{"image"?: s, "vision"?: s}``."""
        given = {"image": self.latency_image_sec, "vision": self.latency_vision_sec}
        return {call: seconds for call, seconds in given.items() if seconds is not None}

    def accepts(self, key: str | None) -> bool:
        """Whether ``key`` is an accepted API key."""
        if not key:
            return False
        allowed = [k.strip() for k in self.keys.split(",") if k.strip()]
        return not allowed or key in allowed
