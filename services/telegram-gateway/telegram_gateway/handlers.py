"""Guest conversation handlers (python-telegram-bot): deep-link binding and a friendly fallback."""

from __future__ import annotations

import structlog
from telegram import Update
from telegram.ext import Application, CommandHandler, ContextTypes, MessageHandler, filters

from shared.errors import DatabaseUnavailable
from shared.repositories import Database
from shared.texts import text

log = structlog.get_logger(__name__)

TRY_AGAIN = {
    "en": "Sorry, the booth is busy for a moment. Please press Start again in a minute.",
}


class GuestHandlers:
    """Handlers that need the database; registered on the application by :meth:`register`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def register(self, app: Application) -> None:
        private = filters.ChatType.PRIVATE
        app.add_handler(CommandHandler("start", self.start_bind, filters=private))
        app.add_handler(MessageHandler(private & ~filters.COMMAND, self.reply_hello))

    async def start_bind(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Bind the guest's Telegram account to the kiosk session named by ``/start <token>``."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or update.effective_chat is None:
            return
        lang = user.language_code
        if not context.args:
            await message.reply_text(text("hello", lang))
            return
        token = context.args[0][:64]
        try:
            async with self.db.transaction() as repos:
                session = await repos.sessions.bind_telegram(
                    token,
                    user_id=user.id,
                    chat_id=update.effective_chat.id,
                    name=user.first_name,
                    language=lang,
                )
        except DatabaseUnavailable:
            log.warning("BIND_DB_UNAVAILABLE")
            await message.reply_text(TRY_AGAIN["en"])
            return
        if session is None:
            log.info("BIND_UNKNOWN_TOKEN")
            await message.reply_text(text("unknown_token", lang))
            return
        log.info("GUEST_BOUND", session_id=str(session.id))
        await message.reply_text(text("linked", lang))

    async def reply_hello(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Any other private message: explain how to get a pack."""
        if update.effective_message is not None:
            lang = update.effective_user.language_code if update.effective_user else None
            await update.effective_message.reply_text(text("hello", lang))


async def log_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    """The one global error handler: log and carry on (polling must never stop on a handler bug)."""
    log.error("HANDLER_ERROR", error=repr(context.error), update_type=type(update).__name__)
