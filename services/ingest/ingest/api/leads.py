"""Landing ``POST /leads`` (DESIGN.md §8, spec/000 "Landing").

Validated fields (name, contact as phone / e-mail / Telegram username, message, source page, UTM fields,
and ``consent: true``: the visitor ticked the form's consent line for the use of their contact data,
recorded as ``consented_at`` on the lead; without it 422 ``consent_required`` and nothing is stored);
the visitor's ``requestId`` makes a submit idempotent: the same request again, or twice at the same moment,
answers 200 with the same lead number and stores one lead (``LeadRepository.submit``). A new request from a
known contact is stored as a repeat of the first lead (answer 201 with that lead's number and
``repeat: true``). The row is committed first; the ``stk:leads`` hint after it only wakes the leads
service, which polls the rows anyway, so Redis being down delays nothing visible. Each Redis call is
bounded (rate limit 0.5 s, hint 1 s) so the answer stays well inside the landing's 5 s timeout.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import structlog
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from ingest.api.errors import ErrorBody, RateLimited, error_response
from ingest.api.limits import client_address, refuse_if_over
from ingest.api.text import SingleLine, TrimmedLine, TrimmedText
from ingest.contact import parse_contact
from ingest.context import Ctx
from shared import metrics, streams
from shared.messages import LeadCreated, LeadRepeated, _Message

router = APIRouter()
log = structlog.get_logger(__name__)
HINT_TIMEOUT_S = 1.0


class Utm(BaseModel):
    """The landing page's UTM parameters (each up to 200 characters)."""

    model_config = ConfigDict(extra="forbid")

    utm_source: TrimmedLine | None = Field(None, max_length=200)
    utm_medium: TrimmedLine | None = Field(None, max_length=200)
    utm_campaign: TrimmedLine | None = Field(None, max_length=200)
    utm_term: TrimmedLine | None = Field(None, max_length=200)
    utm_content: TrimmedLine | None = Field(None, max_length=200)


class LeadIn(BaseModel):
    """Body of ``POST /leads``. ``requestId``: the visitor's idempotency key (8-64 of ``A-Z a-z 0-9 _ -``,
    e.g. a UUID); ``contact``: a phone number, an e-mail address or a Telegram ``@username``;
    ``consent``: ``true`` when the visitor ticked the consent line (anything else is refused); ``event``:
    optional, the id of the event whose landing page sent it (unknown: stored without an event)."""

    request_id: SingleLine = Field(
        alias="requestId", min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$"
    )
    name: TrimmedLine = Field(min_length=1, max_length=120)
    contact: TrimmedLine = Field(min_length=3, max_length=254)
    message: TrimmedText = Field("", max_length=2000)
    source_page: TrimmedLine | None = Field(None, alias="sourcePage", max_length=500)
    utm: Utm = Field(default_factory=Utm)
    consent: StrictBool = False  # JSON true only: "yes" or 1 is no tick of the consent line
    # the event whose landing page sent it (an event id); anything else, or an unknown id, is stored as no
    # event, never refused: a stale landing page loses no lead
    event: Any = None

    @field_validator("contact")
    @classmethod
    def _contact(cls, value: str) -> str:
        parse_contact(value)  # raises ValueError with the visitor-facing message
        return value


@router.post(
    "/leads",
    status_code=201,
    response_model=None,
    responses={
        422: {
            "model": ErrorBody,
            "description": "`consent_required`, `invalid_request`, `invalid_characters`",
        },
        429: {"model": ErrorBody, "description": "`rate_limited`, with `Retry-After`"},
    },
)
async def create_lead(
    ctx: Ctx, body: LeadIn, request: Request, response: Response
) -> dict[str, Any] | JSONResponse:
    """Store the lead; a repeated ``requestId`` answers 200 with the same lead number.

    Errors: 422 ``invalid_request`` with ``fields`` (malformed body), 422 ``consent_required`` with
    ``fields`` naming ``consent`` (the consent line was not ticked), 422 ``invalid_characters`` (a NUL,
    control character, lone surrogate or noncharacter in a text field; :mod:`ingest.api.text`),
    429 ``rate_limited`` with ``Retry-After`` (too many new submissions from this client),
    503 ``database_unavailable``.
    """
    if body.consent is not True:
        return error_response(
            422,
            "consent_required",
            "Please agree to the use of your contact data so that we can answer you.",
            fields=[{"field": "consent", "message": "Consent is required."}],
        )
    contact = parse_contact(body.contact)
    async with ctx.db.transaction() as repos:
        known = await repos.leads.find_request(body.request_id)
    if known is None:
        try:
            await refuse_if_over(ctx.lead_limiter, client_address(request))
        except RateLimited:
            metrics.LEADS.labels(event="rate_limited").inc()
            raise
    if known is None:
        async with ctx.db.transaction() as repos:
            event = None
            if isinstance(body.event, str) and 0 < len(body.event) <= 100:
                event = await repos.events.get(body.event)
            known = await repos.leads.submit(
                event_id=event.id if event else None,
                request_id=body.request_id,
                name=body.name,
                contact=body.contact,
                contact_kind=contact.kind,
                contact_key=contact.key,
                message=body.message,
                source_page=body.source_page,
                utm=body.utm.model_dump(exclude_none=True),
                consented_at=datetime.now(UTC),
            )
    if known.created:
        hint: _Message
        if known.repeat is not None:
            metrics.LEADS.labels(event="repeat").inc()
            log.info("LEAD_REPEAT_RECEIVED", lead_id=known.lead.id, repeat_id=known.repeat.id)
            hint = LeadRepeated(repeat_id=known.repeat.id, lead_id=known.lead.id)
        else:
            metrics.LEADS.labels(event="received").inc()
            log.info("LEAD_RECEIVED", lead_id=known.lead.id, contact_kind=contact.kind)
            hint = LeadCreated(lead_id=known.lead.id)
        await _hint(ctx, hint)
    else:
        response.status_code = 200
    return {"lead_number": known.lead.id, "requestId": body.request_id, "repeat": known.repeat is not None}


async def _hint(ctx: Ctx, message: _Message) -> None:
    """Wake the leads service; bounded, and never an error for the visitor (the rows are the truth)."""
    try:
        async with asyncio.timeout(HINT_TIMEOUT_S):
            await ctx.publisher.try_publish(streams.LEADS, message)
    except Exception as exc:
        log.warning("LEAD_HINT_DEFERRED", error=type(exc).__name__)
