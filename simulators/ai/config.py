"""Simulator settings: ``AISIM_*`` env, overridden by CLI flags.

``AISIM_HOST`` / ``AISIM_PORT`` (127.0.0.1:8082), ``AISIM_KEYS`` (comma-separated API keys accepted; empty:
any non-empty key), ``AISIM_LATENCY_SEC`` (seconds added to every call, 0).
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

    def accepts(self, key: str | None) -> bool:
        """Whether ``key`` is an accepted API key."""
        if not key:
            return False
        allowed = [k.strip() for k in self.keys.split(",") if k.strip()]
        return not allowed or key in allowed
