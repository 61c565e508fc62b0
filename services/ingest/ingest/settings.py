"""Ingest settings: the kiosk API, the landing ``POST /leads`` and the admin API."""

from __future__ import annotations

from pydantic import Field

from shared.settings import BotIdentitySettings, ServiceSettings


class IngestSettings(ServiceSettings, BotIdentitySettings):
    """Env of the ingest service (see :class:`shared.settings.ServiceSettings` for the common part).

    Upload limits: ``MAX_UPLOAD_BYTES`` (bytes, default 15 MB), ``MAX_UPLOAD_PIXELS`` (px, default 40 MP;
    larger images are refused before a full decode), ``MAX_CAPTURES_PER_SESSION`` (2, DESIGN.md §4).
    """

    host: str = Field("0.0.0.0", validation_alias="HOST")
    port: int = Field(8000, validation_alias="PORT")
    max_upload_bytes: int = Field(15 * 1024 * 1024, gt=0, validation_alias="MAX_UPLOAD_BYTES")
    max_upload_pixels: int = Field(40_000_000, gt=0, validation_alias="MAX_UPLOAD_PIXELS")
    max_captures_per_session: int = Field(2, ge=1, validation_alias="MAX_CAPTURES_PER_SESSION")
    require_face: bool = Field(True, validation_alias="REQUIRE_FACE")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
