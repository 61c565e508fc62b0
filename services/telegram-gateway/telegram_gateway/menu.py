"""The bot's command menu, set at gateway start (``setMyCommands``): Telegram shows it when a user types
``/`` or opens the menu button.

What is set (descriptions: :data:`shared.texts.GUEST_COMMANDS`, :data:`shared.texts.ADMIN_COMMANDS`):

- the guests' commands (``/help``, ``/delete``; ``/start`` is implicit) in the default scope, in English
  without a ``language_code`` (everyone else's menu), in each language of a catalogue
  (:data:`shared.texts.LANGUAGES`: ``de``, ``es``, ``ru``…) under its code, and in Russian for every
  two-letter code of :data:`shared.texts.RUSSIAN_READERS` (the codes the bot itself answers in Russian).
  Telegram takes a list's ``language_code`` as ISO 639-1, so only two-letter codes get a list of their own
  (the three-letter ``sah``, or a catalogue ``pt_BR``, is answered from the default list or ``pt``'s);
- for each of ``ADMIN_USER_IDS`` a ``BotCommandScopeChat`` of their private chat with the guests'
  commands and ``/status``, ``/pause``, ``/resume``, in the same languages. Telegram shows a chat's own
  list instead of the default one, so the admins' list repeats the guests' commands.

Setting a list replaces it, so a restart sets the same menu again (idempotent). Each call is tried until it
is answered: a network error or a 5xx is tried again after a backoff (0.5 s doubling to 30 s), a 429 after
its ``retry_after``; a refusal (400, 403: e.g. an admin who has never opened the chat with the bot, whose
chat Telegram does not know yet) is logged ``COMMAND_MENU_REFUSED`` once and that scope's other
languages skipped. Such an admin gets their own list as soon as they write to the bot, which makes the chat
known (:class:`CommandMenu`), not only at the next gateway start. Nothing here stops the gateway:
:meth:`CommandMenu.keep` logs any other failure and keeps the service running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog
from telegram import Bot, BotCommand, BotCommandScope, BotCommandScopeChat, BotCommandScopeDefault, Update
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from shared.runtime import wait_any
from shared.streams import Backoff
from shared.texts import ADMIN_COMMANDS, GUEST_COMMANDS, LANGUAGES, RUSSIAN_READERS, language_of
from telegram_gateway.flood import retry_after_seconds

log = structlog.get_logger(__name__)

#: The menus' languages: ``""`` (the default list, English), the catalogues' and the Russian readers' ISO
#: 639-1 codes.
MENU_LANGUAGES: tuple[str, ...] = (
    "",
    *sorted({c for c in (*LANGUAGES, *RUSSIAN_READERS) if len(c) == 2 and c != "en"}),
)
BACKOFF_CAP_S = 30.0
#: The handler group of :meth:`CommandMenu.register`: before every other group, and it stops none of them.
MENU_GROUP = -3


def menu(commands: Mapping[str, Mapping[str, str]], language_code: str) -> list[BotCommand]:
    """The BotCommands of ``commands`` in the language of ``language_code`` (``""``: English;
    :func:`shared.texts.language_of`)."""
    language = language_of(language_code)
    return [BotCommand(name, texts[language]) for name, texts in commands.items()]


def menus(
    admin_ids: Sequence[int], *, guests: bool = True
) -> list[tuple[BotCommandScope, str, list[BotCommand]]]:
    """Every list to set, as ``(scope, language_code, commands)``: the guests' menu in the default scope
    (unless ``guests`` is false), then each admin's, each in every language of :data:`MENU_LANGUAGES`."""
    lists: list[tuple[BotCommandScope, str, list[BotCommand]]] = [
        (BotCommandScopeDefault(), lang, menu(GUEST_COMMANDS, lang)) for lang in MENU_LANGUAGES if guests
    ]
    for admin in sorted(admin_ids):
        for lang in MENU_LANGUAGES:
            lists.append((BotCommandScopeChat(admin), lang, menu({**GUEST_COMMANDS, **ADMIN_COMMANDS}, lang)))
    return lists


@dataclass(frozen=True)
class MenuOutcome:
    """What :func:`set_command_menu` did: ``done`` lists set, and the admins whose chat refused theirs."""

    done: int
    refused_admins: frozenset[int]


async def set_command_menu(
    bot: Bot,
    admin_ids: Sequence[int],
    *,
    stop: asyncio.Event | None = None,
    guests: bool = True,
    on_refused: Callable[[int], None] | None = None,
) -> MenuOutcome:
    """Set every list of :func:`menus`, each tried until Telegram answers (see the module docstring).
    ``on_refused`` is called with an admin's id as soon as their chat refuses their list.

    Returns early when ``stop`` is set (the lists not reached are neither done nor refused).

    Raises:
        Forbidden, InvalidToken: the token is not accepted (nothing more can be set).
    """
    done = 0
    refused: list[BotCommandScope] = []  # a chat Telegram does not know refuses each language alike
    for scope, lang, commands in menus(admin_ids, guests=guests):
        if scope in refused:
            continue
        backoff = Backoff(cap_s=BACKOFF_CAP_S)
        while stop is None or not stop.is_set():
            try:
                await bot.set_my_commands(commands, scope=scope, language_code=lang or None)
                done += 1
                break
            except RetryAfter as exc:
                delay = retry_after_seconds(exc)
            except BadRequest as exc:  # PTB's BadRequest is a NetworkError, but Telegram answered: final
                log.warning("COMMAND_MENU_REFUSED", scope=scope.type, language=lang, error=exc.message)
                refused.append(scope)
                if on_refused is not None and isinstance(scope, BotCommandScopeChat):
                    on_refused(int(scope.chat_id))
                break
            except (Forbidden, InvalidToken):
                raise
            except NetworkError as exc:  # a connection error, a timeout or a 5xx: try again
                delay = backoff.next_delay()
                log.info("COMMAND_MENU_RETRY", error=exc.message, in_s=round(delay, 2))
            if stop is None:
                await asyncio.sleep(delay)
            else:
                await wait_any(stop, timeout_s=delay)
    admins = frozenset(int(scope.chat_id) for scope in refused if isinstance(scope, BotCommandScopeChat))
    return MenuOutcome(done=done, refused_admins=admins)


class CommandMenu:
    """The gateway's command menu for ``admin_ids`` (``ADMIN_USER_IDS``): :meth:`keep` is the ``menu``
    task, :meth:`register` adds the handler that sets a refused admin's own list when they write."""

    def __init__(self, bot: Bot, admin_ids: Sequence[int]) -> None:
        self.bot = bot
        self.admin_ids = sorted(admin_ids)
        #: Admins whose chat refused their list at start (Telegram did not know it yet).
        self.waiting: set[int] = set()
        self._stop = asyncio.Event()

    async def keep(self, stop: asyncio.Event, *, held: asyncio.Event | None = None) -> None:
        """Once this replica leads (``held``: the gateway lease), set the command menu
        (:func:`set_command_menu`), log ``COMMAND_MENU_SET`` (``COMMAND_MENU_STOPPED`` when ``stop`` came
        first), then wait for ``stop``. Never raises (a failure is logged ``COMMAND_MENU_FAILED``): a
        missing menu must not stop the gateway."""
        self._stop = stop
        try:
            if held is not None:
                await wait_any(held, stop)
            if not stop.is_set():
                lists = len(menus(self.admin_ids))
                # waiting as soon as refused: they may write while the later lists are still being set
                outcome = await set_command_menu(
                    self.bot, self.admin_ids, stop=stop, on_refused=self.waiting.add
                )
                log.info(
                    "COMMAND_MENU_STOPPED" if stop.is_set() else "COMMAND_MENU_SET",  # stopped: not all tried
                    lists=outcome.done,
                    refused=lists - outcome.done if not stop.is_set() else None,
                    admins=len(self.admin_ids),
                    waiting=sorted(self.waiting),
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("COMMAND_MENU_FAILED", error=repr(exc))
        await stop.wait()

    def register(self, app: Application) -> None:
        """Watch the admins' private messages (group :data:`MENU_GROUP`, not blocking any handler)."""
        if self.admin_ids:
            watched = filters.ChatType.PRIVATE & filters.User(user_id=self.admin_ids)
            app.add_handler(MessageHandler(watched, self.admin_wrote, block=False), group=MENU_GROUP)

    async def admin_wrote(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """An admin wrote to the bot: if their list was refused, their chat is known now; set it (each
        language, as at start). A refusal again leaves them waiting for their next message."""
        user = update.effective_user
        if user is None or user.id not in self.waiting or self._stop.is_set():
            return
        self.waiting.discard(user.id)
        try:
            outcome = await set_command_menu(
                self.bot, [user.id], stop=self._stop, guests=False, on_refused=self.waiting.add
            )
        except Exception as exc:
            log.error("COMMAND_MENU_FAILED", error=repr(exc), admin=user.id)
            self.waiting.add(user.id)
            return
        log.info("COMMAND_MENU_SET", lists=outcome.done, admin=user.id, refused=bool(outcome.refused_admins))


async def keep_command_menu(
    bot: Bot, admin_ids: Sequence[int], stop: asyncio.Event, *, held: asyncio.Event | None = None
) -> None:
    """:meth:`CommandMenu.keep` of a menu nobody watches (no handler registered)."""
    await CommandMenu(bot, admin_ids).keep(stop, held=held)
