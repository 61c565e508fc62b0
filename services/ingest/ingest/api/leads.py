"""Landing ``POST /leads`` (DESIGN.md §8): stored once per visitor ``requestId``, card published by leads."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from ingest.context import Ctx
from shared import metrics, streams
from shared.messages import LeadCreated

router = APIRouter()
log = structlog.get_logger(__name__)


class LeadIn(BaseModel):
    request_id: str = Field(alias="requestId", min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    name: str = Field(min_length=1, max_length=120)
    contact: str = Field(min_length=3, max_length=120)
    message: str = Field("", max_length=2000)
    source_page: str | None = Field(None, alias="sourcePage", max_length=500)
    utm: dict[str, str] = Field(default_factory=dict, max_length=10)


@router.post("/leads", status_code=201)
async def create_lead(ctx: Ctx, body: LeadIn, response: Response) -> dict[str, Any]:
    """Store the lead; a repeated ``requestId`` answers 200 with the same lead number."""
    async with ctx.db.transaction() as repos:
        lead, created = await repos.leads.add(
            request_id=body.request_id,
            name=body.name.strip(),
            contact=body.contact.strip(),
            message=body.message.strip(),
            source_page=body.source_page,
            utm=body.utm,
        )
    if created:
        metrics.LEADS.labels(event="received").inc()
        log.info("LEAD_RECEIVED", lead_id=lead.id)
        if await ctx.publisher.try_publish(streams.LEADS, LeadCreated(lead_id=lead.id)):
            async with ctx.db.transaction() as repos:
                await repos.leads.mark_dispatched([lead.id])
    else:
        response.status_code = 200
    return {"lead_number": lead.id, "requestId": lead.request_id}
