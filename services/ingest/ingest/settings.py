"""Ingest settings: the kiosk API, the landing ``POST /leads`` and the admin API."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from shared.settings import BotIdentitySettings, ServiceSettings


class IngestSettings(ServiceSettings, BotIdentitySettings):
    """Env of the ingest service (see :class:`shared.settings.ServiceSettings` for the common part).

    Upload limits: ``MAX_UPLOAD_BYTES`` (bytes, default 15 MB), ``MAX_UPLOAD_PIXELS`` (px, default 40 MP;
    larger images are refused before a full decode), ``MAX_CAPTURES_PER_SESSION`` (2, DESIGN.md §4).

    Leads (DESIGN.md §8): ``LEADS_ENABLED`` (``0`` removes ``POST /leads`` and the landing form),
    ``LEADS_RATE_LIMIT`` submissions per client per ``LEADS_RATE_WINDOW_SEC`` (10 per 600 s, counted in
    Redis across replicas; behind a proxy set uvicorn's ``FORWARDED_ALLOW_IPS`` so the client address is
    the visitor's), ``LEADS_CORS_ORIGINS`` (comma-separated origins of the landing page allowed to post).
    ``ADMIN_TOKEN`` (secret, no default): the bearer token of the admin API; unset, admin endpoints
    answer 403.
    """

    host: str = Field("0.0.0.0", validation_alias="HOST")
    port: int = Field(8000, validation_alias="PORT")
    max_upload_bytes: int = Field(15 * 1024 * 1024, gt=0, validation_alias="MAX_UPLOAD_BYTES")
    max_upload_pixels: int = Field(40_000_000, gt=0, validation_alias="MAX_UPLOAD_PIXELS")
    max_captures_per_session: int = Field(2, ge=1, validation_alias="MAX_CAPTURES_PER_SESSION")
    require_face: bool = Field(True, validation_alias="REQUIRE_FACE")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
    leads_rate_limit: int = Field(10, ge=1, validation_alias="LEADS_RATE_LIMIT")
    leads_rate_window_sec: int = Field(600, ge=1, validation_alias="LEADS_RATE_WINDOW_SEC")
    leads_cors_origins: Annotated[tuple[str, ...], NoDecode] = Field(
        (), validation_alias="LEADS_CORS_ORIGINS"
    )
    admin_token: SecretStr | None = Field(None, validation_alias="ADMIN_TOKEN")

    @field_validator("leads_cors_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(o.strip().rstrip("/") for o in value.split(",") if o.strip())
        return value

    @field_validator("admin_token")
    @classmethod
    def _strong_admin_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        token = value.get_secret_value()
        if len(token) < 16 or token.lower() in {"changeme", "change-me", "changethis", "admin", "secret"}:
            raise ValueError("ADMIN_TOKEN must be a long random string (at least 16 characters)")
        return value
