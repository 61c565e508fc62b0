"""Lead cards in the staff group: one card per lead, published at most once (DESIGN.md §8).

Skeleton depth: the card with its buttons and the outbox reconciler. Backoff per lead, repeats and button
presses are the leads issue's work.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import structlog

from shared import metrics, streams
from shared.domain import Lead
from shared.messages import LeadCreated, TelegramResult
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database
from shared.streams import Publisher

log = structlog.get_logger(__name__)
SERVICE = "leads"
_CARD_COMMAND = re.compile(r"^lead:(?P<lead>\d+):card$")


def card_text(lead: Lead) -> str:
    """The card's HTML text: number, name, contact, message, source (user input escaped)."""
    lines = [
        f"<b>Lead #{lead.id}</b>",
        f"Name: {html.escape(lead.name)}",
        f"Contact: {html.escape(lead.contact)}",
    ]
    if lead.message:
        lines.append(f"Message: {html.escape(lead.message)}")
    if lead.source_page:
        lines.append(f"Page: {html.escape(lead.source_page)}")
    for key, value in sorted(lead.utm.items()):
        lines.append(f"{html.escape(key)}: {html.escape(value)}")
    return "\n".join(lines)


def card_buttons(lead_id: int) -> dict[str, Any]:
    """Inline keyboard with ``stickers_``-prefixed callback data (routed to leads by the gateway)."""
    return {
        "inline_keyboard": [
            [
                {"text": "Take", "callback_data": f"stickers_lead:{lead_id}:take"},
                {"text": "Done", "callback_data": f"stickers_lead:{lead_id}:done"},
                {"text": "Spam", "callback_data": f"stickers_lead:{lead_id}:spam"},
            ]
        ]
    }


class CardPublisher:
    def __init__(self, *, db: Database, publisher: Publisher, chat_id: int) -> None:
        self.db = db
        self.publisher = publisher
        self.chat_id = chat_id

    async def handle_created(self, message: Any) -> None:
        """``stk:leads``: queue the lead's card (once per lead)."""
        if isinstance(message, LeadCreated):
            await self.request_card(message.lead_id)

    async def request_card(self, lead_id: int) -> None:
        command_id = f"lead:{lead_id}:card"
        async with self.db.transaction() as repos:
            lead = await repos.leads.get(lead_id)
            if lead is None or lead.published_at is not None:
                return
            await add_command(
                repos,
                command_id,
                method="send_message",
                reply_to=SERVICE,
                params={
                    "chat_id": self.chat_id,
                    "text": card_text(lead),
                    "parse_mode": "HTML",
                    "reply_markup": card_buttons(lead.id),
                },
            )
            await repos.leads.mark_dispatched([lead_id])
        await dispatch_commands(self.db, self.publisher, [command_id])

    async def handle_result(self, message: Any) -> None:
        """``tg:results:leads``: record the card's message id."""
        if not isinstance(message, TelegramResult):
            return
        match = _CARD_COMMAND.match(message.command_id)
        if match is None:
            return
        lead_id = int(match["lead"])
        if not message.ok or not isinstance(message.result, dict):
            metrics.LEADS.labels(event="failed").inc()
            log.warning("LEAD_CARD_FAILED", lead_id=lead_id, error=str(message.error))
            return
        async with self.db.transaction() as repos:
            first = await repos.leads.mark_published(
                lead_id, card_message_id=int(message.result["message_id"])
            )
        if first:
            metrics.LEADS.labels(event="published").inc()
            log.info("LEAD_PUBLISHED", lead_id=lead_id)

    async def republish_due(self, *, grace_s: float, republish_after_s: float) -> int:
        """Outbox reconciler: hints for unpublished leads whose hint is missing or old."""
        async with self.db.transaction() as repos:
            due = await repos.leads.due_for_dispatch(
                grace=timedelta(seconds=grace_s),
                republish_after=timedelta(seconds=republish_after_s),
                limit=100,
            )
        published = [
            d.id for d in due if await self.publisher.try_publish(streams.LEADS, LeadCreated(lead_id=d.id))
        ]
        if published:
            async with self.db.transaction() as repos:
                await repos.leads.mark_dispatched(published)
        return len(published)
