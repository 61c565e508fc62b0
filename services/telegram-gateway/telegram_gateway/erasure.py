"""``/delete``: a guest erases everything stored about them (issue 11 item 3).

``/delete`` in the private chat answers with a confirmation (an inline keyboard: delete / cancel) when
anything is stored about the guest, else says nothing is stored. Confirming erases every session of the
presser's Telegram user with everything below it (:func:`shared.erasure.erase_user`, one transaction),
queues the deletion of their sticker sets through the outbox, and turns the prompt into "Deleted";
cancelling turns it into "Cancelled". The prompt goes through the outbox like every reply
(``update:<update_id>``) and is itself erased on confirm; the edit of the prompt and the answer to the
button press are made directly (no outbox row would survive to name the guest). A press handled twice
(polling is at least once) erases nothing more and edits the prompt to the same text.
"""

from __future__ import annotations

import contextlib

import structlog
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, filters

from shared.commands import SendMessage
from shared.erasure import erase_user, log_erasure
from shared.errors import UnavailableError
from shared.outbox import add_command, dispatch_commands, tell_guest
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import text
from telegram_gateway.executor import CommandExecutor
from telegram_gateway.handlers import reply_command_id, reply_subject

log = structlog.get_logger(__name__)

CONFIRM, CANCEL = "erase:yes", "erase:no"


def confirm_keyboard(language: str | None) -> dict[str, object]:
    """The prompt's buttons as Bot API JSON: delete everything / cancel."""
    return {
        "inline_keyboard": [
            [
                {"text": text("erase_yes", language), "callback_data": CONFIRM},
                {"text": text("erase_no", language), "callback_data": CANCEL},
            ]
        ]
    }


class ErasureHandlers:
    def __init__(self, *, db: Database, publisher: Publisher, executor: CommandExecutor) -> None:
        self.db = db
        self.publisher = publisher
        self.executor = executor

    def register(self, app: Application) -> None:
        app.add_handler(CommandHandler("delete", self.ask, filters=filters.ChatType.PRIVATE))
        app.add_handler(CallbackQueryHandler(self.answer, pattern=f"^(?:{CONFIRM}|{CANCEL})$"))

    async def ask(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """``/delete``: the confirmation prompt, or "nothing stored"."""
        user, chat = update.effective_user, update.effective_chat
        if user is None or chat is None:
            return
        lang = user.language_code
        command_id = reply_command_id(update)
        async with self.db.transaction() as repos:
            if await repos.erasure.sessions_of_user(user.id):
                prompt = SendMessage(
                    chat_id=chat.id, text=text("erase_confirm", lang), reply_markup=confirm_keyboard(lang)
                )
                await add_command(repos, command_id, prompt, subject=reply_subject(update))
            else:
                subject = reply_subject(update)
                await tell_guest(
                    repos,
                    command_id,
                    chat.id,
                    "erase_nothing",
                    lang,
                    event=None,
                    subject=subject,
                )
        await self.executor.execute(command_id)

    async def answer(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """A press on the prompt: erase on confirm, then edit the prompt to the outcome."""
        query = update.callback_query
        if query is None or query.from_user is None:
            return
        chat = update.effective_chat
        if chat is None or chat.id != query.from_user.id:
            # The prompt is only ever sent in the guest's own private chat; a press from anyone else (or
            # on a message we cannot place) erases nobody and edits nothing.
            with contextlib.suppress(TelegramError):
                await query.answer()
            return
        lang = query.from_user.language_code
        if query.data == CONFIRM:
            async with self.db.transaction() as repos:
                erasure = await erase_user(repos, query.from_user.id)
            log_erasure(erasure, source="guest")
            await dispatch_commands(self.db, self.publisher, erasure.commands)
            for command_id in erasure.commands:
                try:
                    await self.executor.execute(command_id)
                except UnavailableError as exc:  # pending again: the outbox reconciler retries it
                    log.warning("SET_DELETION_DEFERRED", error=type(exc).__name__)
            outcome = "erase_done"
        else:
            outcome = "erase_cancelled"
        try:
            await query.answer()
            await query.edit_message_text(text(outcome, lang), reply_markup=None)
        except TelegramError as exc:  # the data is erased (or kept) whatever the chat shows
            log.warning("ERASE_PROMPT_NOT_EDITED", error=type(exc).__name__)
