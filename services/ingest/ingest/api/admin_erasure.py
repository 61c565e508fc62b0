"""``POST /admin/erasures``: an operator erases a guest, as the guest's ``/delete`` would (issue 11 item 3).

Behind ``Authorization: Bearer <ADMIN_TOKEN>`` like every ``/admin`` route. The guest is named by their
Telegram user id (every session bound to it) or by one of their job ids (every session of that job's
Telegram user, or only its session when it was never bound): :mod:`shared.erasure`. Rows and blobs go in
one transaction; their sticker sets are deleted in Telegram through the outbox (retried until done).
The answer has counts only; a guest with nothing stored is ``"found": false`` (erasing twice is harmless).

A landing visitor is named by ``contact``, as the lead form collects it (a phone number, an e-mail address
or a Telegram ``@username``/``t.me`` link, normalised as the form's intake does:
:func:`ingest.contact.parse_contact`): their lead and its repeats go, and the card and notices in the staff
group are edited to say the lead was erased (:func:`shared.erasure.erase_lead_contact`); the answer then
also counts ``leads``, ``lead_repeats`` and ``lead_posts_queued`` (issue 19).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from ingest.api.admin_leads import admin_required
from ingest.contact import parse_contact
from ingest.context import Ctx
from shared.erasure import erase_guest_of_job, erase_lead_contact, erase_user, log_erasure
from shared.outbox import dispatch_commands

router = APIRouter(dependencies=[Depends(admin_required)])


TG_ID_MAX = 2**63 - 1


class ErasureRequest(BaseModel):
    """Exactly one of ``tg_user_id`` (a Telegram user id), ``job_id`` and ``contact`` (a landing
    visitor's phone, e-mail or Telegram username, as the lead form takes it)."""

    model_config = ConfigDict(extra="forbid")
    #: Telegram ids are positive and fit in 64 bits (Postgres ``bigint``); ``true`` or ``"42"`` are refused.
    tg_user_id: StrictInt | None = Field(None, gt=0, le=TG_ID_MAX)
    job_id: UUID | None = None
    contact: str | None = Field(None, min_length=3, max_length=254)

    @model_validator(mode="after")
    def _exactly_one(self) -> ErasureRequest:
        given = [v for v in (self.tg_user_id, self.job_id, self.contact) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of tg_user_id, job_id and contact")
        if self.contact is not None:
            parse_contact(self.contact)  # ValueError: not a phone, e-mail or Telegram username
        return self


@router.post("/admin/erasures")
async def erase_guest(ctx: Ctx, request: ErasureRequest) -> dict[str, Any]:
    """Erase the guest; ``{"found", "deleted": {table: rows}, "sticker_sets_queued"}`` (a ``contact``:
    ``{"found", "deleted": {"leads", "lead_repeats", "tg_commands"}, "lead_posts_queued"}``). 422 when not
    exactly one of ``tg_user_id`` / ``job_id`` / ``contact`` is given, or the contact is none of the three
    kinds."""
    if request.contact is not None:
        key = parse_contact(request.contact).key
        async with ctx.db.transaction() as repos:
            leads = await erase_lead_contact(repos, key)
        await dispatch_commands(ctx.db, ctx.publisher, leads.commands)
        queued = len(leads.commands)
        return {"found": leads.found, "deleted": leads.rows.counts(), "lead_posts_queued": queued}
    async with ctx.db.transaction() as repos:
        if request.job_id is not None:
            erasure = await erase_guest_of_job(repos, request.job_id)
        else:
            assert request.tg_user_id is not None
            erasure = await erase_user(repos, request.tg_user_id)
    log_erasure(erasure, source="admin")
    await dispatch_commands(ctx.db, ctx.publisher, erasure.commands)
    counts = erasure.rows.counts()
    return {
        "found": erasure.found,
        "deleted": {k: v for k, v in counts.items() if k != "sticker_sets"},
        "sticker_sets_queued": len(erasure.commands),
    }
