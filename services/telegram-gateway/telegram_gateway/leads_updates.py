"""Routing of the leads' Telegram updates (DESIGN.md §7, spec/000 "Isolation between the guest flow and
leads"): ``stickers_``-prefixed button presses and messages in the leads chat go to ``tg:updates:leads``
for the leads service; nothing of them reaches the guest, admin or maintenance handlers.

The router runs in its own handler group before every other one and ends the update there
(``ApplicationHandlerStop``). It never raises: a broken ``tg:updates:leads`` (Redis down, a poisoned key)
costs the staff member a polite "try again", never the gateway's polling. With ``LEADS_ENABLED=0`` leads
chat messages are not routed and buttons on old cards get a polite answer (the orphan-button fallback).
"""

from __future__ import annotations

import structlog
from telegram import Update
from telegram.ext import (
    Application,
    ApplicationHandlerStop,
    CallbackQueryHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from shared import streams
from shared.messages import LeadButtonPressed, LeadsChatMessage
from shared.streams import Publisher

log = structlog.get_logger(__name__)

LEADS_GROUP = -2  # python-telegram-bot runs lower groups first; the maintenance gate is -1
CALLBACK_PREFIX = "stickers_"
LEADS_OFF = "Leads are switched off, so this button does nothing now."
TRY_AGAIN = "Could not record that just now. Please press the button again in a moment."


class LeadsUpdateRouter:
    """Registers the leads routes on a python-telegram-bot ``Application`` (:meth:`register`).

    Args:
        publisher: ``XADD`` to ``tg:updates:leads``.
        leads_chat_id: the staff group (``LEADS_CHAT_ID``); ``None``: no chat messages are routed.
        enabled: ``LEADS_ENABLED``; off: buttons are answered here and nothing is published.
    """

    def __init__(self, *, publisher: Publisher, leads_chat_id: int | None, enabled: bool) -> None:
        self.publisher = publisher
        self.leads_chat_id = leads_chat_id
        self.enabled = enabled

    def register(self, app: Application) -> None:
        app.add_handler(
            CallbackQueryHandler(self.route_button, pattern=f"^{CALLBACK_PREFIX}"), group=LEADS_GROUP
        )
        if self.enabled and self.leads_chat_id is not None:
            app.add_handler(
                MessageHandler(filters.Chat(self.leads_chat_id), self.route_chat_message), group=LEADS_GROUP
            )

    async def route_button(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Hand a ``stickers_`` button press to the leads service (or answer it when leads are off)."""
        query = update.callback_query
        if query is None or query.data is None:
            raise ApplicationHandlerStop
        try:
            if not self.enabled:
                await query.answer(LEADS_OFF)
                raise ApplicationHandlerStop
            message = query.message
            pressed = LeadButtonPressed(
                callback_query_id=query.id,
                data=query.data,
                user_id=query.from_user.id,
                user_name=query.from_user.full_name,
                username=query.from_user.username,
                chat_id=message.chat.id if message is not None else None,
                message_id=message.message_id if message is not None else None,
            )
            if not await self.publisher.try_publish(streams.TG_UPDATES_LEADS, pressed):
                await query.answer(TRY_AGAIN)
        except ApplicationHandlerStop:
            raise
        except Exception as exc:
            log.warning("LEADS_BUTTON_NOT_ROUTED", error=type(exc).__name__)
            await _answer_quietly(update, TRY_AGAIN)
        raise ApplicationHandlerStop

    async def route_chat_message(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Tell the leads service the id of a message seen in the leads chat (it bounds card searches)."""
        message = update.effective_message
        if message is not None:
            seen = LeadsChatMessage(chat_id=message.chat.id, message_id=message.message_id)
            try:
                await self.publisher.try_publish(streams.TG_UPDATES_LEADS, seen)
            except Exception as exc:
                log.warning("LEADS_CHAT_MESSAGE_NOT_ROUTED", error=type(exc).__name__)
        raise ApplicationHandlerStop


async def _answer_quietly(update: Update, text: str) -> None:
    if update.callback_query is None:
        return
    try:
        await update.callback_query.answer(text)
    except Exception as exc:
        log.warning("LEADS_BUTTON_NOT_ANSWERED", error=type(exc).__name__)
