"""Leads service settings (DESIGN.md §8)."""

from __future__ import annotations

from pydantic import Field

from shared.settings import ServiceSettings


class LeadsSettings(ServiceSettings):
    """Env of the leads service: ``LEADS_CHAT_ID`` (staff group, a negative chat id), ``LEADS_ENABLED``."""

    leads_chat_id: int = Field(validation_alias="LEADS_CHAT_ID")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
    leads_slots: int = Field(4, ge=1, validation_alias="LEADS_SLOTS")
