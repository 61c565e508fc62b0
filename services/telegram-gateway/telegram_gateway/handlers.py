"""Guest conversation handlers (python-telegram-bot): deep-link binding, ``/help`` and a friendly fallback.

``/help`` answers guests with how to get a pack and how to delete their data, and admins (users in
``ADMIN_USER_IDS``, recognised as :mod:`telegram_gateway.admin` does) with their commands as well; both in
the user's language (:func:`shared.texts.language_of`).

Replies go through the ``tg_commands`` outbox under the idempotency key ``update:<update_id>`` (subject
:class:`~shared.subjects.UpdateReply`) and are executed at once by the gateway's
:class:`~telegram_gateway.executor.CommandExecutor`: polling delivers an update again when the gateway died
before confirming it (``polling.py``, at least once), and the key makes the guest's answer at most once all
the same ("You're linked!" twice was seen in the chaos run after a gateway SIGKILL). A reply whose
execution is cut short is published again by the outbox reconciler. A reply into a chat Telegram paused
for longer than the polling loop lets a handler wait (2 s) is deferred by the executor like any command and
sent when the pause ends (issue 21: before, "You're linked!" was dropped).
"""

from __future__ import annotations

import structlog
from telegram import Update
from telegram.ext import Application, CommandHandler, ContextTypes, MessageHandler, filters

from shared import command_ids
from shared.errors import DatabaseUnavailable
from shared.maintenance import current_pause
from shared.outbox import tell_guest
from shared.repositories import Database
from shared.subjects import UpdateReply
from shared.texts import text
from telegram_gateway.executor import CommandExecutor

log = structlog.get_logger(__name__)


class GuestHandlers:
    """Handlers that need the database; registered on the application by :meth:`register`."""

    def __init__(
        self,
        db: Database,
        executor: CommandExecutor,
        *,
        env_maintenance: bool = False,
        admin_ids: frozenset[int] = frozenset(),
    ) -> None:
        self.db = db
        self.executor = executor
        self.env_maintenance = env_maintenance
        self.admin_ids = admin_ids

    def register(self, app: Application) -> None:
        private = filters.ChatType.PRIVATE
        app.add_handler(CommandHandler("start", self.start_bind, filters=private))
        app.add_handler(CommandHandler("help", self.show_help, filters=private))
        app.add_handler(MessageHandler(private & ~filters.COMMAND, self.reply_hello))
        # last of all handlers (main registers these last): a command nobody else took (a typo, an admin
        # command from a guest) gets /help's answer instead of silence
        app.add_handler(MessageHandler(private & filters.COMMAND, self.show_help))

    async def start_bind(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Bind the guest's Telegram account to the kiosk session named by ``/start <token>``.

        During a pause the binding happens all the same and the answer is the maintenance text (the
        maintenance gate lets deep links through, :mod:`telegram_gateway.maintenance_gate`). The
        ``linked`` answer is about the session, so it is in the guest's language at the session's event and
        in its words (:meth:`shared.events.Event.text`); ``unknown_token`` and maintenance are the
        catalogue's."""
        message, user, chat = update.effective_message, update.effective_user, update.effective_chat
        if message is None or user is None or chat is None:
            return
        lang = user.language_code
        if not context.args:
            await self._reply(update, "hello", lang)
            return
        token = context.args[0][:64]
        command_id = reply_command_id(update)
        try:
            async with self.db.transaction() as repos:
                session = await repos.sessions.bind_telegram(
                    token,
                    user_id=user.id,
                    chat_id=chat.id,
                    name=user.first_name,
                    language=lang,
                    username=user.username,
                )
                paused = await current_pause(repos, env_on=self.env_maintenance) is not None
                answer = "unknown_token" if session is None else "maintenance" if paused else "linked"
                event = await repos.events.get(session.event_id) if session and not paused else None
                await tell_guest(
                    repos, command_id, chat.id, answer, lang, event=event, subject=reply_subject(update)
                )
        except DatabaseUnavailable:
            log.warning("BIND_DB_UNAVAILABLE")
            await message.reply_text(text("busy", lang))
            return
        if session is None:
            log.info("BIND_UNKNOWN_TOKEN")
        else:
            log.info("GUEST_BOUND", session_id=str(session.id))
        await self.executor.execute(command_id)

    async def show_help(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """``/help``: how to get a pack (guests); the admin commands too for ``ADMIN_USER_IDS``."""
        user = update.effective_user
        if user is None:
            return
        key = "help_admin" if user.id in self.admin_ids else "help"
        await self._reply(update, key, user.language_code)

    async def reply_hello(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Any other private message: explain how to get a pack."""
        lang = update.effective_user.language_code if update.effective_user else None
        await self._reply(update, "hello", lang)

    async def _reply(self, update: Update, text_key: str, language: str | None) -> None:
        """Answer ``update`` in its chat once (``update:<update_id>``), however often it is delivered,
        with the guest text ``text_key`` (:mod:`shared.texts`) in ``language``.

        Raises:
            DatabaseUnavailable: the reply could not be recorded (nothing was sent).
        """
        if update.effective_chat is None:
            return
        command_id = reply_command_id(update)
        async with self.db.transaction() as repos:
            chat_id, subject = update.effective_chat.id, reply_subject(update)
            await tell_guest(repos, command_id, chat_id, text_key, language, event=None, subject=subject)
        await self.executor.execute(command_id)


def reply_command_id(update: Update) -> str:
    """The idempotency key of the gateway's one reply to an update: ``update:<update_id>``."""
    return command_ids.update_reply(update.update_id)


def reply_subject(update: Update) -> UpdateReply:
    """What the gateway's one reply to an update is about: the update."""
    return UpdateReply(id=update.update_id)


async def log_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    """The one global error handler: log and carry on (polling must never stop on a handler bug)."""
    log.error("HANDLER_ERROR", error=repr(context.error), update_type=type(update).__name__)
