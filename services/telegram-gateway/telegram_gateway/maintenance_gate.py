"""The maintenance gate: while a pause is on, guests get the maintenance text and nothing else runs for
them (spec/000 "Maintenance mode sources"). Admins keep their commands, non-private updates (the leads
group) pass, and if the database cannot be read the guest is let through: normal service beats silence.

A deep-link ``/start <token>`` passes to the binding handler, which links the guest's chat to the kiosk
session and answers with the maintenance text itself (:meth:`telegram_gateway.handlers.GuestHandlers.
start_bind`): the spec/000 answer is the same, but the kiosk now knows who scanned, so when the pause ends
the guest carries on without scanning again, and a maintenance reply lost to a flood wait in their chat no
longer leaves them stuck (seen in the chaos run: a guest never linked).

Erasure passes too (``/delete`` and its two buttons, :mod:`telegram_gateway.erasure`): a guest's right to
have their data deleted does not wait for a pause to end (an ``auto`` pause after a 402 can last the evening),
and erasure needs only Postgres and the outbox, not the AI providers a pause protects.
"""

from __future__ import annotations

import structlog
from telegram import Update
from telegram.ext import Application, ApplicationHandlerStop, ContextTypes, TypeHandler

from shared.maintenance import current_pause
from shared.outbox import tell_guest
from shared.repositories import Database
from shared.texts import text
from telegram_gateway.erasure import CANCEL, CONFIRM
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.handlers import reply_command_id, reply_subject

log = structlog.get_logger(__name__)
ERASURE_COMMAND = "/delete"
ERASURE_BUTTONS = frozenset({CONFIRM, CANCEL})
GATE_GROUP = -1  # python-telegram-bot runs lower groups first


def is_erasure(update: Update) -> bool:
    """``/delete`` (also ``/delete@bot``) or a press of its confirm/cancel buttons."""
    if update.callback_query is not None:
        return update.callback_query.data in ERASURE_BUTTONS
    message = update.effective_message
    command = (message.text or "").split(maxsplit=1)[0].split("@", 1)[0] if message is not None else ""
    return command == ERASURE_COMMAND


def is_deep_link_start(update: Update) -> bool:
    """``/start <token>`` (the QR code's deep link), not a bare ``/start``."""
    if update.callback_query is not None or update.effective_message is None:
        return False
    words = (update.effective_message.text or "").split()
    return len(words) >= 2 and words[0].split("@", 1)[0] == "/start"


class MaintenanceGate:
    """The maintenance text is a reply like any other (:mod:`telegram_gateway.handlers`): recorded under
    ``update:<update_id>`` in the same transaction that read the pause and executed at once, so an update
    delivered again after a gateway crash is not answered twice."""

    def __init__(
        self, *, db: Database, executor: CommandExecutor, admin_ids: frozenset[int], env_maintenance: bool
    ) -> None:
        self.db = db
        self.executor = executor
        self.admin_ids = admin_ids
        self.env_maintenance = env_maintenance

    def register(self, app: Application) -> None:
        app.add_handler(TypeHandler(Update, self.check), group=GATE_GROUP)

    async def check(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Answer a guest's private update with the maintenance text while paused, and stop there."""
        chat, user = update.effective_chat, update.effective_user
        if chat is None or chat.type != "private" or user is None or user.id in self.admin_ids:
            return
        if is_erasure(update) or is_deep_link_start(update):
            return
        command_id = reply_command_id(update)
        message = update.callback_query is None and update.effective_message is not None
        try:
            async with self.db.transaction() as repos:
                pause = await current_pause(repos, env_on=self.env_maintenance)
                if pause is not None and message:
                    subject = reply_subject(update)
                    lang = user.language_code
                    await tell_guest(
                        repos,
                        command_id,
                        chat.id,
                        "maintenance",
                        lang,
                        event=None,
                        subject=subject,
                    )
        except Exception as exc:
            log.warning("MAINTENANCE_GATE_DB_UNREADABLE", error=type(exc).__name__)
            return
        if pause is None:
            return
        if update.callback_query is not None:
            await update.callback_query.answer(text("maintenance", user.language_code))
        elif message:
            await self.executor.execute(command_id)
        raise ApplicationHandlerStop
